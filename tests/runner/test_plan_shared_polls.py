"""``plan`` counts a shared poll once: recipes whose triggers read the same list split it."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from practiceflow.cli import cli
from practiceflow.manifest import load_modules
from practiceflow.runner import validate_recipe
from practiceflow.runner.plan import plan

ENTITY_TRIGGERS = ("new_client", "new_lead", "lead_converted", "updated_client")
RECIPE = """\
name: {name}
trigger:
  use: {key}
  mode: poll
{delay}steps:
  - id: save
    use: write_jsonl
    with:
      path: out.jsonl
      record: {{key: "{{{{ trigger.entityKey }}}}"}}
"""


def _write(folder: Path, keys: tuple[str, ...], delay: str | None = None) -> list[Path]:
    paths = []
    for number, key in enumerate(keys):
        path = folder / f"r{number}.yaml"
        extra = f"  max_delay: {delay}\n" if delay else ""
        path.write_text(RECIPE.format(name=f"r{number}-{key}", key=key, delay=extra))
        paths.append(path)
    return paths


@pytest.mark.parametrize(
    ("keys", "polls", "per_day"),
    [
        (ENTITY_TRIGGERS, 1, 1440.0),  # was 5,760: four polls of one list
        (("new_client",), 1, 1440.0),
        (("new_client", "new_client"), 1, 1440.0),  # two recipes, one trigger
        (("new_client", "new_group", "updated_group"), 2, 2880.0),
    ],
)
def test_triggers_on_one_list_cost_one_poll(tmp_path, keys, polls, per_day):
    registry = load_modules()
    checked = [validate_recipe(path, registry=registry) for path in _write(tmp_path, keys)]
    result = plan(checked, events_per_day=10, poll_interval=60)
    assert len(result.polls) == polls
    assert result.per_day == per_day  # the steps are local: polling is all there is
    assert sum(cost.poll_per_day for cost in result.recipes) == per_day


def test_plan_shows_the_shared_poll_its_cost_and_its_quiet_cost(tmp_path):
    paths = [str(path) for path in _write(tmp_path, ENTITY_TRIGGERS, delay="15m")]
    result = CliRunner().invoke(cli, ["plan", *paths], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert (
        "poll GET /api/v1/entities/list?lastUpdated=: 1,440 requests a day (14.4% of the "
        "budget), 96 while the practice is quiet; shared by lead_converted, new_client, "
        "new_lead, updated_client"
    ) in " ".join(result.output.split())
    shown = CliRunner().invoke(cli, ["plan", "--json", *paths])
    assert '"idle_per_day": 96.0' in shown.output


WEBHOOK = """\
name: accepted
trigger:
  use: proposal_accepted
  with: {entityKey: 5114e089-47cd-4e89-9966-cab520339605}
steps:
  - id: save
    use: write_jsonl
    with:
      path: out.jsonl
      record: {key: "{{ trigger.entityKey }}"}
"""


def test_a_webhook_trigger_is_swept_hourly_not_polled(tmp_path):
    path = tmp_path / "accepted.yaml"
    path.write_text(WEBHOOK)
    checked = validate_recipe(path, registry=load_modules())
    (sweep,) = plan([checked], events_per_day=0, webhook_url=True).polls
    assert (sweep.sweep, sweep.per_day, sweep.triggers) == (True, 24.0, ["proposal_accepted"])
    (polled,) = plan([checked], events_per_day=0, webhook_url=False).polls
    assert (polled.sweep, polled.per_day) == (False, 1440.0)
    result = CliRunner().invoke(cli, ["plan", "--webhook-url", str(path)])
    assert "sweep GET /api/v1/proposals/list" in result.output
