"""Adaptive polling: fast while a practice changes, slower (up to max_delay) while quiet.

A fake clock drives every case: nothing sleeps, nothing depends on the machine's speed.
"""

from __future__ import annotations

import pytest

from practiceflow.errors import ConfigError, ManifestError
from practiceflow.manifest import load_recipe
from practiceflow.triggers.cadence import (
    Cadence,
    PollNeed,
    PracticeCadence,
    group_cadence,
    parse_max_delay,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(60, 60.0), (90.5, 90.5), ("90s", 90.0), ("15m", 900.0), ("2h", 7200.0), ("1d", 86400.0)],
)
def test_max_delay_reads_seconds_or_a_unit(value, seconds):
    assert parse_max_delay(value) == seconds


@pytest.mark.parametrize("value", [5, "2d", "soon", "", True, None, "-1m", [60]])
def test_a_bad_max_delay_says_where_what_and_what_is_valid(value):
    with pytest.raises(ConfigError) as caught:
        parse_max_delay(value, where="recipes/x.yaml trigger.max_delay")
    text = str(caught.value)
    assert text.startswith(f"recipes/x.yaml trigger.max_delay: got {value!r}")
    assert "10 s to 86400 s" in text


def test_a_quiet_practice_backs_off_to_max_delay_and_a_change_brings_it_back():
    clock = Clock()
    cadence = Cadence(60, 900, clock=clock)
    assert cadence.wait() == 0  # the first poll catches up at once
    waits = []
    for _ in range(6):
        waits.append(cadence.polled(changed=False))
        clock.now += waits[-1]
    assert waits == [120, 240, 480, 900, 900, 900]
    assert cadence.polled(changed=True) == 60
    assert cadence.polled(changed=False) == 120


def test_default_max_delay_keeps_todays_interval():
    need = PollNeed.polled(60, None)
    cadence = group_cadence([need], clock=Clock())
    assert [cadence.polled(changed=False) for _ in range(3)] == [60, 60, 60]


def test_a_webhook_or_a_change_elsewhere_brings_every_poll_of_the_practice_back_at_once():
    clock = Clock()
    entities = Cadence(60, 900, clock=clock)
    groups = Cadence(60, 3600, clock=clock)
    practice = PracticeCadence({"entities": entities, "groups": groups})
    for _ in range(5):
        practice.polled("entities", changed=False)
        practice.polled("groups", changed=False)
    assert (entities.wait(), groups.wait()) == (900, 1920)
    clock.now += 100
    practice.activity()  # a webhook delivery arrived
    assert (entities.wait(), groups.wait()) == (60, 60)
    assert entities.nudged.is_set()  # a loop waiting for the old due time wakes
    assert practice.polled("entities", changed=False) == 120
    clock.now += 30
    practice.polled("entities", changed=True)  # a change in one list speeds up the other
    assert groups.interval == 60
    assert groups.wait() == 30


def test_a_webhook_triggers_sweep_ignores_activity_and_rides_along_a_polled_list():
    clock = Clock()
    sweep = group_cadence([PollNeed.sweep(3600)], clock=clock)
    sweep.polled(changed=False)
    sweep.activity()
    assert sweep.wait() == 3600
    assert sweep.polled(changed=True) == 3600
    shared = group_cadence([PollNeed.sweep(3600), PollNeed.polled(60, 300)], clock=clock)
    assert (shared.fastest, shared.slowest, shared.follows_activity) == (60, 300, True)


def test_the_most_demanding_trigger_sets_a_shared_polls_range():
    needs = [PollNeed.polled(60, 900), PollNeed.polled(60, 120), PollNeed.polled(60, 3600)]
    cadence = group_cadence(needs, clock=Clock())
    assert (cadence.fastest, cadence.slowest) == (60, 120)
    short = group_cadence([PollNeed.polled(60, 20)], clock=Clock())
    assert (short.fastest, short.slowest) == (20, 20)


def test_a_low_budget_stretches_the_wait_beyond_the_cadence():
    cadence = Cadence(60, 60, clock=Clock(), stretch=lambda seconds: seconds * 4)
    assert cadence.polled(changed=True) == 240


def test_next_due_names_the_poll_due_first():
    clock = Clock()
    practice = PracticeCadence({"a": Cadence(60, 60, clock=clock)})
    practice.add("b", Cadence(30, 30, clock=clock))
    practice.polled("a", changed=False)
    practice.polled("b", changed=False)
    assert practice.next_due() == ("b", 30)
    assert PracticeCadence().next_due() is None
    with pytest.raises(ConfigError, match="fastest"):
        Cadence(60, 30)


RECIPE = """\
name: new clients
trigger:
  use: new_client
  max_delay: {value}
steps:
  - id: note
    use: create_lead
    with: {{entityName: "{{{{ trigger.entityName }}}}"}}
"""


@pytest.mark.parametrize(("value", "seconds"), [("15m", 900.0), ("300", 300.0), ("null", None)])
def test_a_recipe_gives_its_trigger_a_max_delay(tmp_path, value, seconds):
    path = tmp_path / "r.yaml"
    path.write_text(
        RECIPE.format(value=value)
        if value != "null"
        else RECIPE.replace("  max_delay: {value}\n", "").format()
    )
    assert load_recipe(path).max_delay == seconds


def test_a_recipe_with_a_bad_max_delay_names_file_line_and_field(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(RECIPE.format(value="2 weeks"))
    with pytest.raises(ManifestError) as caught:
        load_recipe(path)
    assert f"{path}:4:14 trigger.max_delay: got '2 weeks'; expected a duration" in str(caught.value)


def _one_day(max_delay: float, changes: int) -> tuple[int, float]:
    """Polls in a day of a practice with ``changes`` evenly spread, and the worst lag."""
    clock = Clock()
    clock.now = 0.0
    cadence = Cadence(60, max_delay, clock=clock)
    pending = [i * 86400 / changes for i in range(changes)]
    polls, worst = 0, 0.0
    while cadence.due < 86400:
        clock.now = cadence.due
        seen = [moment for moment in pending if moment <= clock.now]
        pending = pending[len(seen) :]
        worst = max([worst, *(clock.now - moment for moment in seen)])
        cadence.polled(changed=bool(seen))
        polls += 1
    return polls, worst


@pytest.mark.parametrize(
    ("max_delay", "changes", "most"),
    [
        (60, 2, 1440),  # the default: today's rate
        (900, 0, 99),  # quiet all day: about one poll per max_delay
        (900, 2, 102),  # "changes twice a day": 102, not 1,440
        (900, 48, 240),
        (3600, 2, 34),
        (900, 1440, 1440),  # changes every minute: the fastest rate all day
    ],
)
def test_a_day_of_polls_costs_what_the_practice_changes_and_never_waits_past_max_delay(
    max_delay, changes, most
):
    polls, worst = _one_day(max_delay, changes)
    assert polls <= most
    assert worst <= max_delay
