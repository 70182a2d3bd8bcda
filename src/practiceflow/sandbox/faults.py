"""Injected faults: the next N matching API requests misbehave on purpose.

Kinds: ``rate_limit`` (429, with or without ``Retry-After``), ``server_error`` (500),
``slow`` (the answer is held back ``delay`` seconds) and ``drop`` (the sandbox performs the
request, then closes the connection without answering, so the client cannot tell whether
the write happened).
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from typing import Any

#: Accepted names of each kind (the canonical name first).
# fmt: off
FAULT_KINDS: dict[str, str] = {
    "rate_limit": "rate_limit", "429": "rate_limit", "server_error": "server_error",
    "500": "server_error", "slow": "slow", "drop": "drop",
}
# fmt: on


@dataclass
class Fault:
    """One armed fault: for ``remaining`` more requests matching every condition given.

    ``path_prefix`` matches with or without the region prefix; ``retry_after`` is the
    ``Retry-After`` of an injected 429 (none when ``None``); ``delay`` holds a ``slow``
    answer back.
    """

    kind: str
    remaining: int = 1
    method: str | None = None
    path_prefix: str | None = None
    region: str | None = None
    retry_after: int | None = None
    delay: float = 0.0

    def matches(self, method: str, region: str, path: str) -> bool:
        """Whether this fault applies to a request (``path`` without the region prefix)."""
        if self.method and self.method.upper() != method:
            return False
        if self.region and self.region != region:
            return False
        if self.path_prefix:
            full = f"/{region}{path}"
            return path.startswith(self.path_prefix) or full.startswith(self.path_prefix)
        return True


class FaultBoard:
    """The armed faults, consumed in the order they were added."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()

    def add(self, fault: Fault) -> None:
        """Arm a fault (its ``kind`` canonical)."""
        with self._lock:
            self._faults.append(fault)

    def take(self, method: str, region: str, path: str) -> Fault | None:
        """Consume one use of the first fault matching a request, if any."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, region, path):
                    fault.remaining -= 1
                    if fault.remaining <= 0:
                        self._faults.remove(fault)
                    return fault
        return None

    def clear(self) -> None:
        """Disarm every fault."""
        with self._lock:
            self._faults.clear()

    def describe(self) -> list[dict[str, Any]]:
        """The armed faults as JSON-ready rows."""
        with self._lock:
            return [asdict(fault) for fault in self._faults]
