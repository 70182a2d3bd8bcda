"""docs/versions.md, run as written: its files are written, its commands run (through the
CLI, in this process) against a state store holding the runs the page describes (one
finished, one waiting to send its eForm, both of the shipped proposal recipe against the
sandbox), and each ``text`` block of output is what the command before it printed (``…``
stands for an id or a digest)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from practiceflow.api import Client, RateLimits
from practiceflow.cli import cli
from practiceflow.runner import Runner, validate_recipe
from practiceflow.state import open_store
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "versions.md"
BLOCK = re.compile(r"(?:<!-- file: (?P<file>\S+) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)```", re.S)


def _runs(sandbox: SandboxHandle, folder: Path) -> None:
    """The page's two runs: one finished, one stopped after its bill."""
    entities = sandbox.admin("GET", "/_admin/records/entities")
    keys = [row["entityKey"] for row in entities if row["status"] == "Active"][:2]
    client_id, secret = sandbox.credentials("anz", "rw")
    limits = RateLimits(per_minute=1000, per_hour=10_000, per_day=100_000)
    recipe = validate_recipe(folder / "recipes" / "proposal_to_bill_and_eform.yaml")
    with (
        Client(client_id, secret, base_url=sandbox.base_url("anz"), limits=limits) as client,
        open_store(str(folder / "state.db")) as store,
    ):
        for n, key in enumerate(keys):
            payload = {"entityKey": key, "title": f"Proposal {n}", "proposalKey": f"p-{n}"}
            store.record_event("anz", "proposal_accepted", "proposal.accepted", f"e{n}", payload)
        finished = store.get_event("anz", "proposal_accepted", "e0")
        waiting = store.get_event("anz", "proposal_accepted", "e1")
        assert finished is not None
        assert waiting is not None
        Runner(recipe, store, client, practice="anz").run_event(finished)
        stop = threading.Event()

        def point(label: str) -> None:
            if label == "done:bill":
                stop.set()

        Runner(recipe, store, client, practice="anz", stop=stop, on_point=point).run_event(waiting)


def _pattern(line: str) -> re.Pattern[str]:
    parts = [re.escape(word).replace("…", r"\S+?") for word in line.split()]
    return re.compile(r"\s+".join(parts))


def test_every_command_of_the_versions_page_prints_what_it_shows(
    sandbox: SandboxHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "recipes").mkdir()
    shutil.copy(REPO / "recipes" / "proposal_to_bill_and_eform.yaml", tmp_path / "recipes")
    _runs(sandbox, tmp_path)
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("PRACTICEFLOW_")}
    env.update(PRACTICEFLOW_STATE="state.db", COLUMNS="250")
    printed = ""
    shown = 0
    for match in BLOCK.finditer(PAGE.read_text(encoding="utf-8")):
        body = match["body"]
        if match["file"]:
            (tmp_path / match["file"]).write_text(body, encoding="utf-8")
        elif match["lang"] == "sh":
            (line,) = body.strip().splitlines()
            argv = shlex.split(line)
            assert argv[0] == "practiceflow"
            monkeypatch.chdir(tmp_path)  # the CLI in this process, in the page's folder
            done = CliRunner().invoke(cli, argv[1:], env=env)
            assert done.exit_code in (0, 1), (done.stderr, done.exception)
            printed = " ".join(done.stdout.split())
        elif match["lang"] == "text":
            for expected in body.strip().splitlines():
                assert _pattern(expected).search(printed), (expected, printed)
                shown += 1
    assert shown >= 8  # the page shows output, and every line of it was checked
