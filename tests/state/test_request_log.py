"""RequestLog: admitted requests are counted in memory and written a batch at a time."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path

import pytest

from practiceflow.errors import StoreError
from practiceflow.state import SQLiteStore
from practiceflow.state.request_log import RequestLog

P = "practice-a"
EPOCH = datetime(2025, 1, 1).astimezone()


class CountingStore(SQLiteStore):
    """A SQLite store that remembers each batch of request counts, and its thread."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.batches: list[int] = []
        self.threads: list[int] = []
        self.fail_with: Exception | None = None
        self.written = threading.Condition()

    def record_requests(self, practice: str, times: Sequence[datetime]) -> None:
        self.batches.append(len(times))
        self.threads.append(threading.get_ident())
        if self.fail_with is not None:
            raise self.fail_with
        super().record_requests(practice, times)
        with self.written:
            self.written.notify_all()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[CountingStore]:
    with CountingStore(tmp_path / "state.db") as opened:
        yield opened


def _until(store: CountingStore, check: Callable[[], bool]) -> bool:
    """Wait until a batch written by the log makes ``check`` true: woken by each write, so
    a loaded machine only makes it slower; the minute is a bound against a hang."""
    with store.written:
        return store.written.wait_for(check, timeout=60)


def test_counts_wait_in_memory_and_are_written_together_on_close(store: CountingStore) -> None:
    with RequestLog(store, P, every=60, most=1000) as log:
        for _ in range(50):
            log.admitted()
        time.sleep(0.05)
        assert store.batches == []  # nothing written per request
        assert store.request_counts(P, EPOCH) == 0
    assert store.batches == [50]
    assert store.request_counts(P, EPOCH) == 50


def test_a_full_batch_is_written_at_once_by_the_log_thread(store: CountingStore) -> None:
    with RequestLog(store, P, every=60, most=10) as log:
        for _ in range(25):
            log.admitted()
        assert _until(store, lambda: store.request_counts(P, EPOCH) >= 20)
        assert threading.get_ident() not in store.threads  # not on the requesting thread
    assert sum(store.batches) == 25
    assert len(store.batches) <= 4
    assert store.request_counts(P, EPOCH) == 25


def test_a_lone_request_is_written_within_every_seconds(store: CountingStore) -> None:
    with RequestLog(store, P, every=0.05) as log:
        log.admitted()
        # A quiet period must not leave the chart behind: no later request, no close.
        assert _until(store, lambda: store.request_counts(P, EPOCH) == 1)
    assert store.batches == [1]


def test_flush_writes_what_is_waiting_on_the_calling_thread(store: CountingStore) -> None:
    with RequestLog(store, P, every=60) as log:
        log.admitted()
        log.admitted(at=EPOCH)
        log.flush()
        assert store.request_counts(P, EPOCH) == 2
        assert store.threads == [threading.get_ident()]


def test_a_request_after_close_is_written_at_once(store: CountingStore) -> None:
    log = RequestLog(store, P)
    log.close()
    log.close()
    log.admitted()
    assert store.batches == [1]
    assert store.request_counts(P, EPOCH) == 1


def test_a_refused_batch_is_logged_and_never_stops_a_request(
    store: CountingStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.fail_with = StoreError("state database x: the disk is full")
    with (
        caplog.at_level(logging.WARNING, "practiceflow.state.request_log"),
        RequestLog(store, P, every=60) as log,
    ):
        log.admitted()
        log.admitted()
    assert store.batches == [2]
    assert "2 request count(s) not written" in caplog.text
    assert "disk is full" in caplog.text


@pytest.mark.parametrize(("every", "most"), [(0, 10), (-1, 10), (1, 0)])
def test_bad_settings_are_refused(store: CountingStore, every: float, most: int) -> None:
    with pytest.raises(ValueError, match="every"):
        RequestLog(store, P, every=every, most=most)
