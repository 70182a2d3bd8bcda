"""The requests a rate budget admits, counted in the state store a batch at a time (the
console charts them). A ``kill -9`` costs the last few seconds of counts, nothing else; a
batch the store refuses is logged and dropped: bookkeeping never stops a request.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Final

from practiceflow.errors import StoreError
from practiceflow.state._store import StateStore

logger = logging.getLogger("practiceflow.state.request_log")

#: Seconds a counted request may wait in memory before its batch is written.
DEFAULT_EVERY: Final = 1.0


class RequestLog:
    """Counts the requests sent for one practice, written by its own thread at most
    ``every`` seconds after a batch's first, at once at ``most``, and on close.

    Give :meth:`admitted` to the budget (``client.budget.on_admit(log.admitted)``) and
    close the log before the store (``with RequestLog(store, practice) as log:``).
    """

    def __init__(
        self,
        store: StateStore,
        practice: str,
        *,
        every: float = DEFAULT_EVERY,
        most: int = 200,
    ) -> None:
        if every <= 0 or most < 1:
            message = f"every {every!r}, most {most!r}: expected > 0 seconds and >= 1 request"
            raise ValueError(message)
        self.store = store
        self.practice = practice
        self.every = every
        self.most = most
        self._times: list[datetime] = []
        self._changed = threading.Condition()
        self._closed = False
        self._writer: threading.Thread | None = None

    def __enter__(self) -> RequestLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def admitted(self, at: datetime | None = None) -> None:
        """Count one request (the budget's ``on_admit``); after :meth:`close`, written
        at once."""
        stamp = self.store.now() if at is None else at
        with self._changed:
            if not self._closed:
                self._times.append(stamp)
                if self._writer is None:
                    self._writer = threading.Thread(
                        target=self._write_batches, name="pf-request-log", daemon=True
                    )
                    self._writer.start()
                # Wake the writer only to start a batch's wait or to end it early: a
                # wake-up per request would cost about what the commit per request did.
                if len(self._times) == 1 or len(self._times) >= self.most:
                    self._changed.notify()
                return
        self._write([stamp])

    def flush(self) -> None:
        """Write the requests counted so far (one commit), on the calling thread."""
        with self._changed:
            batch, self._times = self._times, []
        self._write(batch)

    def close(self) -> None:
        """Write what is left and stop the writer thread; idempotent."""
        with self._changed:
            self._closed = True
            self._changed.notify()
            writer, self._writer = self._writer, None
        if writer is not None:
            writer.join()
        self.flush()

    def _write_batches(self) -> None:
        with self._changed:
            while not self._closed:
                if not self._times:
                    self._changed.wait()
                    continue
                # The first of a batch waits up to `every` seconds for the others.
                self._changed.wait_for(
                    lambda: self._closed or len(self._times) >= self.most, self.every
                )
                batch, self._times = self._times, []
                self._changed.release()
                try:
                    self._write(batch)
                finally:
                    self._changed.acquire()

    def _write(self, batch: list[datetime]) -> None:
        if not batch:
            return
        try:
            self.store.record_requests(self.practice, batch)
        except StoreError as exc:
            logger.warning(
                "%d request count(s) not written, the chart misses them: %s", len(batch), exc
            )
        except Exception:  # bookkeeping must never stop a request, or the runner
            logger.exception("%d request count(s) not written", len(batch))
