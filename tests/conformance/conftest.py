"""Fixtures of the conformance run: one PostgreSQL database for the worker cells, the
exported OpenAPI document, and the modules x runtimes table printed after the run.

The table's rows are kept in pytest's cache (``conformance/table``), which is shared on disk
by pytest-xdist's workers, so that the process that prints the summary sees every row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from pgserver import shared_server
from practiceflow.cli.db import migrate_state
from practiceflow.export.openapi import openapi_document
from practiceflow.manifest import default_registry
from practiceflow.manifest.loader import load_connector

TABLE_KEY = "conformance/table"


@pytest.fixture(scope="session")
def conformance_pg_url() -> str:
    """A database of the session's PostgreSQL server with the state schema."""
    url = shared_server().new_database("conformance")
    migrate_state(url)
    return url


@pytest.fixture(scope="session")
def openapi_export() -> Mapping[str, Any]:
    """The OpenAPI document ``practiceflow export openapi`` writes for the shipped modules."""
    return openapi_document(default_registry(), load_connector())


def pytest_sessionstart(session: pytest.Session) -> None:
    """Start with an empty table (not in an xdist worker: the controller clears it)."""
    if session.config.cache is not None and not hasattr(session.config, "workerinput"):
        session.config.cache.set(TABLE_KEY, {})


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Print the modules x runtimes table of this run, if the conformance test ran."""
    if config.cache is None or hasattr(config, "workerinput"):
        return
    rows: dict[str, dict[str, str]] = config.cache.get(TABLE_KEY, {})
    if not rows:
        return
    from conformance.table import render

    terminalreporter.write_sep("=", "conformance: modules x runtimes")
    terminalreporter.write_line(render(rows))
