"""When each practice's polls and sweeps are due: one clock tick for the whole fleet.

A periodic task per (practice, trigger) would make every replica walk thousands of cron
lines each tick and put every poll of a period at second 0. Instead one ``tick`` fires
every second, and each (practice, trigger) has a fixed phase in its period (a hash of its
name); the tick of second ``t`` queues what is due at ``t``, carrying ``t`` for the lag.
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Due", "FleetSchedule", "phase_of"]


def phase_of(name: str, period: int) -> int:
    """The fixed second (0 to ``period - 1``) at which ``name``, such as
    ``poll:acme:new_client``, is due in every ``period`` seconds (the same in every replica)."""
    return zlib.crc32(name.encode("utf-8")) % max(1, period)


@dataclass(frozen=True)
class Due:
    """One job due at a tick.

    Attributes:
        kind: ``poll`` or ``sweep``.
        practice: the practice's name.
        trigger: the trigger's name (polls), else empty.
    """

    kind: str
    practice: str
    trigger: str = ""

    @property
    def lock(self) -> str:
        """Its lock and queueing lock: one running and one waiting at most."""
        if self.kind == "poll":
            return f"poll:{self.practice}:{self.trigger}"
        return f"sweep:{self.practice}"


class FleetSchedule:
    """Every periodic job of the fleet, indexed by period and phase (module docstring)."""

    def __init__(self) -> None:
        # period -> phase -> jobs: a tick looks at one phase of each distinct period.
        self._slots: dict[int, dict[int, list[Due]]] = defaultdict(lambda: defaultdict(list))
        self.count = 0

    def add(self, due: Due, period: int) -> None:
        """Run ``due`` every ``period`` seconds, at its phase.

        Args:
            due: the job.
            period: seconds between two runs.
        """
        period = max(1, int(period))
        self._slots[period][phase_of(due.lock, period)].append(due)
        self.count += 1

    def due_at(self, timestamp: int) -> Iterable[Due]:
        """The jobs due at the tick of Unix second ``timestamp``."""
        for period, phases in self._slots.items():
            yield from phases.get(timestamp % period, ())
