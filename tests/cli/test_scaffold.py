"""``modules new`` and ``recipes new``: commented files that validate as written."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from practiceflow.cli import cli
from practiceflow.cli.scaffold import recipe_text
from practiceflow.manifest import load_modules
from practiceflow.manifest.module_registry import ModuleRegistry
from practiceflow.runner import validate_recipe


@pytest.fixture(scope="module")
def registry() -> ModuleRegistry:
    return load_modules([])


def test_modules_new_writes_a_commented_action_that_validates(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    result = CliRunner().invoke(cli, ["modules", "new", "read_client", "--dir", str(folder)])
    assert result.exit_code == 0, result.output
    path = folder / "actions" / "read_client.yaml"
    text = path.read_text(encoding="utf-8")
    assert text.count("\n#") >= 5  # explained, not bare
    assert "docs/modules-guide.md" in text
    assert load_modules([folder]).action("read_client").source.endswith("read_client.yaml")
    checked = CliRunner().invoke(cli, ["modules", "validate", "--modules", str(folder)])
    assert checked.exit_code == 0, checked.output
    assert CliRunner().invoke(cli, ["modules", "validate", str(path)]).exit_code == 0


@pytest.mark.parametrize(
    ("existing", "kind"),
    [
        ("get_client", "actions"),
        ("create_bill", "actions"),
        ("send_eform", "actions"),
        ("find_clients", "actions"),
        ("new_lead", "triggers"),
        ("proposal_accepted", "triggers"),
        ("any_webhook_event", "triggers"),
    ],
)
def test_modules_new_from_an_existing_module_validates(
    tmp_path: Path, existing: str, kind: str
) -> None:
    folder = tmp_path / "mine"
    args = ["modules", "new", "my_copy", "--from", existing, "--dir", str(folder)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    text = (folder / kind / "my_copy.yaml").read_text(encoding="utf-8")
    assert text.startswith(f"# Copied from {existing}")
    loaded = load_modules([folder])
    found = loaded.actions.get("my_copy") or loaded.triggers.get("my_copy")
    assert found is not None
    assert found.title == (loaded.actions.get(existing) or loaded.triggers[existing]).title


def test_modules_new_with_a_shipped_key_overrides_it(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    args = ["modules", "new", "get_client", "--from", "get_client", "--dir", str(folder)]
    assert CliRunner().invoke(cli, args).exit_code == 0
    data = yaml.safe_load((folder / "actions" / "get_client.yaml").read_text(encoding="utf-8"))
    assert data["override"] is True
    assert load_modules([folder]).action("get_client").override


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["modules", "new", "Read-Client"], "KEY: got 'Read-Client'; expected lower-case"),
        (["modules", "new", "x", "--from", "get_clent"], "did you mean 'get_client'?"),
    ],
)
def test_modules_new_refuses_bad_input_with_a_clear_error(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    result = CliRunner().invoke(cli, [*args, "--dir", str(tmp_path)])
    assert result.exit_code == 2
    assert expected in result.output
    assert not list(tmp_path.rglob("*.yaml"))


def test_modules_new_never_overwrites_without_force(tmp_path: Path) -> None:
    args = ["modules", "new", "read_client", "--dir", str(tmp_path)]
    assert CliRunner().invoke(cli, args).exit_code == 0
    path = tmp_path / "actions" / "read_client.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "# mine\n", encoding="utf-8")
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 2
    assert "pass --force" in again.output
    assert path.read_text(encoding="utf-8").endswith("# mine\n")
    assert CliRunner().invoke(cli, [*args, "--force"]).exit_code == 0
    assert not path.read_text(encoding="utf-8").endswith("# mine\n")


def test_recipes_new_wires_inputs_and_validates_as_written(tmp_path: Path) -> None:
    out = tmp_path / "welcome.yaml"
    args = ["recipes", "new", "welcome", "--trigger", "proposal_accepted"]
    args += ["--step", "get_client", "--step", "create_bill", "--step", "send_eform"]
    result = CliRunner().invoke(cli, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert data["trigger"] == {"use": "proposal_accepted", "mode": "auto"}
    assert [step["id"] for step in data["steps"]] == ["get_client", "create_bill", "send_eform"]
    assert data["steps"][1]["with"]["entityKey"] == "{{ trigger.entityKey }}"
    assert data["steps"][2]["with"]["entityKey"] == "{{ trigger.entityKey }}"
    assert "TODO" in out.read_text(encoding="utf-8")  # the example values are marked
    dry = CliRunner().invoke(cli, ["run", str(out), "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output


def test_recipes_new_hint_with_modules_runs_as_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    made = CliRunner().invoke(cli, ["modules", "new", "read_client", "--dir", "my modules"])
    assert made.exit_code == 0, made.output
    args = ["recipes", "new", "welcome", "--trigger", "new_client", "--step", "read_client"]
    result = CliRunner().invoke(cli, [*args, "--modules", "my modules"])
    assert result.exit_code == 0, result.output
    hint = result.output.split("try it with: ", 1)[1].splitlines()[0].strip()
    assert hint == "practiceflow run recipes/welcome.yaml --modules 'my modules' --dry-run"
    program, *words = shlex.split(hint)
    assert program == "practiceflow"
    dry = CliRunner().invoke(cli, words)
    assert dry.exit_code == 0, dry.output  # the custom step is found: the flags came along


def test_recipes_new_reads_earlier_steps_outputs_by_name(
    tmp_path: Path, registry: ModuleRegistry
) -> None:
    text = recipe_text("leads", "new_lead", ["find_leads", "convert_lead"], registry)
    data = yaml.safe_load(text)
    assert data["steps"][1]["with"]["entityKey"] == "{{ trigger.entityKey }}"


def test_recipes_new_repeated_actions_get_distinct_ids(registry: ModuleRegistry) -> None:
    text = recipe_text("twice", "new_client", ["get_client", "get_client"], registry)
    assert [step["id"] for step in yaml.safe_load(text)["steps"]] == [
        "get_client",
        "get_client_2",
    ]


def test_a_recipe_scaffold_of_every_action_validates(
    tmp_path: Path, registry: ModuleRegistry
) -> None:
    for key in sorted(registry.actions):
        path = tmp_path / f"{key}.yaml"
        path.write_text(recipe_text(key, "new_client", [key], registry), encoding="utf-8")
        validate_recipe(path, registry=registry)


def test_a_recipe_scaffold_of_every_trigger_validates(
    tmp_path: Path, registry: ModuleRegistry
) -> None:
    for key in sorted(registry.triggers):
        path = tmp_path / f"{key}.yaml"
        text = recipe_text(key, key, ["get_client", "send_eform"], registry)
        path.write_text(text, encoding="utf-8")
        validate_recipe(path, registry=registry)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--trigger", "proposal_acepted", "--step", "get_client"], "'proposal_accepted'?"),
        (["--trigger", "new_client", "--step", "get_clent"], "'get_client'?"),
    ],
)
def test_recipes_new_unknown_keys_get_did_you_mean(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    out = tmp_path / "r.yaml"
    result = CliRunner().invoke(cli, ["recipes", "new", "r", *args, "--out", str(out)])
    assert result.exit_code == 2
    assert expected in result.output
    assert not out.exists()
