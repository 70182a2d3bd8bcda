"""Operating ``serve`` and ``worker``: liveness, readiness and Prometheus metrics.

This folder owns what an orchestrator and a monitoring system read of a running process:

* ``GET /healthz`` (alive), ``GET /readyz`` (store reachable, subscriptions in place) and
  ``GET /metrics`` (Prometheus text format, through ``prometheus-client``), mounted beside
  the webhook receiver or the console, or served alone (:class:`OpsServer`);
* :class:`OpsMetrics`: per practice, requests by outcome (429s included), budget left in
  each window, poll lag, runs by status, steps in doubt, events waiting. Store and budget
  figures are read at scrape time; the rest comes from one transport hook
  (:func:`counted_session`) and the poll's own start.
"""

from __future__ import annotations

from practiceflow.ops._answer_counter import CountingAdapter, counted_session, outcome_of
from practiceflow.ops._metrics import (
    OUTCOMES,
    WINDOWS,
    OpsMetrics,
    OpsPractice,
    PracticeCollector,
    serve_practices,
    window_use,
)
from practiceflow.ops._routes import OpsServer, ops_routes

__all__ = [
    "OUTCOMES",
    "WINDOWS",
    "CountingAdapter",
    "OpsMetrics",
    "OpsPractice",
    "OpsServer",
    "PracticeCollector",
    "counted_session",
    "ops_routes",
    "outcome_of",
    "serve_practices",
    "window_use",
]
