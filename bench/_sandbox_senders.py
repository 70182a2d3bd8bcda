"""Start ``practiceflow sandbox`` with N webhook senders instead of its 4 (bench only).

The sandbox delivers webhooks from a pool of 4 threads (its guess: the spec does not say
how many deliveries the API sends at once). At thousands of practices that pool, not the
receiver, bounds how fast events arrive: ``bench/many_practices.py --senders N`` runs the
sandbox through this file to measure the fleet with more senders, as the real API may
have. The sandbox's code is not changed.

Run: ``python bench/_sandbox_senders.py N sandbox ARGS...``
"""

from __future__ import annotations

import sys
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
    from practiceflow.cli import main as cli_main

    sys.argv[0] = "practiceflow"
    cli_main()


if __name__ == "__main__":
    main()
