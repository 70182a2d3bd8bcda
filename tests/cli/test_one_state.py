"""Every command family finds the same state store and practice key (issue 24).

The commands run in a fresh working directory with no ``--state``, no
``PRACTICEFLOW_STATE`` and no ``--practice``: each must use ``.practiceflow/state.db`` and
file its state under the Client ID, so that each sees what the others wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from practiceflow.cli import cli
from practiceflow.cli.state import practice_key
from practiceflow.state import open_store
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

RECIPE = """\
name: changed client
trigger:
  use: updated_client
  mode: poll
steps:
  - id: read
    use: get_client
    with:
      entityKey: "{{ trigger.entityKey }}"
"""


@pytest.fixture
def env(sandbox: SandboxHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name in ("PRACTICEFLOW_STATE", "PRACTICEFLOW_FLEET", "PRACTICEFLOW_PUBLIC_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    client_id, secret = sandbox.credentials("anz", "rw")
    return {
        "PRACTICEFLOW_CLIENT_ID": client_id,
        "PRACTICEFLOW_CLIENT_SECRET": secret,
        "PRACTICEFLOW_BASE_URL": sandbox.base_url("anz"),
        "PRACTICEFLOW_PROFILES": str(tmp_path / "none.toml"),
    }


def _ok(runner: CliRunner, *args: str) -> str:
    result = runner.invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_every_command_family_sees_the_same_cursors_runs_and_subscriptions(
    sandbox: SandboxHandle, env: dict[str, str], tmp_path: Path
) -> None:
    runner = CliRunner(env=env)
    recipe = tmp_path / "changed.yaml"
    recipe.write_text(RECIPE, encoding="utf-8")

    # triggers poll sets the cursor (first poll: nothing fires) ...
    first = json.loads(_ok(runner, "triggers", "poll", "updated_client", "--once", "--json"))
    assert first["baseline"] is True
    key = next(
        row["entityKey"]
        for row in sandbox.admin("GET", "/_admin/records/entities")
        if row["status"] == "Active"
    )
    sandbox.admin("PATCH", f"/_admin/entities/{key}", {"email": "one-state@example.com"})
    # ... and run --once carries on from it: had it a cursor of its own, its first poll
    # would be a baseline and run nothing.
    outcomes = json.loads(_ok(runner, "run", str(recipe), "--once", "--json"))
    assert [outcome["status"] for outcome in outcomes] == ["succeeded"]
    run_id = outcomes[0]["run_id"]

    listed = json.loads(_ok(runner, "runs", "list", "--json"))
    assert [row["run_id"] for row in listed] == [run_id]
    assert listed[0]["practice"] == env["PRACTICEFLOW_CLIENT_ID"]
    shown = json.loads(_ok(runner, "runs", "show", run_id, "--json"))
    assert shown["status"] == "succeeded"

    subscribed = _ok(
        runner, "triggers", "subscribe", "proposal_accepted", "--public-url", "http://127.0.0.1:9"
    )
    assert "subscribed proposal_accepted" in subscribed
    migrated = json.loads(_ok(runner, "db", "migrate", "--json"))
    # The default store, named as resolved (the lease, key and budget files go by it).
    assert Path(str(migrated["store"])) == (Path(".practiceflow") / "state.db").resolve()

    with open_store(str(tmp_path / ".practiceflow" / "state.db")) as store:
        subscription = store.get_subscription(env["PRACTICEFLOW_CLIENT_ID"], "proposal_accepted")
        assert subscription is not None
        assert subscription.status == "active"
        assert [run.run_id for run in store.list_runs()] == [run_id]
    assert "unsubscribed proposal_accepted" in _ok(
        runner, "triggers", "unsubscribe", "proposal_accepted"
    )
    assert sandbox.admin("GET", "/_admin/records/subscriptions") == []
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        ".practiceflow",
        "changed.yaml",
    ]


def test_the_practice_key_is_the_option_else_the_fleet_name_else_the_client_id(
    tmp_path: Path,
) -> None:
    fleet = tmp_path / "fleet.yaml"
    recipe = tmp_path / "r.yaml"
    recipe.write_text(RECIPE, encoding="utf-8")
    fleet.write_text(
        "practices:\n"
        "  acme:\n"
        "    client_id: 11111111-1111-1111-1111-111111111111\n"
        "    client_secret_env: ACME_SECRET\n"
        "    base_url: http://127.0.0.1:9/anz\n"
        f"    recipes: [{recipe}]\n",
        encoding="utf-8",
    )
    environ = {"PRACTICEFLOW_FLEET": str(fleet), "ACME_SECRET": "s"}
    acme = "11111111-1111-1111-1111-111111111111"
    assert practice_key(None, acme, environ) == "acme"
    assert practice_key("mine", acme, environ) == "mine"
    assert practice_key(None, "someone-else", environ) == "someone-else"
    assert practice_key(None, acme, {}) == acme
