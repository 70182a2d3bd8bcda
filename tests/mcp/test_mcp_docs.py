"""docs/mcp.md's examples are what the command takes and says: the configuration and the
command lines parse, the line the user reads for a preview is the one the server prints,
and the refusals quoted are the server's own messages."""

from __future__ import annotations

import ast
import json
import re
import shlex
from pathlib import Path

import anyio
import click
import pytest
from mcp_support import REPO, active_client

from mcp import Client
from practiceflow.api import Client as ApiClient
from practiceflow.cli.mcp import mcp as mcp_command
from practiceflow.manifest import default_registry
from practiceflow.mcp import build_mcp
from practiceflow.state import open_store
from practiceflow.testing import SandboxHandle

PAGE = (REPO / "docs" / "mcp.md").read_text(encoding="utf-8")


def _strings(path: Path) -> list[str]:
    """The string literals of a source file (an f-string's fields as ``{}``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            parts = [v.value if isinstance(v, ast.Constant) else "{}" for v in node.values]
            found.append("".join(str(part) for part in parts))
    return found


MESSAGES = [text for p in (REPO / "src/practiceflow/mcp").glob("*.py") for text in _strings(p)]


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", PAGE, flags=re.DOTALL)


def _parses(args: list[str]) -> None:
    """The ``mcp`` command accepts these arguments (nothing is run)."""
    assert args[0] == "mcp", args
    with click.Context(mcp_command) as ctx:
        mcp_command.parse_args(ctx, list(args[1:]))


def test_the_assistant_configuration_starts_the_mcp_command_with_valid_options() -> None:
    (config,) = (json.loads(block) for block in _blocks("json"))
    server = config["mcpServers"]["practiceflow"]
    assert server["command"] == "practiceflow"
    _parses(server["args"])


@pytest.mark.parametrize("line", [ln for b in _blocks("sh") for ln in b.splitlines() if ln])
def test_every_command_line_parses(line: str) -> None:
    words = shlex.split(line, comments=True)
    assert words[0] == "practiceflow"
    _parses(words[1:])


@pytest.mark.integration
def test_the_line_the_user_reads_is_the_one_the_server_prints(
    sandbox: SandboxHandle, tmp_path: Path
) -> None:
    (shown,) = _blocks("text")
    pattern = re.escape(shown.strip())
    for example, shape in [
        ("8765", r"\d+"),
        ("3f9a1c2e", "[0-9a-f]{8}"),
        ("482913", r"\d{6}"),
        ("14:05", r"\d\d:\d\d"),
    ]:
        pattern = pattern.replace(re.escape(example), shape)
    printed: list[str] = []
    client_id, secret = sandbox.credentials("anz", "rw")
    bill = {"entityKey": active_client(sandbox), "lineItems": [{"amount": 5, "taxAmount": 1}]}
    with (
        ApiClient(client_id, secret, base_url=sandbox.base_url("anz")) as api,
        open_store(str(tmp_path / "state.db")) as store,
    ):
        server, _ = build_mcp(
            client=api,
            store=store,
            practice=client_id,
            registry=default_registry(),
            writes_on=True,
            recipes_dir=tmp_path / "recipes",
            announce=printed.append,
        )

        async def main() -> None:
            async with Client(server) as client:
                await client.call_tool("create_bill", bill)

        anyio.run(main)
    (line,) = printed
    assert re.fullmatch(pattern, line), line


QUOTED = re.findall(r'^\| [^|]+ \| refused(?: for now)?: "([^"]+)"', PAGE, flags=re.MULTILINE)


@pytest.mark.parametrize("quoted", QUOTED)
def test_every_refusal_quoted_is_the_servers_message(quoted: str) -> None:
    for fragment in quoted.split("..."):
        fragment = fragment.strip(" ()")
        assert fragment
        assert any(fragment in message for message in MESSAGES), fragment


def test_every_refusal_of_the_page_is_checked() -> None:
    assert len(QUOTED) == len(re.findall(r'refused(?: for now)?: "', PAGE)) == 5
