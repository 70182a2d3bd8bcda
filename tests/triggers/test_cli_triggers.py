"""``practiceflow triggers`` against the sandbox: list, subscribe, check, poll, unsubscribe."""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner

from practiceflow.cli.triggers import COMMANDS
from practiceflow.service.needs_person import record_subscription_doubt
from practiceflow.state import SQLiteStore
from practiceflow.triggers import Receiver, serve_receiver

pytestmark = pytest.mark.integration


@pytest.fixture
def cli() -> click.Group:
    group = click.Group()
    for command in COMMANDS:
        group.add_command(command)
    return group


@pytest.fixture
def env(sandbox, tmp_path):
    client_id, secret = sandbox.credentials("anz", "rw")
    return {
        "PRACTICEFLOW_CLIENT_ID": client_id,
        "PRACTICEFLOW_CLIENT_SECRET": secret,
        "PRACTICEFLOW_BASE_URL": sandbox.base_url("anz"),
        "PRACTICEFLOW_STATE": str(tmp_path / "state.db"),
        "PRACTICEFLOW_PROFILES": str(tmp_path / "none.toml"),
    }


def test_list_shows_every_shipped_trigger(cli):
    result = CliRunner().invoke(cli, ["triggers", "list", "--json"])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.output)) == 13


def test_subscribe_check_unsubscribe_round_trip(cli, env, sandbox, tmp_path):
    runner = CliRunner(env=env)
    with SQLiteStore(tmp_path / "state.db") as store, serve_receiver(Receiver(store)) as server:
        result = runner.invoke(
            cli, ["triggers", "subscribe", "proposal_accepted", "--public-url", server.url]
        )
        assert result.exit_code == 0, result.output
        assert "whsec" not in result.output
        result = runner.invoke(cli, ["triggers", "check", "proposal_accepted", "--json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)["status"] == "arrived"
        result = runner.invoke(cli, ["triggers", "unsubscribe", "proposal_accepted"])
        assert result.exit_code == 0, result.output
    assert sandbox.admin("GET", "/_admin/records/subscriptions") == []
    result = runner.invoke(cli, ["triggers", "check", "proposal_accepted"])
    assert result.exit_code == 1
    assert "not_subscribed" in result.output


def test_poll_once_starts_from_now_then_reports_changes(cli, env, sandbox):
    runner = CliRunner(env=env)
    first = runner.invoke(cli, ["triggers", "poll", "updated_client", "--once", "--json"])
    assert first.exit_code == 0, first.output
    assert json.loads(first.output)["baseline"] is True
    rows = sandbox.admin("GET", "/_admin/records/entities")
    key = next(row["entityKey"] for row in rows if row["status"] == "Active")
    sandbox.admin("PATCH", f"/_admin/entities/{key}", {"email": "cli@example.com"})
    second = runner.invoke(cli, ["triggers", "poll", "updated_client", "--once", "--json"])
    data = json.loads(second.output)
    assert [event["payload"]["entityKey"] for event in data["events"]] == [key]
    assert data["requests"] == 1


def test_unsubscribe_refuses_a_subscription_in_doubt_until_told_to_forget_it(
    cli, env, sandbox, tmp_path
):
    practice, _ = sandbox.credentials("anz", "rw")
    with SQLiteStore(tmp_path / "state.db") as store:
        url = "http://127.0.0.1:9/hooks/left"
        store.save_subscription(
            practice, "proposal_accepted", None, "proposal.accepted", url, "", "left", "pending"
        )
        entry = record_subscription_doubt(store, practice, "proposal_accepted", polled=False)
    runner = CliRunner(env=env)
    refused = runner.invoke(cli, ["triggers", "unsubscribe", "proposal_accepted"])
    assert refused.exit_code != 0
    assert "--forget" in str(refused.exception)
    forgot = runner.invoke(cli, ["triggers", "unsubscribe", "proposal_accepted", "--forget"])
    assert forgot.exit_code == 0, forgot.output
    assert f"closed subscription in doubt: proposal_accepted (entry {entry})" in forgot.output
    with SQLiteStore(tmp_path / "state.db") as store:
        assert store.get_subscription(practice, "proposal_accepted") is None
        closed = store.get_attention(entry)
        assert closed is not None
        assert closed.status == "closed"
    sent = sandbox.admin("GET", "/_admin/requests")
    assert [row for row in sent if row["method"] == "DELETE"] == []  # nothing to delete by id
    helped = runner.invoke(cli, ["triggers", "unsubscribe", "--help"])
    assert "subscription in doubt" in helped.output
    assert "--forget" in helped.output
