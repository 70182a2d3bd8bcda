"""Module loading once per distinct file, for tests that load the same modules often.

Loading the modules lints every shipped file (about 2 s); a test that loads a registry
several times (once per restart, before and after an edit) repeats that for files that did
not change. :func:`load_module_cached` keys each loaded module by its file's name and
bytes, so an edited or added file is loaded afresh (a removed one is not asked for), and
:func:`load_modules_cached` is ``load_modules`` with that cache: the registry and its
cross-module checks are made anew each call, from the cached (frozen) modules.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from unittest import mock

from practiceflow.manifest import ModuleRegistry, load_modules, module_registry
from practiceflow.manifest.loader import PathLike, load_module
from practiceflow.manifest.models import Module

_LOADED: dict[tuple[str, str | None, bytes], Module] = {}


def load_module_cached(path: PathLike, *, display: str | None = None) -> Module:
    """What ``load_module(path, display=display)`` returns, loaded once per content."""
    file = Path(path) if isinstance(path, str) else path
    key = (str(path), display, file.read_bytes())
    if key not in _LOADED:
        _LOADED[key] = load_module(path, display=display)
    return _LOADED[key]


def load_modules_cached(dirs: Sequence[PathLike] = ()) -> ModuleRegistry:
    """What ``load_modules(dirs)`` returns, each unchanged file's module loaded once."""
    with mock.patch.object(module_registry, "load_module", load_module_cached):
        return load_modules(dirs)
