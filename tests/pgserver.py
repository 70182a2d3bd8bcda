"""A real, throw-away PostgreSQL server for the tests: initdb in a temporary folder.

One server per test session, started on first use on a free port of 127.0.0.1 (no Unix
socket outside its own folder) and stopped when the session's process exits. Each test
asks it for a fresh database (:meth:`PostgresServer.new_database`), so tests never see
each other's rows.

PostgreSQL refuses to run as root; when the suite runs as root (containers, CI images)
the server runs as the unprivileged ``nobody`` through ``runuser``, in a folder chowned to
it. Durability settings are off (``fsync``, ``full_page_writes``): the server is thrown
away, and a client killed with SIGKILL still loses nothing the server acknowledged.

The binaries are looked up on ``PATH``, then in ``/usr/lib/postgresql/*/bin``. Without
them the PostgreSQL tests fail, never skip: ``make test`` installs them first
(``.ci/system-deps``).
"""

from __future__ import annotations

import atexit
import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

__all__ = ["PostgresServer", "postgres_binaries", "shared_server"]

_UNPRIVILEGED_USER = "nobody"
_SETTINGS = {
    "fsync": "off",
    "full_page_writes": "off",
    "max_connections": "300",
    "shared_buffers": "64MB",
    "listen_addresses": "127.0.0.1",
}


def postgres_binaries() -> Path | None:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``, or ``None``."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(folder) / "initdb").exists():
            return Path(folder)
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class PostgresServer:
    """A running throw-away server.

    Attributes:
        folder: its temporary folder (data directory, socket, log).
        port: its TCP port on 127.0.0.1.
        bin_dir: where its binaries are.
    """

    folder: Path
    port: int
    bin_dir: Path
    _as_user: list[str] = field(default_factory=list)
    _names: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def start(cls) -> PostgresServer:
        """initdb and start a server; raises ``RuntimeError`` with its log on failure."""
        bin_dir = postgres_binaries()
        if bin_dir is None:
            raise FileNotFoundError("initdb")
        folder = Path(tempfile.mkdtemp(prefix="practiceflow-pg-"))
        as_user: list[str] = []
        if os.geteuid() == 0:
            # initdb and postgres refuse root; nobody owns the folder and runs them.
            shutil.chown(folder, user=_UNPRIVILEGED_USER)
            as_user = ["runuser", "-u", _UNPRIVILEGED_USER, "--"]
        server = cls(folder, _free_port(), bin_dir, as_user)
        server._init_and_start()
        return server

    @property
    def admin_url(self) -> str:
        """URL of the ``postgres`` maintenance database, as superuser ``postgres``."""
        return self.url("postgres")

    def url(self, database: str) -> str:
        """A ``postgresql://`` URL of one database of this server."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self, prefix: str = "pf", *, template: str | None = None) -> str:
        """Create a database and return its URL.

        Args:
            prefix: the start of its name.
            template: copy this database (which must have no open connection); an empty
                database when None.
        """
        import psycopg

        with self._lock:
            name = f"{prefix}_{next(self._names)}"
        copy = f' TEMPLATE "{template}"' if template else ""
        with psycopg.connect(self.admin_url, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"{copy}'.encode())
        return self.url(name)

    def new_schema(self, database: str = "postgres", prefix: str = "pf") -> str:
        """Create an empty schema and return a URL whose ``search_path`` is that schema.

        Cheaper than a database per test (no copy of a template), and as isolated for
        code that names its tables unqualified.
        """
        import psycopg

        with self._lock:
            name = f"{prefix}_{next(self._names)}"
        with psycopg.connect(self.url(database), autocommit=True) as connection:
            connection.execute(f'CREATE SCHEMA "{name}"')
        return f"{self.url(database)}?options=-csearch_path%3D{name}"

    def stop(self) -> None:
        """Stop the server at once and delete its folder."""
        pg_ctl = str(self.bin_dir / "pg_ctl")
        subprocess.run(  # noqa: S603 -- our own binary, fixed arguments.
            [*self._as_user, pg_ctl, "-D", str(self.folder / "data"), "-m", "immediate", "stop"],
            capture_output=True,
            check=False,
        )
        shutil.rmtree(self.folder, ignore_errors=True)

    def halt(self) -> None:
        """Stop the server at once, keeping its data (a crash, or a restart's first half)."""
        pg_ctl = str(self.bin_dir / "pg_ctl")
        self._run(pg_ctl, "-D", str(self.folder / "data"), "-m", "immediate", "stop")

    def resume(self) -> None:
        """Start a halted server again on the same port and data."""
        self._start()

    def _run(self, *args: str) -> None:
        result = subprocess.run(  # noqa: S603 -- our own binaries, fixed arguments.
            [*self._as_user, *args], capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            log = self.folder / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            message = f"{args[0]} failed ({result.returncode}):\n{result.stderr}\n{tail}"
            raise RuntimeError(message)

    def _init_and_start(self) -> None:
        data = self.folder / "data"
        self._run(
            str(self.bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust",
            "-E", "UTF8", "--no-sync", "--no-instructions",
        )  # fmt: skip
        self._start()

    def _start(self) -> None:
        data = self.folder / "data"
        options = " ".join(f"-c {name}={value}" for name, value in _SETTINGS.items())
        options += f" -p {self.port} -k {self.folder}"
        self._run(
            str(self.bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-w", "-t", "60",
            "-l", str(self.folder / "server.log"), "start",
        )  # fmt: skip


_shared: PostgresServer | None = None
_shared_lock = threading.Lock()


def shared_server() -> PostgresServer:
    """The session's server, started on first call; fails with the way out without one.

    Returns:
        The running server; it is stopped when the test process exits.
    """
    global _shared
    with _shared_lock:
        if _shared is None:
            try:
                _shared = PostgresServer.start()
            except FileNotFoundError:
                # Never a silent skip: make test installs them (.ci/system-deps).
                message = (
                    "PostgreSQL server binaries (initdb, pg_ctl) not found; run "
                    "'bash .ci/system-deps' (Debian: apt-get install -y postgresql)"
                )
                pytest.fail(message)
            atexit.register(_shared.stop)
        return _shared
