"""The parts of practiceflow.ops on their own: the answer counter, readiness, budget left.

Readiness and the scrape run over real HTTP (an :class:`OpsServer` on 127.0.0.1) against
a SQLite store; the counter sits under ``requests`` with ``responses`` faking the API.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import responses
from prometheus_client.parser import text_string_to_metric_families

from practiceflow.budget.rate_budget import RateBudget, RateLimits
from practiceflow.ops import OpsMetrics, OpsPractice, OpsServer, counted_session, window_use
from practiceflow.service.needs_person import record_subscription_doubt
from practiceflow.state import SQLiteStore, StateStore

API = "http://127.0.0.1:9/anz/api/v1/groups/list"


@pytest.mark.parametrize(
    ("status", "outcome"),
    [(200, "2xx"), (201, "2xx"), (302, "3xx"), (404, "4xx"), (429, "429"), (503, "5xx")],
)
@responses.activate
def test_each_answer_is_counted_under_its_outcome(status: int, outcome: str) -> None:
    seen: list[str] = []
    responses.get(API, status=status, json={})
    with counted_session(seen.append) as session:
        answer = session.get(API, allow_redirects=False, timeout=5)
    assert answer.status_code == status
    assert seen == [outcome]


@responses.activate
def test_a_request_without_an_answer_is_counted_as_an_error_and_still_raises() -> None:
    seen: list[str] = []
    responses.get(API, body=requests.ConnectionError("refused"))
    with counted_session(seen.append) as session, pytest.raises(requests.ConnectionError):
        session.get(API, timeout=5)
    assert seen == ["error"]


def test_budget_left_counts_only_the_requests_inside_each_window() -> None:
    now = [10_000.0]
    limits = RateLimits(per_minute=5, per_hour=50, per_day=500)
    budget = RateBudget(limits, clock=lambda: now[0], sleep=lambda _: None)
    budget.acquire("GET", "/x")  # at 10,000 s
    now[0] += 120  # two minutes later: out of the minute, inside the hour
    budget.acquire("GET", "/x")
    budget.acquire("GET", "/x")
    assert window_use(budget) == {"minute": 2, "hour": 3, "day": 3}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[StateStore]:
    with SQLiteStore(tmp_path / "state.db") as opened:
        yield opened


def _serve(metrics: OpsMetrics) -> OpsServer:
    return OpsServer(metrics, "127.0.0.1", 0).start()


def test_readyz_waits_for_start_then_for_every_webhook_subscription(store: StateStore) -> None:
    served: list[OpsPractice] = []
    metrics = OpsMetrics(store, lambda: served or None)
    server = _serve(metrics)
    try:
        starting = requests.get(f"{server.url}/readyz", timeout=5)
        assert starting.status_code == 503
        assert "starting" in starting.json()["problems"][0]
        served.append(OpsPractice("acme", None, ("proposal_accepted",)))
        missing = requests.get(f"{server.url}/readyz", timeout=5)
        assert missing.status_code == 503
        assert missing.json()["problems"] == ["acme / proposal_accepted: subscription missing"]
        store.save_subscription(
            "acme", "proposal_accepted", None, "proposal.accepted", "http://127.0.0.1:1/h",
            "secret", "token-1", "pending",
        )  # fmt: skip
        pending = requests.get(f"{server.url}/readyz", timeout=5)
        assert pending.json()["problems"] == ["acme / proposal_accepted: subscription pending"]
        store.save_subscription(
            "acme", "proposal_accepted", "sub-1", "proposal.accepted", "http://127.0.0.1:1/h",
            "secret", "token-1", "active",
        )  # fmt: skip
        ready = requests.get(f"{server.url}/readyz", timeout=5)
        assert ready.status_code == 200
        assert ready.json() == {
            "status": "ready",
            "practices": 1,
            "problems": [],
            "attention": [],
        }
        assert requests.get(f"{server.url}/healthz", timeout=5).json() == {"status": "alive"}
    finally:
        server.stop()


@pytest.mark.parametrize("status", ["pending", "in_doubt"])
def test_readyz_stays_ready_with_a_subscription_in_doubt_listed_as_needing_attention(
    store: StateStore, status: Any
) -> None:
    served = [OpsPractice("acme", None, ("proposal_accepted", "eform_submitted"))]
    metrics = OpsMetrics(store, lambda: served)
    for trigger, state in (("proposal_accepted", status), ("eform_submitted", "active")):
        store.save_subscription(
            "acme", trigger, None, "e", "http://127.0.0.1:1/h", "", trigger, state
        )
    ready, detail = metrics.readiness()
    assert not ready  # not yet listed: the process may still be starting
    assert detail["problems"] == [f"acme / proposal_accepted: subscription {status}"]
    # serve (or worker) went on without it and listed it: the other triggers' receiver
    # must stay in the load balancer.
    record_subscription_doubt(store, "acme", "proposal_accepted", polled=False)
    ready, detail = metrics.readiness()
    assert ready
    assert detail["problems"] == []
    assert detail["attention"] == [f"acme / proposal_accepted: subscription {status}"]


def test_metrics_show_waiting_events_and_poll_lag_per_practice(store: StateStore) -> None:
    budget = RateBudget(RateLimits(per_minute=10, per_hour=100, per_day=1000))
    served = [OpsPractice("acme", budget), OpsPractice("globex", None)]
    metrics = OpsMetrics(store, lambda: served)
    store.record_event("acme", "new_client", "client.created", "e1", {"a": 1})
    store.record_event("acme", "new_client", "client.created", "e2", {"a": 2})
    record_subscription_doubt(store, "acme", "proposal_accepted", polled=False)
    store.add_attention("gap", "globex", "proposal_accepted", "w", "swept", status="checking")
    metrics.poll_started("globex", scheduled_at=100.0, now=103.5)
    metrics.count("acme", "429")
    server = _serve(metrics)
    try:
        text = requests.get(f"{server.url}/metrics", timeout=5).text
    finally:
        server.stop()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert samples[("practiceflow_events_waiting", (("practice", "acme"),))] == 2
    assert samples[("practiceflow_events_waiting", (("practice", "globex"),))] == 0
    doubt = (("kind", "subscription_in_doubt"), ("practice", "acme"), ("status", "open"))
    assert samples[("practiceflow_attention", doubt)] == 1
    checking = (("kind", "gap"), ("practice", "globex"), ("status", "checking"))
    assert samples[("practiceflow_attention", checking)] == 1
    assert samples[("practiceflow_poll_lag_seconds_sum", (("practice", "globex"),))] == 3.5
    bucket = (("le", "4.0"), ("practice", "globex"))
    assert samples[("practiceflow_poll_lag_seconds_bucket", bucket)] == 1
    assert samples[("practiceflow_poll_lag_seconds_bucket", (("le", "3.0"), bucket[1]))] == 0
    rate_limited = (("outcome", "429"), ("practice", "acme"))
    assert samples[("practiceflow_api_requests_total", rate_limited)] == 1
    minute = (("practice", "acme"), ("window", "minute"))
    assert samples[("practiceflow_budget_remaining", minute)] == 10
    # No budget known for globex: no invented figure.
    assert (
        "practiceflow_budget_remaining",
        (("practice", "globex"), ("window", "minute")),
    ) not in (samples)


def test_a_replica_reports_only_the_practices_it_is_told_to(store: StateStore) -> None:
    # A fleet's owning replicas each report the practices they own: each practice once.
    served = [OpsPractice(name, RateBudget(RateLimits())) for name in ("acme", "globex")]
    metrics = OpsMetrics(store, lambda: served, lambda practice: practice == "acme")
    for practice in ("acme", "globex"):
        store.record_event(practice, "new_client", "client.created", "e1", {"a": 1})
        record_subscription_doubt(store, practice, "proposal_accepted", polled=False)
        metrics.count(practice, "2xx")  # counted where it happened: every replica's own
    samples = [
        (s.name, s.labels)
        for family in text_string_to_metric_families(metrics.exposition().decode())
        for s in family.samples
    ]
    reported = {
        name: {labels["practice"] for found, labels in samples if found == name}
        for name in (
            "practiceflow_events_waiting",
            "practiceflow_runs",
            "practiceflow_steps_in_doubt",
            "practiceflow_attention",
            "practiceflow_budget_remaining",
            "practiceflow_budget_limit",
            "practiceflow_budget_paused_seconds",
        )
    }
    assert reported == {name: {"acme"} for name in reported}
    answers = {labels["practice"] for name, labels in samples if name.endswith("requests_total")}
    assert answers == {"acme", "globex"}
    assert ("practiceflow_store_up", {}) in samples
