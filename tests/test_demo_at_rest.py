"""After the demo (a webhook run and two polled runs of new clients), a dump of the state
database holds no personal value in clear; the same values read back through the store.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from practiceflow import demo
from practiceflow.state import open_store
from practiceflow.state.sealing import KEY_ENV, KEY_FILE_ENV, MARK

pytestmark = pytest.mark.integration

#: Keys of personal fields in the demo's records (names, emails, phones, addresses).
PERSONAL_KEY = re.compile(r"name|email|phone|address|mobile", re.IGNORECASE)
#: Every JSON column of the schema.
JSON_COLUMNS = {
    "events": ("payload",),
    "runs": ("origin", "error"),
    "steps": ("request", "output", "error"),
    "step_journal": ("detail",),
}


def _personal(value: Any, key: str = "") -> Iterator[str]:
    if isinstance(value, dict):
        for name, item in value.items():
            yield from _personal(item, str(name))
    elif isinstance(value, list):
        for item in value:
            yield from _personal(item, key)
    elif isinstance(value, str) and len(value) >= 4 and PERSONAL_KEY.search(key):
        yield value


def test_a_dump_after_the_demo_holds_no_personal_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.delenv(KEY_FILE_ENV, raising=False)
    folder = tmp_path / "demo"
    folder.mkdir()

    @contextlib.contextmanager
    def kept_folder(prefix: str = "") -> Iterator[str]:
        yield str(folder)

    monkeypatch.setattr(demo.tempfile, "TemporaryDirectory", kept_folder)
    monkeypatch.setattr(demo, "screenshot", lambda url, path: (None, "not in this test"))
    assert demo.main() == 0

    database = folder / "state.db"
    assert (folder / "state.db.key").stat().st_mode & 0o777 == 0o600
    personal: set[str] = set()
    with open_store(str(database)) as store:
        runs = store.list_runs()
        assert len(runs) == 3
        for run in runs:
            personal.update(_personal(run.origin))
            for step in store.get_steps(run.run_id):
                personal.update(_personal(step.request))
                personal.update(_personal(step.output))
            for source in ("new_client", "proposal_accepted"):
                event = store.get_event(run.practice, source, run.event_id)
                if event is not None:
                    personal.update(_personal(event.payload))
    assert {"Harbour Trust", "Ridge Partners"} <= personal  # read back in full

    with sqlite3.connect(database) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        dump = "\n".join(
            repr(row)
            for table in tables
            for row in db.execute(f"SELECT * FROM {table}")  # noqa: S608 - catalog names
        )
        for table, columns in JSON_COLUMNS.items():
            for column in columns:
                for (text,) in db.execute(f"SELECT {column} FROM {table}"):  # noqa: S608
                    if text is not None:
                        assert set(json.loads(text)) <= {MARK, "source"}, (table, column)
    leaked = sorted(value for value in personal if value in dump)
    assert leaked == []
