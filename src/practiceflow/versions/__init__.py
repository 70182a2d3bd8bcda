"""Versions: a run finishes on the recipe it started with (docs/versions.md).

What a version is and how it is stored (:mod:`.recorded`), which recipe drives a run
(:mod:`.pinned`), a run rendered again under another version (:mod:`._rerender`), and the
upgrade gate with its explicit migration (:mod:`._gate`).
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
