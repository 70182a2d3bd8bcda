"""Every example in every ``--help`` exists: each parses with the command's real options and
files, and those that can run on one machine run against the sandbox and exit 0.

Examples that need what this test cannot have (a PostgreSQL fleet, a public URL, a named
profile, a subscription to check, a run held in doubt, a server that runs until stopped:
serve, sandbox, mcp) are parsed only: their command, options, choices and
file arguments are checked by click exactly as when a person types them.
"""

from __future__ import annotations

import glob
import os
import shlex
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from practiceflow.cli import cli
from practiceflow.testing import SandboxHandle

REPO = Path(__file__).resolve().parents[2]

#: Examples run for real (by prefix); every other one is parsed.
RUNNABLE = (
    "practiceflow modules ",
    "practiceflow plan ",
    "practiceflow recipes new ",
    "practiceflow triggers list",
    "practiceflow triggers poll new_client",
    "practiceflow run recipes/proposal_to_bill_and_eform.yaml --dry-run",
    "practiceflow run recipes/new_client_integrations_to_jsonl.yaml --once",
    "practiceflow runs list",
    "practiceflow runs show ",
    "practiceflow action list_entity_types",
    "practiceflow action create_lead ",
    "practiceflow auth check --base-url",
    "practiceflow sandbox fire ",
    "practiceflow sandbox fault ",
    "practiceflow sandbox records ",
    "practiceflow sandbox deliveries",
    "practiceflow sandbox requests",
    "practiceflow sandbox clock",
    "practiceflow sandbox reset",
)
#: Examples run for real as written whole (a prefix would take their siblings that need a
#: profile, a subscription or a fleet).
RUNNABLE_WHOLE = frozenset(
    {
        "practiceflow auth check",
        "practiceflow db migrate",
        "practiceflow db migrate --json",
        "practiceflow runs purge --older-than 30d",
        "practiceflow export zapier --out /tmp/z",
        "practiceflow export zapier --out connectors/zapier",
        "practiceflow export openapi --out connectors/openapi --check",
        "practiceflow run recipes/won_lead_to_client.yaml --once --since 2026-11-01T00:00:00Z",
    }
)


def _commands(command: click.Command, path: list[str]) -> Iterator[tuple[str, click.Command]]:
    yield " ".join(path), command
    if isinstance(command, click.Group):
        ctx = click.Context(command, info_name=path[-1])
        for name in command.list_commands(ctx):
            child = command.get_command(ctx, name)
            assert child is not None
            yield from _commands(child, [*path, name])


def _examples(text: str) -> list[str]:
    """The ``practiceflow ...`` lines of a help text's Example(s) section."""
    if "Example" not in text:
        return []
    block = text.split("Example", 1)[1].split("\n", 1)[1]
    joined = block.replace("\\\n", " ")
    found = []
    for line in joined.splitlines():
        line = line.strip()
        if not line:
            continue
        for part in line.split("&&"):
            part = part.split("|")[-1].strip() if "|" in part and "practiceflow" in part else part
            part = part.strip()
            if part.startswith(("practiceflow ", "PRACTICEFLOW_")):
                words = shlex.split(part, comments=True)
                while words and "=" in words[0] and not words[0].startswith("-"):
                    words = words[1:]  # VAR=value prefixes
                found.append(" ".join(shlex.quote(word) for word in words))
    return found


ALL = [
    (name, example)
    for name, command in _commands(cli, ["practiceflow"])
    for example in _examples(command.help or "")
]


def test_every_command_has_an_example() -> None:
    missing = [name for name, command in _commands(cli, ["practiceflow"])]
    missing = [name for name in missing if not any(owner == name for owner, _ in ALL)]
    assert missing == []


def _parse(args: list[str]) -> None:
    """Resolve the command chain and parse its parameters, as click does before a call."""
    command: click.Command = cli
    ctx = command.make_context("practiceflow", args)
    while isinstance(command, click.Group):
        rest = [*ctx._protected_args, *ctx.args]
        if not rest:
            return
        name, sub, rest = command.resolve_command(ctx, rest)
        assert sub is not None
        assert name is not None
        command, ctx = sub, sub.make_context(name, rest, parent=ctx)


@pytest.mark.parametrize(("owner", "example"), ALL, ids=[example for _, example in ALL])
def test_example_parses(owner: str, example: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    words = shlex.split(example)[1:]
    expanded = [match for word in words for match in (sorted(glob.glob(word)) or [word])]
    _parse(expanded)


def test_runnable_examples_run_against_the_sandbox(
    sandbox: SandboxHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for folder in ("recipes", "actions", "connectors/openapi"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    (tmp_path / "docs").mkdir()
    (tmp_path / "my-modules").mkdir()
    (tmp_path / "lead.yaml").write_text(
        "entityType: Individual\nentityName: Jane\nentitySurname: Citizen\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    client_id, secret = sandbox.credentials("anz", "rw")
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("PRACTICEFLOW_")}
    env.update(
        PRACTICEFLOW_CLIENT_ID=client_id,
        PRACTICEFLOW_CLIENT_SECRET=secret,
        PRACTICEFLOW_BASE_URL=sandbox.base_url("anz"),
        PRACTICEFLOW_PROFILES=str(tmp_path / "none.toml"),
        PRACTICEFLOW_SANDBOX_URL=sandbox.url,
        PRACTICEFLOW_SANDBOX_ADMIN_TOKEN=sandbox.admin_token,
    )
    # a run for 'runs show 5f0c...': a client created, caught up with --since
    sandbox.admin(
        "POST",
        "/_admin/entities",
        {"entityName": "Example Run", "entityType": "Company", "clientStatus": "Active"},
    )
    since = (datetime.now(UTC) - timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    recipe = "recipes/new_client_integrations_to_jsonl.yaml"
    setup = CliRunner().invoke(cli, ["run", recipe, "--once", "--since", since], env=env)
    assert setup.exit_code == 0, setup.output
    listed = CliRunner().invoke(cli, ["runs", "list", "--json"], env=env)
    run_id = listed.stdout.split('"run_id": "', 1)[1].split('"', 1)[0]
    port = sandbox.url.rsplit(":", 1)[1]
    ran = 0
    for _, example in ALL:
        if not example.startswith(RUNNABLE) and example not in RUNNABLE_WHOLE:
            continue
        text = example.replace("5f0c...", run_id).replace(":8765", f":{port}")
        text = text.replace("/tmp/z", str(tmp_path / "z"))  # noqa: S108 - the help text's path
        words = shlex.split(text)[1:]
        expanded = [match for word in words for match in (sorted(glob.glob(word)) or [word])]
        result = CliRunner().invoke(cli, expanded, env=env)
        assert result.exit_code == 0, f"{example}\n{result.output}"
        ran += 1
    assert ran >= 35 + len(RUNNABLE_WHOLE)
