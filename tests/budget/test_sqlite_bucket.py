"""The rate budget shared through a SQLite file: every process on one store counts together.

Budgets here refuse instead of waiting (``deadline`` = now), so each test counts
admissions without sleeping.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from practiceflow.budget.rate_budget import RateBudget, RateLimits
from practiceflow.budget.sqlite_bucket import BudgetFileLock, budget_file, open_bucket
from practiceflow.errors import RateLimitError

FIVE = RateLimits(per_minute=5, per_hour=50, per_day=500, max_wait=0)
FIFTY = RateLimits(per_minute=50, per_hour=500, per_day=5000, max_wait=0)
PRACTICE = RateLimits(per_minute=6, per_hour=60, per_day=600, max_wait=0)
ASSISTANT = RateLimits(per_minute=2, per_hour=20, per_day=200, max_wait=0)


def _budget(file: Path, limits: RateLimits, client_id: str = "client-a") -> RateBudget:
    return RateBudget(limits, bucket=open_bucket(file, client_id, limits), clock=time.time)


def _admitted(budget: RateBudget) -> bool:
    try:
        budget.acquire("GET", "/api/v1/entities", deadline=time.time())
    except RateLimitError:
        return False
    return True


@pytest.fixture
def file(tmp_path: Path) -> Path:
    return budget_file(tmp_path / "state.db")


@pytest.fixture
def budgets() -> Iterator[list[RateBudget]]:
    opened: list[RateBudget] = []
    yield opened
    for budget in opened:
        budget.close()


def test_the_budget_file_lies_beside_the_state_file(tmp_path: Path) -> None:
    assert budget_file(tmp_path / "state.db") == tmp_path / "budget.db"


def test_two_budgets_on_one_file_admit_no_more_than_the_limit_together(
    file: Path, budgets: list[RateBudget]
) -> None:
    # Two connections to one file, as two processes would have.
    first, second = _budget(file, FIVE), _budget(file, FIVE)
    budgets += [first, second]
    admitted = [_admitted(budget) for _ in range(5) for budget in (first, second)]
    assert admitted.count(True) == 5
    assert not _admitted(first)
    assert not _admitted(second)
    # Each sees the other's requests in every window (the /metrics gauges).
    windows = [60_000, 3_600_000, 86_400_000]
    assert first.bucket.window_counts(int(time.time() * 1000), windows) == [5, 5, 5]  # type: ignore[attr-defined]


def test_another_client_id_has_its_own_count_in_the_same_file(
    file: Path, budgets: list[RateBudget]
) -> None:
    spent, other = _budget(file, FIVE, "client-a"), _budget(file, FIVE, "client-b")
    budgets += [spent, other]
    while _admitted(spent):
        pass
    assert [_admitted(other) for _ in range(6)] == [True] * 5 + [False]


def test_threads_of_two_budgets_admit_no_more_than_the_limit_together(
    file: Path, budgets: list[RateBudget]
) -> None:
    first, second = _budget(file, FIFTY), _budget(file, FIFTY)
    budgets += [first, second]
    counts: list[int] = []
    lock = threading.Lock()

    def spend(budget: RateBudget) -> None:
        admitted = sum(_admitted(budget) for _ in range(20))
        with lock:
            counts.append(admitted)

    threads = [threading.Thread(target=spend, args=(b,)) for b in (first, second) * 4]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(counts) == FIFTY.per_minute


CHILD = """
import sys, time
from pathlib import Path
from practiceflow.budget.rate_budget import RateBudget, RateLimits
from practiceflow.budget.sqlite_bucket import open_bucket
from practiceflow.errors import RateLimitError

file, ready, go = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
limits = RateLimits(per_minute=50, per_hour=500, per_day=5000, max_wait=0)
budget = RateBudget(limits, bucket=open_bucket(file, "client-a", limits), clock=time.time)
ready.touch()
while not go.exists():  # every child starts spending at once
    time.sleep(0.001)
admitted = 0
for _ in range(40):
    try:
        budget.acquire("GET", "/api/v1/entities", deadline=time.time())
        admitted += 1
    except RateLimitError:
        pass
budget.close()
print(admitted)
"""


def test_processes_on_one_file_admit_no_more_than_the_limit_together(
    file: Path, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{n}" for n in range(3)]
    children = [
        subprocess.Popen(  # noqa: S603 - our own interpreter and script
            [sys.executable, "-c", CHILD, str(file), str(flag), str(go)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for flag in ready
    ]
    deadline = time.monotonic() + 120
    while not all(flag.exists() for flag in ready) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    admitted = []
    for child in children:
        out, _ = child.communicate(timeout=120)
        assert child.returncode == 0
        admitted.append(int(out))
    assert sum(admitted) == FIFTY.per_minute  # 120 asked for, 50 allowed


def test_an_assistant_is_refused_once_the_practice_has_used_a_third(
    file: Path, budgets: list[RateBudget]
) -> None:
    practice, assistant = _budget(file, PRACTICE), _budget(file, ASSISTANT)
    budgets += [practice, assistant]
    assert _admitted(practice)
    assert _admitted(assistant)  # 2 of 6 used: the assistant's third is reached ...
    assert not _admitted(assistant)
    assert [_admitted(practice) for _ in range(5)] == [True] * 4 + [False]  # ... not the practice's


def test_the_file_lock_is_reentrant_and_excludes_every_other_holder(tmp_path: Path) -> None:
    path = tmp_path / "budget.db.lock"
    lock = BudgetFileLock(path)

    def file_is_free() -> bool:
        fd = os.open(path, os.O_RDWR | os.O_CREAT)  # another open file, as another process
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        finally:
            os.close(fd)  # closing drops a lock we took
        return True

    with lock:
        with lock:  # the bucket takes its lock again while holding it
            assert not file_is_free()
        assert not file_is_free()  # the inner release keeps the outer hold
    assert file_is_free()


def test_the_file_lock_makes_other_threads_wait(tmp_path: Path) -> None:
    lock = BudgetFileLock(tmp_path / "budget.db.lock")
    order: list[str] = []

    def other() -> None:
        with lock:
            order.append("other")

    with lock:
        thread = threading.Thread(target=other)
        thread.start()
        time.sleep(0.2)  # the other thread's chance to (wrongly) get in; never needed to pass
        order.append("first")
    thread.join()
    assert order == ["first", "other"]
