"""Fixtures of the conformance run: one PostgreSQL database for the worker cells and the
exported OpenAPI document. The table of the run is printed by ``tests/conftest.py``'s
terminal summary (see :mod:`conformance.table`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from pgserver import shared_server
from practiceflow.cli.db import migrate_state
from practiceflow.export.openapi import openapi_document
from practiceflow.manifest import default_registry
from practiceflow.manifest.loader import load_connector


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
