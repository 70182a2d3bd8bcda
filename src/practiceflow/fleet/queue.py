"""The fleet's job queue on procrastinate: which jobs exist, and the locks that order them.

Jobs (task names under the ``practiceflow`` namespace):

* ``run_events(practice)``: run the practice's pending events (``Fleet.run_pending``). Its
  lock and its queueing lock are the practice's: one replica at a time runs them, and one
  job waits per practice however many events arrive. ``run_event``, the per-event job of
  earlier versions, drains its practice the same way (jobs queued before an upgrade run).
* ``tick(timestamp)`` (``--polls queue``): every second, queue the polls and sweeps due
  (:mod:`.schedule`); ``poll`` and ``sweep`` are locked per (practice, trigger) and practice.
* ``retry_stalled``: give a dead replica's jobs back to the queue; the journal, not the
  queue, then decides what was done. ``prune_jobs``: delete the jobs that did not succeed
  once :data:`KEEP_ENDED_JOBS_H` hours old (a job that succeeds is deleted as it ends).

The tasks find the replica's fleet in the job context (:func:`fleet_of`).
"""

from __future__ import annotations

import contextlib
import logging
import math
from contextlib import AbstractContextManager
from typing import Any, Final, Protocol, TypeVar

import procrastinate
import psycopg
import psycopg_pool
from procrastinate import exceptions as queue_errors
from procrastinate.jobs import Status
from procrastinate.schema import SchemaManager
from psycopg.abc import PQGen

from practiceflow.errors import BugError
from practiceflow.fleet.schedule import Due

logger = logging.getLogger("practiceflow.fleet")
RV = TypeVar("RV")

#: Prefix of every task name in the queue.
NAMESPACE: Final = "practiceflow"
#: Seconds without a heartbeat after which a replica's jobs are given to others.
STALLED_AFTER_S: Final = 30.0

#: Key of the fleet in the worker's ``additional_context``.
FLEET_CONTEXT_KEY: Final = "fleet"
#: Which ended jobs the worker deletes as they end (procrastinate's ``delete_jobs``).
DELETE_JOBS: Final = "successful"
#: Hours a job that failed, was cancelled or aborted is kept (``prune_jobs``).
KEEP_ENDED_JOBS_H: Final = 24 * 7
#: Seconds between the worker's looks for jobs that became due (procrastinate's
#: ``fetch_job_polling_interval``). A job queued for later (:func:`postpone`: a practice
#: whose slots were all taken, a burst of its events) wakes no worker when its time comes:
#: without a look this often it waits for the next job queued, or procrastinate's 5 s.
FETCH_EVERY_S: Final = 0.5
#: The same for a replica that owns its practices' polls (``worker --polls owned``): there
#: a job is queued for later only by a 429's pause, itself seconds long, and each look
#: costs an idle replica a query and its event loop's turn. It is also how soon a job is
#: found whose wake-up the worker missed: procrastinate clears the wake-up after each look,
#: so a job queued while a look that found nothing was under way waits for the next (at
#: 2 s, one event of 2,058 at N = 10,000 waited 2.6 s for its job to start).
OWNED_FETCH_EVERY_S: Final = 1.0
#: Seconds a worker connection's wait sleeps between looks at nothing but its socket.
#: psycopg's own 0.1 s made the queue's idle LISTEN connection wake ten times a second (a
#: third of an idle replica's CPU); an asyncio task is cancelled, and a signal delivered,
#: without those wakes.
_IDLE_WAKE_S: Final = 10.0


class _QuietConnection(psycopg.AsyncConnection[Any]):
    """A worker's queue connection that sleeps until its socket is ready (the LISTEN)."""

    async def wait(
        self, gen: PQGen[RV], interval: float = _IDLE_WAKE_S, timeout: float | None = None
    ) -> RV:
        return await super().wait(gen, interval=interval, timeout=timeout)


def _quiet_pool(**options: Any) -> psycopg_pool.AsyncConnectionPool[Any]:
    """The worker's pool, of quiet connections. Not through the connector's arguments: the
    synchronous connector procrastinate makes from them (before the worker opens) needs
    psycopg's own class."""
    return psycopg_pool.AsyncConnectionPool(connection_class=_QuietConnection, **options)


class FleetJobs(Protocol):
    """What the tasks ask of the fleet a worker runs them for."""

    def slot(self, practice: str) -> AbstractContextManager[float]: ...

    def due_at(self, timestamp: int) -> list[Due]: ...

    def paused_for(self, practice: str) -> float: ...

    def run_pending(self, practice: str) -> str: ...

    def poll(self, practice: str, trigger: str, *, scheduled_at: float | None = None) -> int: ...

    def sweep(self, practice: str) -> int: ...


def fleet_of(context: procrastinate.JobContext) -> FleetJobs:
    """The fleet the worker running this job was started for.

    Raises:
        BugError: the worker was started without one in its ``additional_context``.
    """
    fleet: FleetJobs | None = (context.additional_context or {}).get(FLEET_CONTEXT_KEY)
    if fleet is None:
        raise BugError("a fleet job ran in a worker with no fleet; start it with 'worker'")
    return fleet


def make_app(url: str, *, pool_size: int = 4, sync: bool = False) -> procrastinate.App:
    """A procrastinate app on the fleet's database, with practiceflow's tasks.

    Args:
        url: the ``postgresql://`` URL (the state store's).
        pool_size: connections the queue keeps.
        sync: only defer jobs, from any thread (a synchronous connection pool). The
            worker's app cannot be used from threads of its own: its pool belongs to the
            worker's event loop. The webhook receiver defers through such an app.

    Returns:
        The app (not opened).
    """
    size = max(2, pool_size)
    connector: procrastinate.BaseConnector
    if sync:
        connector = procrastinate.SyncPsycopgConnector(conninfo=url, min_size=1, max_size=size)
    else:
        connector = procrastinate.PsycopgConnector(
            conninfo=url, min_size=1, max_size=size, pool_factory=_quiet_pool
        )
    app = procrastinate.App(connector=connector)
    app.add_tasks_from(blueprint(), namespace=NAMESPACE)
    return app


def install_queue_schema(url: str) -> bool:
    """Install procrastinate's schema in the fleet's database when it is missing.

    Args:
        url: the ``postgresql://`` URL.

    Returns:
        ``True`` when it was installed now, ``False`` when it was there.
    """
    with psycopg.connect(url, autocommit=True) as connection, connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(hashtext('procrastinate schema'))")
        found = connection.execute("SELECT to_regclass('procrastinate_jobs')").fetchone()
        if found is not None and found[0] is not None:
            return False
        schema = SchemaManager.get_schema()
        connection.execute(schema)
    return True


def events_lock(practice: str) -> str:
    """The lock and queueing lock of a practice's ``run_events`` job."""
    return f"events:{practice}"


def defer_events(app: procrastinate.App, practice: str) -> bool:
    """Queue the practice's ``run_events`` job unless one is already waiting (it runs every
    event stored before it starts); whether it was queued."""
    lock = events_lock(practice)
    task = app.tasks[f"{NAMESPACE}:run_events"]
    try:
        task.configure(lock=lock, queueing_lock=lock).defer(practice=practice)
    except queue_errors.AlreadyEnqueued:
        return False
    return True


def postpone(context: procrastinate.JobContext, seconds: float) -> str:
    """Queue the running job again ``seconds`` from now, with its locks and arguments (the
    practice cannot send now: the thread goes to other practices' jobs instead of
    sleeping; a job already waiting for the same work does it). Returns ``postponed``."""
    job = context.job
    task = context.app.tasks[job.task_name]
    delay = max(1, math.ceil(seconds))
    with contextlib.suppress(queue_errors.AlreadyEnqueued):
        task.configure(
            lock=job.lock,
            queueing_lock=job.queueing_lock,
            priority=job.priority,
            schedule_in={"seconds": delay},
        ).defer(**job.task_kwargs)
    logger.info("job %s (%s) postponed %ds", job.id, job.task_name, delay)
    return "postponed"


async def prune_jobs(app: procrastinate.App, keep_hours: int = KEEP_ENDED_JOBS_H) -> None:
    """Delete the jobs that failed, were cancelled or aborted more than ``keep_hours`` ago.

    Args:
        app: the open app.
        keep_hours: how long such a job is kept after it ended.
    """
    await app.job_manager.delete_old_jobs(
        nb_hours=keep_hours, include_failed=True, include_cancelled=True, include_aborted=True
    )


def blueprint() -> procrastinate.Blueprint:
    """practiceflow's tasks, in a new blueprint (an app renames the tasks it adds)."""
    tasks = procrastinate.Blueprint()

    def drain(context: procrastinate.JobContext, practice: str) -> str:
        fleet = fleet_of(context)
        wait = fleet.paused_for(practice)
        if wait:  # a 429's pause: the thread goes to other practices meanwhile
            return postpone(context, wait)
        outcome = fleet.run_pending(practice)
        wait = fleet.paused_for(practice)
        return postpone(context, wait) if wait else outcome

    retry = procrastinate.RetryStrategy(max_attempts=5, wait=2)

    @tasks.task(name="run_events", retry=retry, pass_context=True)
    def run_events(context: procrastinate.JobContext, practice: str) -> str:
        """Run the pending events of ``practice`` (see :meth:`.runtime.Fleet.run_pending`)."""
        return drain(context, practice)

    @tasks.task(name="run_event", retry=retry, pass_context=True)
    def run_event(
        context: procrastinate.JobContext, practice: str, source: str, event_id: str
    ) -> str:
        """A job queued by an earlier version: its event is pending with the others."""
        del source, event_id
        return drain(context, practice)

    @tasks.task(name="tick", pass_context=True)
    async def tick(context: procrastinate.JobContext, timestamp: int) -> int:
        """Queue the polls and sweeps due at this second (see :mod:`.schedule`)."""
        app = context.app
        queued = 0
        for due in fleet_of(context).due_at(timestamp):
            kwargs: dict[str, Any] = {"timestamp": timestamp, "practice": due.practice}
            if due.kind == "poll":
                kwargs["trigger"] = due.trigger
            task = app.tasks[f"{NAMESPACE}:{due.kind}"]
            try:
                await task.configure(lock=due.lock, queueing_lock=due.lock).defer_async(**kwargs)
            except queue_errors.AlreadyEnqueued:
                continue  # the previous one still waits: it polls for this tick too
            queued += 1
        return queued

    @tasks.task(name="poll", pass_context=True)
    def poll(context: procrastinate.JobContext, timestamp: int, practice: str, trigger: str) -> int:
        """Poll one trigger of one practice (due at ``timestamp``); queue the new events."""
        fleet = fleet_of(context)
        with fleet.slot(practice) as wait:
            if wait:
                postpone(context, wait)
                return 0
            return fleet.poll(practice, trigger, scheduled_at=timestamp)

    @tasks.task(name="sweep", pass_context=True)
    def sweep(context: procrastinate.JobContext, timestamp: int, practice: str) -> int:
        """Queue the practice's ``run_events`` when an event of it is pending."""
        del timestamp
        return fleet_of(context).sweep(practice)

    @tasks.task(name="retry_stalled", pass_context=True)
    async def retry_stalled(context: procrastinate.JobContext, timestamp: int) -> int:
        """Give the jobs of replicas without a heartbeat back to the queue."""
        del timestamp
        app = context.app
        stalled_after: Any = (context.additional_context or {}).get(
            "stalled_after", STALLED_AFTER_S
        )
        jobs = await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=float(stalled_after))
        count = 0
        for job in jobs:
            if job.task_name == f"{NAMESPACE}:retry_stalled":
                continue
            logger.warning(
                "job %s (%s) of a stalled replica: back to the queue", job.id, job.task_name
            )
            try:
                await app.job_manager.retry_job(job)
            except queue_errors.UniqueViolation:
                # A job for the same work is already waiting (a sweep queued it): that one
                # does it, once this one lets go of the lock.
                await app.job_manager.finish_job(job, Status.ABORTED, delete_job=False)
            count += 1
        return count

    @tasks.task(name="prune_jobs", pass_context=True)
    async def prune_jobs_task(context: procrastinate.JobContext, timestamp: int) -> None:
        """Delete the ended jobs kept long enough (see :func:`prune_jobs`)."""
        del timestamp
        await prune_jobs(context.app)

    return tasks
