"""The scheme registry behind ``open_store``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from practiceflow.errors import BugError, ConfigError
from practiceflow.state import SQLiteStore, open_store, register_store, registered_schemes
from practiceflow.state import _store as registry_module


@pytest.fixture
def clean_registry() -> Iterator[None]:
    saved = dict(registry_module._STORES)
    yield
    registry_module._STORES.clear()
    registry_module._STORES.update(saved)


def test_sqlite_is_registered() -> None:
    assert "sqlite" in registered_schemes()


@pytest.mark.parametrize(
    "url",
    [
        "mysql://user:hunter2@db.internal/pf",
        "redis://:hunter2@localhost/0",
        "SQLITE3://x",
    ],
)
def test_an_unknown_scheme_lists_the_valid_ones_and_hides_the_rest(url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        open_store(url)
    text = str(caught.value)
    scheme = url.split("://")[0].lower()
    assert f"got scheme {scheme!r}; valid values are {registered_schemes()}" in text
    assert "hunter2" not in text
    assert "db.internal" not in text


@pytest.mark.usefixtures("clean_registry")
def test_a_registered_class_serves_its_scheme(tmp_path: Path) -> None:
    class Custom(SQLiteStore):
        scheme = "custom"

        @classmethod
        def from_url(cls, url, *, clock=None):
            return cls(tmp_path / "custom.db", clock=clock)

    register_store("CUSTOM", Custom)
    assert "custom" in registered_schemes()
    with open_store("custom://anything") as store:
        assert isinstance(store, Custom)


@pytest.mark.usefixtures("clean_registry")
def test_a_registration_that_is_not_a_store_is_a_bug() -> None:
    register_store("broken", "practiceflow.state:sqlite_path")
    with pytest.raises(BugError, match="not a StateStore class"):
        open_store("broken://x")
