"""The issue's bad-input cases, through the real command line: each exits 1 or 2 with the
file and line (or the file the machine refused), never a traceback, never exit 70, never a
hang: a catastrophic ``pattern`` in a module, a ``$ref`` to itself, ``10**300|filesizeformat``,
a lone surrogate rendered by a run, ``/dev/full`` as the output or a step's file.

A hang is caught by the subprocess's generous timeout (it fails the test; nothing is timed).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from practiceflow.testing import SandboxHandle
from reliability._support import REPO, cli_env, practiceflow

HANG = 120  # seconds: far above any of these commands; only a hang reaches it


def _cli(
    args: list[str],
    *,
    stdin: str = "",
    cwd: Path,
    env: dict[str, str] | None = None,
    stdout: Any = subprocess.PIPE,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own CLI
        practiceflow(*args),
        input=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=HANG,
        check=False,
        cwd=cwd,
        env=env,
    )


def _no_bug(done: subprocess.CompletedProcess[str]) -> str:
    text = (done.stdout or "") + done.stderr
    assert done.returncode in (1, 2), (done.returncode, text)
    assert "Traceback" not in text, text
    assert "internal error" not in text, text
    return text


def _module(tmp_path: Path, key: str, change: dict[str, Any]) -> Path:
    module = yaml.safe_load((REPO / "actions" / "create_lead.yaml").read_text(encoding="utf-8"))
    module["key"] = key
    for where, value in change.items():
        target = module
        *parents, last = where.split(".")
        for part in parents:
            target = target[part]
        target[last] = value
    folder = tmp_path / key / "actions"
    folder.mkdir(parents=True)
    (folder / f"{key}.yaml").write_text(yaml.safe_dump(module, sort_keys=False), "utf-8")
    return folder.parent


LEAD = json.dumps({"entityType": "Individual", "entityName": "a" * 60 + "!"})


def test_a_catastrophic_pattern_does_not_hang_action(tmp_path: Path):
    # Python's backtracking engine takes about 2**60 steps on this input; RE2 one pass.
    mods = _module(
        tmp_path,
        "catastrophic",
        {
            "input.properties.entityName.pattern": "^(a+)+$",
            "input.properties.entityName.examples": ["aaa"],
        },
    )
    done = _cli(
        ["action", "catastrophic", "--input", "-", "--dry-run", "--modules", str(mods)],
        stdin=LEAD,
        cwd=tmp_path,
    )
    text = _no_bug(done)
    assert done.returncode == 2
    assert "entityName" in text
    assert "expected text matching ^(a+)+$" in text


def test_a_pattern_the_linear_engine_cannot_run_is_refused_where_it_is_written(tmp_path: Path):
    mods = _module(tmp_path, "backref", {"input.properties.entityName.pattern": r"^(a)\1$"})
    path = mods / "actions" / "backref.yaml"
    done = _cli(["modules", "validate", str(path)], cwd=tmp_path)
    text = " ".join(_no_bug(done).split())
    assert re.search(r"backref\.yaml:\d+:\d+ input\.properties\.entityName\.pattern", text), text
    assert "back-references" in text


def test_a_ref_to_itself_is_refused_at_load(tmp_path: Path):
    mods = _module(
        tmp_path,
        "selfref",
        {
            "input.$defs": {"loop": {"$ref": "#/$defs/loop"}},
            "input.properties.entityName": {"$ref": "#/$defs/loop"},
        },
    )
    validate = _cli(["modules", "validate", str(mods / "actions" / "selfref.yaml")], cwd=tmp_path)
    assert "loop -> loop" in _no_bug(validate)
    action = _cli(
        ["action", "selfref", "--input", "-", "--dry-run", "--modules", str(mods)],
        stdin=LEAD,
        cwd=tmp_path,
    )
    assert re.search(r"selfref\.yaml:\d+", _no_bug(action))


def _bill_recipe(tmp_path: Path, details: str) -> Path:
    recipe = {
        "name": "bad input",
        "trigger": {"use": "proposal_accepted", "mode": "webhook"},
        "steps": [
            {
                "id": "bill",
                "use": "create_bill",
                "with": {
                    "entityKey": "{{ trigger.entityKey }}",
                    "billDetails": details,
                    "lineItems": [{"amount": 1, "taxPercent": 10, "narration": "x"}],
                },
            }
        ],
    }
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe), encoding="utf-8")
    return path


def test_a_power_filtered_before_it_is_raised_is_a_located_error(tmp_path: Path):
    # Jinja reads 10**300|filesizeformat as 10 ** (300|filesizeformat): int ** str.
    path = _bill_recipe(tmp_path, "{{ 10**300|filesizeformat }}")
    text = " ".join(_no_bug(_cli(["run", str(path), "--dry-run"], cwd=tmp_path)).split())
    assert re.search(r"recipe\.yaml:\d+:\d+ steps\[0\]\.with\.billDetails", text), text


def test_a_lone_surrogate_rendered_by_a_run_is_printed_as_its_escape(tmp_path: Path):
    path = _bill_recipe(tmp_path, "{{ '\\ud800' }} cut")
    done = _cli(["run", str(path), "--dry-run"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "\\ud800 cut" in done.stdout


def test_dev_full_as_the_output_is_a_clear_error(tmp_path: Path):
    with Path("/dev/full").open("w") as full:
        done = _cli(["modules", "list"], cwd=tmp_path, stdout=full)
    text = _no_bug(done)
    assert done.returncode == 2
    assert "No space left on device" in text
    export = _cli(["export", "openapi", "--out", "/dev/full/openapi"], cwd=tmp_path)
    assert "/dev/full/openapi" in _no_bug(export)


POLL_RECIPE = """\
name: local file
trigger: {use: new_client, mode: poll}
steps:
  - id: save
    use: write_jsonl
    with:
      path: "%s"
      record: {entityKey: "{{ trigger.entityKey }}", note: "{{ '\\\\ud83d' }} cut"}
"""


@pytest.mark.integration
@pytest.mark.parametrize("target", ["/dev/full", "out/clients.jsonl"])
def test_a_run_writing_a_lone_surrogate_or_to_dev_full_ends_cleanly(
    tmp_path: Path, rsandbox: SandboxHandle, target: str
):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(POLL_RECIPE % target, encoding="utf-8")
    env = cli_env(rsandbox, PRACTICEFLOW_STATE=str(tmp_path / "state.db"))
    assert _cli(["run", str(recipe), "--once"], cwd=tmp_path, env=env).returncode == 0
    rsandbox.admin(
        "POST",
        "/_admin/entities",
        {"entityName": "Cut Ltd", "entityType": "CO", "clientStatus": "Active"},
    )
    done = _cli(["run", str(recipe), "--once"], cwd=tmp_path, env=env)
    runs = json.loads(_cli(["runs", "list", "--json"], cwd=tmp_path, env=env).stdout)
    assert "Traceback" not in done.stdout + done.stderr
    assert len(runs) == 1, runs
    if target == "/dev/full":
        assert done.returncode == 1, done.stderr
        assert "/dev/full: not a regular file" in done.stderr
        assert runs[0]["status"] == "failed"  # once, not started three times and quarantined
    else:
        assert done.returncode == 0, done.stderr
        assert runs[0]["status"] == "succeeded"
        line = json.loads((tmp_path / target).read_text(encoding="utf-8"))
        assert line["note"] == "\ud83d cut"  # kept losslessly, through the store
