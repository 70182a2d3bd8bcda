"""The intake's side of a subscription in doubt (issue 24), in process against the sandbox:
start goes on past it, lists it once while the entry is open, polls a trigger with a poll
source meanwhile, and closes the entry once the trigger is subscribed again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from practiceflow.api import Client
from practiceflow.manifest import load_modules
from practiceflow.runner import validate_recipe
from practiceflow.service.intake import TriggerIntake
from practiceflow.state import StateStore
from practiceflow.testing import SandboxHandle
from practiceflow.triggers import SubscriptionManager
from runner._serving import ACCEPTED, FORMS, new_proposal, wait_for

pytestmark = pytest.mark.integration

EVENTS = {"proposal_accepted": "proposal.accepted", "eform_submitted": "eform.submitted"}


def _entity(sandbox: SandboxHandle) -> str:
    rows = sandbox.admin("GET", "/_admin/records/entities")
    return next(str(row["entityKey"]) for row in rows if row["status"] == "Active")


def _intake(folder: Path, store: StateStore, client: Client, entity: str) -> TriggerIntake:
    accepted, forms = folder / "accepted.yaml", folder / "forms.yaml"
    accepted.write_text(ACCEPTED.format(entity=entity), encoding="utf-8")
    forms.write_text(FORMS.format(out=folder / "forms.jsonl"), encoding="utf-8")
    registry = load_modules()
    recipes = [validate_recipe(path, registry=registry) for path in (accepted, forms)]
    since = (datetime.now(UTC) - timedelta(seconds=5)).isoformat(timespec="seconds")
    return TriggerIntake(
        recipes,
        store,
        client,
        client.settings.client_id,
        public_url="local",
        poll_interval=0.5,
        since=since,
    )


def _entries(store: StateStore, trigger: str) -> list[Any]:
    return store.list_attention(kind="subscription_in_doubt", trigger=trigger)


def _started(intake: TriggerIntake) -> TriggerIntake:
    intake.start()
    return intake


def test_a_subscribe_without_answer_at_start_is_listed_and_its_trigger_polled_meanwhile(
    fast_sandbox: SandboxHandle, store: StateStore, client: Client, tmp_path: Path
) -> None:
    practice = client.settings.client_id
    entity = _entity(fast_sandbox)
    fault = {"kind": "server_error", "method": "POST", "pathPrefix": "/api/v1/webhooks"}
    fast_sandbox.admin("POST", "/_admin/faults", fault)  # the first subscribe: a 500
    intake = _started(_intake(tmp_path, store, client, entity))
    try:
        assert intake.in_doubt == {"proposal_accepted": True}
        doubtful = store.get_subscription(practice, "proposal_accepted")
        assert doubtful is not None
        assert doubtful.status == "in_doubt"
        other = store.get_subscription(practice, "eform_submitted")
        assert other is not None
        assert other.status == "active"
        (entry,) = _entries(store, "proposal_accepted")
        assert entry.status == "open"
        # Polled every poll_interval, not hourly: an acceptance while running comes in.
        proposal = new_proposal(client, entity)
        fast_sandbox.admin("POST", f"/_admin/proposals/{proposal}/accept")
        event = wait_for(
            "the acceptance, by polling",
            lambda: store.get_event(practice, "proposal_accepted", f"proposal:{proposal}"),
            timeout=30,
        )
        assert event.payload["source"] == "poll"
    finally:
        intake.stop()

    again = _started(_intake(tmp_path, store, client, entity))  # a restart
    again.stop()
    assert again.in_doubt == {"proposal_accepted": True}
    assert [(e.attention_id, e.status) for e in _entries(store, "proposal_accepted")] == [
        (entry.attention_id, "open")
    ]
    # Never repeated: the fault answered one subscribe, and the API holds no other.
    remote = fast_sandbox.admin("GET", "/_admin/records/subscriptions")
    assert [row["event"] for row in remote] == ["eform.submitted"]

    # Forgotten (here through Python, not the CLI): the next start subscribes and closes it.
    assert SubscriptionManager(client, store, practice).remove(
        "proposal_accepted", forget_only=True
    )
    subscribed = _started(_intake(tmp_path, store, client, entity))
    subscribed.stop()
    assert subscribed.in_doubt == {}
    active = store.get_subscription(practice, "proposal_accepted")
    assert active is not None
    assert active.status == "active"
    (closed,) = _entries(store, "proposal_accepted")
    assert (closed.attention_id, closed.status) == (entry.attention_id, "closed")
    assert (closed.settled_by, closed.note) == ("practiceflow serve", "subscribed again")


@pytest.mark.parametrize(
    ("trigger", "status", "polled", "says"),
    [
        ("proposal_accepted", "pending", True, "received by polling"),
        ("eform_submitted", "in_doubt", False, "NOT being received"),
    ],
)
def test_a_stored_doubt_is_listed_with_what_happens_to_its_events(
    fast_sandbox: SandboxHandle,
    store: StateStore,
    client: Client,
    tmp_path: Path,
    trigger: str,
    status: Any,
    polled: bool,
    says: str,
) -> None:
    practice = client.settings.client_id
    url = "http://127.0.0.1:9/hooks/left-by-a-kill"
    store.save_subscription(practice, trigger, None, EVENTS[trigger], url, "", "left", status)
    intake = _started(_intake(tmp_path, store, client, _entity(fast_sandbox)))
    intake.stop()
    assert intake.in_doubt == {trigger: polled}
    (other,) = [name for name in EVENTS if name != trigger]
    subscribed = store.get_subscription(practice, other)
    assert subscribed is not None
    assert subscribed.status == "active"
    kept = store.get_subscription(practice, trigger)
    assert kept is not None
    assert kept.status == status  # never repeated, never forgotten by itself
    (entry,) = _entries(store, trigger)
    assert entry.status == "open"
    message = entry.reason
    assert says in message
    assert f"practiceflow triggers unsubscribe {trigger} --forget" in message
    remote = fast_sandbox.admin("GET", "/_admin/records/subscriptions")
    assert [row["event"] for row in remote] == [EVENTS[other]]
