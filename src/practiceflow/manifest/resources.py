"""Where the shipped declarative data lives: ``actions/``, ``triggers/``, ``manifests/``.

In a wheel they are package data under ``practiceflow/_data/``; in a source checkout
(editable install, tests) they are the top-level folders of the repository. Both are found
relative to this package, never through the current working directory.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Literal

__all__ = ["DataKind", "data_dir"]

DataKind = Literal["actions", "triggers", "manifests"]


def data_dir(kind: DataKind) -> Traversable:
    """Return the folder of shipped data of one kind."""
    packaged = files("practiceflow") / "_data" / kind
    if packaged.is_dir():
        return packaged
    # Source checkout: src/practiceflow/manifest/resources.py -> repository root.
    return Path(__file__).resolve().parents[3] / kind
