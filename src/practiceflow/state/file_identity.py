"""The errors of a SQLite state file that cannot be used where it is.

A state file deleted (or replaced, by a restore or a ``mv``) under a running process is
still open in that process: SQLite goes on committing into the unlinked file, and every
event acknowledged from then on is lost with it. So the SQLite store (``_sqlite.py``)
notes the file's device and inode when it opens it, and compares them with what its path
names before each connection is used and before each write commits (one ``stat``); a
difference stops the process with :class:`StateFileGone` instead of acknowledging into a
file nobody will read.
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
