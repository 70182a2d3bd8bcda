"""The committed exports in connectors/ are what the exporters generate now."""

from __future__ import annotations

from pathlib import Path

import pytest

from practiceflow.export import exporters, generate, stale_files

CONNECTORS = Path(__file__).resolve().parents[2] / "connectors"


@pytest.mark.parametrize("platform", sorted(exporters()))
def test_committed_export_is_current(platform):
    stale = stale_files(platform, generate(platform), CONNECTORS / platform)
    assert not stale, (
        f"connectors/{platform} is stale in {stale}; regenerate it with "
        f"'practiceflow export {platform} --out connectors/{platform}' and commit the result"
    )
