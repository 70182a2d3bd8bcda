"""Module loading once per distinct file: the suite loads the same modules thousands of times.

Loading the modules lints every shipped file (about 2 s); every CLI command run in-process,
every registry a test builds, repeats that for files that did not change.
:func:`load_module_cached` keys each loaded module by its file's name and bytes, so an
edited or added file is loaded afresh (a removed one is not asked for; one that is not a
regular file, and one that fails to load, is loaded each time). The registry and its
cross-module checks are still made anew each call, from the cached (frozen) modules.
``tests/conftest.py`` puts it in place for the whole session.
"""

from __future__ import annotations

import stat
from pathlib import Path

from practiceflow.manifest.loader import PathLike, load_module
from practiceflow.manifest.models import Module

#: Larger files are loaded each time (the loader refuses what is too large to read).
_LARGEST = 1_000_000
_LOADED: dict[tuple[str, str | None, bytes], Module] = {}


def load_module_cached(path: PathLike, *, display: str | None = None) -> Module:
    """What ``load_module(path, display=display)`` returns, loaded once per content."""
    file = Path(path) if isinstance(path, str) else path
    if isinstance(file, Path):  # a FIFO, a device, a huge file: the loader's to refuse
        try:
            status = file.stat()
        except OSError:
            return load_module(path, display=display)
        if not stat.S_ISREG(status.st_mode) or status.st_size > _LARGEST:
            return load_module(path, display=display)
    key = (str(path), display, file.read_bytes())
    if key not in _LOADED:
        _LOADED[key] = load_module(path, display=display)
    return _LOADED[key]
