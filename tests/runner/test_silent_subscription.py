"""Silent subscriptions are found (issue 36): a subscription deleted on the API's side
delivers nothing; the check while serving (on by default; ``PRACTICEFLOW_SILENCE_EVERY``
sets its cadence here to a second, so that one check comes at once) finds the event
its list shows, runs it once, re-subscribes, and lists the episode; the next event comes by
webhook again. A real ``serve`` against the sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from practiceflow.errors import ConfigError
from practiceflow.ops import OpsMetrics
from practiceflow.service.silence import DEFAULT_EVERY, DEFAULT_GRACE, silence_settings
from practiceflow.state import StateStore
from practiceflow.testing import SandboxHandle
from runner._serving import api_client, in_store, new_proposal, serving, wait_for
from runner._support import FAST
from runner.test_gap_sweep import ANY_ACCEPTED

pytestmark = pytest.mark.integration


@pytest.fixture
def small_sandbox(fast_sandbox: SandboxHandle) -> SandboxHandle:
    """20 clients: each check reads every client's proposals within serve's budget."""
    fast_sandbox.admin("POST", "/_admin/reset", {"entities": 20})
    fast_sandbox.admin("POST", "/_admin/config", {"rateLimits": FAST})
    return fast_sandbox


def test_a_subscription_deleted_on_the_api_side_is_found_healed_and_its_event_run(
    small_sandbox: SandboxHandle, tmp_path: Path
) -> None:
    practice, _ = small_sandbox.credentials("anz", "rw")
    recipe = tmp_path / "accepted.yaml"
    recipe.write_text(ANY_ACCEPTED, encoding="utf-8")
    rows = small_sandbox.admin("GET", "/_admin/records/entities")
    entity = next(row["entityKey"] for row in rows if row["status"] == "Active")
    env = {"PRACTICEFLOW_SILENCE_EVERY": "1", "PRACTICEFLOW_SILENCE_GRACE": "5"}
    with (
        api_client(small_sandbox) as client,
        serving(small_sandbox, tmp_path, [recipe], **env) as serve,
    ):
        first, second = new_proposal(client, entity), new_proposal(client, entity)

        def subscription(store: StateStore) -> Any:
            row = store.get_subscription(practice, "proposal_accepted")
            return row if row is not None and row.status == "active" else None

        def runs(store: StateStore) -> dict[str, Any]:
            return {run.event_id: run for run in store.list_runs(limit=100)}

        serve.start()
        old = wait_for("serve to subscribe", lambda: in_store(serve.state, subscription))
        client.delete(f"/api/v1/webhooks/{old.subscription_id}")  # removed on the API's side
        small_sandbox.admin("POST", f"/_admin/proposals/{first}/accept")  # nothing delivers it

        missed = f"proposal:{first}"
        wait_for(
            "the missed event's run",
            lambda: (run := in_store(serve.state, runs).get(missed)) and run.status == "succeeded",
        )
        new = wait_for(
            "a new subscription",
            lambda: (
                (row := in_store(serve.state, subscription))
                and row.subscription_id != old.subscription_id
                and row
            ),
        )
        small_sandbox.admin("POST", f"/_admin/proposals/{second}/accept")  # by webhook again
        wait_for(
            "the next event's run",
            lambda: (
                (run := in_store(serve.state, runs).get(f"proposal:{second}"))
                and run.status == "succeeded"
            ),
        )
        assert serve.stop() == 0, serve.errors()

    done = in_store(serve.state, runs)
    assert {event: run.status for event, run in done.items()} == {
        missed: "succeeded",
        f"proposal:{second}": "succeeded",
    }
    assert done[f"proposal:{second}"].origin["via"] == "webhook"

    def episodes(store: StateStore) -> Any:
        metrics = OpsMetrics(store).exposition().decode()
        return store.list_attention(kind="silent_subscription"), store.count_attention(), metrics

    (episode,), counts, metrics = in_store(serve.state, episodes)
    assert (episode.status, episode.settled_by) == ("closed", "practiceflow")
    assert episode.evidence["recovered"] == [missed]
    assert episode.evidence["heal"] == "resubscribed"
    assert counts[(practice, "silent_subscription", "closed")] == 1
    counted = (
        f'practiceflow_attention{{kind="silent_subscription",practice="{practice}",'
        'status="closed"} 1.0'
    )
    assert counted in metrics.splitlines()  # /metrics counts the episode
    remote = small_sandbox.admin("GET", "/_admin/records/subscriptions")
    assert [row["id"] for row in remote] == [new.subscription_id]
    assert "subscribed again" in serve.errors()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, (DEFAULT_EVERY, DEFAULT_GRACE)),  # on by default
        ({"PRACTICEFLOW_SILENCE_EVERY": "0"}, (0.0, DEFAULT_GRACE)),  # turned off
        ({"PRACTICEFLOW_SILENCE_EVERY": "60", "PRACTICEFLOW_SILENCE_GRACE": "5"}, (60.0, 5.0)),
    ],
)
def test_the_silence_check_is_on_by_default_and_can_be_turned_off(
    env: dict[str, str], expected: tuple[float, float], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("PRACTICEFLOW_SILENCE_EVERY", "PRACTICEFLOW_SILENCE_GRACE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert silence_settings() == expected


@pytest.mark.parametrize("value", ["-1", "soon"])
def test_a_bad_silence_cadence_is_refused_naming_the_variable(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRACTICEFLOW_SILENCE_EVERY", value)
    with pytest.raises(ConfigError, match="PRACTICEFLOW_SILENCE_EVERY: got"):
        silence_settings()
