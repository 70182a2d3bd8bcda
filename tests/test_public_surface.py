"""The names users import from ``practiceflow`` are pinned."""

from __future__ import annotations

import subprocess
import sys

import pytest

import practiceflow

PINNED = [
    "ActionResult",
    "ApiError",
    "AuthError",
    "BugError",
    "Client",
    "ConfigError",
    "InDoubtError",
    "InputError",
    "ManifestError",
    "NotFoundError",
    "PracticeflowError",
    "RateLimitError",
    "ServerError",
    "StoreError",
    "TemplateError",
    "TransportError",
    "ValidationError",
    "WriteAccessError",
    "__version__",
    "default_registry",
    "load_modules",
    "load_recipe",
    "open_store",
    "run_action",
    "verify",
    "webhooks",
]


def test_all_is_pinned() -> None:
    assert sorted(practiceflow.__all__) == PINNED


@pytest.mark.parametrize("name", PINNED)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(practiceflow, name) is not None


def test_public_names_are_the_library_objects() -> None:
    from practiceflow.api import Client
    from practiceflow.engine import run_action
    from practiceflow.webhooks import verify

    assert practiceflow.Client is Client
    assert practiceflow.run_action is run_action
    assert practiceflow.verify is verify
    assert practiceflow.webhooks.verify is verify


TESTING = [
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
    "build_test_file",
    "untested",
    "write_module_test",
    "write_recipe_test",
]


def test_the_testing_helpers_are_pinned() -> None:
    import practiceflow.testing

    assert sorted(practiceflow.testing.__all__) == sorted(TESTING)
    assert all(getattr(practiceflow.testing, name) is not None for name in TESTING)


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = practiceflow.nope  # type: ignore[attr-defined]


def test_import_is_light() -> None:
    code = "import sys, practiceflow; print('requests' in sys.modules, 'jinja2' in sys.modules)"
    out = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["False", "False"]
