"""One replica's side of the fleet: the practices it serves and what each job does.

A :class:`Fleet` holds, per practice of the fleet file, its own client (credentials,
region), its own rate budget shared in PostgreSQL by Client ID, its runners (one per
recipe) and its pollers. A job names its practice, and only that practice's runners and
client touch it: practice A's events can never be run with practice B's credentials.

The practices' clients share one pool of HTTP connections (:attr:`Fleet.connections`):
a practice polls once a minute, longer than a server keeps a connection idle, so a pool
per practice would open a connection per poll. Each request carries its own practice's
credentials, and HTTP/1.1 keeps nothing on a connection between requests.

What the queue delivers more than once, the journal absorbs: an event already handled is
not run again, and a run resumed after a replica died sends no step twice
(a write found ``sent`` is settled by reading back, see :mod:`practiceflow.runner`).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import procrastinate
import requests
from psycopg_pool import ConnectionPool

from practiceflow.api import Client
from practiceflow.api.connections import fresh_pool_manager
from practiceflow.budget.postgres_bucket import shared_budget
from practiceflow.budget.rate_budget import RateBudget
from practiceflow.errors import BugError, ConfigError, PracticeflowError
from practiceflow.fleet.cursor_cache import CursorCache
from practiceflow.fleet.fleet_file import FleetConfig, PracticeConfig
from practiceflow.fleet.http_session import http_connections, settle_environment
from practiceflow.fleet.owned_budget import BudgetLedger
from practiceflow.fleet.owned_runtime import (
    OwnedPractices,
    create_budget_tables,
    leased_budget,
    poll_client,
)
from practiceflow.fleet.queue import FLEET_CONTEXT_KEY, NAMESPACE, FleetJobs, defer_events
from practiceflow.fleet.schedule import Due, FleetSchedule
from practiceflow.manifest import load_modules
from practiceflow.ops import OpsMetrics, OpsPractice, counted_session
from practiceflow.runner import Runner, run_shared, validate_recipe
from practiceflow.runner.run_retry import take_due
from practiceflow.runner.validate import ValidRecipe
from practiceflow.service.event_guard import EventGuard
from practiceflow.state import StateStore
from practiceflow.templating import render_tree, utcnow
from practiceflow.triggers import Poller, definition, resolve_mode
from practiceflow.triggers.cadence import Cadence
from practiceflow.triggers.downtime import has_poll_source
from practiceflow.triggers.shared_poll import SharedPoll
from practiceflow.triggers.webhook_receiver import Binding

__all__ = ["Fleet", "PracticeRuntime", "accept_event"]

logger = logging.getLogger("practiceflow.fleet")

#: The tick's job priority, above every other job's (0).
_TICK_PRIORITY = 100
#: Seconds a job of a practice already using all its slots waits before trying again.
_BUSY_RETRY_S = 1.0
#: Seconds between two looks for a practice's new events while its runs leave a slot free:
#: an event stored meanwhile (by any replica) starts then, not when a run ends.
_LOOK_AGAIN_S = 0.2


def _fixed(name: str) -> Callable[[], str]:
    return lambda: name


def _uncounted(outcome: str) -> None:
    del outcome  # no /metrics in this replica


@dataclass
class PracticeRuntime:
    """Everything one practice runs with in this replica: its part of the fleet file, its
    client (its own credentials) and budget, a runner per recipe, pollers and webhook
    bindings by trigger name, ``standby`` pollers of webhook-only triggers (polled only
    while their subscription is in doubt, :meth:`Fleet.poll_instead`), and an owner's
    shared polls and cadence, with the trigger names they were built for
    (:mod:`.owned_runtime`)."""

    config: PracticeConfig
    client: Client
    budget: RateBudget
    runners: list[Runner]
    pollers: dict[str, Poller] = field(default_factory=dict)
    webhooks: dict[str, Binding] = field(default_factory=dict)
    standby: dict[str, Poller] = field(default_factory=dict)
    session: requests.Session | None = None
    shared_polls: tuple[tuple[str, ...], list[SharedPoll]] | None = None
    cadence: tuple[tuple[str, ...], Cadence] | None = None


def accept_event(
    app: procrastinate.App,
    store: StateStore,
    practice: PracticeConfig,
    source: str,
    event_key: str,
    event_id: str,
    payload: Any,
    signature: str | None = None,
) -> bool:
    """A received event becomes a job: record it (deduplicated), then queue its run.

    Args:
        app: the open queue.
        store: the fleet's state store.
        practice: the practice it belongs to.
        source: the trigger's name.
        event_key: the event type.
        event_id: its id (dedupe key).
        payload: its body.
        signature: the webhook signature, when signed.

    Returns:
        ``True`` when it was new and queued; ``False`` for a duplicate.
    """
    name = practice.name
    if not store.record_event(name, source, event_key, event_id, payload, signature):
        return False
    # A crash between the two leaves the event pending: the practice's sweep queues it.
    defer_events(app, name)
    return True


class Fleet(OwnedPractices):
    """The practices this replica serves (see the module docstring).

    Args:
        config: the fleet file.
        store: the fleet's state store (PostgreSQL).
        state_url: its URL, for the shared rate budgets.
        app: the queue, opened by the caller.
        environ: where secrets named in the fleet file are read; ``os.environ`` if None.
        public_url: the URL (a load balancer's) where the API reaches the replicas'
            receivers; with it, triggers whose recipe mode allows are received by webhook
            (see :mod:`practiceflow.fleet.webhook_intake`); without it they are polled, and
            webhook-only triggers get their events from a receiver elsewhere (``serve``).
        metrics: where answers are counted and poll lags recorded (``/metrics``).
        budget_connections: connections of the one pool every practice's shared budget
            counts through (about one per job running at once); as many HTTP connections
            per host are kept open for the practices' clients, twice as many when the
            replica also polls in-process (``owned``: see :func:`http_connections`).
        slots_per_practice: runs (and poll jobs) of one practice this replica runs at
            once; more wait (see :meth:`slot` and :meth:`run_pending`), so that one
            practice's slow answers or spent budget never take every thread of the replica.
        run_threads: the threads every practice's event runs share (the pools above
            are sized for about as many); ``budget_connections - 2`` when None.
        owned: the replica polls the practices it holds a lease on, in-process
            (:mod:`.owner`): budgets counted in memory by the owner, cursors written in
            batches. Without it, every poll is a queue job (``schedule``).

    Raises:
        ConfigError: a practice's credentials or recipes are unusable.
    """

    def __init__(
        self,
        config: FleetConfig,
        store: StateStore,
        state_url: str,
        app: procrastinate.App,
        *,
        environ: dict[str, str] | None = None,
        public_url: str | None = None,
        metrics: OpsMetrics | None = None,
        budget_connections: int = 4,
        slots_per_practice: int = 4,
        owned: bool = False,
        run_threads: int | None = None,
    ) -> None:
        self.config = config
        self.slots_per_practice = max(1, slots_per_practice)
        threads = max(1, budget_connections - 2 if run_threads is None else run_threads)
        self._runs = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="pf-run")
        self._busy: dict[str, int] = {}
        self._busy_lock = threading.Lock()
        self.public_url = public_url
        self.store = store
        self.app = app
        # An exception no step caught is recorded on its run, which is started again until
        # it is quarantined (service/event_guard.py, runner/quarantine.py).
        self.guard = EventGuard(store)
        self.metrics = metrics
        self.practices: dict[str, PracticeRuntime] = {}
        self.schedule_table = FleetSchedule()
        self._scheduled = False
        # One pool for every practice's budget: a pool per practice would hold a
        # connection per practice, past PostgreSQL's limit in a fleet of hundreds.
        self._budget_pool: ConnectionPool[Any] = ConnectionPool(
            state_url,
            min_size=1,
            max_size=max(2, budget_connections),
            open=True,
            name="practiceflow-budgets",
        )
        # One pool of HTTP connections for every practice (see the module docstring).
        self.connections = fresh_pool_manager(http_connections(budget_connections, owned))
        self.cursors = CursorCache(store) if owned else None
        if self.cursors is not None:
            self.cursors.preload(config.practices)
        self.ledger = BudgetLedger(self._budget_pool) if owned else None
        self.defer_app: procrastinate.App | None = None
        registry = load_modules(list(config.modules))
        # Practices often share recipe files: each is checked once, not once per practice.
        checked: dict[Path, ValidRecipe] = {}
        try:
            for name, practice in config.practices.items():
                settings = practice.settings(environ)
                if owned:
                    budget = leased_budget(self._budget_pool, settings.client_id, practice.limits)
                else:
                    budget = shared_budget(
                        state_url, settings.client_id, practice.limits, pool=self._budget_pool
                    )
                count = _uncounted if metrics is None else metrics.counter(_fixed(name))
                session = counted_session(count, connections=self.connections)
                settle_environment(session, settings.base_url)  # read once, not per request
                client = practice.client(budget, environ, settings=settings, session=session)
                recipes = []
                for path in practice.recipes:
                    if path not in checked:
                        checked[path] = validate_recipe(path, registry=registry)
                    recipes.append(checked[path])
                runners = [Runner(recipe, store, client, practice=name) for recipe in recipes]
                runtime = PracticeRuntime(practice, client, budget, runners, session=session)
                self.practices[name] = runtime
                for recipe in recipes:
                    self._add_trigger(runtime, recipe)
            if owned:
                budgets = [runtime.budget for runtime in self.practices.values()]
                create_budget_tables(self._budget_pool, budgets)
        except BaseException:
            self.close()
            raise

    def reload_recipes(self) -> None:
        """Read every practice's recipe files again (``worker`` on SIGHUP): new events take
        the new versions, runs in flight keep theirs (:mod:`practiceflow.versions`).

        Raises:
            ConfigError: a recipe does not load, or its trigger changed (a restart
                subscribes a new trigger); nothing is swapped then.
        """
        registry = load_modules(list(self.config.modules))
        checked: dict[Path, ValidRecipe] = {}
        fresh: dict[str, list[Runner]] = {}
        for name, runtime in self.practices.items():
            for path in runtime.config.recipes:
                if path not in checked:
                    checked[path] = validate_recipe(path, registry=registry)
            recipes = [checked[path] for path in runtime.config.recipes]
            if {recipe.trigger.key for recipe in recipes} != {r.source for r in runtime.runners}:
                message = f"practice {name}: the recipes' triggers changed; restart the worker"
                raise ConfigError(message)
            fresh[name] = [Runner(r, self.store, runtime.client, practice=name) for r in recipes]
        for name, runners in fresh.items():  # each job takes the list it finds at its start
            self.practices[name].runners = runners
            self.practices[name].cadence = None  # built again from the new max_delay

    def _add_trigger(self, runtime: PracticeRuntime, recipe: ValidRecipe) -> None:
        """Give a recipe's trigger a poller and/or a webhook binding, as its mode says."""
        found = definition(recipe.trigger)
        if found.key in runtime.pollers or found.key in runtime.webhooks:
            return
        try:
            mode = resolve_mode(found, recipe.recipe.mode, self.public_url)
        except ConfigError:
            if self.public_url is not None or found.poll is not None:
                raise
            return  # webhook only, and no receiver here: a sweep queues what serve stored
        options = render_tree(recipe.recipe.trigger_with, {"now": utcnow()})
        name = runtime.config.name
        store, client = self.store, runtime.client
        if self.cursors is not None:  # owned: polls wait little, the schedule waits instead
            store, client = self.cursors.as_store(), poll_client(runtime.client)
        if mode in ("poll", "both") and found.poll is not None:
            poller = Poller(client, store, name, found, options)
            runtime.pollers[found.key] = poller
        if mode in ("webhook", "both") and found.webhook is not None:
            runtime.webhooks[found.key] = Binding(found.webhook, options)
            if found.key not in runtime.pollers and has_poll_source(found, options):
                standby = Poller(client, store, name, found, options)
                runtime.standby[found.key] = standby

    def can_poll(self, practice: str, trigger: str) -> bool:
        """Whether a webhook trigger is polled, or can be while its subscription is in doubt.

        Args:
            practice: the practice's name.
            trigger: the trigger's name.
        """
        runtime = self._practice(practice)
        return trigger in runtime.pollers or trigger in runtime.standby

    def poll_instead(self, practice: str, trigger: str) -> bool:
        """Poll a webhook trigger whose subscription is in doubt, every ``poll_every``.

        Called at start, before the job loop runs (a tick reads the schedule unlocked).

        Args:
            practice: the practice's name.
            trigger: the trigger's name.

        Returns:
            Whether it is polled (False: it has no poll source).
        """
        runtime = self._practice(practice)
        standby = runtime.standby.pop(trigger, None)
        if standby is not None:
            runtime.pollers[trigger] = standby
            if self._scheduled:  # else schedule() adds it with the others
                self.schedule_table.add(Due("poll", practice, trigger), runtime.config.poll_every)
        return trigger in runtime.pollers

    def close(self) -> None:
        """Close every practice's client and budget (not the store or the queue)."""
        for runtime in self.practices.values():
            runtime.client.close()
            if runtime.session is not None:
                runtime.session.close()
            runtime.budget.close()
        self._runs.shutdown(wait=True)
        self._budget_pool.close()
        self.connections.clear()

    def ops_practices(self) -> list[OpsPractice]:
        """What ``/metrics`` and ``/readyz`` know of each practice served."""
        return [
            OpsPractice(name, runtime.budget, tuple(runtime.webhooks))
            for name, runtime in self.practices.items()
        ]

    def job_context(self, **more: Any) -> dict[str, Any]:
        """The ``additional_context`` of a worker running this fleet's jobs: the fleet
        itself (the tasks find it there) and ``more`` per-worker data."""
        jobs: FleetJobs = self  # what the tasks ask of it, checked by the type checker
        return {**more, FLEET_CONTEXT_KEY: jobs}

    def due_at(self, timestamp: int) -> list[Due]:
        """The polls and sweeps due at Unix second ``timestamp`` (job ``tick``)."""
        return list(self.schedule_table.due_at(timestamp))

    @contextmanager
    def slot(self, practice: str) -> Iterator[float]:
        """Take one of the practice's job slots here (yields 0, the slot held for the
        ``with`` block), or yield the seconds to wait, holding nothing, when a 429 paused
        it or it already runs ``slots_per_practice`` jobs: the caller queues its job again
        instead of sleeping in a thread others need. An ordered practice is never
        postponed (its lock runs one job at a time; a job queued again loses its place)."""
        runtime = self._practice(practice)
        if not runtime.config.ordered:
            until = runtime.budget.paused_until
            left = 0.0 if until is None else until - runtime.budget.clock()
            if left > 0:
                yield left
                return
        with self._busy_lock:
            busy = self._busy.get(practice, 0)
            if busy >= self.slots_per_practice and not runtime.config.ordered:
                wait = _BUSY_RETRY_S
            else:
                wait = 0.0
                self._busy[practice] = busy + 1
        if wait:
            yield wait
            return
        try:
            yield 0.0
        finally:
            with self._busy_lock:
                self._busy[practice] -= 1

    def _practice(self, name: str) -> PracticeRuntime:
        runtime = self.practices.get(name)
        if runtime is None:
            message = (
                f"a job names practice {name!r}, which this replica's fleet file "
                f"({self.config.path}) does not serve; valid values are {sorted(self.practices)}"
            )
            raise ConfigError(message)
        return runtime

    # --- jobs -------------------------------------------------------------------------

    def run_pending(self, practice: str, limit: int = 500) -> str:
        """Run the practice's pending events (job ``run_events``), oldest first; returns
        the runs' outcomes counted, for the job's log (StoreError after every run ended).

        Up to ``slots_per_practice`` run at once on the fleet's run threads (one at a
        time, in order, for an ``ordered`` practice). Each time a run ends, and every
        ``_LOOK_AGAIN_S`` while a slot is free, the pending events (``limit`` at a time)
        are read again, so an event stored meanwhile runs in this job too, at once; each
        event is tried once per job. The job returns only once every
        run it started ended: its lock is what keeps another replica off the practice's
        events. A practice paused by a 429 starts no more runs.
        """
        runtime = self._practice(practice)
        width = 1 if runtime.config.ordered else self.slots_per_practice
        tried: set[tuple[str, str]] = set()
        running: set[Future[str]] = set()
        outcomes: Counter[str] = Counter()
        failed: BaseException | None = None
        while True:
            if failed is None and len(running) < width and not self.paused_for(practice):
                for event in self.store.pending_events(practice, limit):
                    key = (event.source, event.event_id)
                    if len(running) >= width:
                        break
                    if key not in tried:
                        tried.add(key)
                        running.add(self._runs.submit(self.run_event, practice, *key))
            if not running:
                break
            look_again = _LOOK_AGAIN_S if len(running) < width and failed is None else None
            ended, running = wait(running, look_again, return_when=FIRST_COMPLETED)
            for future in ended:
                try:
                    outcomes[future.result()] += 1
                except Exception as exc:  # raised once the other runs ended
                    failed = failed or exc
        if failed is not None:
            raise failed
        return ", ".join(f"{count} {outcome}" for outcome, count in outcomes.items()) or "none"

    def run_event(self, practice: str, source: str, event_id: str) -> str:
        """Run every recipe of ``practice`` on one stored event (in :meth:`run_pending`).

        Returns:
            What happened, for the job's log: ``handled`` (nothing to do), the run
            statuses, ``interrupted`` (a shutdown, or an exception no step caught; the
            event stays pending), or ``skipped`` (it failed too often in this replica
            without its failure being recorded).

        Raises:
            BugError: the event is not in the store.
        """
        runtime = self._practice(practice)
        event = self.store.get_event(practice, source, event_id)
        if event is None:
            message = f"event {event_id!r} of {practice!r} from {source!r} is not stored"
            raise BugError(message)
        if event.handled_at is not None:
            return "handled"
        if self.guard.skips(f"{source}/{event_id}"):
            return "skipped"
        runners = [runner for runner in runtime.runners if runner.source == source]
        try:
            outcomes = run_shared(self.store, practice, runners, event)
        except Exception as exc:  # recorded by the guard (a StoreError goes up)
            outcomes = self.guard.event_failed(practice, runners, event, exc)
        if any(outcome is not None and outcome.status == "running" for outcome in outcomes):
            return "interrupted"
        return ",".join(outcome.status for outcome in outcomes if outcome is not None) or "test"

    def poll(self, practice: str, trigger: str, *, scheduled_at: float | None = None) -> int:
        """Poll one trigger of one practice and queue its new events (job ``poll``).

        Args:
            practice: the practice's name.
            trigger: the trigger's name.
            scheduled_at: Unix time the poll was due (its lag is recorded from it).

        Returns:
            How many events were queued.
        """
        runtime = self._practice(practice)
        poller = runtime.pollers.get(trigger)
        if poller is None:
            return 0
        if scheduled_at is not None and self.metrics is not None:
            self.metrics.poll_started(practice, scheduled_at)
        logger.info("poll of %s / %s: begins", practice, trigger)
        try:
            result = poller.poll_once()
        except PracticeflowError as exc:
            logger.warning("poll of %s / %s: ends, skipped: %s", practice, trigger, exc)
            return 0
        if self.cursors is not None:
            self.cursors.flush(practice)
        if result.events:
            defer_events(self.app, practice)
        logger.info("poll of %s / %s: ends, %d new event(s)", practice, trigger, len(result.events))
        return len(result.events)

    def sweep(self, practice: str) -> int:
        """Queue the practice's ``run_events`` job when an event is pending (job ``sweep``),
        and try again its failed runs whose retry is due (:mod:`practiceflow.runner.run_retry`).

        Returns:
            1 when a job was queued, 0 when none was needed or one was already waiting.
        """
        runtime = self._practice(practice)
        for runner in runtime.runners:
            for run_id in take_due(self.store, practice, runner.recipe.name):
                if self.guard.skips(run_id):
                    continue
                try:
                    runner.resume_run(run_id, retry_failed=True)
                except Exception as exc:  # recorded on the run by the guard (a StoreError goes up)
                    self.guard.run_failed(run_id, exc)
        if not self.store.pending_events(practice, 1):
            return 0
        return int(defer_events(self.app, practice))

    def schedule(
        self, *, sweep_every: int = 30, retry_stalled_every: int = 10, polls: bool = True
    ) -> None:
        """Register the periodic jobs: the stalled-job check every ``retry_stalled_every``
        seconds, and with ``polls`` (``--polls queue``) the fleet's tick, which queues the
        polls and the sweeps (every ``sweep_every`` seconds) due each second
        (:mod:`.schedule`). Every replica registers the same; procrastinate queues each once."""
        registry = self.app.periodic_registry
        tasks = self.app.tasks
        registry.register_task(
            task=tasks[f"{NAMESPACE}:retry_stalled"],
            cron=_cron(retry_stalled_every),
            periodic_id="",
            configure_kwargs={"queueing_lock": "retry_stalled"},
        )
        registry.register_task(
            task=tasks[f"{NAMESPACE}:prune_jobs"],
            cron="17 * * * *",
            periodic_id="",
            configure_kwargs={"queueing_lock": "prune_jobs"},
        )
        if not polls:
            return
        # Ahead of the polls it queues: a busy queue must not delay the clock.
        registry.register_task(
            task=tasks[f"{NAMESPACE}:tick"],
            cron=_cron(1),
            periodic_id="",
            configure_kwargs={"priority": _TICK_PRIORITY},
        )
        for name, runtime in self.practices.items():
            self.schedule_table.add(Due("sweep", name), sweep_every)
            for trigger in runtime.pollers:
                self.schedule_table.add(Due("poll", name, trigger), runtime.config.poll_every)
        self._scheduled = True


def _cron(seconds: int) -> str:
    """A cron line firing every ``seconds`` (a 6th, seconds column below a minute)."""
    if seconds < 60:
        return f"* * * * * */{max(1, seconds)}"
    return f"*/{max(1, seconds // 60)} * * * *"
