"""``GET /healthz``, ``/readyz`` (else 503 with what is missing) and ``/metrics``. They carry
no secret and no personal data, so they need no console token (a probe cannot send one)."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from practiceflow.errors import ConfigError
from practiceflow.ops._metrics import OpsMetrics
from practiceflow.service.netaddr import ThreadedServer


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
