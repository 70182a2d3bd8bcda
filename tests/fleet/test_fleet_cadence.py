"""An owner polls a quiet practice less often, and fast again once something changes.

A practice's cadence (fleet/owned_runtime.py ``practice_cadence``) starts at
``poll_every``, doubles after each poll that found nothing, up to the shortest
``max_delay`` of its polled triggers' recipes, and goes back to ``poll_every`` when a poll
finds events, a delivery for it arrives, or another replica stored events for it; the
owner then brings its next poll sooner (``PracticeOwner.hurry``). A practice a replica
takes (at its start or from another replica) starts at its slowest, and events stored
before it came do not speed it up (a survivor taking 5,000 practices would poll every one
with a recent event at ``poll_every`` at once). Without ``max_delay``
nothing changes: every poll ``poll_every`` apart, as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _fleet_support import REGIONS, secrets_env, write_fleet

from practiceflow.fleet import Fleet, load_fleet, make_app
from practiceflow.fleet.leases import LeaseChange, PracticeLeases
from practiceflow.fleet.owner import PracticeOwner
from practiceflow.state import PostgresStore
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

RECIPE = """\
name: fleet new client
trigger:
  use: new_client
  mode: poll
{max_delay}steps:
  - id: lead
    use: create_client
    with:
      entityType: Company
      clientStatus: Lead
      entityName: "Fleet {{{{ trigger.entityKey }}}}"
"""


@pytest.fixture
def owned(pg_url: str, tmp_path: Path, sandbox: SandboxHandle) -> Iterator[Fleet]:
    recipe = RECIPE.format(max_delay="  max_delay: 4m\n")
    config = load_fleet(write_fleet(tmp_path, sandbox, recipe=recipe, poll_every=60))
    app = make_app(pg_url, sync=True)
    with PostgresStore(pg_url) as store, app.open():
        fleet = Fleet(config, store, pg_url, app, environ=secrets_env(sandbox), owned=True)
        try:
            yield fleet
        finally:
            fleet.close()


def test_a_quiet_practice_is_polled_less_often_and_fast_again_once_it_changes(
    owned: Fleet, sandbox: SandboxHandle
) -> None:
    hurried: list[str] = []
    owned.hurry = hurried.append
    owned.own("alpha")
    periods = [owned.poll_period("alpha")]
    for _ in range(4):  # the baseline, then quiet polls
        assert owned.poll_practice("alpha") == 0
        periods.append(owned.poll_period("alpha"))
    assert periods == [60, 120, 240, 240, 240]  # doubling, up to max_delay (4m)
    assert hurried == []

    body = {"entityType": "Company", "entityName": "Changed meanwhile"}
    sandbox.admin("POST", "/_admin/entities", body, region=REGIONS["alpha"])
    assert owned.poll_practice("alpha") == 1
    assert owned.poll_period("alpha") == 60
    assert hurried == ["alpha"]  # the owner brings its next poll sooner

    owned.poll_practice("alpha")  # quiet again: slower
    assert owned.poll_period("alpha") == 120
    owned.activity("alpha")  # a delivery for it arrived
    assert (owned.poll_period("alpha"), hurried) == (60, ["alpha", "alpha"])
    owned.activity("alpha")  # already at its fastest: nothing to bring sooner
    assert hurried == ["alpha", "alpha"]


def test_a_practice_a_replica_takes_starts_quiet_and_is_fast_again_once_it_changes(
    owned: Fleet, sandbox: SandboxHandle, pg_url: str
) -> None:
    # Its pace lived in the replica that polled it: taken, it is polled within max_delay.
    clock = [1_000_000.0]
    owner = PracticeOwner(owned, PracticeLeases(pg_url, owned.practices), clock=lambda: clock[0])
    try:
        owner._apply(LeaseChange(frozenset({"alpha"}), frozenset(), frozenset({"alpha"}), 2))
        assert owner._due["alpha"] == PracticeOwner._next_slot("poll:alpha", 240, clock[0])
    finally:
        owner.leases.close()
    assert owned.poll_period("alpha") == 240
    owned.own("alpha")
    assert owned.poll_practice("alpha") == 0  # quiet: it stays at its slowest
    assert owned.poll_period("alpha") == 240

    body = {"entityType": "Company", "entityName": "Changed meanwhile"}
    sandbox.admin("POST", "/_admin/entities", body, region=REGIONS["alpha"])
    assert owned.poll_practice("alpha") == 1
    assert owned.poll_period("alpha") == 60


def test_events_from_before_a_practice_was_taken_do_not_speed_it_up(
    owned: Fleet, pg_url: str
) -> None:
    clock = [1_000_000.0]
    owner = PracticeOwner(owned, PracticeLeases(pg_url, owned.practices), clock=lambda: clock[0])
    assert owned.active_practices() == set()  # the sweeps' window starts
    owned.store.record_event("alpha", "new_client", "client.created", "before", {"entityKey": "k"})
    try:
        owner._apply(LeaseChange(frozenset({"alpha"}), frozenset(), frozenset({"alpha"}), 2))
        owner._run("sweeps", "", clock[0])  # the takeover's sweep
        assert owned.poll_period("alpha") == 240  # quiet still: that event was the other's
        owned.store.record_event(
            "alpha", "new_client", "client.created", "after", {"entityKey": "m"}
        )
        owner._run("sweeps", "", clock[0])
        assert owned.poll_period("alpha") == 60  # stored since it came: fast again
    finally:
        owner.stop(release=False)


def test_a_reload_takes_the_recipes_new_max_delay(
    owned: Fleet, tmp_path: Path, sandbox: SandboxHandle
) -> None:
    owned.own("alpha")
    owned.poll_practice("alpha")
    assert owned.poll_period("alpha") == 120
    (tmp_path / "one_write.yaml").write_text(RECIPE.format(max_delay=""), encoding="utf-8")

    owned.reload_recipes()

    owned.poll_practice("alpha")
    assert owned.poll_period("alpha") == 60  # no max_delay now: every poll_every


def test_events_any_replica_stored_mark_their_practice_active_once(owned: Fleet) -> None:
    assert owned.active_practices() == set()  # the first call starts the window
    owned.store.record_event("beta", "new_client", "client.created", "e1", {"entityKey": "k"})

    assert owned.active_practices() == {"beta"}
    assert owned.active_practices() == set()


def test_without_max_delay_a_practice_is_polled_every_poll_every(
    pg_url: str, tmp_path: Path, sandbox: SandboxHandle
) -> None:
    config = load_fleet(write_fleet(tmp_path, sandbox, recipe=RECIPE.format(max_delay="")))
    app = make_app(pg_url, sync=True)
    with PostgresStore(pg_url) as store, app.open():
        fleet = Fleet(config, store, pg_url, app, environ=secrets_env(sandbox), owned=True)
        try:
            assert fleet.gained("beta") == 60  # taken: nothing slower to start from
            fleet.own("beta")
            for _ in range(3):
                fleet.poll_practice("beta")
                assert fleet.poll_period("beta") == 60
        finally:
            fleet.close()


def test_hurry_moves_an_owned_practices_next_poll_sooner_and_the_old_turn_is_dropped(
    owned: Fleet, pg_url: str
) -> None:
    clock = [1_000_000.0]
    owner = PracticeOwner(owned, PracticeLeases(pg_url, owned.practices), clock=lambda: clock[0])
    try:
        owner.owned.add("alpha")
        owner._push_poll("alpha", clock[0] + 240)  # a quiet practice's far turn
        owner.hurry("alpha")
        owner.hurry("beta")  # not owned here: nothing scheduled

        due = owner._due["alpha"]
        assert clock[0] <= due < clock[0] + 60
        turns = sorted(entry[0] for entry in owner._heap if entry[3] == "alpha")
        assert turns == [due, clock[0] + 240]  # the far one stays, stale: skipped when popped
        assert "beta" not in owner._due
    finally:
        owner.leases.close()
