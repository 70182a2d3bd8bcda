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

* test files (``*.test.yaml``, :mod:`._case`): cases of a recipe or module, each ``given``
  an event, vars, a clock and the API's answers, and what to ``expect`` of each step; run
  offline by :func:`run_case` / :func:`run_test_file` (``practiceflow test``), compared by
  :func:`case_differences`, recorded by :func:`record_case`. :class:`FakeClock` is the
  fake clock they run on. The pytest plugin (:mod:`practiceflow.testing.pytest_plugin`)
  collects test files as items and gives Python tests the same pieces as fixtures.
"""

from __future__ import annotations

from practiceflow.sandbox.config import RateLimits, SandboxConfig
from practiceflow.sandbox.server import SandboxHandle
from practiceflow.testing._case import TestCase, TestFile, build_test_file, load_test_file
from practiceflow.testing._case_run import (
    CaseResult,
    StepView,
    load_target,
    run_case,
    run_recipe_once,
)
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
from practiceflow.testing._expect import case_differences
from practiceflow.testing._recorder import Server, record_case, recording_server, running_sandbox
from practiceflow.testing._recording import make_cassette, personal_names
from practiceflow.testing._replay import (
    REPLAY_BASE_URL,
    CassetteMismatch,
    CassettePlayer,
    CassetteRecorder,
    recorded_request,
    request_differences,
)
from practiceflow.testing._scaffold import write_module_test, write_recipe_test
from practiceflow.testing._suite import (
    CaseOutcome,
    find_test_files,
    junit_xml,
    run_all,
    run_test_file,
    untested,
)

__all__ = [
    "CASSETTE_VERSION",
    "REPLAY_BASE_URL",
    "CaseOutcome",
    "CaseResult",
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
    "Server",
    "StepView",
    "TestCase",
    "TestFile",
    "build_test_file",
    "case_differences",
    "find_test_files",
    "junit_xml",
    "load_cassette",
    "load_target",
    "load_test_file",
    "make_cassette",
    "personal_names",
    "record_case",
    "recorded_request",
    "recording_server",
    "request_differences",
    "run_all",
    "run_case",
    "run_recipe_once",
    "run_test_file",
    "running_sandbox",
    "save_cassette",
    "scrub",
    "untested",
    "write_module_test",
    "write_recipe_test",
]
