"""The long-running process: receiver, pollers, gap sweeps and the runner loop together.

:func:`serve` builds them from objects the caller built (checked recipes, an open store, an
API client) and returns a :class:`Service` (docs/architecture.md, "Serving from your own
program"); :mod:`practiceflow.runner` owns one durable run. Names load on first use, so
importing the package stays light (:func:`.netaddr.claim` binds before the slow imports).

    >>> from practiceflow.service import ServeOptions, serve
    >>> service = serve(recipes, store, client, practice, ServeOptions())  # doctest: +SKIP
    >>> service.run()   # until service.stop is set                        # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from practiceflow.service.compose import GapWatch, ServeOptions, serve
    from practiceflow.service.intake import TriggerIntake
    from practiceflow.service.loop import Service

#: Names imported on first use: name -> module that defines it.
_LAZY: dict[str, str] = {
    "GapWatch": "practiceflow.service.compose",
    "ServeOptions": "practiceflow.service.compose",
    "Service": "practiceflow.service.loop",
    "TriggerIntake": "practiceflow.service.intake",
    "serve": "practiceflow.service.compose",
}

__all__ = ["GapWatch", "ServeOptions", "Service", "TriggerIntake", "serve"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'practiceflow.service' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
