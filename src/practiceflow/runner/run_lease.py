"""One driver per run, whatever the processes: the run lease and its heartbeat.

A runner takes the run's lease before its first step and keeps it renewed (:func:`keeping`,
never in a step's path); a write's ``sent`` is journaled only while it is held, so a ``sent``
step is never one a live process is still sending. Taken over when expired, or at once when
its holder is known dead. Why and limits: docs/architecture.md ("One driver per run").
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Final

from practiceflow.errors import PracticeflowError
from practiceflow.state import StateStore
from practiceflow.state.rows import RunLease

logger = logging.getLogger("practiceflow.runner")

#: How long a lease lasts without a heartbeat.
LEASE_TTL: Final = timedelta(seconds=60)
#: Seconds between heartbeats (a few per lease, so one late heartbeat loses nothing).
HEARTBEAT: Final = 10.0


class RunDrivenElsewhere(PracticeflowError):
    """Another live process drives the run (``runs retry`` of a run in flight)."""

    kind = "transient"

    def __init__(self, run_id: str, holder: str) -> None:
        self.run_id = run_id
        self.holder = holder
        message = (
            f"run {run_id} is being driven by another process ({holder}); "
            "it is left to that process: look again when it ends (runs show)"
        )
        super().__init__(message)


def _proc_stat(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name, or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return text.rpartition(")")[2].split()


def _this_process() -> tuple[str, str]:
    """This process's host and identity (pid namespace @ start time; empty if unknown)."""
    stat = _proc_stat("self")
    started = stat[19] if stat and len(stat) > 19 else ""  # starttime: field 22
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    return socket.gethostname(), f"{namespace}@{started}" if namespace and started else ""


def known_dead(lease: RunLease) -> bool:
    """Whether a lease's holder is certainly gone (same host and pid namespace, not running)."""
    host, identity = _this_process()
    if lease.host != host or not identity or not lease.process:
        return False
    namespace, _, started = lease.process.partition("@")
    if namespace != identity.partition("@")[0]:
        return False
    stat = _proc_stat(lease.pid)
    if stat is None:
        return True  # no such process in our namespace
    return stat[0] == "Z" or (len(stat) > 19 and stat[19] != started)


def lease_for(run_id: str, now: datetime) -> RunLease:
    """The lease this process asks for to drive a run: a new owner, for :data:`LEASE_TTL`."""
    host, identity = _this_process()
    owner = uuid.uuid4().hex
    return RunLease(run_id, owner, host, os.getpid(), identity, now, now + LEASE_TTL)


class _Keeper:
    """Renews every lease this process holds on one store, in one thread; a lost one is logged."""

    def __init__(self, store: StateStore) -> None:
        self.store = weakref.ref(store)  # the keepers' table must not keep a store alive
        self.held: dict[str, RunLease] = {}  # owner token -> lease
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None

    def add(self, lease: RunLease) -> None:
        with self.lock:
            self.held[lease.owner] = lease
            if self.thread is None:
                self.thread = threading.Thread(target=self._beat, name="run-leases", daemon=True)
                self.thread.start()

    def remove(self, lease: RunLease) -> None:
        with self.lock:
            self.held.pop(lease.owner, None)

    def _beat(self) -> None:
        while True:
            time.sleep(HEARTBEAT)
            with self.lock:
                leases = list(self.held.values())
                if not leases:  # nothing held: the next lease starts a new thread
                    self.thread = None
                    return
            for lease in leases:
                self._renew(lease)

    def _renew(self, lease: RunLease) -> None:
        store = self.store()
        if store is None:
            return
        try:
            kept = store.renew_run_lease(lease.run_id, lease.owner, store.now() + LEASE_TTL)
        except Exception as exc:  # the store refused a heartbeat: the next one may pass
            logger.warning("run %s: lease heartbeat failed: %s", lease.run_id, exc)
            return
        if not kept:
            with self.lock:  # given back while this beat went round: not taken, ended
                ended = lease.owner not in self.held
            if not ended:
                logger.error("run %s: its lease was taken by another process", lease.run_id)
                self.remove(lease)


_keepers: weakref.WeakKeyDictionary[StateStore, _Keeper] = weakref.WeakKeyDictionary()
_keepers_lock = threading.Lock()


def _keeper(store: StateStore) -> _Keeper:
    with _keepers_lock:
        keeper = _keepers.get(store)
        if keeper is None:
            keeper = _keepers[store] = _Keeper(store)
        return keeper


@contextmanager
def keeping(store: StateStore, lease: RunLease) -> Iterator[None]:
    """Keep a lease for the block (renewed every :data:`HEARTBEAT` seconds), then give it back."""
    keeper = _keeper(store)
    keeper.add(lease)
    try:
        yield
    finally:
        keeper.remove(lease)
        try:
            store.release_run_lease(lease.run_id, lease.owner)
        except Exception as exc:  # it lapses on its own; the run's outcome is committed
            logger.warning("run %s: lease not given back (it lapses): %s", lease.run_id, exc)
