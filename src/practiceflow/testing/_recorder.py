"""``practiceflow test --record`` (docs/testing.md, section 4): a case run against a server
keeps its answers as its cassette, scrubbed; also :func:`running_sandbox`, which it starts.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from practiceflow.api import Client
from practiceflow.manifest import ActionModule, TriggerModule
from practiceflow.sandbox.config import SandboxConfig
from practiceflow.sandbox.server import SandboxHandle, start_sandbox
from practiceflow.testing._case import TestCase, TestFile
from practiceflow.testing._case_run import (
    CaseResult,
    case_event,
    case_personal_values,
    load_target,
    run_case,
)
from practiceflow.testing._cassette import Cassette, save_cassette
from practiceflow.testing._clock import FakeClock
from practiceflow.testing._recording import make_cassette, registry_personal_names
from practiceflow.testing._replay import CassetteRecorder


@contextmanager
def running_sandbox(
    host: str = "127.0.0.1", port: int = 0, **options: Any
) -> Iterator[SandboxHandle]:
    """Run a sandbox for the duration of a ``with`` block.

    Args:
        host: a loopback address.
        port: ``0`` picks a free port.
        **options: fields of :class:`SandboxConfig` (``seed``, ``entities``, ``page_size``,
            ``rate_limits``, ``wallet``, ``admin_token``, ``webhook_retry_scale`` ...).

    Yields:
        The running :class:`SandboxHandle` (``url``, ``base_url()``, ``credentials()``,
        ``admin_token``, ``admin()``, ``state``).
    """
    handle = start_sandbox(SandboxConfig(**options), host, port)
    try:
        yield handle
    finally:
        handle.stop()


@dataclass(frozen=True)
class Server:
    """Where a recording sends: a base URL and the credentials for it."""

    base_url: str
    client_id: str | None
    secret: str | None


@contextmanager
def recording_server(base_url: str | None) -> Iterator[Server]:
    """The server to record against: ``base_url`` with the environment's credentials, or
    a sandbox started on 127.0.0.1 for the duration (its read-write credentials)."""
    if base_url is not None:
        yield Server(base_url, None, None)
        return
    with running_sandbox() as sandbox:
        client_id, secret = sandbox.credentials("anz", "rw")
        yield Server(sandbox.base_url("anz"), client_id, secret)


def record_case(
    test: TestFile, case: TestCase, where: Server
) -> tuple[Path, CaseResult, CaseResult]:
    """Record the cassette of a ``case`` that names ``given.cassette`` against the server
    ``where``, and replay the case from it.

    Returns:
        The cassette written, what the case came to against the server, and what it came
        to replayed from the new cassette (offline).

    Raises:
        ConfigError: the case names no cassette, or the server refused the credentials.
        BugError: a personal value or secret would have been left in the cassette.
    """
    assert case.cassette is not None  # the caller picks cases that name one
    target, registry = load_target(test)
    recorder = CassetteRecorder(where.base_url)

    def client_for(session: Any, clock: FakeClock) -> Client:
        # Written answers first, then the server; the server's own clock paces a recording.
        del clock
        return Client(where.client_id, where.secret, base_url=where.base_url, session=session)

    live = run_case(
        test,
        case,
        target=target,
        registry=registry,
        client_for=client_for,
        base_url=where.base_url,
        fallback=recorder,
    )
    cassette = _cassette(test, case, target, registry, recorder, where)
    path = save_cassette(cassette, case.cassette)
    replayed = run_case(test, case, target=target, registry=registry)
    return path, live, replayed


def _cassette(
    test: TestFile,
    case: TestCase,
    target: Any,
    registry: Any,
    recorder: CassetteRecorder,
    where: Server,
) -> Cassette:
    extra = set(case_personal_values(target, registry, case))
    if where.secret:
        extra.add(where.secret)
    scrubbing: dict[str, Any] = {"names": registry_personal_names(registry), "extra": extra}
    kind: Literal["action", "trigger", "recipe"]
    if isinstance(target, ActionModule):
        key, kind, data = target.key, "action", dict(case.given.get("input") or {})
        scrubbing["input_pii"] = target.pii_paths
        scrubbing["output_schema"] = target.output.schema
        scrubbing["secret_paths"] = target.secret_paths
    elif isinstance(target, TriggerModule):
        key, kind = target.key, "trigger"
        data = dict((case.given.get("poll") or {}).get("with") or {})
        scrubbing["output_schema"] = {"type": "array", "items": target.output_schema}
    else:
        key, kind, data = target.name, "recipe", {"event": case_event(target, case)}
    return make_cassette(key, kind, "recorded", data, recorder.exchanges, **scrubbing)
