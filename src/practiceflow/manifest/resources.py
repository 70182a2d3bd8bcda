"""Where the shipped ``actions/``, ``triggers/`` and ``manifests/`` live.

Package data under ``practiceflow/_data/`` in a wheel, the repository's top-level folders in a
checkout; found relative to this package, never the working directory.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Literal

DataKind = Literal["actions", "triggers", "manifests"]


def data_dir(kind: DataKind) -> Traversable:
    """Return the folder of shipped data of one kind."""
    packaged = files("practiceflow") / "_data" / kind
    if packaged.is_dir():
        return packaged
    # Source checkout: src/practiceflow/manifest/resources.py -> repository root.
    return Path(__file__).resolve().parents[3] / kind
