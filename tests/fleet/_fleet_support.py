"""Helpers of the fleet tests: a fleet file for two sandbox practices, and a recipe.

Practice ``alpha`` is the sandbox's ANZ practice and ``beta`` its UK one, each with its
own read-write credentials, passed through environment variables named in the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from practiceflow.testing import SandboxHandle

HERE = Path(__file__).parent
TEST_MODULES = HERE.parent / "runner" / "modules"  # the ``test_event`` trigger
SANDBOX_LIMITS = {"perMinute": 100_000, "perHour": 1_000_000, "perDay": 10_000_000}
#: Each practice's budget: well under the sandbox's, so no 429 may ever come back.
PRACTICE_LIMITS = {"per_minute": 50_000, "per_hour": 900_000, "per_day": 9_000_000}
REGIONS = {"alpha": "anz", "beta": "uk"}

RECIPE = """\
name: fleet one write
trigger:
  use: test_event
steps:
  - id: client
    use: create_client
    with:
      entityType: Company
      clientStatus: Lead
      entityName: "Fleet {{ trigger.ref }}"
      externalSystemID: "{{ trigger.ref }}"
"""


def write_fleet(folder: Path, sandbox: SandboxHandle, *, ordered: bool = False) -> Path:
    """Write the recipe and a fleet file of the two practices; return the fleet file."""
    (folder / "one_write.yaml").write_text(RECIPE, encoding="utf-8")
    lines = [f"modules: [{TEST_MODULES}]", "practices:"]
    for name, region in REGIONS.items():
        client_id, _ = sandbox.credentials(region, "rw")  # type: ignore[arg-type]
        lines += [
            f"  {name}:",
            f"    client_id: {client_id}",
            f"    client_secret_env: SECRET_{name.upper()}",
            f"    base_url: {sandbox.base_url(region)}",
            "    recipes: [one_write.yaml]",
            f"    ordered: {str(ordered).lower()}",
            f"    limits: {PRACTICE_LIMITS}",
        ]
    path = folder / "fleet.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def secrets_env(sandbox: SandboxHandle) -> dict[str, str]:
    """The environment variables the fleet file names for the secrets."""
    return {
        f"SECRET_{name.upper()}": sandbox.credentials(region, "rw")[1]  # type: ignore[arg-type]
        for name, region in REGIONS.items()
    }


def created_refs(sandbox: SandboxHandle, region: str) -> list[str]:
    """externalSystemID of every client the recipe created in a region (with repeats)."""
    rows: list[dict[str, Any]] = sandbox.admin("GET", "/_admin/records/entities", region=region)
    return [
        row["externalSystemID"]
        for row in rows
        if str(row.get("entityName", "")).startswith("Fleet ")
    ]
