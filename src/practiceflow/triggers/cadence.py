"""How often a practice's polls run: fast while its lists change, slower while they do not
(doubling up to the shortest ``max_delay``, stretched when the rate budget runs low, back to
the fastest on any activity). The clock is injected: nothing here sleeps.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from practiceflow.errors import ConfigError
from practiceflow.manifest.loader import max_delay_problem, read_max_delay

#: Seconds between the completeness sweeps of a trigger received by webhook: well within
#: the time handled events stay deduplicated, so a sweep's cursor is never stale.
SWEEP_EVERY: Final = 3600.0


def parse_max_delay(value: object, *, where: str = "trigger.max_delay") -> float:
    """Seconds of a ``max_delay``: a number, or ``"90s"``, ``"15m"``, ``"2h"``, ``"1d"``;
    ConfigError naming ``where`` when not a duration or out of range."""
    seconds = read_max_delay(value)
    if seconds is None:
        message = f"{where}: {max_delay_problem(value)}"
        raise ConfigError(message)
    return seconds


@dataclass(frozen=True)
class PollNeed:
    """What one trigger needs of its list's poll: its interval while the practice is busy, the
    longest wait it accepts, whether activity brings it back to ``fastest`` (not a sweep)."""

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
    """The interval of one (shared) poll, between ``fastest`` and ``slowest`` seconds;
    ``stretch`` lengthens it as the rate budget runs low."""

    def __init__(
        self,
        fastest: float,
        slowest: float,
        *,
        follows_activity: bool = True,
        clock: Callable[[], float] = time.monotonic,
        stretch: Callable[[float], float] | None = None,
    ) -> None:
        if not 0 < fastest <= slowest:
            message = (
                f"poll cadence: got fastest {fastest!r} s, slowest {slowest!r} s; "
                "expected 0 < fastest <= slowest"
            )
            raise ConfigError(message)
        self.fastest = fastest
        self.slowest = slowest
        self.follows_activity = follows_activity
        self._clock = clock
        self._stretch = stretch or (lambda seconds: seconds)
        self.interval = fastest
        self.due = clock()  # the first poll is due at once (catching up)
        #: Set whenever the due time moves earlier: a waiting loop wakes and looks again.
        self.nudged = threading.Event()

    def wait(self) -> float:
        """Seconds until the next poll is due (0 when due)."""
        return max(0.0, self.due - self._clock())

    def polled(self, *, changed: bool) -> float:
        """Record a poll that just ended (``changed``: it found anything); returns the
        seconds until the next one."""
        if changed:
            self.interval = self.fastest
        else:
            self.interval = min(self.interval * 2, self.slowest)
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
    """The cadence of a poll shared by triggers with these needs: the shortest wait any
    accepts, and the fastest of those that follow activity (or of all, when none does)."""
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
    """The cadences of one practice's polls, by poll name: a change anywhere speeds them
    all up."""

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
        """Record a poll of ``name`` (a change speeds up the practice's other polls too);
        returns the seconds until it polls again."""
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
