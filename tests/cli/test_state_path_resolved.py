"""One state file, whatever it is called (issue 35): through a symlink or a relative
name, commands find the same one-``serve`` lease, key file and budget file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from practiceflow.budget.sqlite_bucket import budget_file
from practiceflow.service.state_location import ServeLease, StoreInUse, sqlite_file
from practiceflow.state import SQLiteStore


@pytest.fixture
def names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[str]]:
    """The real state file, and other names of it: a symlink to it, a symlink to its
    folder, a relative path from the working directory."""
    real = tmp_path / "data" / "state.db"
    real.parent.mkdir()
    (tmp_path / "link.db").symlink_to(real)
    (tmp_path / "folder").symlink_to(real.parent)
    monkeypatch.chdir(tmp_path)
    return real, ["link.db", str(tmp_path / "folder" / "state.db"), "data/../data/state.db"]


def test_every_name_of_a_state_file_finds_the_same_lease_key_and_budget(
    names: tuple[Path, list[str]],
) -> None:
    real, others = names
    with ServeLease(real).acquire():
        for name in others:
            path = sqlite_file(name)
            assert path == real
            assert budget_file(path) == real.parent / "budget.db"
            with pytest.raises(StoreInUse, match=f"pid {os.getpid()}"):
                ServeLease(Path(name)).acquire()
            with SQLiteStore(name) as store:
                assert store.path == real
    assert not (real.parent.parent / "link.db.key").exists()
