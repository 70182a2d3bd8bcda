"""Prometheus metrics of ``serve`` and ``worker``, per practice: read at scrape time from the
store and the budgets, so nothing in the runner counts for the metrics' sake (only answers
by outcome, through a ``requests`` transport adapter, and poll lag are counted as they
happen); and the routes that serve them, which carry no secret and no personal data, so
they need no console token (a probe cannot send one)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

import requests
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    ProcessCollector,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from pyrate_limiter import InMemoryBucket
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from urllib3 import PoolManager

from practiceflow.api.connections import FreshWritesAdapter, fresh_session
from practiceflow.budget.rate_budget import RateBudget, admitted_in_windows
from practiceflow.errors import ConfigError, PracticeflowError
from practiceflow.ops._exposition import text_format
from practiceflow.service.netaddr import ThreadedServer
from practiceflow.state import RUN_STATUSES, StateStore

logger = logging.getLogger("practiceflow.ops")

#: The rate windows, by label, with their length in seconds.
WINDOWS: Final = (("minute", 60), ("hour", 3600), ("day", 86400))
#: Bucket edges of the poll lag histogram, in seconds (5 s is the alerting line).
POLL_LAG_BUCKETS: Final = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 7.5, 10.0, 20.0, 60.0)


class CountingAdapter(FreshWritesAdapter):
    """Reports each outcome (``2xx``...``5xx``, ``429``, ``error``) to ``count``;
    ``connections``: a pool manager shared with other adapters, closed by its owner."""

    def __init__(
        self, count: Callable[[str], None], *, connections: PoolManager | None = None
    ) -> None:
        self._shared = connections
        super().__init__()
        self._count = count

    def init_poolmanager(
        self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any
    ) -> None:
        """Use the shared pool manager when there is one (``requests`` calls this; make it
        with ``api.connections.fresh_pool_manager``)."""
        super().init_poolmanager(connections, maxsize, block, **pool_kwargs)
        if self._shared is not None:
            self.poolmanager = self._shared  # the adapter's own manager held no connection

    def close(self) -> None:
        """Close the adapter's connections, unless they are shared (their owner does)."""
        if self._shared is None:
            super().close()

    def send(
        self, request: requests.PreparedRequest, *args: Any, **kwargs: Any
    ) -> requests.Response:
        """Send as ``HTTPAdapter`` does, then count the outcome."""
        try:
            response = super().send(request, *args, **kwargs)
        except requests.RequestException:
            self._count("error")
            raise
        status = response.status_code  # 429 apart, else its class (4xx)
        self._count("429" if status == 429 else f"{min(max(status // 100, 1), 5)}xx")
        return response


def counted_session(
    count: Callable[[str], None], *, connections: PoolManager | None = None
) -> requests.Session:
    """A new session whose every exchange is counted (give it to ``Client(session=)``)."""
    return fresh_session(CountingAdapter(count, connections=connections))


def window_use(budget: RateBudget) -> dict[str, int] | None:
    """Requests admitted in each rate window of a budget (None: the bucket cannot say, or
    another replica owns the practice and reports it)."""
    bucket = budget.bucket
    now_ms = int(budget.clock() * 1000)
    lengths = [seconds * 1000 for _, seconds in WINDOWS]
    counts: list[int] | None = None
    if isinstance(bucket, InMemoryBucket):
        counts = admitted_in_windows(bucket.items, now_ms, lengths)
    elif callable(getattr(bucket, "window_counts", None)):
        counts = bucket.window_counts(now_ms, lengths)  # type: ignore[attr-defined]
    if counts is None:
        return None
    return {label: count for (label, _), count in zip(WINDOWS, counts, strict=True)}


def _gauge(name: str, text: str, *labels: str) -> GaugeMetricFamily:
    """``practiceflow_<name>``, labelled by practice unless ``labels`` says otherwise."""
    return GaugeMetricFamily(f"practiceflow_{name}", text, labels=list(labels or ["practice"]))


@dataclass(frozen=True)
class OpsPractice:
    """One practice served; ``webhooks`` must have an active subscription to be ready."""

    name: str
    budget: RateBudget | None = None
    webhooks: tuple[str, ...] = ()


class OpsMetrics(Collector):
    """One process's metrics, and the collector reading store and ``practices()`` (None
    while starting) at each scrape. ``reports(practice)``: whether this process reports the
    practice's runs, events and budget (a fleet's owning replicas each report those they
    own, so that every practice is reported once); every practice when None."""

    def __init__(
        self,
        store: StateStore | None = None,
        practices: Callable[[], Sequence[OpsPractice] | None] | None = None,
        reports: Callable[[str], bool] | None = None,
    ) -> None:
        self.store = store
        self.practices: Callable[[], Sequence[OpsPractice] | None] = practices or (lambda: None)
        self.reports: Callable[[str], bool] = reports or (lambda practice: True)
        self.registry = CollectorRegistry(auto_describe=False)
        # The process's own CPU seconds and resident memory (process_*), per scrape.
        ProcessCollector(registry=self.registry)
        self.requests = Counter(
            "practiceflow_api_requests",
            "Requests sent to the API, by practice and outcome (status class, 429, or "
            "error: no answer)",
            ["practice", "outcome"],
            registry=self.registry,
        )
        self.poll_lag = Histogram(
            "practiceflow_poll_lag_seconds",
            "From the moment a poll was scheduled for to the moment it starts sending",
            ["practice"],
            buckets=POLL_LAG_BUCKETS,
            registry=self.registry,
        )
        if store is not None:
            self.watch(store, self.practices)

    def watch(
        self, store: StateStore, practices: Callable[[], Sequence[OpsPractice] | None]
    ) -> None:
        """Read ``store`` and the ``practices``' budgets at each scrape (once per process)."""
        self.store = store
        self.practices = practices
        self.registry.register(self)

    def collect(self) -> Iterator[Metric]:
        """The gauges of every practice (empty families when nothing is served yet)."""
        served = self.practices() or ()
        store = self.store
        if store is None:  # not watching a store yet: nothing to read
            return
        up = GaugeMetricFamily(
            "practiceflow_store_up", "1 when the state store answered this scrape, else 0"
        )
        runs = _gauge("runs", "Runs by status", "practice", "status")
        doubt = _gauge(
            "steps_in_doubt", "Steps held for a person: a write that may or may not have acted"
        )
        waiting = _gauge("events_waiting", "Events stored, not yet handled")
        attention = _gauge(
            "attention",
            "Attention entries (gaps, subscriptions in doubt, held deliveries) by status:"
            " open waits for a person, checking for a sweep, closed was settled",
            "practice",
            "kind",
            "status",
        )
        try:
            counts = store.practice_counts()
            entries = store.count_attention()
        except PracticeflowError as exc:
            logger.warning("metrics: the state store did not answer: %s", exc)
            counts = None
        up.add_metric([], 0 if counts is None else 1)
        yield up
        if counts is not None:
            names = sorted({*(p.name for p in served), *counts})
            for name in filter(self.reports, names):
                found = counts.get(name)
                for status in RUN_STATUSES:
                    runs.add_metric([name, status], found.runs.get(status, 0) if found else 0)
                doubt.add_metric([name], found.steps_in_doubt if found else 0)
                waiting.add_metric([name], found.events_waiting if found else 0)
            yield runs
            yield doubt
            yield waiting
            for (name, kind, state), count in sorted(entries.items()):
                if self.reports(name):
                    attention.add_metric([name, kind, state], count)
            yield attention
        yield from self._budgets(served)

    def _budgets(self, served: Sequence[OpsPractice]) -> Iterator[Metric]:
        remaining = _gauge(
            "budget_remaining",
            "Requests the practice may still send in each rolling rate window",
            "practice",
            "window",
        )
        limit = _gauge(
            "budget_limit", "The practice's limit in each rate window", "practice", "window"
        )
        paused = _gauge(
            "budget_paused_seconds",
            "Seconds the practice's requests are still held after a 429 (Retry-After)",
        )
        for practice in served:
            budget = practice.budget
            if budget is None or not self.reports(practice.name):
                continue
            limits = budget.limits
            caps = {"minute": limits.per_minute, "hour": limits.per_hour, "day": limits.per_day}
            try:
                used = window_use(budget)
            except Exception as exc:  # a scrape must not fail on one practice's bucket
                logger.warning("metrics: budget of %s not read: %s", practice.name, exc)
                used = None
            for label, _ in WINDOWS:
                limit.add_metric([practice.name, label], caps[label])
                if used is not None:
                    remaining.add_metric([practice.name, label], max(0, caps[label] - used[label]))
            until = budget.paused_until
            left = 0.0 if until is None else max(0.0, until - budget.clock())
            paused.add_metric([practice.name], left)
        yield remaining
        yield limit
        yield paused

    def counter(self, practice: Callable[[], str]) -> Callable[[str], None]:
        """A transport hook's ``count(outcome)`` for ``practice()``, read at each answer."""

        def count(outcome: str) -> None:
            self.count(practice(), outcome)

        return count

    def count(self, practice: str, outcome: str) -> None:
        """Count one answer of a practice's request: ``2xx`` ... ``5xx``, ``429`` or ``error``."""
        self.requests.labels(practice, outcome).inc()

    def poll_started(self, practice: str, scheduled_at: float, now: float | None = None) -> None:
        """Record a poll's lag: due at Unix time ``scheduled_at``, started ``now``."""
        lag = max(0.0, (time.time() if now is None else now) - scheduled_at)
        self.poll_lag.labels(practice).observe(lag)

    def exposition(self) -> bytes:
        """The Prometheus text format of every metric (reads the store: blocking)."""
        return text_format(self.registry)

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """``(ready, detail)``: started, store reachable, subscriptions active. One in doubt
        (needing attention) does not make it unready: that would take every other trigger's
        receiver out of a load balancer."""
        served = self.practices()
        if served is None or self.store is None:
            return False, {"problems": ["starting: the practices are not served yet"]}
        problems: list[str] = []
        attention: list[str] = []
        try:
            subscriptions = {
                (record.practice, record.trigger_key): record.status
                for record in self.store.list_subscriptions()
            }
            for practice in served:
                for trigger in practice.webhooks:
                    status = subscriptions.get((practice.name, trigger))
                    if status == "active":
                        continue
                    shown = f"{practice.name} / {trigger}: subscription {status or 'missing'}"
                    listed = self.store.list_attention(
                        practice=practice.name,
                        kind="subscription_in_doubt",
                        trigger=trigger,
                        statuses=("open",),
                        limit=1,
                    )
                    (attention if status is not None and listed else problems).append(shown)
        except PracticeflowError as exc:
            return False, {"problems": [f"the state store did not answer: {exc}"]}
        detail = {"practices": len(served), "problems": problems, "attention": attention}
        return not problems, detail


def ops_routes(metrics: OpsMetrics) -> list[BaseRoute]:
    """The three routes over one process's metrics (put them before any catch-all)."""

    async def healthz(request: Request) -> Response:
        del request
        return JSONResponse({"status": "alive"})

    async def readyz(request: Request) -> Response:
        del request
        ready, detail = await run_in_threadpool(metrics.readiness)
        body = {"status": "ready" if ready else "not ready", **detail}
        return JSONResponse(body, 200 if ready else 503)

    async def scrape(request: Request) -> Response:
        del request
        text = await run_in_threadpool(metrics.exposition)
        return Response(text, media_type=CONTENT_TYPE_LATEST)

    return [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", scrape, methods=["GET"]),
    ]


class OpsServer(ThreadedServer):
    """The three routes alone, served by uvicorn in a daemon thread (``worker --ops-listen``)."""

    def __init__(self, metrics: OpsMetrics, host: str, port: int) -> None:
        super().__init__(Starlette(routes=ops_routes(metrics)), host, port, "pf-ops")

    @property
    def url(self) -> str:
        """The base URL, such as ``http://127.0.0.1:9464``."""
        return self.root

    def start(self, timeout: float = 5.0) -> OpsServer:
        """Start serving and wait until the socket listens (a ConfigError if it does not)."""
        if not self.serve(timeout):
            message = f"--ops-listen {self.host}:{self.port}: did not start (port in use?)"
            raise ConfigError(message)
        return self
