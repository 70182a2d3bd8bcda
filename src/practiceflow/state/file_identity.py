"""The errors of a SQLite state file that cannot be used where it is.

A state file deleted or replaced under a running process stays open in it, and SQLite
would go on committing (and acknowledging) into the unlinked file. So ``_sqlite.py``
compares the path's device and inode with the opened file's before each use and each
commit, and stops with :class:`StateFileGone` on a difference.
"""

from __future__ import annotations

from typing import ClassVar

from practiceflow.errors import ErrorKind, StoreError


class StoreUnusable(StoreError):
    """The state file cannot be used where it is (a read-only file or folder, a folder
    that cannot be created): a configuration fault (exit 2) that waiting does not cure.
    As every :class:`StoreError`, a delivery meeting it is refused with 503."""

    kind: ClassVar[ErrorKind] = "config"


class StateFileGone(StoreUnusable):
    """The state file was deleted or replaced while this process had it open: nothing
    more is recorded (a delivery is refused with 503, the sender retries it), and the
    process stops (exit 2)."""
