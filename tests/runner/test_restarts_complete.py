"""Nothing missed, proven (issue 36's "Done means"): the sandbox fires acceptances and eForm
submissions while ``serve`` is killed (``kill -9``) or stopped (SIGTERM) again and again,
and the sandbox's sender gives up on every delivery made while it is down (its retries end
within a fraction of a second here; the test waits until its log says so). Afterwards:

* every acceptance ran exactly once (one line each in the recipe's output file): the ones
  the sender gave up on were recovered by the sweep that proves each downtime complete;
* every eForm submission ran once, or lies in a window listed as missing with the reason
  (an eForm has no list to sweep): nothing is lost silently;
* ``audit completeness --json`` agrees with the sandbox's own records (its proposals and
  eForms, and its delivery log).

``make test`` runs a short form (40 events, 3 kills); ``make test-faults``
(``PRACTICEFLOW_RELIABILITY_FULL=1``) the issue's size: 500 events over ten minutes, 10
kills. Nothing is timed: each step waits for what the sandbox or the store says.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from practiceflow.api import Client, RateLimits
from practiceflow.cli import cli
from practiceflow.service.heartbeat import last_alive
from practiceflow.state import StateStore
from practiceflow.testing import SandboxHandle
from runner._serving import Serve, in_store, new_proposal, serving, wait_for
from runner._support import FAST

#: A generous bound against a hang (restarts of a real process on a busy machine).
pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

FULL = os.environ.get("PRACTICEFLOW_RELIABILITY_FULL") == "1"
#: (events, kills, seconds the events are spread over)
SIZE = (500, 10, 600.0) if FULL else (40, 3, 0.0)

#: Recipes that call no endpoint (serve's budget goes to the sweeps): each event is one line.
ACCEPTED = """\
name: accepted
trigger:
  use: proposal_accepted
steps:
  - id: save
    use: write_jsonl
    with:
      path: "{out}"
      record:
        proposalKey: "{{{{ trigger.proposalKey }}}}"
"""
FORMS = """\
name: forms
trigger:
  use: eform_submitted
steps:
  - id: save
    use: write_jsonl
    with:
      path: "{out}"
      record:
        formKey: "{{{{ trigger.formKey | default(None) }}}}"
"""


def _lines(path: Path, field: str) -> list[str]:
    if not path.exists():
        return []
    return [json.loads(line)[field] for line in path.read_text(encoding="utf-8").splitlines()]


def _sender_done(sandbox: SandboxHandle, fired: int) -> bool:
    """The sender made a first attempt for every event fired, and has none left to retry
    (each delivery either acknowledged or given up)."""
    latest: dict[str, dict[str, Any]] = {}
    for row in sandbox.admin("GET", "/_admin/deliveries"):
        latest[row["deliveryId"]] = row
    return len(latest) >= fired and not any(row["willRetry"] for row in latest.values())


def _stored(serve: Serve, practice: str, forms: list[str]) -> bool:
    """Every form's event is in the store (received, so a kill cannot lose it)."""

    def read(store: StateStore) -> bool:
        return all(store.seen_event(practice, "eform_submitted", f"eform:{key}") for key in forms)

    return bool(in_store(serve.state, read))


def _ready(serve: Serve, practice: str, started: datetime) -> bool:
    def read(store: StateStore) -> bool:
        alive = last_alive(store, practice)
        subscribed = all(
            (row := store.get_subscription(practice, trigger)) is not None
            and row.status == "active"
            for trigger in ("proposal_accepted", "eform_submitted")
        )
        return subscribed and alive is not None and alive >= started

    return bool(in_store(serve.state, read))


def _start(serve: Serve, practice: str) -> None:
    started = datetime.now(UTC)
    serve.start()
    wait_for(
        "serve to subscribe and beat", lambda: _ready(serve, practice, started) or not serve.alive()
    )
    assert serve.alive(), serve.errors()


def _settled(serve: Serve) -> list[Any]:
    """The gap entries once none is left for a sweep to check."""

    def read(store: StateStore) -> list[Any]:
        return store.list_attention(kind="gap")

    gaps: list[Any] = in_store(serve.state, read)
    return gaps if all(entry.status != "checking" for entry in gaps) else []


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_killed_and_stopped_serve_runs_every_event_once_or_lists_it_missing(
    fast_sandbox: SandboxHandle, tmp_path: Path
) -> None:
    events, kills, spread = SIZE
    fast_sandbox.admin("POST", "/_admin/reset", {"entities": 8})  # each sweep: 9 requests
    fast_sandbox.admin("POST", "/_admin/config", {"rateLimits": FAST})
    practice, secret = fast_sandbox.credentials("anz", "rw")
    accepted_out, forms_out = tmp_path / "accepted.jsonl", tmp_path / "forms.jsonl"
    recipes = [tmp_path / "accepted.yaml", tmp_path / "forms.yaml"]
    recipes[0].write_text(ACCEPTED.format(out=accepted_out), encoding="utf-8")
    recipes[1].write_text(FORMS.format(out=forms_out), encoding="utf-8")
    rows = fast_sandbox.admin("GET", "/_admin/records/entities")
    entity = next(row["entityKey"] for row in rows if row["status"] == "Active")
    limits = RateLimits(per_minute=100_000, per_hour=1_000_000, per_day=10_000_000)
    rounds = kills + 1
    per_round = events // rounds
    pause = spread / events
    began = datetime.now(UTC)
    fired = 0
    down_accepted: list[str] = []
    accepted_fired: list[str] = []
    with (
        Client(practice, secret, base_url=fast_sandbox.base_url("anz"), limits=limits) as client,
        serving(fast_sandbox, tmp_path, recipes) as serve,
    ):

        def fire(count: int, *, up: bool) -> list[str]:
            """Accept ``count`` proposals or submit eForms (every fourth); the form keys."""
            nonlocal fired
            forms: list[str] = []
            for index in range(count):
                if index % 4 == 3:
                    sent = client.post(
                        "/api/v1/eforms/send", json={"templateId": 101, "entityKey": entity}
                    )
                    forms.append(str(sent["formKey"]))
                    fast_sandbox.admin("POST", f"/_admin/eforms/{forms[-1]}/submit")
                else:
                    key = new_proposal(client, entity)
                    fast_sandbox.admin("POST", f"/_admin/proposals/{key}/accept")
                    accepted_fired.append(key)
                    if not up:
                        down_accepted.append(key)
                fired += 1
                time.sleep(pause)
            return forms

        for round_ in range(rounds):
            _start(serve, practice)
            up = per_round // 2 if round_ < kills else events - fired
            forms = fire(up, up=True)
            if round_ == kills:
                break
            # An eForm in flight at the kill could precede the last heartbeat: wait until
            # the receiver has it (an acceptance in flight is the sweep's to recover).
            wait_for(
                "the eForms to be received",
                lambda keys=forms: _stored(serve, practice, keys),  # type: ignore[misc]
            )
            how = signal.SIGKILL if round_ % 2 == 0 else signal.SIGTERM
            assert serve.stop(how) in (0, -signal.SIGKILL), serve.errors()
            fire(per_round - up, up=False)  # while down
            wait_for("the sender to give up", lambda: _sender_done(fast_sandbox, fired))
        wait_for("the sweeps to settle every gap", lambda: _settled(serve))
        # The sandbox's own records: the proposals accepted since the test began.
        wanted = {
            row["proposalKey"]
            for row in fast_sandbox.admin("GET", "/_admin/records/proposals")
            if row["status"] == "Accepted" and _time(row["acceptedOn"]) >= began
        }
        wait_for(
            "every acceptance to run", lambda: set(_lines(accepted_out, "proposalKey")) >= wanted
        )
        wait_for("the sender to settle", lambda: _sender_done(fast_sandbox, fired))
        wait_for("the last eForms to run", lambda: _stored(serve, practice, forms))
        assert serve.stop() == 0, serve.errors()

    env = {"PRACTICEFLOW_STATE": str(serve.state)}
    audit = CliRunner(env=env).invoke(cli, ["audit", "completeness", "--since", "1d", "--json"])
    assert audit.exit_code == 0, audit.output
    ledger = {row["trigger"]: row for row in json.loads(audit.stdout)["triggers"]}
    listed = CliRunner(env=env).invoke(cli, ["attention", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    for_person = json.loads(listed.stdout)

    # Acceptances: each ran exactly once, the ones the sender gave up on by the sweep.
    ran = _lines(accepted_out, "proposalKey")
    assert sorted(ran) == sorted(wanted)
    assert wanted == set(accepted_fired)  # the sandbox's records: what was fired
    row = ledger["proposal_accepted"]
    assert (row["ran"], row["not_ran"], row["missing"]) == (len(wanted), [], 0)
    assert row["received"] + row["recovered"] == row["seen"] == len(wanted)
    assert row["recovered"] >= len(down_accepted) > 0  # only a sweep could store those
    assert all(gap["status"] == "closed" and gap["settled_by"] == "sweep" for gap in row["gaps"])
    assert len(row["gaps"]) == kills

    # eForms: each ran once, or lies in a window listed as missing, saying why.
    submitted = {
        form["formKey"]: _time(form["submittedOn"])
        for form in fast_sandbox.admin("GET", "/_admin/records/eforms")
        if form["status"] == "Submitted" and _time(form["submittedOn"]) >= began
    }
    assert len(submitted) == fired - len(accepted_fired)
    done = _lines(forms_out, "formKey")
    assert len(done) == len(set(done))
    missed = set(submitted) - set(done)
    assert missed  # those fired while serve was down
    windows = [
        (_time(gap["window"][0]), _time(gap["window"][1]))
        for gap in ledger["eform_submitted"]["gaps"]
        if gap["status"] == "open"
    ]
    for key in missed:
        assert any(start <= submitted[key] <= end for start, end in windows), key
    forms_row = ledger["eform_submitted"]
    assert (forms_row["ran"], forms_row["not_ran"]) == (len(done), [])
    assert forms_row["missing"] == len(windows) == kills
    assert all("no list endpoint" in gap["why"] for gap in forms_row["gaps"])
    # What a person is asked: the eForm windows, nothing else.
    assert (
        sorted((entry["kind"], entry["trigger"]) for entry in for_person)
        == [("gap", "eform_submitted")] * kills
    )
    said = serve.errors()
    assert "Traceback" not in said
    # serve said what it did at the default level: what each start caught up, each run.
    caught = re.findall(r"caught up \d+ event\(s\) after a downtime of \d+ (?:min \d+ )?s", said)
    assert len(caught) == kills  # once per start after a downtime
    assert f"accepted event proposal:{ran[0]}: succeeded" in said
