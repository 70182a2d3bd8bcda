"""``read_back`` in an action module: the named read-back and the run marker's field are
declared in YAML, checked at load, and used by the runner for a module of one's own as for
a shipped one (the runner names no endpoint)."""

from __future__ import annotations

from pathlib import Path

import pytest

from practiceflow.errors import ManifestError
from practiceflow.hooks.read_backs import READ_BACKS
from practiceflow.manifest import default_registry, load_modules
from practiceflow.runner.step_executor import add_marker, marker_for, reconcile

SHIPPED = {
    "create_client": ("client_by_identifier", "externalSystemID", "when_empty"),
    "create_bill": ("bill_by_entity_date_total", "billDetails", "append"),
    "convert_lead": ("lead_is_active", None, "when_empty"),
    "create_lead": ("lead_by_email", None, "when_empty"),
}


def test_shipped_writes_declare_their_read_back_and_marker_field() -> None:
    actions = default_registry().actions
    declared = {
        key: (a.read_back.hook, a.read_back.marker_field, a.read_back.marker_placement)
        for key, a in actions.items()
        if a.read_back is not None
    }
    assert declared == SHIPPED
    assert set(READ_BACKS) == {hook for hook, _, _ in SHIPPED.values()}


def _own_module(folder: Path, read_back: str) -> Path:
    text = Path(default_registry().actions["create_client"].source).read_text(encoding="utf-8")
    start = text.index("read_back:")
    end = text.index("\n", text.index("marker:", start)) + 1
    own = text[:start] + read_back + text[end:]
    own = own.replace("key: create_client", "key: my_create_client", 1)
    path = folder / "actions" / "my_create_client.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(own, encoding="utf-8")
    return path


def test_a_module_of_ones_own_gets_the_marker_in_the_field_it_declares(tmp_path: Path) -> None:
    block = "read_back:\n  hook: client_by_identifier\n  marker: {field: entityCode}\n"
    _own_module(tmp_path, block)
    module = load_modules([tmp_path]).actions["my_create_client"]
    tag = marker_for("run", "step")

    marked = add_marker(module, {"entityName": "Acme"}, tag)

    assert marked == {"entityName": "Acme", "entityCode": tag}
    assert add_marker(module, {"entityCode": "OWN1"}, tag) == {"entityCode": "OWN1"}


def test_a_module_without_read_back_is_held_for_a_person() -> None:
    from datetime import UTC, datetime

    module = default_registry().actions["send_eform"]
    verdict = reconcile(module, None, {}, datetime.now(UTC))
    assert verdict.outcome == "unknown"
    assert "no read-back" in verdict.note


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (
            "read_back:\n  hook: bill_by_totl\n",
            r"read_back\.hook.*unknown read-back 'bill_by_totl'.*did you mean 'bill_by_entity",
        ),
        (
            "read_back:\n  hook: client_by_identifier\n  marker: {field: nope}\n",
            r"read_back\.marker\.field: got 'nope'; the marker's field must be an input field",
        ),
    ],
)
def test_a_wrong_read_back_is_an_error_naming_file_line_and_field(
    tmp_path: Path, block: str, expected: str
) -> None:
    path = _own_module(tmp_path, block)
    with pytest.raises(ManifestError, match=expected) as raised:
        load_modules([tmp_path])
    assert f"{path.name}:" in str(raised.value) or str(path) in str(raised.value)
