"""Reading a user's file without trusting it: regular, within a size limit, checked first.

A path may be a device, a FIFO or a growing file: it is looked at before opening, and at most
one byte over the limit is read, so no input makes a command read without end or block.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class FileRefused(Exception):
    """The file is not a regular file, is too large, or cannot be read (the message says)."""


def read_text_limited(path: str | os.PathLike[str], limit: int) -> str:
    """Read a UTF-8 text file of at most ``limit`` bytes (else :class:`FileRefused`)."""
    target = Path(path)
    try:
        info = target.stat()
    except OSError as exc:
        message = f"cannot read the file: {exc.strerror or exc}"
        raise FileRefused(message) from None
    if not stat.S_ISREG(info.st_mode):
        message = "not a regular file (a directory, device, FIFO or socket cannot be read)"
        raise FileRefused(message)
    if info.st_size > limit:
        message = f"the file is {info.st_size} bytes; the limit is {limit}"
        raise FileRefused(message)
    try:
        with target.open("rb") as stream:
            data = stream.read(limit + 1)
    except OSError as exc:
        message = f"cannot read the file: {exc.strerror or exc}"
        raise FileRefused(message) from None
    if len(data) > limit:  # it grew after the check, or reports no size (procfs)
        message = f"the file is larger than the limit of {limit} bytes"
        raise FileRefused(message)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        message = f"the file is not UTF-8 text (byte {exc.start}: {exc.reason})"
        raise FileRefused(message) from None
