"""Operating ``serve`` and ``worker``: ``GET /healthz``, ``/readyz`` and ``/metrics``
(Prometheus), beside the receiver or the console or alone; see docs/deploy.md."""

from __future__ import annotations

from practiceflow.ops._metrics import (
    OpsMetrics,
    OpsPractice,
    OpsServer,
    counted_session,
    ops_routes,
    window_use,
)

__all__ = [
    "OpsMetrics",
    "OpsPractice",
    "OpsServer",
    "counted_session",
    "ops_routes",
    "window_use",
]
