"""Personal data at rest: every stored payload is sealed with the user's key; purge.

A dump of every table (every column, as text) holds no personal value in clear, while the
store reads every value back as it was written; without the right key a read fails with a
clear error naming how to supply it; ``purge_payloads`` removes the payloads of finished
runs older than the cutoff and keeps everything else.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from cryptography.fernet import Fernet
from psycopg import sql

from practiceflow.errors import ConfigError
from practiceflow.state import NewEvent, StateStore
from practiceflow.state.sealing import KEY_ENV, KEY_FILE_ENV
from practiceflow.testing import FakeClock

P = "practice-1"
EMAIL = "wilhelmina.canary@example.org"
NAME = "Wilhelmina Canaryworth"


def _dump(store_url: str) -> str:
    """Every row of every table of the store, every column as text."""
    if store_url.startswith("sqlite://"):
        with sqlite3.connect(store_url.removeprefix("sqlite://")) as db:
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            return "\n".join(
                repr(row)
                for table in tables
                for row in db.execute(f"SELECT * FROM {table}")  # noqa: S608 - names from the catalog
            )
    with psycopg.connect(store_url) as db:
        names = db.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        ).fetchall()
        return "\n".join(
            str(row[0])
            for (table,) in names
            for row in db.execute(
                sql.SQL("SELECT row_to_json(t)::text FROM {} t").format(sql.Identifier(table))
            )
        )


def _personal_run(store: StateStore, event_id: str = "evt-1") -> str:
    payload = {"source": "webhook", "entityName": NAME, "contacts": [{"email": EMAIL}]}
    store.record_events([NewEvent(P, "new_client", "client.created", event_id, payload)])
    run_id, _ = store.start_run(P, "recipe", event_id, origin={"trigger": {"email": EMAIL}})
    store.set_run_status(run_id, "running")
    store.step_pending(run_id, "add", {"method": "POST", "body": {"entityName": NAME}})
    store.step_sent(run_id, "add")
    store.step_succeeded(run_id, "add", {"entityKey": "E-1", "email": EMAIL})
    return run_id


def test_a_dump_holds_no_personal_value_and_reads_are_plain(
    store: StateStore, store_url: str
) -> None:
    run_id = _personal_run(store)
    store.step_pending(run_id, "mail", {"to": EMAIL})
    store.step_failed(run_id, "mail", {"message": f"refused {EMAIL}"})
    store.set_run_status(run_id, "failed", {"step": "mail", "detail": NAME})

    dump = _dump(store_url)
    assert "E-1" not in dump  # outputs sealed whole, not only their personal fields
    for value in (EMAIL, NAME, "wilhelmina", "Canaryworth"):
        assert value.lower() not in dump.lower()
    assert "$enc" in dump

    event = store.get_event(P, "new_client", "evt-1")
    assert event is not None
    assert event.payload["contacts"] == [{"email": EMAIL}]
    run = store.get_run(run_id)
    assert run is not None
    assert run.origin == {"trigger": {"email": EMAIL}}
    assert run.error == {"step": "mail", "detail": NAME}
    steps = {step.step_id: step for step in store.get_steps(run_id)}
    assert steps["add"].request == {"method": "POST", "body": {"entityName": NAME}}
    assert steps["add"].output == {"entityKey": "E-1", "email": EMAIL}
    assert steps["mail"].error == {"message": f"refused {EMAIL}"}
    assert store.step_history(run_id, "mail")[-1].detail == {"message": f"refused {EMAIL}"}
    # The event's source stays queryable in SQL (webhook health) beside the token.
    assert store.subscription_health(P, "new_client").last_delivery_at is not None


def test_without_the_right_key_a_read_says_how_to_supply_it(
    open_store_again: Callable[[], StateStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, Fernet.generate_key().decode())
    run_id = _personal_run(open_store_again())
    monkeypatch.setenv(KEY_ENV, Fernet.generate_key().decode())
    with pytest.raises(ConfigError, match=KEY_ENV) as caught:
        open_store_again().get_run(run_id)
    assert "cannot be decrypted" in str(caught.value)
    assert EMAIL not in str(caught.value)
    monkeypatch.setenv(KEY_ENV, "not a key")
    with pytest.raises(ConfigError, match="not a valid key"):
        open_store_again().get_run(run_id)


def test_sqlite_key_file_is_created_beside_the_store_owner_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from practiceflow.state import open_store

    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.delenv(KEY_FILE_ENV, raising=False)
    path = tmp_path / "state.db"
    with open_store(str(path)) as store:
        run_id = _personal_run(store)
    key_file = tmp_path / "state.db.key"
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    Fernet(key_file.read_text().strip().encode())  # a valid key
    with open_store(str(path)) as store:
        assert store.get_run(run_id).origin == {"trigger": {"email": EMAIL}}  # type: ignore[union-attr]
    key_file.rename(tmp_path / "elsewhere.key")
    with open_store(str(path)) as store, pytest.raises(ConfigError) as caught:
        store.get_run(run_id)
    assert KEY_ENV in str(caught.value)
    assert str(key_file) in str(caught.value)
    monkeypatch.setenv(KEY_FILE_ENV, str(tmp_path / "elsewhere.key"))
    with open_store(str(path)) as store:
        assert store.get_run(run_id).origin == {"trigger": {"email": EMAIL}}  # type: ignore[union-attr]


def test_purge_removes_payloads_of_finished_old_runs_only(
    store: StateStore, store_url: str, clock: FakeClock
) -> None:
    old = _personal_run(store, "evt-old")
    store.set_run_status(old, "succeeded")
    store.mark_event_handled(P, "new_client", "evt-old")
    held = _personal_run(store, "evt-held")
    store.set_run_status(held, "in_doubt", {"why": "no answer"})
    store.mark_event_handled(P, "new_client", "evt-held")
    clock.advance(timedelta(days=40))
    recent = _personal_run(store, "evt-recent")
    store.set_run_status(recent, "succeeded")
    store.mark_event_handled(P, "new_client", "evt-recent")
    clock.advance(timedelta(days=1))

    assert store.purge_payloads(clock() - timedelta(days=30)) == 1
    assert store.purge_payloads(clock() - timedelta(days=30)) == 0  # nothing left to remove

    run = store.get_run(old)
    assert run is not None
    assert (run.status, run.event_id, run.origin) == ("succeeded", "evt-old", None)
    (step,) = store.get_steps(old)
    assert (step.step_id, step.status, step.request, step.output) == (
        "add",
        "succeeded",
        None,
        None,
    )
    event = store.get_event(P, "new_client", "evt-old")
    assert event is not None
    assert event.payload == {"$purged": True, "source": "webhook"}
    assert [r.run_id for r in store.list_runs() if r.run_id == old] == [old]
    for kept in (held, recent):
        assert store.get_run(kept).origin == {"trigger": {"email": EMAIL}}  # type: ignore[union-attr]
        assert store.get_steps(kept)[0].output == {"entityKey": "E-1", "email": EMAIL}
    held_event = store.get_event(P, "new_client", "evt-held")
    assert held_event is not None
    assert held_event.payload["entityName"] == NAME


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        (KEY_ENV, "abc", "not a valid key"),
        (KEY_FILE_ENV, "/nonexistent/state.key", "not a file"),
    ],
)
def test_an_unusable_key_is_refused_when_the_store_opens(
    tmp_path: Path, variable: str, value: str, said: str
) -> None:
    """Said at once by any command (exit 2), not found out at the first write."""
    from click.testing import CliRunner

    from practiceflow.cli import cli

    env = {KEY_ENV: None, KEY_FILE_ENV: None, "PRACTICEFLOW_STATE": str(tmp_path / "s.db")}
    result = CliRunner(env={**env, variable: value}).invoke(cli, ["runs", "list"])
    assert result.exit_code == 2, result.output
    assert said in result.output
    assert variable in result.output
