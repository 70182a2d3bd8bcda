"""The queue keeps no job forever: jobs that ended other than in success go after a week."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from practiceflow.fleet.queue import KEEP_ENDED_JOBS_H, NAMESPACE, make_app, prune_jobs


async def _defer_and_prune(url: str, ended: dict[str, tuple[str, int]]) -> None:
    """Queue one job per name, end it as ``ended`` says (status, hours ago), then prune."""
    app = make_app(url)
    async with app.open_async():
        task = app.tasks[f"{NAMESPACE}:sweep"]
        ids = {name: await task.defer_async(timestamp=0, practice=name) for name in ended}
        with psycopg.connect(url) as raw:
            for name, (status, hours) in ended.items():
                raw.execute(
                    "UPDATE procrastinate_jobs SET status = %s WHERE id = %s", (status, ids[name])
                )
                raw.execute(
                    "UPDATE procrastinate_events SET at = now() - make_interval(hours => %s)"
                    " WHERE job_id = %s",
                    (hours, ids[name]),
                )
        await prune_jobs(app)


@pytest.mark.parametrize(
    ("status", "hours", "kept"),
    [
        pytest.param("failed", KEEP_ENDED_JOBS_H + 1, False, id="failed, a week ago: gone"),
        pytest.param("aborted", KEEP_ENDED_JOBS_H + 1, False, id="aborted, a week ago: gone"),
        pytest.param("cancelled", KEEP_ENDED_JOBS_H + 1, False, id="cancelled, a week: gone"),
        pytest.param("failed", 1, True, id="failed an hour ago: kept to investigate"),
        pytest.param("todo", KEEP_ENDED_JOBS_H + 1, True, id="still waiting: kept"),
    ],
)
def test_ended_jobs_are_kept_a_week_then_deleted(
    pg_url: str, status: str, hours: int, kept: bool
) -> None:
    asyncio.run(_defer_and_prune(pg_url, {"alpha": (status, hours)}))

    with psycopg.connect(pg_url) as raw:
        rows = raw.execute("SELECT status FROM procrastinate_jobs").fetchall()
    assert rows == ([(status,)] if kept else [])
