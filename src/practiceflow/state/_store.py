"""The state store, :class:`StateStore`: every table's SQL mixin joined into one class."""

from __future__ import annotations

from practiceflow.state._runs_sql import SQLRuns
from practiceflow.state._sql import SQLCursors, SQLEvents
from practiceflow.state.attention_rows import SQLAttention
from practiceflow.state.heartbeats import SQLHeartbeats
from practiceflow.state.pending_writes import PendingWriteStore
from practiceflow.state.run_retries import SQLRunRetries


class StateStore(
    SQLEvents,
    PendingWriteStore,
    SQLAttention,
    SQLCursors,
    SQLHeartbeats,
    SQLRuns,
    SQLRunRetries,
):
    """Durable state of triggers and runs, opened with :func:`~practiceflow.state.open_store`,
    closed with :meth:`close` (or as a context manager); safe to share between threads.

    Attributes:
        scheme: the URL scheme the store is registered under (``sqlite``).
        local_reads: whether reads never wait on a network (the webhook receiver then
            looks subscriptions up on its event loop).
    """
