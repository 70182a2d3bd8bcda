"""The ``practiceflow`` CLI killed at a journal point, in a process forked from a warm one.

``tests/kill_at.py`` run as a fresh interpreter spends most of its time before the first
request: importing the package (~1 s) and loading and linting every shipped module
(~1.5 s), the same work each of the crash tests' hundred-odd kills repeats. Here one
helper process per test session does that work once (:func:`_serve`), and each kill is a
``fork()`` of it that runs the CLI's ``main`` with the kill point installed, as
``kill_at.py`` does. The child is a real separate process killed by a real ``SIGKILL``:
what the crash tests prove (the journal on disk after a ``kill -9``, then a restart) is
unchanged, only the interpreter's start is shared::

    done = run_cli(["sent:bill", "run", "recipe.yaml", "--once", ...], env)
    assert done.returncode == -signal.SIGKILL, done.stderr

The helper is single-threaded and opens no file, socket or database before it forks; the
module cache it warms is keyed by each file's bytes, so a module edited by a test is
loaded afresh.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent


@dataclass(frozen=True)
class Done:
    """What ``subprocess.run`` would have told: the status (``-9`` when killed) and output."""

    returncode: int
    stdout: str
    stderr: str


_LOCK = threading.Lock()
_HELPER: list[subprocess.Popen[str]] = []


def _helper() -> subprocess.Popen[str]:
    if _HELPER and _HELPER[0].poll() is None:
        return _HELPER[0]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent / "src"), env.get("PYTHONPATH", "")])
    helper = subprocess.Popen(  # noqa: S603 - this very file
        [sys.executable, str(Path(__file__)), "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
        bufsize=1,
    )
    _HELPER[:] = [helper]
    atexit.register(_close, helper)
    return helper


def _close(helper: subprocess.Popen[str]) -> None:
    if helper.poll() is None:
        assert helper.stdin is not None
        helper.stdin.close()
        try:
            helper.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a stuck helper
            helper.kill()


def _line(helper: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
    """The helper's next line, read byte by byte from its pipe (no buffer to hide a line
    from ``select``)."""
    assert helper.stdout is not None
    fd, read = helper.stdout.fileno(), b""
    deadline = time.monotonic() + timeout
    while not read.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise TimeoutError
        byte = os.read(fd, 1)
        if not byte:  # pragma: no cover - the helper died
            message = f"the fork helper stopped (status {helper.poll()})"
            raise RuntimeError(message)
        read += byte
    result: dict[str, Any] = json.loads(read)
    return result


def run_cli(args: Sequence[str], env: Mapping[str, str], *, timeout: float = 60) -> Done:
    """``python tests/kill_at.py *args`` with ``env``, forked from the warm helper.

    Args:
        args: the kill point, then the CLI's arguments.
        env: the child's whole environment.
        timeout: seconds before the child is killed and :class:`TimeoutError` raised.

    Returns:
        The child's status (negative: the signal that ended it), stdout and stderr.
    """
    with _LOCK, tempfile.TemporaryDirectory(prefix="forked-cli-") as folder:
        out, err = Path(folder) / "out", Path(folder) / "err"
        helper = _helper()
        assert helper.stdin is not None
        request = {"args": list(args), "env": dict(env), "cwd": os.getcwd()}
        helper.stdin.write(json.dumps({**request, "out": str(out), "err": str(err)}) + "\n")
        pid = _line(helper, 30)["pid"]
        try:
            status = _line(helper, timeout)["status"]
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            _line(helper, 30)
            raise
        return Done(status, out.read_text(errors="replace"), err.read_text(errors="replace"))


# --- the helper process -------------------------------------------------------------------


def _warm() -> None:
    """Import what the CLI's commands import, and cache module loading by file content."""
    import practiceflow.cli.runs
    from module_cache import load_module_cached
    from practiceflow.manifest import module_registry

    module_registry.load_module = load_module_cached  # type: ignore[assignment]
    module_registry.load_modules([HERE / "runner" / "modules"])
    del practiceflow


def _child(request: dict[str, Any]) -> None:
    """In the forked child: become ``kill_at.py ARGS`` and never return."""
    code = 1
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, name in ((1, "out"), (2, "err")):
            os.dup2(os.open(request[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        import kill_at
        from practiceflow.cli import main

        point, *argv = request["args"]
        kill_at.install(point)
        sys.argv = ["practiceflow", *argv]
        try:
            main()
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _serve() -> None:
    _warm()
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        print(json.dumps({"status": code}), flush=True)


if __name__ == "__main__":
    if sys.argv[1:] != ["--serve"]:
        sys.exit("usage: python tests/forked_cli.py --serve (see run_cli)")
    _serve()
