"""``practiceflow audit completeness`` (issue 36): per trigger, what arrived and how, what
ran, and each window nobody was listening with the evidence that closed it or why not."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from practiceflow.cli import cli
from practiceflow.service.needs_person import close_by_evidence, list_gap
from practiceflow.state import StateStore, open_store
from practiceflow.triggers.base import envelope

DOWN = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def _event(store: StateStore, trigger: str, key: str, how: str) -> None:
    stored = envelope("webhook" if how == "webhook" else "poll", {}, {}, event=trigger)
    stored["sweep"] = how == "sweep"
    stored["test"] = how == "test"
    store.record_event("p", trigger, trigger, key, stored)


def _ran(store: StateStore, key: str, status: Any) -> None:
    run_id, _ = store.start_run("p", "r", key)
    store.set_run_status(run_id, "running")
    store.set_run_status(run_id, status)


def _seed(store: StateStore) -> tuple[str, str]:
    for key, how in (("a", "webhook"), ("b", "webhook"), ("c", "sweep"), ("t", "test")):
        _event(store, "proposal_accepted", f"proposal:{key}", how)
    _event(store, "new_client", "client:x", "poll")
    for key in ("proposal:a", "proposal:c", "client:x"):
        _ran(store, key, "succeeded")
    _ran(store, "proposal:b", "failed")
    swept = list_gap(store, "p", "proposal_accepted", DOWN, DOWN + timedelta(minutes=5), "w")
    close_by_evidence(store, swept, "swept: 1 recovered; none missing", {"recovered": ["c"]})
    forms = list_gap(store, "p", "eform_submitted", DOWN, DOWN + timedelta(minutes=5), "no list")
    return swept.attention_id, forms.attention_id


def test_the_ledger_counts_each_way_in_and_lists_each_window_with_its_evidence(
    tmp_path: Path,
) -> None:
    state = tmp_path / "s.db"
    with open_store(str(state)) as store:
        swept, forms = _seed(store)
    runner = CliRunner(env={"PRACTICEFLOW_STATE": str(state)})
    result = runner.invoke(
        cli, ["audit", "completeness", "--since", "2026-01-01T00:00:00Z", "--json"]
    )
    assert result.exit_code == 0, result.output
    rows = {row["trigger"]: row for row in json.loads(result.stdout)["triggers"]}
    counts = {
        trigger: (row["seen"], row["received"], row["polled"], row["recovered"], row["held"])
        for trigger, row in rows.items()
    }
    assert counts == {
        "eform_submitted": (0, 0, 0, 0, 0),
        "new_client": (1, 0, 1, 0, 0),
        "proposal_accepted": (3, 2, 0, 1, 1),
    }
    accepted = rows["proposal_accepted"]
    assert (accepted["ran"], accepted["not_ran"], accepted["missing"]) == (2, ["proposal:b"], 0)
    (gap,) = accepted["gaps"]
    assert (gap["id"], gap["status"], gap["settled_by"]) == (swept, "closed", "sweep")
    assert gap["evidence"] == {"recovered": ["c"]}
    assert "none missing" in gap["why"]
    (open_gap,) = rows["eform_submitted"]["gaps"]
    assert (open_gap["id"], rows["eform_submitted"]["missing"]) == (forms, 1)
    assert "no list" in open_gap["why"]

    table = runner.invoke(cli, ["audit", "completeness", "--since", "2026-01-01T00:00:00Z"])
    assert table.exit_code == 0, table.output
    assert "closed by sweep: swept: 1 recovered; none missing" in table.output
    assert "eform_submitted down 2026-01-05T09:00:00+00:00..2026-01-05T09:05:00+00:00: open" in (
        table.output
    )


def test_since_takes_a_duration_or_an_instant_and_refuses_anything_else(tmp_path: Path) -> None:
    runner = CliRunner(env={"PRACTICEFLOW_STATE": str(tmp_path / "s.db")})
    for good in ("12h", "2026-01-01T00:00:00+00:00"):
        assert runner.invoke(cli, ["audit", "completeness", "--since", good]).exit_code == 0
    for bad, says in (("soon", "expected a duration"), ("2026-01-01T00:00:00", "offset")):
        refused = runner.invoke(cli, ["audit", "completeness", "--since", bad])
        assert refused.exit_code == 2
        assert says in refused.output
