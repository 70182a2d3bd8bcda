"""A stop is not a goodbye (issue 24): ``serve`` keeps its subscriptions on SIGTERM, and on
the next start every trigger with a poll source catches up on what happened while it was
down, deduplicated with the webhook. Real subprocesses against the sandbox, whose sender
gives up retrying within a fraction of a second (so only the catch-up can bring an event
fired while ``serve`` was down)."""

from __future__ import annotations

from pathlib import Path

import pytest

from practiceflow.testing import SandboxHandle
from runner._serving import api_client, in_store, new_proposal, serving, wait_for

pytestmark = pytest.mark.integration

ACCEPTED = """\
name: accepted
trigger:
  use: proposal_accepted
  with:
    entityKey: {entity}
steps:
  - id: read
    use: get_client
    with:
      entityKey: "{{{{ trigger.entityKey }}}}"
"""
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
