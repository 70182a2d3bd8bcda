"""The errors of a SQLite state file that cannot be used where it is.

A state file deleted or replaced under a running process stays open in it, and SQLite
would go on committing (and acknowledging) into the unlinked file: ``_sqlite.py`` checks
the path's device and inode before each use and each commit.
"""

from __future__ import annotations

from typing import ClassVar

from practiceflow.errors import ErrorKind, StoreError


class StoreUnusable(StoreError):
    """The state file cannot be used where it is (read-only, or no folder for it): a
    configuration fault (exit 2) that waiting does not cure; a delivery gets 503."""

    kind: ClassVar[ErrorKind] = "config"


class StateFileGone(StoreUnusable):
    """The state file was deleted or replaced while this process had it open: nothing
    more is recorded (deliveries get 503) and the process stops (exit 2)."""
