"""The long-running process: receiver, pollers, gap sweeps and the runner loop together.

:func:`serve` builds them from objects the caller built (checked recipes, an open state
store, an API client) and returns a :class:`Service`; ``practiceflow serve``, ``make demo``,
the benches and your own program are its callers. The package owns the process's policy;
:mod:`practiceflow.runner` owns one durable run.

* :mod:`.compose`: :func:`serve`, :class:`ServeOptions`, :class:`GapWatch`;
* :mod:`.loop`: :class:`Service`, the loop that takes pending events to the runners;
* :mod:`.intake`: :class:`TriggerIntake`, receiver, subscriptions and pollers;
* :mod:`.event_guard`: an exception no step caught is recorded and the service goes on;
* :mod:`.gaps`, :mod:`.sweep`, :mod:`.silence`: no silent gaps (heartbeat, downtime listed,
  sweeps that close gaps by evidence, quiet webhooks checked; what a trigger can do about
  a downtime is the trigger's: :mod:`practiceflow.triggers.downtime`);
* :mod:`.needs_person`: the one writer of what needs a person;
* :mod:`.lease`: one ``serve`` per SQLite state file;
* :mod:`.early_listen`: the receiver's socket bound before the command's slow imports
  (standard library only: importing this package stays light, the rest loads on use);
* :mod:`.state_location`: where a command's store is, and the practice's budget beside it.

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
