"""Helpers of the fleet tests: a fleet file for two sandbox practices, and recipes.

Practice ``alpha`` is the sandbox's ANZ practice and ``beta`` its UK one, each with its
own read-write credentials, passed through environment variables named in the file.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

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
#: A webhook-only recipe (eForm submitted has no poll source).
FORMS = """\
name: fleet forms
trigger:
  use: eform_submitted
steps:
  - id: read
    use: get_client
    with:
      entityKey: "{{ trigger.entityKey }}"
"""
#: A polling recipe.
CHANGED = """\
name: fleet changed
trigger:
  use: updated_client
  mode: poll
steps:
  - id: read
    use: get_client
    with:
      entityKey: "{{ trigger.entityKey }}"
"""


def write_fleet(
    folder: Path,
    sandbox: SandboxHandle,
    *,
    ordered: bool = False,
    recipe: str = RECIPE,
    poll_every: int = 60,
) -> Path:
    """Write the recipe and a fleet file of the two practices; return the fleet file."""
    (folder / "one_write.yaml").write_text(recipe, encoding="utf-8")
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
            f"    poll_every: {poll_every}",
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


def start_worker(
    fleet_file: Path, url: str, env: dict[str, str], log: Path, *extra: str
) -> subprocess.Popen[bytes]:
    """Start ``practiceflow worker`` (1 s heartbeats, stalled after 3 s) logging to ``log``."""
    command = [
        sys.executable, "-m", "practiceflow", "worker", "--fleet", str(fleet_file),
        "--state", url, "--heartbeat", "1", "--stalled-after", "3", "-v", *extra,
    ]  # fmt: skip
    with log.open("wb") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)  # noqa: S603 -- our own CLI.


def workers_alive(url: str) -> int:
    """How many workers sent a heartbeat in the last 5 seconds."""
    with psycopg.connect(url) as raw:
        row = raw.execute(
            "SELECT count(*) FROM procrastinate_workers"
            " WHERE last_heartbeat > now() - interval '5 seconds'"
        ).fetchone()
    return 0 if row is None else int(row[0])


def wait_for_workers(url: str, count: int, logs: list[Path], timeout: float = 45) -> None:
    """Wait until ``count`` workers send heartbeats; fail with their logs otherwise."""
    deadline = time.monotonic() + timeout
    while workers_alive(url) < count:
        assert time.monotonic() < deadline, [log.read_text() for log in logs if log.exists()]
        time.sleep(0.2)


def stop_workers(workers: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM every live worker; kill what has not stopped within 20 s."""
    for worker in workers:
        if worker.poll() is None:
            worker.terminate()
    for worker in workers:
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


def write_fleet_file(folder: Path, sandbox: SandboxHandle, recipes: dict[str, str]) -> Path:
    """A fleet file of the two sandbox practices, each serving every recipe given."""
    for file, text in recipes.items():
        (folder / file).write_text(text, encoding="utf-8")
    lines = [f"modules: [{TEST_MODULES}]", "practices:"]
    for name, region in REGIONS.items():
        client_id, _ = sandbox.credentials(region, "rw")  # type: ignore[arg-type]
        lines += [
            f"  {name}:",
            f"    client_id: {client_id}",
            f"    client_secret_env: SECRET_{name.upper()}",
            f"    base_url: {sandbox.base_url(region)}",
            f"    recipes: [{', '.join(recipes)}]",
            f"    limits: {PRACTICE_LIMITS}",
        ]
    path = folder / "fleet.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
