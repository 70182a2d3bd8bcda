"""The scenarios of the canary scan's sinks beyond the CLI (``test_canary_scan.py``): each
runs for real against the sandbox, with the planted client, and hands back every text it
produced (``World.found``; what a user typed and sent in ``World.sent``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import psycopg
from click.testing import CliRunner
from cryptography.fernet import Fernet
from mcp.client.stdio import stdio_client
from mcp.shared.message import SessionMessage

from mcp import Client, StdioServerParameters
from pgserver import shared_server
from practiceflow.cli import cli
from practiceflow.cli.db import migrate_state
from reliability._canary import (
    World,
    file_texts,
    keep_every_row_version,
    keep_every_sqlite_row_version,
    postgres_texts,
    sqlite_texts,
)
from reliability._real_looking import real_looking
from reliability._support import REPO, cli_env, free_port, practiceflow, wait_until

#: What the assistant types into the writes it asks for (it never sees the planted values).
TYPED = {
    "typed firstName": "Qz7typedFirstWv4",
    "typed lastName": "Qz7typedLastWv4",
    "typed email": "qz7typedemailwv4@example.org",
    "typed new email": "qz7typednewemailwv4@example.org",
}


class _RecordedRead:
    """The server-to-client stream of a transport, each message kept as JSON."""

    def __init__(self, stream: Any, kept: list[str]) -> None:
        self._stream, self._kept = stream, kept

    def _keep(self, item: Any) -> Any:
        if isinstance(item, SessionMessage):
            self._kept.append(item.message.model_dump_json(by_alias=True, exclude_none=True))
        return item

    async def receive(self) -> Any:
        return self._keep(await self._stream.receive())

    async def aclose(self) -> None:
        await self._stream.aclose()

    def __aiter__(self) -> _RecordedRead:
        return self

    async def __anext__(self) -> Any:
        return self._keep(await self._stream.__anext__())

    async def __aenter__(self) -> _RecordedRead:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _RecordedWrite:
    """The client-to-server stream of a transport, each message kept as JSON."""

    def __init__(self, stream: Any, kept: list[str]) -> None:
        self._stream, self._kept = stream, kept

    async def send(self, item: SessionMessage) -> None:
        self._kept.append(item.message.model_dump_json(by_alias=True, exclude_none=True))
        await self._stream.send(item)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _RecordedWrite:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _RecordedTransport:
    """A transport that keeps the transcript of another, both ways."""

    def __init__(self, inner: Any, sent: list[str], received: list[str]) -> None:
        self._inner, self._sent, self._received = inner, sent, received

    async def __aenter__(self) -> tuple[_RecordedRead, _RecordedWrite]:
        read, write = await self._inner.__aenter__()
        return _RecordedRead(read, self._received), _RecordedWrite(write, self._sent)

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)


def _user_code(log: Path, preview: types.CallToolResult) -> dict[str, str]:
    """The ``confirm_write`` arguments of a preview, with the code the server printed for
    the person at the keyboard."""
    shown = preview.structured_content or {}
    assert "confirm_token" in shown, preview
    said = r"\. If you agree, give the assistant this code: (\d{6})"
    pattern = rf"\(write {shown['write_id'][:8]}\)" + said
    codes = re.findall(pattern, log.read_text(encoding="utf-8"))
    assert codes, f"no code printed for write {shown['write_id']}"
    return {"confirm_token": shown["confirm_token"], "user_code": codes[-1]}


def _contact_key(world: World, email: str) -> str:
    rows = world.sandbox.admin("GET", "/_admin/records/contacts")
    return next(str(row["contactKey"]) for row in rows if row.get("email") == email)


def mcp_sink(world: World, shown: bool = False) -> None:
    """``practiceflow mcp`` over stdio: the tools that read the client (get it, find it,
    list its contacts) and the ones that write (a contact typed by the assistant, its
    update, an AML check, an ID verification, the recipe), each write confirmed by the
    user's code; then the resources of its runs.

    Args:
        world: the planted sandbox.
        shown: ``--show-personal-data``: the assistant is shown the personal values (so
            the transcript is scanned for secrets only); its log and store still hold none.
    """
    folder = world.folder / "mcp"
    folder.mkdir()
    state, log = folder / "state.db", folder / "server.log"
    keep_every_sqlite_row_version(state)
    (folder / "canary.yaml").write_text(world.recipe, encoding="utf-8")
    recipe = ["--recipe", str(folder / "canary.yaml")]
    flags = ["--show-personal-data"] if shown else []
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "practiceflow", "mcp", "--allow-writes", "--log-json", "-v", *recipe, *flags],
        env=cli_env(world.sandbox, PRACTICEFLOW_STATE=str(state)),
        cwd=str(folder),
    )
    sent: list[str] = []
    received: list[str] = []
    key = {"entityKey": world.planted.entity_key}
    world.typed.update(TYPED)

    async def write(
        client: Client, tool: str, given: dict[str, Any], fails: bool = False
    ) -> types.CallToolResult:
        preview = await client.call_tool(tool, given)
        assert not preview.is_error, preview
        done = await client.call_tool("confirm_write", _user_code(log, preview))
        assert done.is_error is fails, done
        return done

    async def scenario() -> dict[str, types.CallToolResult]:
        with log.open("a", encoding="utf-8") as errlog:
            transport = _RecordedTransport(stdio_client(params, errlog=errlog), sent, received)
            async with Client(transport) as client:
                got = {
                    "get_client": await client.call_tool("get_client", key),
                    "find_clients": await client.call_tool("find_clients", {"limit": 1000}),
                }
                contact = {
                    "firstName": TYPED["typed firstName"],
                    "lastName": TYPED["typed lastName"],
                    "email": TYPED["typed email"],
                }
                got["create_contact"] = await write(
                    client, "create_contact", {**key, "contact": contact}
                )
                got["list_client_contacts"] = await client.call_tool("list_client_contacts", key)
                # The contacts are personal as a whole, their keys with them: the user reads
                # the key off the practice's own screen.
                contact_key = _contact_key(world, TYPED["typed email"])
                change = {"email": TYPED["typed new email"]}
                got["update_contact"] = await write(
                    client, "update_contact", {**key, "contactKey": contact_key, "contact": change}
                )
                got["start_aml_check"] = await write(
                    client, "start_aml_check", {**key, "level": "standard"}
                )
                got["start_id_verification"] = await write(client, "start_id_verification", key)
                event = {**key, "proposalKey": world.proposal_key}
                got["run_recipe_canary"] = await write(
                    client, "run_recipe_canary", event, fails=True
                )
                uris = ["practiceflow://runs/recent", "practiceflow://runs/held"]
                uris += [
                    f"practiceflow://runs/{done.structured_content['run_id']}"
                    for done in got.values()
                    if done.structured_content and "run_id" in done.structured_content
                ]
                for uri in uris:
                    await client.read_resource(uri)
                return got

    got = anyio.run(scenario)
    assert not got["get_client"].is_error, got["get_client"]
    assert got["get_client"].structured_content["entityKey"] == world.planted.entity_key
    name = got["get_client"].structured_content["entityName"]
    assert name == (world.planted.values["entityName"] if shown else "***")
    found = got["find_clients"].structured_content["items"]
    assert world.planted.entity_key in {row["entityKey"] for row in found}
    assert world.contact_written(TYPED["typed new email"]), "the update reached the sandbox"
    assert world.contact_written(world.planted.values["email"]), "the recipe wrote its contact"
    assert all(text in "\n".join(sent) for text in TYPED.values()), "what the assistant typed"
    assert '"practiceflow://runs/recent"' in "\n".join(sent)
    transcript = ("mcp transcript, server to client", "\n".join(received))
    (world.shown if shown else world.found).append(transcript)
    world.found.append(("mcp log", log.read_text(encoding="utf-8")))
    world.sent.append(("mcp transcript, client to server", "\n".join(sent)))
    world.found += [(f"mcp {where}", text) for where, text in sqlite_texts(state)]
    for path in folder.glob("*.key"):
        world.secrets[f"mcp state key {path.name}"] = path.read_text().strip()


def _run_statuses(url: str) -> list[str]:
    with psycopg.connect(url) as db:
        return [str(row[0]) for row in db.execute("SELECT status FROM pf_runs").fetchall()]


def fleet_sink(world: World) -> None:
    """A ``practiceflow worker`` on PostgreSQL receives the proposal's delivery and runs the
    recipe; every table of the database and the worker's log are scanned."""
    url = shared_server().new_database("canary")
    migrate_state(url)
    keep_every_row_version(url)
    folder = world.folder / "fleet"
    folder.mkdir()
    (folder / "canary.yaml").write_text(world.recipe, encoding="utf-8")
    client_id, _ = world.sandbox.credentials("anz", "rw")
    limits = {"per_minute": 50_000, "per_hour": 900_000, "per_day": 9_000_000}
    fleet = folder / "fleet.yaml"
    fleet.write_text(
        "practices:\n"
        "  alpha:\n"
        f"    client_id: {client_id}\n"
        "    client_secret_env: SECRET_ALPHA\n"
        f"    base_url: {world.sandbox.base_url('anz')}\n"
        "    recipes: [canary.yaml]\n"
        f"    limits: {limits}\n",
        encoding="utf-8",
    )
    state_key = Fernet.generate_key().decode("ascii")
    world.secrets["fleet state key"] = state_key
    env = {
        k: v for k, v in cli_env(world.sandbox).items() if not k.startswith("PRACTICEFLOW_CLIENT")
    }
    env.update(SECRET_ALPHA=world.client_secret, PRACTICEFLOW_STATE_KEY=state_key)
    port = free_port()
    log = folder / "worker.log"
    command = practiceflow(
        "worker", "--fleet", str(fleet), "--state", url, "-v", "--heartbeat", "1",
        "--listen", f"127.0.0.1:{port}", "--public-url", f"http://127.0.0.1:{port}",
        "--sweep-every", "3600",
    )  # fmt: skip
    with log.open("wb") as out:
        worker = subprocess.Popen(command, env=env, cwd=folder, stdout=out, stderr=out)  # noqa: S603 - our own CLI
    try:
        wait_until(
            lambda: (
                "receiving webhooks on" in log.read_text(errors="replace")
                or worker.poll() is not None
            ),
            90,
            "the worker's receiver",
        )
        assert worker.poll() is None, log.read_text(errors="replace")
        world.sandbox.admin("POST", f"/_admin/proposals/{world.proposal_key}/accept")
        email = world.planted.values["email"]
        wait_until(lambda: world.contact_written(email), 90, "the contact from the record")
        wait_until(lambda: _run_statuses(url) == ["failed"], 30, "the run's outcome")
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    for i, row in enumerate(world.sandbox.state.practice("anz").subscriptions.values()):
        world.secrets[f"webhook secret {i}"] = row["secret"]
    world.found.append(("worker log", log.read_text(errors="replace")))
    listed = CliRunner().invoke(cli, ["runs", "list", "--json", "--state", url], env=env)
    assert listed.exit_code == 0, listed.output
    run_id = json.loads(listed.stdout)[0]["run_id"]
    for args in (["runs", "list"], ["runs", "show", run_id], ["runs", "show", run_id, "--json"]):
        done = CliRunner().invoke(cli, [*args, "--state", url], env=env)
        assert done.exit_code == 0, done.output
        world.found.append((f"fleet {' '.join(args)}", done.output))
    tables = postgres_texts(url)
    kept = dict(tables)["table canary_row_versions"]
    assert "procrastinate_jobs" in kept, "the queue's jobs were kept"
    assert "run_event" in kept, "the queue's jobs were kept"
    world.found += [(f"postgres {where}", text) for where, text in tables]


CASSETTE_TEST = """\
recipe: canary.yaml
cases:
  - name: the planted client is read, billed and given a contact
    given:
      event: {{entityKey: {entity}, proposalKey: {proposal}}}
      now: "2026-11-27T09:00:00Z"
      cassette: cassettes/canary.yaml
    expect:
      status: failed
"""


def cassette_sink(world: World) -> None:
    """``practiceflow test --record`` against the sandbox, then the replay offline."""
    folder = world.folder / "cassette"
    folder.mkdir()
    (folder / "canary.yaml").write_text(world.recipe, encoding="utf-8")
    test = folder / "canary.test.yaml"
    test.write_text(
        CASSETTE_TEST.format(entity=world.planted.entity_key, proposal=world.proposal_key),
        encoding="utf-8",
    )
    env = cli_env(world.sandbox, PRACTICEFLOW_PROFILES=str(folder / "no-profiles.toml"))
    url = world.sandbox.base_url("anz")
    for args in (["--record", "--base-url", url], []):
        done = CliRunner().invoke(cli, ["test", *args, str(test)], env=env)
        assert done.exit_code == 0, done.output
        assert "1 passed" in done.output
        world.found.append((f"test {' '.join(args)}", done.output))
    assert world.contact_written(world.planted.values["email"]), "the recording wrote"
    cassette = folder / "cassettes" / "canary.yaml"
    assert "exchanges" in cassette.read_text(encoding="utf-8")
    world.found += file_texts(folder)


def export_sink(world: World) -> None:
    """``practiceflow export`` of every platform, credentials in its environment: no secret
    in what it writes, and no example or sample there (nor in the modules' reference) holds
    a real-looking personal value.

    The sandbox's canaries cannot reach an export (it reads modules, never the API), and
    a module's sample is what its author wrote: the shipped samples are the ones that must
    be fictitious, so they are what is checked.
    """
    folder = world.folder / "export"
    env = cli_env(world.sandbox)
    for platform in ("zapier", "n8n", "openapi"):
        out = str(folder / platform)
        done = CliRunner().invoke(cli, ["export", platform, "--out", out], env=env)
        assert done.exit_code == 0, done.output
        world.found.append((f"export {platform}", done.output))
    written = file_texts(folder)
    assert len(written) > 10, written
    world.found += written
    reference = REPO / "docs" / "modules.md"
    published = [*written, (str(reference), reference.read_text(encoding="utf-8"))]
    for where, text in published:
        if not where.endswith("package-lock.json"):  # npm's own metadata, not a sample
            world.problems += real_looking(where, text)
