"""Versions: a run finishes on the recipe it started with.

This package owns what a run's version is and what is done with it:

* :mod:`.recorded`: the recipe version (the recipe's text, its modules' texts, the hook
  names they need), stored once per content in the state store and rebuilt from there;
* :mod:`.pinned`: which recipe a run is driven with (its own version, whatever the files
  say now), and runs whose recipe is no longer served;
* :mod:`._rerender`: a run rendered again under another version, reads from its journal,
  nothing sent;
* :mod:`._gate`: ``recipes check``, every run in flight replayed against a new version,
  and the explicit migration of those that can move.
"""

from __future__ import annotations

from practiceflow.versions._gate import Decision, RunCheck, check_runs, in_flight, migrate
from practiceflow.versions._rerender import Replay, ReplayedStep, replay
from practiceflow.versions.pinned import (
    orphan_runs,
    recipe_for_run,
    settle_orphan_event,
    version_hold,
)
from practiceflow.versions.recorded import (
    ModuleVersion,
    RecipeVersion,
    VersionUnavailable,
    load_version,
    rebuild,
    recipe_version,
    remember_built,
    save_version,
    short,
)

__all__ = [
    "Decision",
    "ModuleVersion",
    "RecipeVersion",
    "Replay",
    "ReplayedStep",
    "RunCheck",
    "VersionUnavailable",
    "check_runs",
    "in_flight",
    "load_version",
    "migrate",
    "orphan_runs",
    "rebuild",
    "recipe_for_run",
    "recipe_version",
    "remember_built",
    "replay",
    "save_version",
    "settle_orphan_event",
    "short",
    "version_hold",
]
