"""A recipe in its own folder of modules, the edits people make to it, and the sandbox's
count of what was written (the versions tests' shared pieces)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from practiceflow.manifest.resources import data_dir
from practiceflow.testing import SandboxHandle
from runner._support import MODULES

#: The recipe every edit starts from: a client created as a lead, converted, looked up,
#: billed. Its fee is a var, its bill goes through the folder's own ``create_bill``.
RECIPE = """\
name: versioned writes
trigger:
  use: test_event
vars:
  fee: 100
steps:
  - id: client
    use: create_client
    with:
      entityType: Company
      clientStatus: Lead
      entityName: "Version Test {{ trigger.ref }}"
      externalSystemID: "{{ trigger.ref }}"
  - id: convert
    use: convert_lead
    with:
      entityKey: "{{ steps.client.entityKey }}"
  - id: look
    use: get_client
    with:
      entityKey: "{{ steps.convert.entityKey }}"
  - id: bill
    use: create_bill
    with:
      entityKey: "{{ steps.convert.entityKey }}"
      billDetails: "first bill for {{ trigger.ref }}"
      lineItems:
        - {amount: "{{ vars.fee }}", taxPercent: 10, narration: Onboarding fee}
"""


def make_folder(root: Path) -> tuple[Path, Path]:
    """Write the recipe and a modules folder: the test trigger (and a second one,
    ``other_event``), ``create_bill`` as the user's own copy (``override: true``), and a
    second copy under another key.

    Returns:
        (recipe file, modules folder).
    """
    modules = root / "modules"
    (modules / "actions").mkdir(parents=True)
    shutil.copytree(MODULES / "triggers", modules / "triggers")
    other = (modules / "triggers" / "test_event.yaml").read_text(encoding="utf-8")
    (modules / "triggers" / "other_event.yaml").write_text(
        other.replace("key: test_event", "key: other_event").replace("test.event", "other.event"),
        encoding="utf-8",
    )
    shipped = data_dir("actions").joinpath("create_bill.yaml").read_text(encoding="utf-8")
    (modules / "actions" / "create_bill.yaml").write_text(
        shipped + "\noverride: true\n", encoding="utf-8"
    )
    copy = shipped.replace("key: create_bill", "key: create_bill_copy", 1)
    (modules / "actions" / "create_bill_copy.yaml").write_text(copy, encoding="utf-8")
    recipe = root / "recipe.yaml"
    recipe.write_text(RECIPE, encoding="utf-8")
    return recipe, modules


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (path, old)
    path.write_text(text.replace(old, new), encoding="utf-8")


def _rename(recipe: Path, modules: Path) -> None:
    _replace(recipe, "- id: bill", "- id: invoice")


def _remove(recipe: Path, modules: Path) -> None:
    text = recipe.read_text(encoding="utf-8")
    recipe.write_text(text[: text.index("  - id: bill")], encoding="utf-8")


def _reorder(recipe: Path, modules: Path) -> None:
    text = recipe.read_text(encoding="utf-8")
    look = text[text.index("  - id: look") : text.index("  - id: bill")]
    recipe.write_text(text.replace(look, "") + look, encoding="utf-8")


def _insert(recipe: Path, modules: Path) -> None:
    inserted = (
        "  - id: early\n"
        "    use: create_client\n"
        "    with:\n"
        "      entityType: Company\n"
        '      entityName: "Inserted {{ trigger.ref }}"\n'
    )
    _replace(recipe, "  - id: client\n", inserted + "  - id: client\n")


def _use(recipe: Path, modules: Path) -> None:
    _replace(recipe, "    use: create_bill\n", "    use: create_bill_copy\n")


def _with(recipe: Path, modules: Path) -> None:
    _replace(recipe, 'billDetails: "first bill for', 'billDetails: "EDITED bill for')
    _replace(recipe, "fee: 100", "fee: 250")


def _mapping(recipe: Path, modules: Path) -> None:
    _replace(
        modules / "actions" / "create_bill.yaml",
        'billDetails: "{{ input.billDetails | default(None) }}"',
        'billDetails: "EDITED {{ input.billDetails | default(None) }}"',
    )


def _delete(recipe: Path, modules: Path) -> None:
    recipe.unlink()


#: Each kind of edit made while runs wait: (recipe file, modules folder) -> None.
EDITS = {
    "rename": _rename,
    "remove": _remove,
    "reorder": _reorder,
    "insert": _insert,
    "use": _use,
    "with": _with,
    "mapping": _mapping,
    "delete": _delete,
}


def written(sandbox: SandboxHandle, ref: str) -> dict[str, Any]:
    """What the sandbox holds for one event: clients, conversions, bills (and their
    details), clients of the inserted step."""
    entities = list(sandbox.admin("GET", "/_admin/records/entities"))
    ours = [e for e in entities if e.get("entityName") == f"Version Test {ref}"]
    keys = {e["entityKey"] for e in ours}
    bills = [b for b in sandbox.admin("GET", "/_admin/records/bills") if b["entityKey"] in keys]
    converts = [
        r
        for r in sandbox.admin("GET", "/_admin/requests")
        if r["method"] == "POST"
        and "convert-to-client" in r["path"]
        and any(key in r["path"] for key in keys)
    ]
    first = f"first bill for {ref}"
    return {
        "client": len(ours),
        "convert": len(converts),
        "bill": len(bills),
        "first bill": sum(str(b.get("billDetails")).startswith(first) for b in bills),
        "fees": sorted(float(line["billAmount"]) for b in bills for line in b.get("lineItems", [])),
        "inserted": sum(e.get("entityName") == f"Inserted {ref}" for e in entities),
    }


#: A recipe on another trigger: what is served once the recipe above is deleted.
OTHER = """\
name: something else
trigger:
  use: other_event
steps:
  - id: look
    use: get_client
    with:
      entityKey: "{{ trigger.entityKey }}"
"""
