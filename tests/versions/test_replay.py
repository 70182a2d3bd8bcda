"""``practiceflow replay``: recorded runs rendered again under another version; reads from
the journal, writes compared, nothing sent.

The runs are real ones (the shipped proposal recipe against the sandbox); the replay runs
as the CLI, and the sandbox's request log proves it sent nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from practiceflow.api import Client
from practiceflow.cli.versions import replay_command
from practiceflow.runner import Runner, validate_recipe
from practiceflow.state import open_store
from practiceflow.testing import SandboxHandle
from runner._support import REPO

pytestmark = pytest.mark.integration

RECIPE = REPO / "recipes" / "proposal_to_bill_and_eform.yaml"
RUNS = 50


def _recorded(sandbox: SandboxHandle, client: Client, state: Path, runs: int = RUNS) -> list[str]:
    """Run the shipped recipe for ``runs`` accepted proposals; the run ids."""
    entities = sandbox.admin("GET", "/_admin/records/entities")
    active = [row["entityKey"] for row in entities if row["status"] == "Active"][:runs]
    with open_store(str(state)) as store:
        for n, key in enumerate(active):
            payload = {"entityKey": key, "title": f"Proposal {n}", "proposalKey": f"p-{n}"}
            store.record_event("anz", "proposal_accepted", "proposal.accepted", f"e{n}", payload)
        runner = Runner(validate_recipe(RECIPE), store, client, practice="anz")
        outcomes = runner.process_pending(limit=runs)
    assert [outcome.status for outcome in outcomes] == ["succeeded"] * runs
    return [outcome.run_id for outcome in outcomes]


def _replay(state: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(replay_command, [*args, "--state", str(state)])
    return result.exit_code, result.output


def test_a_planted_fee_change_is_flagged_in_every_run_and_nothing_is_sent(
    fast_sandbox: SandboxHandle, client: Client, tmp_path: Path
) -> None:
    state = tmp_path / "state.db"
    runs = _recorded(fast_sandbox, client, state)
    new = tmp_path / "new_fee.yaml"
    new.write_text(RECIPE.read_text(encoding="utf-8").replace("fee: 300", "fee: 350"))
    before = len(fast_sandbox.admin("GET", "/_admin/requests"))

    code, output = _replay(state, "--recipe", str(new), "--since", "1d", "--json")

    assert len(fast_sandbox.admin("GET", "/_admin/requests")) == before  # nothing sent
    assert code == 1
    found = json.loads(output)
    assert sorted(row["run"] for row in found) == sorted(runs)
    for row in found:
        verdicts = {step["step"]: step["verdict"] for step in row["steps"]}
        assert verdicts == {"bill": "differs", "form": "same"}, row
        (bill,) = [step for step in row["steps"] if step["step"] == "bill"]
        assert bill["sent"]["json"]["lineItems"][0]["amount"] == 300
        assert bill["would_send"]["json"]["lineItems"][0]["amount"] == 350


def test_the_same_version_replays_the_same_requests(
    fast_sandbox: SandboxHandle, client: Client, tmp_path: Path
) -> None:
    state = tmp_path / "state.db"
    (first,) = _recorded(fast_sandbox, client, state, 1)
    before = len(fast_sandbox.admin("GET", "/_admin/requests"))

    code, output = _replay(state, first, "--recipe", str(RECIPE))

    assert len(fast_sandbox.admin("GET", "/_admin/requests")) == before
    assert code == 0, output
    assert "same" in output
    assert "1 runs replayed, 0 would write otherwise; 0 sent" in output


def test_a_renamed_step_is_matched_and_the_fee_difference_shown(
    fast_sandbox: SandboxHandle, client: Client, tmp_path: Path
) -> None:
    state = tmp_path / "state.db"
    (first,) = _recorded(fast_sandbox, client, state, 1)
    text = RECIPE.read_text(encoding="utf-8").replace("fee: 300", "fee: 350")
    new = tmp_path / "renamed.yaml"
    new.write_text(
        text.replace("- id: bill", "- id: invoice").replace("steps.bill", "steps.invoice")
    )

    code, output = _replay(state, first, "--recipe", str(new))

    assert code == 1
    assert "invoice (was bill)  create_bill  differs" in output
    assert "json.lineItems[0].amount: sent 300, would send 350" in output


PERSONAL_RECIPE = """\
name: fee named after the client
trigger: {use: proposal_accepted}
steps:
  - id: client
    use: get_client
    with: {entityKey: "{{ trigger.entityKey }}"}
  - id: bill
    use: create_bill
    with:
      entityKey: "{{ trigger.entityKey }}"
      billDetails: "Fee for {{ steps.client.entityName }} <{{ steps.client.email }}>"
      lineItems: [{amount: 100, taxPercent: 10, narration: Fee}]
"""


@pytest.mark.parametrize("fee", ["Fee for", "Fees for"])
def test_a_personal_value_a_template_copied_stays_masked_in_the_replay(
    fast_sandbox: SandboxHandle, client: Client, tmp_path: Path, fee: str
) -> None:
    entities = fast_sandbox.admin("GET", "/_admin/records/entities")
    entity = next(
        row
        for row in entities
        if row["status"] == "Active" and len(row["entityName"]) >= 8 and row.get("email")
    )
    recipe, state = tmp_path / "fee.yaml", tmp_path / "state.db"
    recipe.write_text(PERSONAL_RECIPE, encoding="utf-8")
    with open_store(str(state)) as store:
        payload = {"entityKey": entity["entityKey"], "proposalKey": "p-1"}
        store.record_event("anz", "proposal_accepted", "proposal.accepted", "e1", payload)
        runner = Runner(validate_recipe(recipe), store, client, practice="anz")
        (outcome,) = runner.process_pending(limit=1)
    assert outcome.status == "succeeded"
    new = tmp_path / "new.yaml"
    new.write_text(PERSONAL_RECIPE.replace("Fee for", fee), encoding="utf-8")

    text = _replay(state, outcome.run_id, "--recipe", str(new))[1]
    code, output = _replay(state, outcome.run_id, "--recipe", str(new), "--json")

    for shown in (text, output):
        assert entity["entityName"].lower() not in shown.lower()
        assert entity["email"].lower() not in shown.lower()
    (bill,) = [step for step in json.loads(output)[0]["steps"] if step["step"] == "bill"]
    assert bill["would_send"]["json"]["billDetails"].startswith(f"{fee} *** <***> [pf-")
    # Masked alike on both sides, an unchanged version replays the same requests.
    assert (code, bill["verdict"]) == ((0, "same") if fee == "Fee for" else (1, "differs"))
