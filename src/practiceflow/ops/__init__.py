"""Operating ``serve`` and ``worker``: liveness, readiness and Prometheus metrics.

``GET /healthz``, ``/readyz`` and ``/metrics`` (:func:`ops_routes`), mounted beside the
webhook receiver or the console, or served alone (:class:`OpsServer`); the figures per
practice (:class:`OpsMetrics`), and the transport hook that counts answers
(:func:`counted_session`).
"""

from __future__ import annotations

from practiceflow.ops._answer_counter import counted_session
from practiceflow.ops._metrics import OpsMetrics, OpsPractice, serve_practices, window_use
from practiceflow.ops._routes import OpsServer, ops_routes

__all__ = [
    "OpsMetrics",
    "OpsPractice",
    "OpsServer",
    "counted_session",
    "ops_routes",
    "serve_practices",
    "window_use",
]
