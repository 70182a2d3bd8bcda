"""Store-agnostic crash safety: a process killed with SIGKILL loses nothing it committed.

The child process writes through the public API and reports each commit on stdout; the
parent kills it without warning, reopens the store and checks what survived.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable

import pytest

from practiceflow.state import StateStore, sqlite_path

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")

_SEND_THEN_HANG = textwrap.dedent(
    """
    import sys, time
    from practiceflow.state import open_store

    store = open_store(sys.argv[1])
    run_id, _ = store.start_run("practice-a", "onboard", "evt-crash")
    store.step_pending(run_id, "bill", {"method": "POST", "path": "/api/v1/bills"})
    store.step_sent(run_id, "bill")
    print(run_id, flush=True)  # the request would leave now; we die before an answer
    time.sleep(120)
    """
)

_WRITE_FOREVER = textwrap.dedent(
    """
    import sys
    from practiceflow.state import open_store

    store = open_store(sys.argv[1])
    run_id, _ = store.start_run("practice-a", "bulk", "evt-bulk")
    print(run_id, flush=True)
    number = 0
    while True:
        step = f"step-{number}"
        store.step_pending(run_id, step, {"n": number, "pad": "x" * 2000})
        store.step_sent(run_id, step)
        store.record_event("practice-a", "poll", "e", f"evt-{number}", {"n": number})
        print(step, flush=True)
        number += 1
    """
)


def _start(code: str, url: str) -> subprocess.Popen[str]:
    return subprocess.Popen(  # noqa: S603 -- our own interpreter running our own code.
        [sys.executable, "-c", code, url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _line(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line:
        process.kill()
        _, stderr = process.communicate()
        pytest.fail(f"child process wrote nothing; stderr:\n{stderr}")
    return line


def _kill(process: subprocess.Popen[str]) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.communicate()
    assert process.returncode == -signal.SIGKILL


def _assert_intact(url: str) -> None:
    if url.startswith("sqlite://"):  # other backends check their own integrity
        with sqlite3.connect(sqlite_path(url)) as raw:
            assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_step_marked_sent_survives_sigkill(
    store_url: str, open_store_again: Callable[[], StateStore]
) -> None:
    process = _start(_SEND_THEN_HANG, store_url)
    run_id = _line(process)
    _kill(process)

    _assert_intact(store_url)
    store = open_store_again()
    step = store.get_step(run_id, "bill")
    assert step is not None
    assert step.status == "sent"  # not lost (pending would send it twice), not corrupted
    assert step.attempts == 1
    assert step.request == {"method": "POST", "path": "/api/v1/bills"}
    assert store.start_run("practice-a", "onboard", "evt-crash") == (run_id, False)


def test_sigkill_in_the_middle_of_writes_loses_no_commit(
    store_url: str, open_store_again: Callable[[], StateStore]
) -> None:
    process = _start(_WRITE_FOREVER, store_url)
    run_id = _line(process)
    committed = [_line(process) for _ in range(40)]
    _kill(process)

    _assert_intact(store_url)
    store = open_store_again()
    steps = {step.step_id: step for step in store.get_steps(run_id)}
    for step_id in committed:
        assert steps[step_id].status == "sent"
    # A step the child had not yet reported may be pending or sent, never half-written.
    assert all(step.status in ("pending", "sent") for step in steps.values())
    assert store.seen_event("practice-a", "poll", "evt-39")
