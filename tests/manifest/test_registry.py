"""Module discovery: shipped modules, --modules folders, and the override rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from practiceflow.errors import ConfigError, ManifestError
from practiceflow.manifest import (
    ActionModule,
    TriggerModule,
    default_registry,
    load_module,
    load_modules,
)
from practiceflow.manifest.resources import data_dir

CASES = Path(__file__).parent / "cases"
SHIPPED = ["convert_lead", "create_bill", "create_client", "create_lead"]

TRIGGER = """\
key: {key}
title: Lead created
description: Fires when a lead is added to the practice.
noun: Lead
{extra}
output:
  schema:
    type: object
    properties:
      entityKey: {{type: string}}
sample: {{entityKey: 6f1c2f4e-0d55-4a43-9f7e-3c1d2b8a9e01}}
poll:
  path: /api/v1/leads
  cursor: {{kind: lastUpdated, field: lastUpdated}}
  dedupe: "{{{{ item.entityKey }}}}"
  map:
    entityKey: "{{{{ item.entityKey }}}}"
"""


def _copy(src: Path, folder: Path, *, key: str | None = None, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = src.read_text(encoding="utf-8")
    if extra:
        text = text + extra
    target = folder / (f"{key}.yaml" if key else src.name)
    target.write_text(text, encoding="utf-8")
    return target


def test_shipped_modules_are_found_through_package_data():
    registry = default_registry()
    assert set(registry.actions) >= set(SHIPPED)
    assert all(module.source.startswith("actions/") for module in registry.actions.values())


def test_a_users_folder_adds_modules(tmp_path):
    _copy(CASES / "valid" / "list_groups.yaml", tmp_path / "mine" / "actions")
    registry = load_modules([tmp_path / "mine"])
    assert "list_groups" in registry.actions
    assert "create_bill" in registry.actions


def test_module_files_may_sit_directly_in_the_folder_and_triggers_are_told_apart(tmp_path):
    folder = tmp_path / "flat"
    _copy(CASES / "valid" / "list_groups.yaml", folder)
    (folder / "lead_created.yaml").write_text(TRIGGER.format(key="lead_created", extra=""))
    registry = load_modules([folder], shipped=False)
    assert isinstance(registry.actions["list_groups"], ActionModule)
    assert isinstance(registry.triggers["lead_created"], TriggerModule)
    assert list(registry.actions) == ["list_groups"]


def test_a_user_module_may_not_silently_replace_a_shipped_one(tmp_path):
    shipped = Path(str(data_dir("actions"))) / "create_bill.yaml"
    _copy(shipped, tmp_path / "mine" / "actions")
    with pytest.raises(ManifestError) as caught:
        load_modules([tmp_path / "mine"])
    issue = caught.value.issues[0]
    assert issue.path == "key"
    assert issue.line > 0
    assert "already shipped" in issue.message
    assert "override: true" in issue.message


def test_override_true_replaces_the_shipped_module(tmp_path):
    shipped = Path(str(data_dir("actions"))) / "create_bill.yaml"
    _copy(shipped, tmp_path / "mine" / "actions", extra="override: true\n")
    registry = load_modules([tmp_path / "mine"])
    assert registry.actions["create_bill"].override
    assert registry.actions["create_bill"].source.endswith("create_bill.yaml")
    assert not registry.actions["create_bill"].source.startswith("actions/")


def test_two_user_modules_may_not_share_a_key(tmp_path):
    src = CASES / "valid" / "list_groups.yaml"
    _copy(src, tmp_path / "one")
    _copy(src, tmp_path / "two")
    with pytest.raises(ManifestError, match="also defined in"):
        load_modules([tmp_path / "one", tmp_path / "two"], shipped=False)


def test_every_broken_file_of_every_folder_is_reported(tmp_path):
    folder = tmp_path / "bad"
    _copy(CASES / "invalid" / "top_level.yaml", folder)
    _copy(CASES / "invalid" / "key_mismatch.yaml", folder)
    with pytest.raises(ManifestError) as caught:
        load_modules([folder], shipped=False)
    files = {Path(issue.file).name for issue in caught.value.issues}
    assert files == {"top_level.yaml", "key_mismatch.yaml"}


def test_a_missing_folder_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="not a folder"):
        load_modules([tmp_path / "nope"])


def test_unknown_action_key_suggests_the_closest(tmp_path):
    with pytest.raises(ConfigError, match="did you mean 'create_bill'"):
        default_registry().action("create_bil")
    with pytest.raises(ConfigError, match="valid values are"):
        default_registry().trigger("zzz")


def test_trigger_templates_are_checked(tmp_path):
    path = tmp_path / "triggers" / "lead_created.yaml"
    path.parent.mkdir()
    path.write_text(
        TRIGGER.format(key="lead_created", extra="").replace(
            'dedupe: "{{ item.entityKey }}"', 'dedupe: "{{ itme.entityKey }}"'
        )
    )
    with pytest.raises(ManifestError, match="unknown name 'itme' in template; did you mean 'item'"):
        load_module(path)


def test_trigger_sample_must_fit_its_schema(tmp_path):
    path = tmp_path / "triggers" / "lead_created.yaml"
    path.parent.mkdir()
    path.write_text(
        TRIGGER.format(key="lead_created", extra="").replace(
            "sample: {entityKey: 6f1c2f4e-0d55-4a43-9f7e-3c1d2b8a9e01}", "sample: {entityKey: 5}"
        )
    )
    with pytest.raises(ManifestError, match=r"sample\.entityKey: got 5; expected a string"):
        load_module(path)
