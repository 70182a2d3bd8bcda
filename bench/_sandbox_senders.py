"""Start ``practiceflow sandbox`` with N webhook senders instead of its 4 (bench only).

The sandbox delivers webhooks from a pool of 4 threads (its guess: the spec does not say
how many deliveries the API sends at once). At thousands of practices that pool, not the
receiver, bounds how fast events arrive: ``bench/many_practices.py --senders N`` runs the
sandbox through this file to measure the fleet with more senders, as the real API may
have. The sandbox's code is not changed. With ``PF_BENCH_ATTEMPTS`` set to a file, each
delivery attempt appends a line to it: the bench's name of the entity delivered
(``ev-N-S``, or ``-``), attempt, started and ended (Unix seconds), so that the bench can say
where a delivery waited (for a sender, or for the answer).

Run: ``python bench/_sandbox_senders.py N sandbox ARGS...``
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from practiceflow.sandbox import deliveries


def main() -> None:
    """Set the senders, then run the CLI with the remaining arguments."""
    senders = int(sys.argv.pop(1))

    class _Senders(ThreadPoolExecutor):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["max_workers"] = senders
            super().__init__(*args[1:], **kwargs)

    deliveries.ThreadPoolExecutor = _Senders  # type: ignore[misc]
    timings = os.environ.get("PF_BENCH_ATTEMPTS")
    if timings:
        _time_attempts(timings)
    from practiceflow.cli import main as cli_main

    sys.argv[0] = "practiceflow"
    cli_main()


_NAME = re.compile(rb"ev-\d+-\d+")


def _time_attempts(path: str) -> None:
    """Append one line per delivery attempt to ``path`` (see the module's docstring)."""
    attempt = deliveries.DeliveryDispatcher._attempt
    lock = threading.Lock()
    out = open(path, "a", buffering=1)  # noqa: SIM115 -- open for the process's life

    def timed(self: deliveries.DeliveryDispatcher, delivery: deliveries.Delivery) -> None:
        started = time.time()
        attempt(self, delivery)
        found = _NAME.search(delivery.body)
        name = found[0].decode() if found else "-"
        with lock:
            out.write(f"{name} {delivery.attempt} {started:.4f} {time.time():.4f}\n")

    deliveries.DeliveryDispatcher._attempt = timed  # type: ignore[method-assign]


if __name__ == "__main__":
    main()
