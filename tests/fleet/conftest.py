"""Fixtures of the fleet tests: a fresh PostgreSQL database on the session's server.

The server is ``tests/pgserver.py``'s (initdb in a temporary folder, 127.0.0.1 only),
shared with the state store suite.
"""

from __future__ import annotations

import pytest

from pgserver import PostgresServer, shared_server
from practiceflow.cli.db import migrate_state


@pytest.fixture(scope="session")
def pg_server() -> PostgresServer:
    """The session's throw-away PostgreSQL server."""
    return shared_server()


@pytest.fixture(scope="session")
def fleet_template(pg_server: PostgresServer) -> str:
    """A database with the state schema and the job queue, to copy (faster than migrating)."""
    url = pg_server.new_database("fleet_template")
    migrate_state(url)
    return url.rsplit("/", 1)[1]


@pytest.fixture
def empty_pg_url(pg_server: PostgresServer) -> str:
    """A URL naming a fresh, empty database of that server."""
    return pg_server.new_database("fleet_empty")


@pytest.fixture
def pg_url(pg_server: PostgresServer, fleet_template: str) -> str:
    """A URL naming a fresh database with the state schema and the job queue installed."""
    return pg_server.new_database("fleet", template=fleet_template)
