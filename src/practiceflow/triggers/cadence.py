"""How often a practice's polls run: fast while its lists change, slower while they do not.

A shared poll's interval moves between the poll interval (or a shorter ``max_delay``) and
the shortest ``max_delay`` of its triggers: it doubles after a quiet poll and snaps back to
the fastest on any activity in the practice (:meth:`PracticeCadence.activity`). It never
exceeds ``max_delay`` unless the rate budget runs low (``stretch``). Webhook triggers get a
completeness **sweep** every ``catch_up_every`` seconds. The clock is injected: nothing
here sleeps.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from practiceflow.errors import ConfigError
from practiceflow.manifest.durations import max_delay_problem, read_max_delay

#: Seconds between the completeness sweeps of a trigger received by webhook: well within
#: the time handled events stay deduplicated, so a sweep's cursor is never stale.
SWEEP_EVERY: Final = 3600.0


def parse_max_delay(value: object, *, where: str = "trigger.max_delay") -> float:
    """Read a ``max_delay``: seconds as a number, or ``"90s"``, ``"15m"``, ``"2h"``, ``"1d"``.

    Args:
        value: the recipe's value.
        where: where it was given, for the error.

    Returns:
        Seconds.

    Raises:
        ConfigError: not a duration, or outside :data:`MAX_DELAY_RANGE`.
    """
    seconds = read_max_delay(value)
    if seconds is None:
        message = f"{where}: {max_delay_problem(value)}"
        raise ConfigError(message)
    return seconds


@dataclass(frozen=True)
class PollNeed:
    """What one trigger needs of its list's poll.

    Attributes:
        fastest: the interval while its practice is busy.
        slowest: the longest wait it accepts (its ``max_delay``, or its sweep interval).
        follows_activity: whether changes and deliveries bring it back to ``fastest``
            (false for a webhook trigger's sweep).
    """

    fastest: float
    slowest: float
    follows_activity: bool = True

    @classmethod
    def polled(cls, interval: float, max_delay: float | None) -> PollNeed:
        """A polled trigger: ``interval`` when busy, up to ``max_delay`` (default ``interval``)."""
        slowest = interval if max_delay is None else max_delay
        return cls(min(interval, slowest), slowest)

    @classmethod
    def sweep(cls, every: float) -> PollNeed:
        """A webhook trigger's completeness sweep: every ``every`` seconds, whatever happens."""
        return cls(every, every, follows_activity=False)


class Cadence:
    """The interval of one (shared) poll, between ``fastest`` and ``slowest``.

    Args:
        fastest: seconds between polls while the practice is busy.
        slowest: the longest wait (the shortest ``max_delay`` it serves).
        follows_activity: whether :meth:`activity` brings it back to ``fastest``.
        clock: seconds, monotonic.
        growth: how much longer each quiet poll makes the next wait.
        stretch: stretches an interval as the rate budget runs low (identity by default).

    Raises:
        ConfigError: ``fastest`` is not positive or exceeds ``slowest``.
    """

    def __init__(
        self,
        fastest: float,
        slowest: float,
        *,
        follows_activity: bool = True,
        clock: Callable[[], float] = time.monotonic,
        growth: float = 2.0,
        stretch: Callable[[float], float] | None = None,
    ) -> None:
        if not 0 < fastest <= slowest or growth <= 1:
            message = (
                f"poll cadence: got fastest {fastest!r} s, slowest {slowest!r} s, growth "
                f"{growth!r}; expected 0 < fastest <= slowest and growth > 1"
            )
            raise ConfigError(message)
        self.fastest = fastest
        self.slowest = slowest
        self.follows_activity = follows_activity
        self._clock = clock
        self._growth = growth
        self._stretch = stretch or (lambda seconds: seconds)
        self.interval = fastest
        self.due = clock()  # the first poll is due at once (catching up)
        #: Set whenever the due time moves earlier: a waiting loop wakes and looks again.
        self.nudged = threading.Event()

    def wait(self) -> float:
        """Seconds until the next poll is due (0 when due)."""
        return max(0.0, self.due - self._clock())

    def polled(self, *, changed: bool) -> float:
        """Record a poll that just ended; returns the seconds until the next one.

        Args:
            changed: whether it found anything (an event, a cursor that moved).
        """
        if changed:
            self.interval = self.fastest
        else:
            self.interval = min(self.interval * self._growth, self.slowest)
        wait = max(self.interval, self._stretch(self.interval))
        self.due = self._clock() + wait
        return wait

    def activity(self) -> None:
        """Something changed in the practice (or a delivery came): back to ``fastest``."""
        if not self.follows_activity:
            return
        self.interval = self.fastest
        sooner = self._clock() + self.fastest
        if sooner < self.due:
            self.due = sooner
            self.nudged.set()


def group_cadence(
    needs: Iterable[PollNeed],
    *,
    clock: Callable[[], float] = time.monotonic,
    stretch: Callable[[float], float] | None = None,
) -> Cadence:
    """The cadence of a poll shared by triggers with these needs.

    The slowest is the shortest wait any of them accepts; the fastest is the fastest of
    the triggers that follow activity (or of all, when none does), never above the
    slowest.

    Raises:
        ConfigError: no needs.
    """
    given = list(needs)
    if not given:
        raise ConfigError("a poll cadence needs at least one trigger")
    slowest = min(need.slowest for need in given)
    active = [need for need in given if need.follows_activity]
    fastest = min(need.fastest for need in (active or given))
    return Cadence(
        min(fastest, slowest),
        slowest,
        follows_activity=bool(active),
        clock=clock,
        stretch=stretch,
    )


class PracticeCadence:
    """The cadences of one practice's polls: a change anywhere speeds them all up.

    Args:
        cadences: poll name -> its cadence.
    """

    def __init__(self, cadences: Mapping[str, Cadence] | None = None) -> None:
        self.cadences: dict[str, Cadence] = dict(cadences or {})
        self._lock = threading.Lock()

    def add(self, name: str, cadence: Cadence) -> None:
        """Schedule one more poll."""
        with self._lock:
            self.cadences[name] = cadence

    def activity(self) -> None:
        """A change or a webhook delivery: every poll that follows activity goes fastest."""
        with self._lock:
            for cadence in self.cadences.values():
                cadence.activity()

    def polled(self, name: str, *, changed: bool) -> float:
        """Record a poll of ``name``; a change speeds up the practice's other polls too.

        Returns:
            Seconds until ``name`` polls again.
        """
        if changed:
            self.activity()
        with self._lock:
            return self.cadences[name].polled(changed=changed)

    def next_due(self) -> tuple[str, float] | None:
        """The poll due first and the seconds until it is due, or ``None`` without polls."""
        with self._lock:
            if not self.cadences:
                return None
            name = min(self.cadences, key=lambda key: self.cadences[key].due)
            return name, self.cadences[name].wait()
