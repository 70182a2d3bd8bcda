"""No silent gaps in a fleet: a time when no replica received webhooks is listed.

Every replica that receives webhooks holds a shared advisory lock (the fleet's presence,
let go by the server when its connection ends, so SIGKILL counts at once) and refreshes
the fleet's one heartbeat row. A starting replica, under the check lock, lists the window
since the last sign of life as a known gap when no replica held the presence with a fresh
heartbeat, then joins: a window is listed once (docs/deploy.md, "No silent gaps in a fleet
either"). What can be swept is the module's word: nothing here names an endpoint.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta
from typing import Any, Final

import psycopg

from practiceflow.fleet.runtime import Fleet, PracticeRuntime
from practiceflow.service.heartbeat import Heartbeat, last_alive, mark_alive
from practiceflow.service.needs_person import list_gap
from practiceflow.service.sweep import GapSweep, can_sweep
from practiceflow.state.heartbeats import WHOLE_FLEET
from practiceflow.triggers import definition
from practiceflow.triggers.definition import TriggerDefinition
from practiceflow.triggers.downtime import has_poll_source

__all__ = ["FLEET_KEY", "FLEET_WHO", "FleetPresence", "list_outage", "sweep_gaps"]

logger = logging.getLogger("practiceflow.fleet")

#: The practice key of the fleet's heartbeat row.
FLEET_KEY: Final = WHOLE_FLEET
#: Who was down, in the message of a fleet's gap entry.
FLEET_WHO: Final = "every worker of the fleet"
#: Texts hashed into the advisory locks' keys.
_PRESENCE_LOCK: Final = "practiceflow fleet presence"
_CHECK_LOCK: Final = "practiceflow fleet outage check"
_LOCK: Final = "SELECT pg_advisory_lock(hashtextextended(%s, 0))"
_LOCK_SHARED: Final = "SELECT pg_advisory_lock_shared(hashtextextended(%s, 0))"
_TRY_LOCK: Final = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"
_UNLOCK: Final = "SELECT pg_advisory_unlock(hashtextextended(%s, 0))"
_UNLOCK_SHARED: Final = "SELECT pg_advisory_unlock_shared(hashtextextended(%s, 0))"


def _webhook_triggers(runtime: PracticeRuntime) -> dict[str, TriggerDefinition]:
    """Name -> definition of each trigger a practice receives by webhook."""
    found: dict[str, TriggerDefinition] = {}
    for trigger in runtime.webhooks:
        recipe = next(runner.recipe for runner in runtime.runners if runner.source == trigger)
        found[trigger] = definition(recipe.trigger)
    return found


def _unwatched(fleet: Fleet, name: str, runtime: PracticeRuntime) -> list[tuple[str, str, bool]]:
    """``(trigger, why, checking)`` of each trigger of a practice whose events an outage
    may cost; ``checking``: a sweep can prove the window complete."""
    found: list[tuple[str, str, bool]] = []
    modules = _webhook_triggers(runtime)
    for trigger, binding in runtime.webhooks.items():
        poller = runtime.pollers.get(trigger)
        if poller is not None and fleet.store.get_cursor_state(name, poller.name) is not None:
            continue  # its next poll reads the window back from the cursor
        module = modules[trigger]
        if can_sweep(module) and not has_poll_source(module, binding.options):
            found.append((trigger, "a sweep of its list endpoints checks the window", True))
            continue
        if poller is not None:
            why = "its polling began after the window, so it cannot read the window back"
        elif has_poll_source(module, binding.options):
            why = (
                "it is received by webhook only (mode: webhook), so they depend on the "
                "sender's retries; with mode: both it is also polled, which reads such a "
                "window back"
            )
        else:
            why = "no poll source, so they depend on the sender's retries"
        found.append((trigger, why, False))
    return found


def list_outage(fleet: Fleet, start: datetime, end: datetime) -> list[str]:
    """List, for every practice of the fleet, what the window without receivers from
    ``start`` (the fleet's last sign of life) to ``end`` may have cost; returns the
    entries' ids (an entry of the same window, listed before, again)."""
    listed: list[str] = []
    for name, runtime in fleet.practices.items():
        triggers = _unwatched(fleet, name, runtime)
        with fleet.store.atomic():  # one commit per practice, not five per entry
            for trigger, why, checking in triggers:
                entry = list_gap(
                    fleet.store, name, trigger, start, end, why, who=FLEET_WHO, checking=checking
                )
                listed.append(entry.attention_id)
    return listed


def sweep_gaps(fleet: Fleet, stop: threading.Event | None = None) -> list[GapSweep]:
    """Start a background sweep of each practice's gaps left ``checking`` (by this
    replica's outage, or by one that died before its sweep ended).

    Returns:
        The sweeps started (one per practice with something to check).
    """
    started: list[GapSweep] = []
    for name, runtime in fleet.practices.items():
        sweep = GapSweep(fleet.store, name, runtime.client, _webhook_triggers(runtime), stop=stop)
        if sweep.pending():
            started.append(sweep.start())
    return started


class FleetPresence:
    """This replica's part in the fleet's sign of life (see the module docstring).

    Args:
        fleet: this replica's fleet.
        state_url: the fleet's ``postgresql://`` URL (for the locks' connection).
        every: seconds between heartbeats.
        stale_after: seconds after which the sign of life of a replica still holding the
            presence is no longer believed (the worker's ``--stalled-after``).
    """

    def __init__(self, fleet: Fleet, state_url: str, *, every: float, stale_after: float) -> None:
        self.fleet = fleet
        self.state_url = state_url
        self.every = every
        self.stale_after = timedelta(seconds=stale_after)
        self._connection: psycopg.Connection[Any] | None = None
        self._heartbeat: Heartbeat | None = None
        self._stop_sweeps = threading.Event()
        #: The sweeps of gaps this replica started at join (joined at leave).
        self.sweeps: list[GapSweep] = []

    def join(self) -> list[str]:
        """List the outage that ends now, if there was one, then take part in the sign of life.

        Call it once the receiver listens: the window listed ends at this call.

        Returns:
            The ids of the entries listed (none when a replica received all along, or
            on the fleet's first start).
        """
        store = self.fleet.store
        connection = psycopg.connect(self.state_url, autocommit=True)
        try:
            connection.execute(_LOCK, (_CHECK_LOCK,))
            try:
                listed: list[str] = []
                start = last_alive(store, FLEET_KEY, "fleet")
                end = store.now()
                if start is not None and not self._received(connection, start, end):
                    listed = list_outage(self.fleet, start, end)
                    logger.warning(
                        "no replica of the fleet received webhooks from %s to %s: %d "
                        "entr(ies) listed as needing attention",
                        start.isoformat(timespec="seconds"),
                        end.isoformat(timespec="seconds"),
                        len(listed),
                    )
                connection.execute(_LOCK_SHARED, (_PRESENCE_LOCK,))
                mark_alive(store, FLEET_KEY, end, "fleet", start=True)
            finally:
                connection.execute(_UNLOCK, (_CHECK_LOCK,))
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        self._heartbeat = Heartbeat(store, FLEET_KEY, self.every, "fleet")
        self._heartbeat.start(end)
        self.sweeps = sweep_gaps(self.fleet, self._stop_sweeps)
        return listed

    def _received(
        self, connection: psycopg.Connection[Any], start: datetime, end: datetime
    ) -> bool:
        """Whether another replica receives now.

        It joined through this same check, so a time before it when none received was
        listed by it: the fleet has received since ``start``.
        """
        if end - start > self.stale_after:
            return False
        row = connection.execute(_TRY_LOCK, (_PRESENCE_LOCK,)).fetchone()
        if row is None or not row[0]:
            return True  # held shared by a live replica
        connection.execute(_UNLOCK, (_PRESENCE_LOCK,))
        return False

    def leave(self) -> None:
        """Stop the sweeps (the next replica resumes them), stop the heartbeat (the last
        sign of life is now) and leave the presence."""
        self._stop_sweeps.set()
        for sweep in self.sweeps:
            sweep.join(timeout=10)
        self.sweeps = []
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None
        if self._connection is not None:
            # Let go before closing: the server releases a closed session's locks only
            # once its backend has ended, and a replica started right after must find
            # none left.
            try:
                self._connection.execute(_UNLOCK_SHARED, (_PRESENCE_LOCK,))
            except psycopg.Error as exc:  # a lost connection let go of it already
                logger.warning("fleet presence: %s", exc)
            self._connection.close()
            self._connection = None
