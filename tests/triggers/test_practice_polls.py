"""A practice's polls, grouped by list, on cadences tied together (fake client, fake clock)."""

from __future__ import annotations

import threading
from typing import Any

from practiceflow.state import SQLiteStore
from practiceflow.triggers import PollMember, PollNeed, PollTarget, PracticePolls, load_definition


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FakeApi:
    """Answers each list with the rows it is given; counts the requests per path."""

    rate_limit_status = None

    def __init__(self) -> None:
        self.rows: dict[str, list[dict[str, Any]]] = {}
        self.sent: dict[str, int] = {}

    def get(self, path: str, query: dict[str, Any]) -> list[dict[str, Any]]:
        self.sent[path] = self.sent.get(path, 0) + 1
        return self.rows.get(path, []) if query.get("pageNumber") == 1 else []


def _entity(key: str, stamp: str) -> dict[str, Any]:
    return {"entityKey": key, "status": "Active", "lastUpdated": stamp}


def _group(number: int, stamp: str) -> dict[str, Any]:
    return {"groupID": number, "groupName": "g", "updatedOn": stamp}


def _polls(store: SQLiteStore, api: FakeApi, clock: Clock) -> PracticePolls:
    def target(key: str, need: PollNeed) -> PollTarget:
        return PollTarget(PollMember(store, "p", load_definition(key)), need)

    quiet = PollNeed.polled(60, 900)
    return PracticePolls(
        api,
        [
            target("new_client", quiet),
            target("new_group", quiet),
            target("updated_client", quiet),
            target("updated_group", PollNeed.sweep(3600)),  # a webhook trigger's sweep
        ],
        clock=clock,
    )


def test_a_change_in_one_list_brings_the_practices_other_polls_back_to_the_fastest(tmp_path):
    api, clock = FakeApi(), Clock()
    api.rows["/api/v1/entities/list"] = [_entity("a", "2026-01-01T00:00:00Z")]
    api.rows["/api/v1/groups/list"] = [_group(1, "2026-01-01T00:00:00Z")]
    with SQLiteStore(tmp_path / "s.db") as store:
        polls = _polls(store, api, clock)
        entities, groups = polls.groups
        assert (entities.names, groups.names) == (
            ["new_client", "updated_client"],
            ["new_group", "updated_group"],
        )
        assert (groups.cadence.fastest, groups.cadence.slowest) == (60, 900)  # polled wins
        for group in polls.groups:
            group.poll_once()  # baselines: a cursor set is a change
        for _ in range(4):  # quiet
            for group in polls.groups:
                clock.now += group.cadence.wait()
                group.poll_once()
        assert (entities.cadence.interval, groups.cadence.interval) == (900, 900)
        # Five polls of each list, one per group (a one-row page looks full: page 2 too).
        assert api.sent == {"/api/v1/entities/list": 10, "/api/v1/groups/list": 10}
        api.rows["/api/v1/entities/list"].append(_entity("b", "2026-01-02T00:00:00Z"))
        found = entities.poll_once()
        assert [event.id for event in found.results["new_client"].events] == ["client:b"]
        assert found.changed
        assert groups.cadence.wait() == 60  # the other list is looked at again soon
        assert polls.next_due() == (entities, 60)


def test_a_practice_of_webhook_sweeps_only_keeps_its_pace_and_stops_on_request(tmp_path):
    api, clock = FakeApi(), Clock()
    with SQLiteStore(tmp_path / "s.db") as store:
        member = PollMember(store, "p", load_definition("updated_group"))
        polls = PracticePolls(api, [PollTarget(member, PollNeed.sweep(3600))], clock=clock)
        (sweep,) = polls.groups
        stop = threading.Event()
        assert sweep.wait_due(stop)  # due at once: it catches up first
        sweep.poll_once()
        polls.cadence.activity()  # a delivery does not make a sweep poll sooner
        assert sweep.cadence.wait() == 3600
        stop.set()
        polls.wake_all()
        assert not sweep.wait_due(stop)
