"""Versions: a run finishes on the recipe it started with.

This package owns what a run's version is and what is done with it:

* :mod:`._recorded`: the recipe version (the recipe's text, its modules' texts, the hook
  names they need), stored once per content in the state store and rebuilt from there;
* :mod:`._pinned`: which recipe a run is driven with (its own version, whatever the files
  say now), and runs whose recipe is no longer served;
* :mod:`._replay`: a run rendered again under another version, reads from its journal,
  nothing sent;
* :mod:`._gate`: ``recipes check``, every run in flight replayed against a new version,
  and the explicit migration of those that can move.
"""

from __future__ import annotations

from practiceflow.versions._recorded import (
    ModuleVersion,
    RecipeVersion,
    VersionUnavailable,
    load_version,
    rebuild,
    recipe_version,
    save_version,
    short,
)

__all__ = [
    "ModuleVersion",
    "RecipeVersion",
    "VersionUnavailable",
    "load_version",
    "rebuild",
    "recipe_version",
    "save_version",
    "short",
]
