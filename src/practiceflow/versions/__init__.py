"""Versions: a run finishes on the recipe it started with (docs/versions.md).

What a version is and how it is stored (:mod:`.recorded`), which recipe drives a run
(:mod:`.pinned`), a run rendered again under another version (:mod:`._rerender`), and the
upgrade gate with its explicit migration (:mod:`._gate`).
"""

from __future__ import annotations

from practiceflow.versions._gate import RunCheck, check_runs, in_flight, migrate
from practiceflow.versions._rerender import Replay, ReplayedStep, replay
from practiceflow.versions.recorded import (
    VersionUnavailable,
    load_version,
    rebuild,
    recipe_version,
    short,
)

__all__ = [
    "Replay",
    "ReplayedStep",
    "RunCheck",
    "VersionUnavailable",
    "check_runs",
    "in_flight",
    "load_version",
    "migrate",
    "rebuild",
    "recipe_version",
    "replay",
    "short",
]
