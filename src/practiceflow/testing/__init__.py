"""Public helpers for testing code against the Partner API without credentials
(docs/testing.md is the guide): :func:`running_sandbox` (the local simulator on 127.0.0.1),
:class:`FakeClock`, cassettes (:class:`CassetteRecorder`, :class:`CassettePlayer`,
:func:`make_cassette` with personal values and secrets scrubbed), and ``*.test.yaml`` files
run offline by :func:`run_case` / :func:`run_test_file` (``practiceflow test``), compared by
:func:`case_differences`, recorded by :func:`record_case`. The pytest plugin
(:mod:`practiceflow.testing.pytest_plugin`) collects test files and gives Python tests fixtures.
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
