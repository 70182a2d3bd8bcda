"""A stop is not a goodbye (issue 24): ``serve`` keeps its subscriptions on SIGTERM, and on
the next start every trigger with a poll source catches up on what happened while it was
down, deduplicated with the webhook. Real subprocesses against the sandbox, whose sender
gives up retrying within a fraction of a second (so only the catch-up can bring an event
fired while ``serve`` was down)."""

from __future__ import annotations

import json
import random
import signal
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from practiceflow.cli import cli
from practiceflow.service.heartbeat import last_alive
from practiceflow.testing import SandboxHandle
from runner._serving import (
    ACCEPTED,
    FORMS,
    Serve,
    api_client,
    in_store,
    new_proposal,
    serving,
    wait_for,
)

pytestmark = pytest.mark.integration

CHANGED = """\
name: changed
trigger:
  use: updated_client
  mode: poll
steps:
  - id: read
    use: get_client
    with:
      entityKey: "{{ trigger.entityKey }}"
"""


def _active_clients(sandbox: SandboxHandle) -> list[str]:
    rows = sandbox.admin("GET", "/_admin/records/entities")
    return [row["entityKey"] for row in rows if row["status"] == "Active"]


def _runs(state: Path, recipe: str) -> dict[str, str]:
    """event id -> run status of a recipe's runs."""

    def read(store):  # type: ignore[no-untyped-def]
        return {run.event_id: run.status for run in store.list_runs(recipe=recipe, limit=1000)}

    return in_store(state, read)  # type: ignore[no-any-return]


def _done(state: Path, recipe: str) -> int:
    return sum(status == "succeeded" for status in _runs(state, recipe).values())


def _recipes(folder: Path, entity: str) -> list[Path]:
    accepted, changed = folder / "accepted.yaml", folder / "changed.yaml"
    accepted.write_text(ACCEPTED.format(entity=entity), encoding="utf-8")
    changed.write_text(CHANGED, encoding="utf-8")
    return [accepted, changed]


def _ready(state: Path, practice: str) -> bool:
    def read(store):  # type: ignore[no-untyped-def]
        cursors = all(
            store.get_cursor_state(practice, name) is not None
            for name in ("proposal_accepted", "updated_client")
        )
        subscription = store.get_subscription(practice, "proposal_accepted")
        return cursors and subscription is not None and subscription.status == "active"

    return bool(in_store(state, read))


def test_a_stop_keeps_the_subscription_and_the_restart_catches_up_every_event_once(
    fast_sandbox: SandboxHandle, tmp_path: Path
) -> None:
    practice, _ = fast_sandbox.credentials("anz", "rw")
    entity, other = _active_clients(fast_sandbox)[:2]
    with (
        api_client(fast_sandbox) as client,
        serving(fast_sandbox, tmp_path, _recipes(tmp_path, entity)) as serve,
    ):
        early, late = new_proposal(client, entity), new_proposal(client, entity)
        serve.start()
        wait_for("serve to subscribe and set its cursors", lambda: _ready(serve.state, practice))
        (subscribed,) = fast_sandbox.admin("GET", "/_admin/records/subscriptions")

        fast_sandbox.admin("POST", f"/_admin/proposals/{early}/accept")  # by webhook
        wait_for("the delivered event's run", lambda: _done(serve.state, "accepted") == 1)
        assert serve.stop() == 0, serve.errors()
        assert "unsubscribed" not in serve.errors()
        assert fast_sandbox.admin("GET", "/_admin/records/subscriptions") == [subscribed]

        # While serve is down: an acceptance (its delivery fails and is given up) and a
        # change only polling sees.
        fast_sandbox.admin("POST", f"/_admin/proposals/{late}/accept")
        fast_sandbox.admin("PATCH", f"/_admin/entities/{other}", {"email": "down@example.com"})
        wait_for(
            "the sender to give the delivery up",
            lambda: any(
                not row["ok"] and not row["willRetry"]
                for row in fast_sandbox.admin("GET", "/_admin/deliveries")
            ),
        )

        serve.start()
        wait_for("both acceptances to run", lambda: _done(serve.state, "accepted") == 2)
        wait_for("the change to run", lambda: _done(serve.state, "changed") == 1)
        accepted, changed = _runs(serve.state, "accepted"), _runs(serve.state, "changed")
        assert serve.stop() == 0, serve.errors()

    assert accepted == {f"proposal:{early}": "succeeded", f"proposal:{late}": "succeeded"}
    assert list(changed.values()) == ["succeeded"]
    assert fast_sandbox.admin("GET", "/_admin/records/subscriptions") == [subscribed]


def test_unsubscribe_on_exit_removes_the_subscription_on_a_normal_stop(
    fast_sandbox: SandboxHandle, tmp_path: Path
) -> None:
    practice, _ = fast_sandbox.credentials("anz", "rw")
    entity = _active_clients(fast_sandbox)[0]
    with serving(fast_sandbox, tmp_path, _recipes(tmp_path, entity)) as serve:
        serve.start("--unsubscribe-on-exit")
        wait_for("serve to subscribe", lambda: _ready(serve.state, practice))
        assert serve.stop() == 0, serve.errors()
    assert fast_sandbox.admin("GET", "/_admin/records/subscriptions") == []


def _sent_back(state: Path, recipe: str) -> set[str]:
    """The event ids of a recipe's succeeded runs."""
    return {event for event, status in _runs(state, recipe).items() if status == "succeeded"}


@pytest.mark.parametrize("seed", [24])
def test_kill_9_or_sigterm_at_random_moments_loses_no_event(
    fast_sandbox: SandboxHandle, tmp_path: Path, seed: int
) -> None:
    """Events arrive by webhook and by poll while ``serve`` is killed (``kill -9``) or stopped
    (SIGTERM) at random moments, some while it is down: after the last start each event
    has run exactly once. (``bench/restarts_stress.py`` does 20 restarts.)"""
    rounds = 4
    practice, _ = fast_sandbox.credentials("anz", "rw")
    chance = random.Random(seed)
    entity, *others = _active_clients(fast_sandbox)
    patched: list[str] = []
    with (
        api_client(fast_sandbox) as client,
        serving(fast_sandbox, tmp_path, _recipes(tmp_path, entity)) as serve,
    ):
        proposals = [new_proposal(client, entity) for _ in range(2 * rounds)]
        serve.start()
        wait_for("serve to subscribe and set its cursors", lambda: _ready(serve.state, practice))
        for round_ in range(rounds):
            if round_:
                serve.start()
            # While up (the process may still be starting: deliveries wait in the sender's
            # retries or are caught up by the next start's poll).
            time.sleep(chance.uniform(0.0, 1.5))
            fast_sandbox.admin("POST", f"/_admin/proposals/{proposals[2 * round_]}/accept")
            patched.append(others[2 * round_])
            fast_sandbox.admin("PATCH", f"/_admin/entities/{patched[-1]}", {"email": "u@x.io"})
            time.sleep(chance.uniform(0.0, 1.0))
            how = chance.choice([signal.SIGKILL, signal.SIGTERM])
            code = serve.stop(how)
            assert code in (0, -signal.SIGKILL), serve.errors()
            # While down.
            fast_sandbox.admin("POST", f"/_admin/proposals/{proposals[2 * round_ + 1]}/accept")
            patched.append(others[2 * round_ + 1])
            fast_sandbox.admin("PATCH", f"/_admin/entities/{patched[-1]}", {"email": "d@x.io"})
        serve.start()
        wanted = {f"proposal:{key}" for key in proposals}
        wait_for("every acceptance to run", lambda: _sent_back(serve.state, "accepted") >= wanted)
        wait_for(
            "every change to run",
            lambda: (
                {event.split("@")[0] for event in _sent_back(serve.state, "changed")}
                >= set(patched)
            ),
        )
        assert serve.stop() == 0, serve.errors()
    accepted, changed = _runs(serve.state, "accepted"), _runs(serve.state, "changed")
    assert set(accepted) == wanted
    assert set(accepted.values()) == {"succeeded"}
    assert sorted(event.split("@")[0] for event in changed) == sorted(patched)
    assert set(changed.values()) == {"succeeded"}
    assert len(fast_sandbox.admin("GET", "/_admin/records/subscriptions")) == 1
    assert "Traceback" not in serve.errors()


def test_a_crash_loop_in_which_the_sender_gives_up_lists_every_missed_window(
    fast_sandbox: SandboxHandle, tmp_path: Path
) -> None:
    practice, _ = fast_sandbox.credentials("anz", "rw")
    recipe = tmp_path / "forms.yaml"
    recipe.write_text(FORMS.format(out=tmp_path / "forms.jsonl"), encoding="utf-8")
    entity = _active_clients(fast_sandbox)[0]
    missed: list[datetime] = []
    with api_client(fast_sandbox) as client, serving(fast_sandbox, tmp_path, [recipe]) as serve:
        sent = [
            client.post("/api/v1/eforms/send", json={"templateId": 101, "entityKey": entity})
            for _ in range(3)
        ]
        forms = [str(answer["formKey"]) for answer in sent]
        for form in forms:
            _start_and_beat(serve, practice)
            assert serve.stop(signal.SIGKILL) == -signal.SIGKILL
            missed.append(datetime.now(UTC))
            fast_sandbox.admin("POST", f"/_admin/eforms/{form}/submit")
            wait_for("the sender to give the delivery up", lambda: _given_up(fast_sandbox, missed))
        _start_and_beat(serve, practice)  # its gap entry is written before its first beat
        gaps = _gap_windows(serve.state)
        assert len(gaps) == len(missed)
        attention = CliRunner(env={"PRACTICEFLOW_STATE": str(serve.state)}).invoke(
            cli, ["runs", "list", "--status", "in_doubt", "--json"]
        )
        assert serve.stop() == 0, serve.errors()
    for moment in missed:  # every moment an event was missed lies in a listed window
        assert any(start <= moment <= end for start, end in gaps), (moment, gaps)
    listed = [row for row in json.loads(attention.stdout) if row["kind"] == "gap"]
    assert len(listed) == len(gaps)
    assert {row["recipe"] for row in listed} == {"gap: eform_submitted"}
    assert all("no list endpoint" in row["reason"] for row in listed)
    assert not (tmp_path / "forms.jsonl").exists()  # nothing ran: nothing arrived


def _start_and_beat(serve: Serve, practice: str) -> None:
    """Start serve and wait for its first heartbeat (after it listed the gap, if any)."""
    started = datetime.now(UTC)
    serve.start()

    def beat(store):  # type: ignore[no-untyped-def]
        alive = last_alive(store, practice)
        # Active, not merely pending: a kill while the subscribe is in flight leaves it in
        # doubt (by design), which this test is not about.
        subscription = store.get_subscription(practice, "eform_submitted")
        subscribed = subscription is not None and subscription.status == "active"
        return subscribed and alive is not None and alive >= started

    wait_for("serve to subscribe and beat", lambda: in_store(serve.state, beat))


def _given_up(sandbox: SandboxHandle, missed: list[datetime]) -> bool:
    rows = sandbox.admin("GET", "/_admin/deliveries")
    ends = [row for row in rows if not row["ok"] and not row["willRetry"]]
    return sum(row["event"] == "eform.submitted" for row in ends) >= len(missed)


def _gap_windows(state: Path) -> list[tuple[datetime, datetime]]:
    """The windows of the ``eform_submitted`` gap entries."""

    def read(store):  # type: ignore[no-untyped-def]
        entries = store.list_attention(kind="gap", trigger="eform_submitted", statuses=("open",))
        return [(entry.window_start, entry.window_end) for entry in entries]

    return in_store(state, read)  # type: ignore[no-any-return]
