"""Group commit: the deliveries of one event-loop turn stored in one durable commit.

A delivery is acknowledged only once its event is durably stored; one
:meth:`~practiceflow.state.StateStore.record_events` per batch (one fsync), in one writer
thread so that the loop never waits on a disk. A batch the store refuses (StoreError)
fails every event of it, none acknowledged; any other error is one event's fault: the
batch is then recorded event by event.
"""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor

from practiceflow.errors import BugError, StoreError
from practiceflow.state._store import StateStore
from practiceflow.state.rows import NewEvent

_Item = tuple[NewEvent, "asyncio.Future[bool]"]
_Outcome = bool | Exception


class GroupCommit:
    """Records the events handed to it within ``max_wait`` seconds (0: the event loop's next
    turn), at most ``max_batch``, in one transaction; ``batches`` and ``committed`` count the
    commits and their events."""

    def __init__(
        self,
        store: StateStore,
        *,
        max_batch: int = 256,
        max_wait: float = 0.0,
    ) -> None:
        if max_batch < 1 or max_wait < 0:
            message = f"max_batch {max_batch!r}, max_wait {max_wait!r}: expected >= 1 and >= 0"
            raise BugError(message)
        self.store = store
        self.max_batch = max_batch
        self.max_wait = max_wait
        self.batches = 0
        self.committed = 0
        self._pending: list[_Item] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._busy = False
        self._writer: ThreadPoolExecutor | None = None

    def close(self) -> None:
        """Stop the writer thread once the commit under way ends (a later event starts
        another)."""
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.shutdown(wait=True)

    async def record(self, event: NewEvent) -> bool:
        """Record one event once its batch is committed: ``False`` when its id or signature
        was seen; StoreError when the batch could not be committed (nothing of it was)."""
        loop = asyncio.get_running_loop()
        if self._loop is None or self._loop.is_closed():
            self._loop = loop
        if loop is not self._loop:
            # Served from a second event loop: commit alone rather than mix loops.
            return (await asyncio.to_thread(self.store.record_events, [event]))[0]
        future: asyncio.Future[bool] = loop.create_future()
        self._pending.append((event, future))
        if len(self._pending) >= self.max_batch:
            self._flush()
        elif self._timer is None and not self._busy:
            self._timer = loop.call_later(self.max_wait, self._flush)
        return await future

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        loop = self._loop
        while not self._busy and self._pending and loop is not None:
            batch = self._pending[: self.max_batch]
            self._pending = self._pending[self.max_batch :]
            events = [event for event, _ in batch]
            self._busy = True
            if self._writer is None:
                # One writer thread: commits never contend with each other, and the loop
                # goes on reading the deliveries of the next batch meanwhile.
                self._writer = ThreadPoolExecutor(1, thread_name_prefix="pf-group-commit")
            done = loop.run_in_executor(self._writer, self._commit, events)
            done.add_done_callback(functools.partial(self._settled, batch))

    def _settled(self, batch: list[_Item], finished: asyncio.Future[list[_Outcome]]) -> None:
        self._busy = False
        try:
            outcomes = finished.result()
        except Exception as exc:
            outcomes = [exc] * len(batch)
        self.batches += 1
        self.committed += len(batch)
        for (_, future), outcome in zip(batch, outcomes, strict=True):
            _settle(future, outcome)
        if self._pending:
            self._flush()

    def _commit(self, events: list[NewEvent]) -> list[_Outcome]:
        try:
            return list(self.store.record_events(events))
        except StoreError as exc:
            return [exc] * len(events)
        except Exception as exc:
            if len(events) == 1:
                return [exc]
            return [outcome for event in events for outcome in self._commit([event])]


def _settle(future: asyncio.Future[bool], outcome: bool | Exception) -> None:
    if future.done():  # its waiter was cancelled (the sender hung up)
        return
    if isinstance(outcome, Exception):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)
