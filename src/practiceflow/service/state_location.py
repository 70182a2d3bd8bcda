"""Where a command's state store is (``--state`` / ``PRACTICEFLOW_STATE``, else
``.practiceflow/state.db``), and the practice's rate budget beside it, so that every process
on one store counts its requests together (docs/architecture.md, "The rate budget").

One ``serve`` per SQLite state file (:class:`ServeLease`): the second refuses, naming the first
(two would double the requests and fight over the write lock). An exclusive ``flock`` on
``<state file>.serve.lock``, dropped by the kernel however the process ends. PostgreSQL takes
none.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any, Final

from practiceflow.budget import RateBudget, RateLimits, store_budget
from practiceflow.errors import ConfigError

#: Where the state store is when neither ``--state`` nor ``PRACTICEFLOW_STATE`` says.
DEFAULT_STATE: Final = Path(".practiceflow") / "state.db"


def state_target(state: str | None) -> str:
    """The store a command uses: ``state`` (``--state``/``PRACTICEFLOW_STATE``) or the default."""
    return state or str(DEFAULT_STATE)


def sqlite_file(state: str | None) -> Path | None:
    """The SQLite file a command's store is, or None for a PostgreSQL store."""
    target = state_target(state)
    if _is_postgres(target):
        return None
    from practiceflow.state import sqlite_path

    return sqlite_path(target)


def _is_postgres(target: str) -> bool:
    return target.lower().startswith(("postgresql://", "postgres://"))


def practice_budget(
    state: str | None, client_id: str, limits: RateLimits | None = None
) -> RateBudget:
    """The practice's rate budget, shared by every process on the store (close it at the end)."""
    try:
        path = sqlite_file(state)
    except ConfigError:  # not a SQLite file: opening the store says what is wrong
        path = None
    return store_budget(state_target(state), path, client_id, limits)


class StoreInUse(ConfigError):
    """Another ``serve`` holds the state file's lease."""

    def __init__(self, state: Path, holder: dict[str, Any]) -> None:
        self.state = state
        self.holder = holder
        where = ", ".join(
            f"{key} {holder[key]}" for key in ("console", "receiver") if holder.get(key)
        )
        message = (
            f"state file {state} is in use by another serve (pid {holder.get('pid', '?')}"
            f"{', ' + where if where else ''}, started {holder.get('started', '?')}); stop "
            "it first, or give this one its own --state"
        )
        super().__init__(message)


class ServeLease:
    """The exclusive lease of one SQLite state file."""

    def __init__(self, state: Path) -> None:
        self.state = state.resolve()  # a symlink or a relative name: the same file's lease
        self.path = self.state.with_name(self.state.name + ".serve.lock")
        self._fd: int | None = None
        self._info: dict[str, Any] = {}

    def acquire(self, **info: Any) -> ServeLease:
        """Take the lease, writing ``info`` to the file, or raise :class:`StoreInUse`."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:  # a read-only folder, no permission
            raise self._unwritable(exc, "a file in a folder this process can write") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(fd)
            os.close(fd)
            raise StoreInUse(self.state, holder) from None
        self._fd = fd
        from practiceflow.templating import utcnow  # jinja2: not for every command's import

        self._info = {"pid": os.getpid(), "started": utcnow().isoformat(timespec="seconds")}
        try:
            self.update(**info)
        except OSError as exc:  # a full disk
            self.release()
            where = "a file on a disk with room"
            raise self._unwritable(exc, where, "free space on its disk, or ") from None
        return self

    def _unwritable(self, exc: OSError, where: str, first: str = "") -> ConfigError:
        message = (
            f"state file {self.state}: its lease file {self.path} cannot be written "
            f"({exc.strerror}); {first}give --state (PRACTICEFLOW_STATE) {where}"
        )
        return ConfigError(message)

    def update(self, **info: Any) -> None:
        """Add to what the file says about the holder (such as the receiver's address)."""
        if self._fd is None:
            return
        self._info.update({key: value for key, value in info.items() if value is not None})
        data = json.dumps(self._info).encode("utf-8")
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)

    def release(self) -> None:
        """Give the lease back (the file stays; its lock is what counts)."""
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> ServeLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read(fd: int) -> dict[str, Any]:
    try:
        raw = os.pread(fd, 4096, 0)
        data = json.loads(raw.decode("utf-8")) if raw else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
