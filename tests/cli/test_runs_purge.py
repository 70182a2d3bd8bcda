"""``runs purge --older-than`` and ``PRACTICEFLOW_RETENTION``; ``runs show`` without the key."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from cryptography.fernet import Fernet

from practiceflow.cli import cli
from practiceflow.state import NewEvent, open_store
from practiceflow.state.sealing import KEY_ENV, KEY_FILE_ENV

P = "practice-1"
EMAIL = "ottilie.canary@example.org"


def _finished_run(url: str, event_id: str, age: timedelta) -> str:
    """A succeeded run with personal data, finished ``age`` ago (the store's clock)."""
    at = datetime.now(UTC) - age
    with open_store(url, clock=lambda: at) as store:
        payload = {"source": "poll", "email": EMAIL}
        store.record_events([NewEvent(P, "new_client", "client.created", event_id, payload)])
        run_id, _ = store.start_run(P, "recipe", event_id, origin={"email": EMAIL})
        store.set_run_status(run_id, "running")
        store.step_pending(run_id, "add", {"body": {"email": EMAIL}})
        store.step_sent(run_id, "add")
        store.step_succeeded(run_id, "add", {"entityKey": "E-1"})
        store.set_run_status(run_id, "succeeded")
        store.mark_event_handled(P, "new_client", event_id)
    return run_id


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name in (KEY_ENV, KEY_FILE_ENV, "PRACTICEFLOW_RETENTION"):
        monkeypatch.delenv(name, raising=False)
    return {"PRACTICEFLOW_STATE": str(tmp_path / "state.db")}


def test_purge_older_than_removes_payloads_and_keeps_runs_listed(env: dict[str, str]) -> None:
    url = env["PRACTICEFLOW_STATE"]
    old = _finished_run(url, "evt-old", timedelta(days=45))
    recent = _finished_run(url, "evt-recent", timedelta(days=2))
    runner = CliRunner()
    done = runner.invoke(cli, ["runs", "purge", "--older-than", "30d"], env=env)
    assert done.exit_code == 0, done.output
    assert "removed the payloads of 1 finished run(s) older than 30d" in done.output
    with open_store(url) as store:
        run = store.get_run(old)
        assert run is not None
        assert (run.status, run.event_id, run.origin) == ("succeeded", "evt-old", None)
        (step,) = store.get_steps(old)
        assert (step.status, step.request, step.output) == ("succeeded", None, None)
        event = store.get_event(P, "new_client", "evt-old")
        assert event is not None
        assert EMAIL not in str(event.payload)
        assert store.get_run(recent).origin == {"email": EMAIL}  # type: ignore[union-attr]
    listed = runner.invoke(cli, ["runs", "list", "--json"], env=env)
    assert old in listed.output
    assert recent in listed.output
    shown = runner.invoke(cli, ["runs", "show", old, "--json"], env=env)
    assert shown.exit_code == 0, shown.output
    assert '"status": "succeeded"' in shown.output


def test_the_retention_setting_is_the_default(env: dict[str, str]) -> None:
    url = env["PRACTICEFLOW_STATE"]
    old = _finished_run(url, "evt-old", timedelta(days=10))
    runner = CliRunner()
    kept = runner.invoke(cli, ["runs", "purge"], env={**env, "PRACTICEFLOW_RETENTION": "30d"})
    assert "removed the payloads of 0 finished run(s)" in kept.output
    done = runner.invoke(cli, ["runs", "purge"], env={**env, "PRACTICEFLOW_RETENTION": "7d"})
    assert "removed the payloads of 1 finished run(s)" in done.output
    with open_store(url) as store:
        assert store.get_run(old).origin is None  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--older-than", "30 days"], "expected a duration such as 30d"),
        (["--older-than", "0d"], "expected a duration such as 30d"),
        ([], "give --older-than DURATION"),
    ],
)
def test_purge_refuses_a_bad_duration(env: dict[str, str], args: list[str], message: str) -> None:
    done = CliRunner().invoke(cli, ["runs", "purge", *args], env=env)
    assert done.exit_code == 2
    assert message in done.output
    assert "Traceback" not in done.output


def test_runs_show_without_the_key_is_a_clear_error(env: dict[str, str], tmp_path: Path) -> None:
    key = Fernet.generate_key().decode()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_ENV, key)
        run_id = _finished_run(env["PRACTICEFLOW_STATE"], "evt-1", timedelta(days=1))
    runner = CliRunner()
    done = runner.invoke(cli, ["runs", "show", run_id, "--json"], env=env)
    assert done.exit_code == 2, done.output
    assert KEY_ENV in done.output
    assert "Traceback" not in done.output
    assert EMAIL not in done.output
    done = runner.invoke(cli, ["runs", "show", run_id, "--json"], env={**env, KEY_ENV: key})
    assert done.exit_code == 0, done.output
    assert '"status": "succeeded"' in done.output


def test_serve_applies_the_retention_setting_at_start(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from practiceflow.cli.retention import purge_by_setting

    url = env["PRACTICEFLOW_STATE"]
    old = _finished_run(url, "evt-old", timedelta(days=10))
    with open_store(url) as store:
        assert purge_by_setting(store) is None  # not set: nothing removed
        assert store.get_run(old).origin == {"email": EMAIL}  # type: ignore[union-attr]
        monkeypatch.setenv("PRACTICEFLOW_RETENTION", "7d")
        assert purge_by_setting(store) == 1
        assert store.get_run(old).origin is None  # type: ignore[union-attr]


def test_a_purged_run_is_not_retried(env: dict[str, str]) -> None:
    url = env["PRACTICEFLOW_STATE"]
    old = _finished_run(url, "evt-old", timedelta(days=10))
    with open_store(url) as store:
        store.purge_payloads(datetime.now(UTC) - timedelta(days=7))
    done = CliRunner().invoke(cli, ["runs", "retry", old], env=env)
    assert done.exit_code == 2, done.output
    assert "its payloads were removed (runs purge); it cannot be retried" in done.output
