"""A subscription in doubt stops nothing (issue 24): ``serve`` killed while its subscribe is in
flight leaves it ``pending`` in the store; it is never repeated, but every later start goes
on serving the other recipes, lists it once as needing attention, and polls the trigger
meanwhile; once a person forgets it (``triggers unsubscribe --forget``), a restart
subscribes again. Real subprocesses against the sandbox."""

from __future__ import annotations

import json
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from practiceflow.cli import cli
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

ENTRY = "subscription in doubt: proposal_accepted"


def _recipes(folder: Path, entity: str) -> list[Path]:
    # proposal_accepted first: its subscribe is the one the sandbox holds back.
    accepted, forms = folder / "accepted.yaml", folder / "forms.yaml"
    accepted.write_text(ACCEPTED.format(entity=entity), encoding="utf-8")
    forms.write_text(FORMS.format(out=folder / "forms.jsonl"), encoding="utf-8")
    return [accepted, forms]


def _subscription(serve: Serve, practice: str, trigger: str) -> Any:
    return in_store(serve.state, lambda store: store.get_subscription(practice, trigger))


def _status(serve: Serve, practice: str, trigger: str) -> str | None:
    row = _subscription(serve, practice, trigger)
    return None if row is None else str(row.status)


def _entries(serve: Serve) -> list[Any]:
    """The attention entries of the subscription in doubt."""

    def read(store: Any) -> list[Any]:
        return store.list_attention(kind="subscription_in_doubt", trigger="proposal_accepted")  # type: ignore[no-any-return]

    return in_store(serve.state, read)  # type: ignore[no-any-return]


def _runs(serve: Serve, recipe: str) -> list[Any]:
    return in_store(serve.state, lambda store: store.list_runs(recipe=recipe, limit=100))  # type: ignore[no-any-return]


def _started(serve: Serve, times: int) -> bool:
    """Whether serve announced its triggers ``times`` times (once per start that got there)."""
    return (
        serve.errors().count("trigger proposal_accepted: webhook, subscription IN DOUBT") >= times
    )


def _submit_form(sandbox: SandboxHandle, entity: str) -> str:
    with api_client(sandbox) as client:
        sent = client.post("/api/v1/eforms/send", json={"templateId": 101, "entityKey": entity})
    form = str(sent["formKey"])
    sandbox.admin("POST", f"/_admin/eforms/{form}/submit")
    return form


def test_a_kill_mid_subscribe_leaves_serve_serving_and_the_doubt_listed_once(
    fast_sandbox: SandboxHandle, tmp_path: Path
) -> None:
    practice, _ = fast_sandbox.credentials("anz", "rw")
    rows = fast_sandbox.admin("GET", "/_admin/records/entities")
    entity = next(row["entityKey"] for row in rows if row["status"] == "Active")
    since = (datetime.now(UTC) - timedelta(seconds=5)).isoformat(timespec="seconds")
    with (
        api_client(fast_sandbox) as client,
        serving(fast_sandbox, tmp_path, _recipes(tmp_path, entity)) as serve,
    ):
        proposals = [new_proposal(client, entity) for _ in range(2)]
        # Held back far longer than a loaded machine needs to see it pending and kill serve.
        fault = {"kind": "slow", "delay": 60, "method": "POST", "pathPrefix": "/api/v1/webhooks"}
        fast_sandbox.admin("POST", "/_admin/faults", fault)
        serve.start("--since", since)
        wait_for(
            "the subscribe to be in flight",
            lambda: _status(serve, practice, "proposal_accepted") == "pending",
        )
        assert serve.stop(signal.SIGKILL) == -signal.SIGKILL
        fast_sandbox.admin("DELETE", "/_admin/faults")
        # While down: an acceptance that only polling can bring.
        fast_sandbox.admin("POST", f"/_admin/proposals/{proposals[0]}/accept")

        serve.start("--since", since)
        wait_for("serve to start past the doubt", lambda: _started(serve, 1) or not serve.alive())
        assert serve.alive(), serve.errors()
        assert _status(serve, practice, "proposal_accepted") == "pending"  # never repeated
        # Every other recipe runs: eform_submitted subscribes and its delivery runs.
        wait_for(
            "the other trigger's subscription",
            lambda: _status(serve, practice, "eform_submitted") == "active",
        )
        form = _submit_form(fast_sandbox, entity)
        wait_for(
            "the form's run",
            lambda: [run.status for run in _runs(serve, "forms")] == ["succeeded"],
        )
        # The trigger in doubt still gets its events, by polling.
        wait_for("the acceptance's run", lambda: _runs(serve, "accepted"))
        (accepted,) = wait_for(
            "the acceptance's run to finish",
            lambda: [run for run in _runs(serve, "accepted") if run.status == "succeeded"],
        )
        assert accepted.event_id == f"proposal:{proposals[0]}"
        assert accepted.origin["via"] == "poll"
        (entry,) = _entries(serve)
        assert entry.status == "open"
        assert serve.stop() == 0, serve.errors()

        serve.start("--since", since)  # a second restart lists nothing new
        wait_for("serve to start again", lambda: _started(serve, 2) or not serve.alive())
        assert serve.alive(), serve.errors()
        assert [(e.attention_id, e.status) for e in _entries(serve)] == [
            (entry.attention_id, "open")
        ]
        listed = CliRunner(env=serve.env).invoke(
            cli, ["runs", "list", "--status", "in_doubt", "--json"]
        )
        assert listed.exit_code == 0, listed.output
        doubts = [row for row in json.loads(listed.stdout) if row["recipe"] == ENTRY]
        assert [row["run_id"] for row in doubts] == [entry.attention_id]  # beside any gaps
        assert serve.stop() == 0, serve.errors()

        message = entry.reason
        for needed in (
            "check the practice's webhook settings",
            "practiceflow triggers unsubscribe proposal_accepted --forget",
            "restart serve",
            "received by polling",
        ):
            assert needed in message, message

        forgot = CliRunner(env=serve.env).invoke(
            cli, ["triggers", "unsubscribe", "proposal_accepted", "--forget"]
        )
        assert forgot.exit_code == 0, forgot.output
        assert f"closed {ENTRY} (entry {entry.attention_id})" in forgot.output
        assert _subscription(serve, practice, "proposal_accepted") is None

        serve.start("--since", since)  # subscribes normally
        wait_for(
            "the new subscription",
            lambda: _status(serve, practice, "proposal_accepted") == "active" or not serve.alive(),
        )
        assert serve.alive(), serve.errors()
        fast_sandbox.admin("POST", f"/_admin/proposals/{proposals[1]}/accept")  # by webhook
        wait_for(
            "the second acceptance's run",
            lambda: sum(run.status == "succeeded" for run in _runs(serve, "accepted")) == 2,
        )
        # Delivered to the new subscription; which source stored it first (the delivery,
        # or a poll that read the list meanwhile) is a race: either way it ran once.
        new_url = _subscription(serve, practice, "proposal_accepted").url
        wait_for(
            "the delivery to the new subscription",
            lambda: any(
                row["url"] == new_url and row["ok"]
                for row in fast_sandbox.admin("GET", "/_admin/deliveries")
            ),
        )
        runs = _runs(serve, "accepted")
        vias = {run.event_id: run.origin["via"] for run in runs}
        assert len(runs) == 2  # one run per acceptance, whichever source stored it
        assert vias.keys() == {f"proposal:{proposals[0]}", f"proposal:{proposals[1]}"}
        assert vias[f"proposal:{proposals[0]}"] == "poll"
        assert vias[f"proposal:{proposals[1]}"] in {"webhook", "poll"}
        assert serve.stop() == 0, serve.errors()

    found = [(e.attention_id, e.status) for e in _entries(serve)]
    assert found == [(entry.attention_id, "closed")]
    url = _subscription(serve, practice, "proposal_accepted").url
    remote = fast_sandbox.admin("GET", "/_admin/records/subscriptions")
    assert url in {row["url"] for row in remote}, remote
    forms = (tmp_path / "forms.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["formKey"] for line in forms] == [form]
    assert "Traceback" not in serve.errors()
