"""Shared polls: one list request feeds every trigger reading the same list and cursor.

Against the sandbox over real HTTP: the four entity triggers of one practice spend the
requests of one of them, and each still fires exactly its own events; a failure between
two triggers' handling (injected into the store) loses nothing and fires nothing twice.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from practiceflow.errors import ConfigError
from practiceflow.state import SQLiteStore
from practiceflow.triggers import Poller, load_definition, shipped_trigger_keys
from practiceflow.triggers.poll_member import PollMember
from practiceflow.triggers.shared_poll import SharedPoll, group_members, poll_source

pytestmark = pytest.mark.integration

ENTITY_TRIGGERS = ("new_client", "new_lead", "lead_converted", "updated_client")
LIST = "/api/v1/entities/list"
#: Options of the shipped triggers that need one to be polled.
OPTIONS: dict[str, dict[str, Any]] = {
    "new_recurring_billing_run": {"recurringBillingId": 7},
    "proposal_accepted": {"entityKey": "5114e089-47cd-4e89-9966-cab520339605"},
}


def _members(store: SQLiteStore, keys: Iterable[str] = ENTITY_TRIGGERS) -> list[PollMember]:
    return [PollMember(store, "p", load_definition(key)) for key in keys]


def _list_requests(sandbox: Any) -> int:
    return sum(
        1
        for row in sandbox.admin("GET", "/_admin/requests")
        if row["path"] == LIST and row["status"] == 200
    )


def _stored(store: SQLiteStore, name: str) -> list[str]:
    return sorted(event.event_id for event in store.pending_events("p", 1000, source=name))


def _make_changes(sandbox: Any) -> dict[str, list[str]]:
    """One change of each kind; returns the dedupe keys each trigger must fire."""
    rows = sandbox.admin("GET", "/_admin/records/entities")
    lead = next(row for row in rows if row["status"] == "Lead")
    active = next(row for row in rows if row["status"] == "Active")
    company = {"entityType": "Company"}
    client = sandbox.admin("POST", "/_admin/entities", {**company, "entityName": "Nomvula"})
    new_lead = sandbox.admin(
        "POST", "/_admin/entities", {**company, "entityName": "Pieter", "clientStatus": "Lead"}
    )
    sandbox.admin("PATCH", f"/_admin/entities/{lead['entityKey']}", {"status": "Active"})
    changed = sandbox.admin(
        "PATCH", f"/_admin/entities/{active['entityKey']}", {"email": "moved@example.com"}
    )
    return {
        "new_client": [f"client:{client['entityKey']}"],
        "new_lead": [f"lead:{new_lead['entityKey']}"],
        "lead_converted": [f"converted:{lead['entityKey']}"],
        "updated_client": sorted(
            [
                f"{active['entityKey']}@{changed['lastUpdated']}",
                # a converted lead is an Active client whose lastUpdated moved
                f"{lead['entityKey']}@{_last_updated(sandbox, lead['entityKey'])}",
            ]
        ),
    }


def _last_updated(sandbox: Any, key: str) -> str:
    rows = sandbox.admin("GET", "/_admin/records/entities")
    return str(next(row["lastUpdated"] for row in rows if row["entityKey"] == key))


def test_the_entity_triggers_are_grouped_by_their_declared_list_not_their_names(tmp_path):
    with SQLiteStore(tmp_path / "s.db") as store:
        pollable = [
            PollMember(store, "p", load_definition(key), OPTIONS.get(key))
            for key in shipped_trigger_keys()
            if load_definition(key).poll is not None
        ]
        groups = {tuple(m.name for m in group) for group in group_members(pollable)}
        copy = tmp_path / "entity_copy.yaml"  # any module declaring the same list joins
        copy.write_text(
            Path(load_definition("new_lead").module.source)
            .read_text()
            .replace("key: new_lead", "key: entity_copy")
        )
        joined = group_members([*_members(store), PollMember(store, "p", load_definition(copy))])
    shared = {tuple(sorted(group)) for group in groups if len(group) > 1}
    assert shared == {tuple(sorted(ENTITY_TRIGGERS)), ("new_group", "updated_group")}
    assert [len(group) for group in joined] == [5]
    source = poll_source(load_definition("new_client"), {})
    assert source.describe() == "GET /api/v1/entities/list?lastUpdated="


def test_triggers_on_different_lists_cannot_share_a_poll(tmp_path):
    with SQLiteStore(tmp_path / "s.db") as store:
        members = [*_members(store, ["new_client"]), *_members(store, ["new_group"])]
        with pytest.raises(ConfigError, match="read different lists"):
            SharedPoll(object(), members)


def test_four_entity_triggers_spend_the_requests_of_one_and_each_fires_its_own(
    sandbox, client, tmp_path
):
    shared_store = SQLiteStore(tmp_path / "shared.db")
    alone_store = SQLiteStore(tmp_path / "alone.db")
    apart_store = SQLiteStore(tmp_path / "apart.db")
    shared = SharedPoll(client, _members(shared_store))
    alone = Poller(client, alone_store, "p", load_definition("new_client"))
    apart = [Poller(client, apart_store, "p", load_definition(key)) for key in ENTITY_TRIGGERS]
    spent = {"shared": 0, "alone": 0, "apart": 0}

    def measure(name: str, poll: Callable[[], object]) -> None:
        before = _list_requests(sandbox)
        poll()
        spent[name] += _list_requests(sandbox) - before

    expected: dict[str, list[str]] = {key: [] for key in ENTITY_TRIGGERS}
    for round_number in range(4):  # a baseline, then changes, then quiet polls
        if round_number == 1:
            expected = _make_changes(sandbox)
        measure("shared", shared.poll_once)
        measure("alone", alone.poll_once)
        measure("apart", lambda: [poller.poll_once() for poller in apart])
    for key in ENTITY_TRIGGERS:
        assert _stored(shared_store, key) == sorted(expected[key]), key
        assert _stored(shared_store, key) == _stored(apart_store, key), key
    assert spent["shared"] <= spent["alone"]
    assert spent["apart"] == 4 * spent["alone"]
    for opened in (shared_store, alone_store, apart_store):
        opened.close()


class _FailingStore(SQLiteStore):
    """A store whose ``when``-th write of ``what`` for trigger ``name`` fails once;
    ``batched=False`` commits write by write (as a store without transactions would)."""

    def __init__(self, path: Path, what: str, name: str, when: int, *, batched: bool) -> None:
        super().__init__(path)
        self.fail = (what, name, when)
        self.count = 0
        self.batched = batched

    @contextmanager
    def atomic(self, *, durable: bool = False) -> Iterator[None]:
        if not self.batched:
            yield
            return
        with super().atomic(durable=durable):
            yield

    def _maybe_fail(self, what: str, name: str) -> None:
        if (what, name) == self.fail[:2]:
            self.count += 1
            if self.count == self.fail[2]:
                raise OSError(f"injected failure at {what} of {name}")

    def record_event(self, practice: str, source: str, *args: Any, **kwargs: Any) -> bool:
        self._maybe_fail("event", source)
        return super().record_event(practice, source, *args, **kwargs)

    def set_cursor(self, practice: str, trigger_key: str, *args: Any, **kwargs: Any) -> None:
        self._maybe_fail("cursor", trigger_key)
        super().set_cursor(practice, trigger_key, *args, **kwargs)


@pytest.mark.parametrize("batched", [True, False], ids=["one-commit-a-page", "write-by-write"])
@pytest.mark.parametrize(
    ("what", "name", "when"),
    [
        ("event", "new_lead", 1),  # the first trigger stored and moved; the second fails
        ("cursor", "lead_converted", 2),  # its event stored, its cursor not moved
        ("event", "updated_client", 2),  # the last trigger, halfway through its events
        ("cursor", "updated_client", 2),  # every event stored, the last cursor not moved
    ],
)
def test_a_failure_between_two_triggers_loses_nothing_and_fires_nothing_twice(
    sandbox, client, tmp_path, what, name, when, batched
):
    db = tmp_path / "state.db"
    store = _FailingStore(db, what, name, when, batched=batched)
    shared = SharedPoll(client, _members(store))
    shared.poll_once()  # the baseline: every trigger remembers, nothing fires
    expected = _make_changes(sandbox)
    with pytest.raises(OSError, match="injected failure"):
        shared.poll_once()
    stored_before = {key: _stored(store, key) for key in ENTITY_TRIGGERS}
    store.close()
    with SQLiteStore(db) as reopened:  # a new process over the same database
        before = _list_requests(sandbox)
        result = SharedPoll(client, _members(reopened)).poll_once()
        assert _list_requests(sandbox) - before == result.requests == 1
        for key in ENTITY_TRIGGERS:
            fired = sorted(event.id for event in result.results[key].events)
            assert sorted(stored_before[key] + fired) == sorted(expected[key]), key
            assert _stored(reopened, key) == sorted(expected[key]), key
        again = SharedPoll(client, _members(reopened)).poll_once()
        assert again.events == []
        assert not again.changed


KILLER = Path(__file__).with_name("kill_shared_poll.py")


@pytest.mark.parametrize(
    "point",
    ["event:lead_converted#1", "cursor:lead_converted#1", "cursor:updated_client#1"],
)
def test_a_kill_between_two_triggers_loses_nothing_and_fires_nothing_twice(
    sandbox, client, tmp_path, point
):
    db = tmp_path / "state.db"
    with SQLiteStore(db) as store:
        SharedPoll(client, _members(store)).poll_once()  # the baseline
    expected = _make_changes(sandbox)
    client_id, secret = sandbox.credentials("anz", "rw")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PRACTICEFLOW_")},
        "PRACTICEFLOW_CLIENT_ID": client_id,
        "PRACTICEFLOW_CLIENT_SECRET": secret,
    }
    killed = subprocess.run(  # noqa: S603 - our own test script
        [sys.executable, str(KILLER), str(db), sandbox.base_url("anz"), point],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with SQLiteStore(db) as store:
        stored_before = {key: _stored(store, key) for key in ENTITY_TRIGGERS}
        result = SharedPoll(client, _members(store)).poll_once()  # the restart
        for key in ENTITY_TRIGGERS:
            fired = [event.id for event in result.results[key].events]
            assert sorted(stored_before[key] + fired) == sorted(expected[key]), key
        assert SharedPoll(client, _members(store)).poll_once().events == []


def test_a_trigger_added_later_reads_the_list_whole_once_and_the_others_go_on(
    sandbox, client, tmp_path
):
    with SQLiteStore(tmp_path / "s.db") as store:
        SharedPoll(client, _members(store, ["new_client", "new_lead"])).poll_once()
        expected = _make_changes(sandbox)
        result = SharedPoll(client, _members(store)).poll_once()
        assert result.results["new_client"].events[0].id == expected["new_client"][0]
        assert result.results["new_lead"].events[0].id == expected["new_lead"][0]
        for key in ("lead_converted", "updated_client"):
            assert result.results[key].baseline
            assert result.results[key].events == []
        cursors = set(result.cursors.values())
        assert len(cursors) == 1  # all four now share one cursor
        quiet = SharedPoll(client, _members(store)).poll_once()
        assert quiet.requests == 1
        assert quiet.events == []
