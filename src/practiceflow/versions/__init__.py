"""Versions: a run finishes on the recipe it started with: versions stored and rebuilt, the
recipe that drives a run, replays and the upgrade gate (docs/versions.md).
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
