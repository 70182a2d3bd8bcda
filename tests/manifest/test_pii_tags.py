"""Every personal field the spec names is tagged ``x-pii`` in every module that carries it.

The spec (section 2) names these personal fields: of an entity (client or lead) its names,
initials, email, telephone and mobile, tax, registration and id numbers and both addresses;
of a group's members their name and email; of an eForm or onboarding recipient the name,
email and mobile; of a contact its names, email and phones. Wherever a module's input,
output or trigger payload has a field of one of these names, at any depth, it must be tagged
(itself or an object around it), so that it is masked the same way everywhere.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from practiceflow.engine.masking import pii_match
from practiceflow.manifest import default_registry, lint

#: Field names the spec gives personal data, wherever they appear.
PERSONAL_NAMES = frozenset(
    {
        "entityName",
        "entitySurname",
        "entityInitials",
        "email",
        "entityEmail",
        "telephone",
        "mobile",
        "taxNumber",
        "regNumber",
        "idNumber",
        "physicalAddress",
        "postalAddress",
        "firstName",
        "lastName",
    }
)
#: Objects whose every field is personal (an eForm or onboarding recipient).
PERSONAL_OBJECTS = frozenset({"recipient"})

REGISTRY = default_registry()
SCHEMAS = [
    *[(f"{key} input", m.input_schema) for key, m in REGISTRY.actions.items()],
    *[(f"{key} output", m.output.schema or {}) for key, m in REGISTRY.actions.items()],
    *[(f"{key} input", m.input_schema) for key, m in REGISTRY.triggers.items()],
    *[(f"{key} payload", m.output_schema) for key, m in REGISTRY.triggers.items()],
]


def _fields(schema: Any, at: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if not isinstance(schema, Mapping):
        return
    for name, child in (schema.get("properties") or {}).items():
        yield (*at, name)
        yield from _fields(child, (*at, name))
    yield from _fields(schema.get("items"), (*at, "*"))
    for keyword in ("anyOf", "oneOf", "allOf"):
        for child in schema.get(keyword) or []:
            yield from _fields(child, at)


@pytest.mark.parametrize(("where", "schema"), SCHEMAS, ids=[where for where, _ in SCHEMAS])
def test_every_personal_field_is_tagged(where: str, schema: Mapping[str, Any]):
    tagged = lint.pii_paths(schema)
    untagged = [
        ".".join(path)
        for path in _fields(schema)
        if (path[-1] in PERSONAL_NAMES or path[-1] in PERSONAL_OBJECTS)
        and not pii_match(path, tagged)
    ]
    assert untagged == [], f"{where}: personal fields not tagged x-pii"


def test_the_issue_reproductions_are_tagged():
    # entityName was personal in create_client but not in these outputs.
    for key in ("new_client", "proposal_accepted", "updated_client", "new_lead"):
        assert ("entityName",) in lint.pii_paths(REGISTRY.triggers[key].output_schema), key
    for key in ("create_lead", "get_bill", "create_bill", "get_client_integrations"):
        schema = REGISTRY.actions[key].output.schema or {}
        assert ("entityName",) in lint.pii_paths(schema), key
