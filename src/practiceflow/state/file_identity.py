"""The SQLite state file a process opened is the one its path names, until it closes it.

A state file deleted (or replaced, by a restore or a ``mv``) under a running process is
still open in that process: SQLite goes on committing into the unlinked file, and every
event acknowledged from then on is lost with it. So the store notes the file's device and
inode when it opens it, and compares them with what its path names before each
connection is used and before each write commits (one ``stat``); a difference stops the
process with :class:`StateFileGone` instead of acknowledging into a file nobody will read.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from practiceflow.errors import ErrorKind, StoreError

__all__ = [
    "FileIdentity",
    "StateFileGone",
    "StoreUnusable",
    "check_identity",
    "file_identity",
]

#: A file's device and inode.
FileIdentity = tuple[int, int]


class StoreUnusable(StoreError):
    """The state file cannot be used where it is (a read-only file or folder, a folder
    that cannot be created): a configuration fault (exit 2) that waiting does not cure.
    As every :class:`StoreError`, a delivery meeting it is refused with 503."""

    kind: ClassVar[ErrorKind] = "config"


class StateFileGone(StoreUnusable):
    """The state file was deleted or replaced while this process had it open: nothing
    more is recorded (a delivery is refused with 503, the sender retries it), and the
    process stops (exit 2)."""


def file_identity(path: Path) -> FileIdentity | None:
    """The device and inode ``path`` names now, or None when it names nothing."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return found.st_dev, found.st_ino


def check_identity(path: Path, opened: FileIdentity | None) -> None:
    """Raise when ``path`` no longer names the file opened as ``opened``.

    Args:
        path: the state file's path.
        opened: its device and inode when the store opened it (None: not known).

    Raises:
        StateFileGone: the path names no file, or another one.
    """
    if opened is None:
        return
    now = file_identity(path)
    if now == opened:
        return
    what = "was deleted" if now is None else "was replaced by another file"
    message = (
        f"state database {path} {what} while this process had it open; nothing more is "
        "recorded or acknowledged (deliveries get 503 and are retried by the sender). "
        "Restore the file, or start again to use the new one"
    )
    raise StateFileGone(message)
