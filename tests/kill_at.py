"""Run the ``practiceflow`` CLI and SIGKILL it at a journal point (the crash tests' kill
points, injected from outside the product)::

    python tests/kill_at.py sent:bill run recipe.yaml --once ...
    python tests/kill_at.py 'pending:client#2' serve recipe.yaml ...

The first argument names the point (``LABEL`` or ``LABEL#N`` for its N-th occurrence); the
rest are the CLI's arguments. Every :class:`~practiceflow.runner.Runner` the CLI builds
gets an ``on_point`` that kills the process when the point is reached.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from practiceflow.cli import main
from practiceflow.runner import Runner


def install(wanted: str) -> None:
    """Make every runner built from now on kill this process at ``wanted``."""
    label, _, nth = wanted.rpartition("#")
    count = 1
    if label and nth.isdigit():
        wanted, count = label, int(nth)
    left = [count]

    def point(reached: str) -> None:
        if reached == wanted:
            left[0] -= 1
            if not left[0]:
                os.kill(os.getpid(), signal.SIGKILL)

    build = Runner.__init__

    def init(self: Runner, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("on_point", point)
        build(self, *args, **kwargs)

    Runner.__init__ = init  # type: ignore[method-assign]


if __name__ == "__main__":
    install(sys.argv[1])
    sys.argv = ["practiceflow", *sys.argv[2:]]
    main()
