"""A bench whose runs fail prints no figures: ``bench/many_practices.py`` names every reason
and exits instead (its figures would be NaN or describe work that never happened)."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "many_practices.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("many_practices", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("statuses", "pending", "fired", "writes", "polls", "expected"),
    [
        pytest.param({"succeeded": 31}, 0, 31, 31, 150, [], id="every run succeeded"),
        pytest.param(
            {"succeeded": 30, "failed": 1}, 0, 31, 30, 150,
            ["1 run(s) ended failed", "1 of 31 fired event(s) have no write sent"],
            id="a run failed",
        ),
        pytest.param(
            {"succeeded": 31, "in_doubt": 2}, 0, 31, 31, 150, ["2 run(s) ended in_doubt"],
            id="runs in doubt",
        ),
        pytest.param(
            {}, 31, 31, 0, 150,
            ["31 event(s) still pending after the drain",
             "31 of 31 fired event(s) have no write sent"],
            id="no run happened",
        ),
        pytest.param({"succeeded": 31}, 0, 31, 31, 0, ["no poll was recorded in the window"],
                     id="no poll"),
    ],
)  # fmt: skip
def test_a_bench_whose_runs_fail_names_why_instead_of_printing_figures(
    statuses: dict[str, int],
    pending: int,
    fired: int,
    writes: int,
    polls: int,
    expected: list[str],
) -> None:
    assert _bench().run_failures(statuses, pending, fired, writes, polls) == expected


def test_the_sandboxs_own_count_of_copies_fails_a_run_written_twice_or_never() -> None:
    copies = {"ev-1-1": 1, "ev-1-2": 2, "ev-2-1": 0, "ev-2-2": 3}

    problems = _bench().run_failures({"succeeded": 4}, 0, 4, 4, 150, copies)

    assert problems == [
        "2 fired event(s) written more than once on the sandbox",
        "1 fired event(s) with no copy on the sandbox",
    ]
    assert _bench().run_failures({"succeeded": 1}, 0, 1, 1, 150, {"ev-1-1": 1}) == []


@pytest.mark.parametrize(("speedup", "fires"), [(0.0, False), (5.0, True)])
def test_speedup_zero_plans_no_event_for_a_polls_only_run(speedup: float, fires: bool) -> None:
    plan = _bench()._schedule(200, 600.0, speedup, random.Random(1))

    assert bool(plan) is fires


def test_the_projection_uses_the_runs_own_request_rate() -> None:
    """Adaptive polling spends far fewer requests than three polls a minute: a projection
    from that fixed model said 3.3 cores where the run measured under one."""
    run = {
        "practices": 10_000,
        "workers": 2,
        "worker_cpu_per_1000": 4.5,
        "postgres_cpu_per_1000": 1.9,
        "rss_per_practice_kib": 174.0,
    }
    (measured,) = _bench()._project([{**run, "requests_per_practice_day": 1125}])
    assert "130 requests/s" in measured
    assert "= 0.8 cores" in measured
    assert _bench()._project([run]) == []  # a killed run: a survivor's CPU, no daily rate
