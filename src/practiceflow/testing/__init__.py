"""Public helpers for testing code against the Partner API without credentials.

* a running sandbox: :func:`running_sandbox` starts the local simulator
  (``practiceflow.sandbox``) on a free port of 127.0.0.1 in a background thread::

      from practiceflow.testing import running_sandbox

      with running_sandbox(seed=7, entities=500) as sandbox:
          client_id, secret = sandbox.credentials("anz", "rw")
          base = sandbox.base_url("anz")          # http://127.0.0.1:PORT/anz
          sandbox.admin("POST", "/_admin/proposals/<key>/accept")

  The pytest fixtures ``sandbox_server`` (session) and ``sandbox`` (reset before each test)
  of this project's ``tests/conftest.py`` are built on it.

* a fake clock: :class:`FakeClock` moves only when a test advances it or code sleeps on
  it; hand it to a state store (``clock=clock``) and to a client or rate budget
  (``clock=clock.monotonic, sleep=clock.sleep``).

* cassettes: a module's recorded exchange with the API (:mod:`._cassette` describes the
  file), recorded with :class:`CassetteRecorder` and replayed without a server by
  :class:`CassettePlayer` (:mod:`._replay`); :func:`make_cassette` turns a recording into
  a cassette with personal values and secrets scrubbed (:mod:`._recording`).
"""

from __future__ import annotations

from practiceflow.testing._cassette import (
    CASSETTE_VERSION,
    Cassette,
    Exchange,
    RecordedRequest,
    RecordedResponse,
    load_cassette,
    save_cassette,
    scrub,
)
from practiceflow.testing._clock import FakeClock
from practiceflow.testing._recording import make_cassette, personal_names
from practiceflow.testing._replay import (
    REPLAY_BASE_URL,
    CassetteMismatch,
    CassettePlayer,
    CassetteRecorder,
    recorded_request,
    request_differences,
)
from practiceflow.testing._sandbox import (
    RateLimits,
    SandboxConfig,
    SandboxHandle,
    running_sandbox,
)

__all__ = [
    "CASSETTE_VERSION",
    "REPLAY_BASE_URL",
    "Cassette",
    "CassetteMismatch",
    "CassettePlayer",
    "CassetteRecorder",
    "Exchange",
    "FakeClock",
    "RateLimits",
    "RecordedRequest",
    "RecordedResponse",
    "SandboxConfig",
    "SandboxHandle",
    "load_cassette",
    "make_cassette",
    "personal_names",
    "recorded_request",
    "request_differences",
    "running_sandbox",
    "save_cassette",
    "scrub",
]
