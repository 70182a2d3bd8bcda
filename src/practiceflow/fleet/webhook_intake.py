"""Webhooks in a fleet: every replica receives, and one subscribes per (practice, trigger).

Any replica verifies and stores any delivery (the subscription and its secret are in the
shared store); a stored delivery's ``run_events`` job is queued by a thread of the
replica's own after the answer, and the sweep is the safety net for a replica that died
before queueing. A fleet subscribes once: each replica takes a transaction-scoped advisory
lock per (practice, trigger) before looking, so the first subscribes and the others keep
it. A subscription in doubt is never repeated: it is listed once and its trigger polled
instead when it can be (docs/deploy.md, "Webhooks: every replica receives").
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from psycopg_pool import ConnectionPool

from practiceflow.errors import InDoubtError
from practiceflow.fleet.queue import defer_events, make_app
from practiceflow.fleet.runtime import Fleet
from practiceflow.service.needs_person import close_subscription_doubt, record_subscription_doubt
from practiceflow.state import SubscriptionRecord
from practiceflow.triggers import TriggerEvent
from practiceflow.triggers.subscriptions import SubscriptionInDoubt, SubscriptionManager
from practiceflow.triggers.webhook_receiver import Receiver, ReceiverServer

__all__ = ["SUBSCRIBE_LOCK_PREFIX", "FleetWebhooks", "subscribe_lock"]

logger = logging.getLogger("practiceflow.fleet")

#: Subscribes sent at once on start (each waits on the API's round trip and holds one
#: state connection: with 8, a fleet of 10,000 practices took ten minutes to start).
_SUBSCRIBERS: Final = 32
#: Threads queueing the stored deliveries' jobs (a job queued is a round trip: one thread
#: fell behind 36 deliveries a second, under load).
_QUEUERS: Final = 4
#: Prefix of the advisory lock's key taken around a (practice, trigger)'s subscribe.
SUBSCRIBE_LOCK_PREFIX: Final = "practiceflow subscribe:"


def subscribe_lock(practice: str, trigger: str) -> str:
    """The advisory lock's key of one (practice, trigger)'s subscription.

    Args:
        practice: the practice's name.
        trigger: the trigger's name.

    Returns:
        The text hashed into the lock's 64-bit key.
    """
    return f"{SUBSCRIBE_LOCK_PREFIX}{practice}:{trigger}"


class FleetWebhooks:
    """One replica's receiver, and its share of the fleet's subscriptions.

    Args:
        fleet: the replica's fleet (its ``public_url`` set).
        state_url: the fleet's ``postgresql://`` URL (for the subscribe locks).
        listen: host and port the receiver listens on (port 0: any free one).
    """

    def __init__(self, fleet: Fleet, state_url: str, listen: tuple[str, int]) -> None:
        self.fleet = fleet
        self.state_url = state_url
        self.listen = listen
        # Deliveries are deferred from the receiver's threads: through a synchronous app
        # of our own, since the worker's pool belongs to the worker's event loop.
        self.queue = make_app(state_url, pool_size=4, sync=True)
        self.receiver = Receiver(fleet.store)
        self.server: ReceiverServer | None = None
        for name, runtime in fleet.practices.items():
            for trigger, binding in runtime.webhooks.items():
                self.receiver.bind(name, trigger, binding.spec, binding.options)
        self._stored: queue.SimpleQueue[TriggerEvent | None] = queue.SimpleQueue()
        self._queuers: list[threading.Thread] = []
        self.receiver.listen(self._stored.put)

    @property
    def triggers(self) -> list[tuple[str, str]]:
        """Every (practice, trigger) this replica receives by webhook."""
        return [
            (name, trigger)
            for name, runtime in self.fleet.practices.items()
            for trigger in runtime.webhooks
        ]

    def _queue_stored(self) -> None:
        """Queue the jobs of stored deliveries until told to stop (None): each turn takes
        every delivery waiting, and queues one job per practice among them."""
        stopping = False
        while not stopping:
            taken = [self._stored.get()]
            with contextlib.suppress(queue.Empty):
                while True:
                    taken.append(self._stored.get_nowait())
            stops = taken.count(None)
            for _ in range(stops - 1):  # another queuer's stop
                self._stored.put(None)
            stopping = stops > 0
            for practice in dict.fromkeys(e.practice or "" for e in taken if e is not None):
                try:
                    self._queue(practice)
                except Exception as exc:  # the events are stored and pending: the sweep queues them
                    logger.warning("deliveries of %r stored, their job not queued (the sweep "
                                   "will): %s", practice, exc)  # fmt: skip

    def _queue(self, practice: str) -> None:
        """Stored deliveries are run by their practice's ``run_events`` job (queued unless
        one waits)."""
        runtime = self.fleet.practices.get(practice)
        if runtime is None:  # a stored subscription of a practice this file lacks
            logger.warning("delivery for practice %r, not in the fleet file", practice)
            return
        defer_events(self.queue, runtime.config.name)
        self.fleet.activity(runtime.config.name)  # its polls back to poll_every

    def start(self) -> ReceiverServer:
        """Listen (first, so that a delivery racing the subscribe's answer finds a replica),
        then subscribe each webhook trigger once for the fleet; returns the running server
        (ConfigError without a public URL, ApiError when the API refuses a subscribe)."""
        self.queue.open()
        self._queuers = [
            threading.Thread(target=self._queue_stored, name=f"pf-intake-{n}", daemon=True)
            for n in range(_QUEUERS)
        ]
        for thread in self._queuers:
            thread.start()
        try:
            self.server = ReceiverServer(self.receiver, *self.listen).start()
            # Each subscribe waits on the API's round trip: a few at once, so that a fleet
            # of many practices is subscribed in seconds (each under its own lock).
            with (
                ThreadPoolExecutor(_SUBSCRIBERS, thread_name_prefix="pf-subscribe") as pool,
                ConnectionPool(
                    self.state_url, min_size=1, max_size=_SUBSCRIBERS, kwargs={"autocommit": True}
                ) as locks,
            ):
                started = [
                    (pair, pool.submit(self.ensure, *pair, locks=locks)) for pair in self.triggers
                ]
                for pair, done in started:
                    if done.result() is None:  # in doubt: listed by ensure
                        self.fleet.poll_instead(*pair)
        except BaseException:
            self.stop()
            raise
        return self.server

    def ensure(
        self, practice: str, trigger: str, *, locks: ConnectionPool[Any]
    ) -> SubscriptionRecord | None:
        """Subscribe one (practice, trigger) unless the fleet already did, under its lock
        on one of ``locks``; returns the active subscription, or None when it is in doubt
        (then listed as needing attention, once while that entry is open; not repeated)."""
        runtime = self.fleet.practices[practice]
        binding = runtime.webhooks[trigger]
        event = binding.spec.event_key(binding.options)
        manager = SubscriptionManager(
            runtime.client, self.fleet.store, practice, self.fleet.public_url
        )
        with locks.connection() as connection, connection.transaction():
            connection.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (subscribe_lock(practice, trigger),),
            )
            try:
                record = manager.ensure(trigger, event)
            except (SubscriptionInDoubt, InDoubtError) as exc:
                polled = self.fleet.can_poll(practice, trigger)
                entry_id = record_subscription_doubt(
                    self.fleet.store, practice, trigger, polled=polled, fleet=True
                )
                logger.error(
                    "webhook %s / %s: %s. Not repeated; listed as needing attention (entry %s), "
                    "and %s",
                    practice,
                    trigger,
                    exc,
                    entry_id[:8],
                    "polled meanwhile" if polled else "its events are NOT received meanwhile",
                )
                return None
            close_subscription_doubt(
                self.fleet.store, practice, trigger, "practiceflow worker", "subscribed again"
            )
        logger.info("webhook %s / %s: subscription %s", practice, trigger, record.subscription_id)
        return record

    def stop(self) -> None:
        """Stop receiving (deliveries in flight finish); subscriptions stay for the fleet."""
        if self.server is not None:
            self.server.stop()
            self.server = None
        for _ in self._queuers:  # the deliveries answered are queued before it closes
            self._stored.put(None)
        for thread in self._queuers:
            thread.join()
        self._queuers = []
        self.queue.close()
