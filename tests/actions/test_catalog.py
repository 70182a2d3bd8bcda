"""The catalog covers the spec: every operation of spec section 4 has an action module.

The endpoint tables of section 4 (4.1 detailed, 4.2 known by name only) are read from the
spec itself, so a new row there fails this test until a module covers it. The spec is
the file named by the environment variable ``PRACTICEFLOW_SPEC``, else the shared spec
``../shared/spec/partner-api.md`` next to the repository, else the copy the repository keeps
(``tests/actions/spec/partner-api.md``, so that a clean clone alone tests the catalog). When
the shared spec is there, the copy must equal it (refresh: copy it over).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from practiceflow.manifest import ActionModule, default_registry
from practiceflow.templating import CompiledTemplate

SPEC_ENV = "PRACTICEFLOW_SPEC"
SHARED_SPEC = Path(__file__).resolve().parents[2].parent / "shared" / "spec" / "partner-api.md"
KEPT_SPEC = Path(__file__).resolve().parent / "spec" / "partner-api.md"

#: Operations the spec lists twice under two paths: the extra path -> why no module needs it.
ALIASES = {
    ("GET", "/api/v1/entities/list"): "the same entities list as GET /api/v1/entities (spec 4.1)",
}

#: The modules issue 6 asks for, by noun (a module missing here fails even if the spec moved).
ISSUE_MODULES = [
    "create_client",
    "get_client",
    "find_clients",
    "get_client_integrations",
    "list_entity_types",
    "create_lead",
    "find_leads",
    "get_lead",
    "add_lead_note",
    "convert_lead",
    "list_lead_sources",
    "list_lead_statuses",
    "find_contacts",
    "list_client_contacts",
    "create_contact",
    "update_contact",
    "find_groups",
    "create_onboarding",
    "list_onboarding_documents",
    "get_onboarding_document_url",
    "download_onboarding_documents_zip",
    "list_eform_templates",
    "send_eform",
    "start_id_verification",
    "start_aml_check",
    "download_verification_certificate",
    "find_proposals",
    "get_proposal",
    "get_proposal_pricing",
    "create_proposal",
    "create_proposal_from_template",
    "duplicate_proposal",
    "preview_proposal_renewal",
    "renew_proposal",
    "list_proposal_services",
    "list_xpm_job_templates",
    "list_xpm_job_categories",
    "list_xpm_staff",
    "list_fyi_job_templates",
    "list_fyi_job_states",
    "create_bill",
    "get_bill",
    "find_bills",
    "download_bill_pdf",
    "get_ledger_status",
    "list_ledger_accounts",
    "list_ledger_tax_rates",
    "list_ledger_branding_themes",
    "find_recurring_billings",
    "get_recurring_billing",
    "list_recurring_billing_runs",
    "list_users",
    "list_webhook_events",
    "subscribe_webhook",
    "unsubscribe_webhook",
    "test_webhook",
]


def spec_path() -> Path:
    if os.environ.get(SPEC_ENV):
        return Path(os.environ[SPEC_ENV])
    return SHARED_SPEC if SHARED_SPEC.is_file() else KEPT_SPEC


def test_the_kept_copy_of_the_spec_is_the_shared_spec():
    """Where the shared spec sits beside the checkout, the repository's copy equals it."""
    shared = Path(os.environ.get(SPEC_ENV) or SHARED_SPEC)
    kept = KEPT_SPEC.read_text(encoding="utf-8")
    assert "## 4" in kept  # the copy holds the endpoint tables the catalog test reads
    if shared.is_file():
        assert shared.read_text(encoding="utf-8") == kept, f"copy {shared} over {KEPT_SPEC}"


def read_spec() -> str:
    path = spec_path()
    if not path.is_file():
        message = (
            f"the API spec was not found at {path}; the catalog test reads its endpoint tables. "
            f"Set {SPEC_ENV} to the spec file (partner-api.md)"
        )
        pytest.fail(message)
    return path.read_text(encoding="utf-8")


def section_4(text: str) -> str:
    start = text.find("## 4. Endpoints")
    end = text.find("\n## 5.", start)
    assert start >= 0, "the spec has no '## 4. Endpoints' section"
    return text[start : end if end > 0 else None]


def _resolve(path: str, base: str | None) -> str:
    """A path of a table cell; '/ledger/accounts' continues the row's first full path."""
    if path.startswith("/api/"):
        return path
    assert base is not None, f"relative path {path!r} without a full path before it"
    parts = base.split("/")
    first = path.strip("/").split("/")[0]
    if first in parts:
        return "/".join(parts[: parts.index(first)]) + path
    return "/".join(parts[:-1]) + path


def operations(text: str) -> Iterator[tuple[str, str, str]]:
    """Yield (method, path, row) for every operation of the endpoint tables of section 4."""
    for line in section_4(text).splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not re.match(r"^(GET|POST|PUT|PATCH|DELETE)\b", cells[0]):
            continue
        methods = re.findall(r"(PUT-like)|\b(GET|POST|PUT|PATCH|DELETE)\b", cells[0])
        verbs = [like or name for like, name in methods]
        base: str | None = None
        for raw in re.findall(r"`([^`]+)`", cells[1]):
            path = _resolve(raw.split("?")[0], base)
            base = base or path
            for verb in verbs:
                yield verb, path, line.strip()


def _shape(path: str) -> str:
    """Path with every parameter as {} ('{{ input.key | pathseg }}' and '{key}' alike)."""
    path = re.sub(r"\{%.*?%\}", "", path)
    path = re.sub(r"\{\{.*?\}\}", "{}", path)
    return re.sub(r"\{[^{}]*\}", "{}", path)


def module_path(module: ActionModule) -> str:
    path = module.request.path
    return _shape(path.source if isinstance(path, CompiledTemplate) else path)


def covering(method: str, path: str, modules: list[ActionModule]) -> list[str]:
    wanted = _shape(path)
    found = []
    for module in modules:
        shape = module_path(module)
        if method == "PUT-like":
            if module.request.method in ("PUT", "PATCH") and shape.startswith(wanted):
                found.append(module.key)
        elif module.request.method == method and shape == wanted:
            found.append(module.key)
    return found


def test_the_spec_tables_are_read():
    ops = list(operations(read_spec()))
    assert len(ops) >= 50, ops
    assert any(op[:2] == ("POST", "/api/v1/bills") for op in ops)
    assert any(op[:2] == ("PUT-like", "/api/v1/entities/{entityKey}/contacts") for op in ops)
    assert any(op[:2] == ("GET", "/api/v1/bills/ledger/accounts") for op in ops)
    assert any(op[:2] == ("GET", "/api/v1/proposals/fyi-job-states") for op in ops)
    assert any(
        op[:2] == ("GET", "/api/v1/recurring-billing/{recurringBillingId}/runs") for op in ops
    )


def test_every_operation_of_spec_section_4_has_a_module():
    modules = list(default_registry().actions.values())
    missing = []
    for method, path, row in operations(read_spec()):
        if (method, path) in ALIASES:
            continue
        if not covering(method, path, modules):
            missing.append(f"{method} {path}    (spec row: {row[:80]})")
    assert not missing, "operations of spec section 4 without a module:\n" + "\n".join(missing)


def test_every_module_the_issue_asks_for_is_shipped():
    shipped = set(default_registry().actions)
    assert sorted(set(ISSUE_MODULES) - shipped) == []


def test_every_write_route_needs_write_and_every_read_does_not():
    for module in default_registry().actions.values():
        writes = module.request.method != "GET"
        assert module.needs_write is writes, module.key
        if writes:
            assert "canWrite" in module.errors.get(403, ""), module.key


def test_every_search_pages_or_reads_a_list_and_has_a_limit_and_has_more():
    for module in default_registry().actions.values():
        if module.kind != "search":
            continue
        assert module.extensions.list is not None, module.key
        properties = module.output.schema["properties"]
        assert {"items", "count", "hasMore"} <= set(properties), module.key
        if module.extensions.list.paged:
            assert "limit" in module.input_schema["properties"], module.key


def test_every_module_has_help_titles_and_a_sample():
    for module in default_registry().actions.values():
        assert len(module.description) >= 40, module.key
        for name, schema in module.input_schema["properties"].items():
            assert schema.get("title"), f"{module.key}: input.{name}"
            assert schema.get("description") or schema.get("examples"), f"{module.key}: {name}"
        assert list(module.output.validator.iter_errors(dict(module.sample))) == [], module.key


def test_tolerant_modules_say_so_in_their_help():
    for module in default_registry().actions.values():
        if module.input_schema.get("additionalProperties") is True:
            assert "as given" in module.description, module.key


def test_modules_validate_is_clean():
    from practiceflow.cli.modules import modules

    result = CliRunner().invoke(modules, ["validate"])
    assert result.exit_code == 0, result.output


DOCS = Path(__file__).resolve().parents[2] / "docs" / "modules.md"
REGENERATE = "practiceflow modules docs --out docs/modules.md"


def test_docs_modules_md_is_generated_from_the_current_modules():
    from practiceflow.manifest.docs import render_docs

    expected = render_docs(default_registry())
    current = DOCS.read_text(encoding="utf-8") if DOCS.is_file() else ""
    assert current == expected, f"docs/modules.md is stale; regenerate it with: {REGENERATE}"


def test_modules_docs_command_renders_and_checks_the_file(tmp_path):
    from practiceflow.cli.modules import modules
    from practiceflow.manifest.docs import render_docs

    out = tmp_path / "modules.md"
    result = CliRunner().invoke(modules, ["docs", "--out", str(out), "--check"])
    assert result.exit_code == 1
    assert "is stale" in result.output
    result = CliRunner().invoke(modules, ["docs", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8") == render_docs(default_registry())
    result = CliRunner().invoke(modules, ["docs", "--out", str(out), "--check"])
    assert result.exit_code == 0
    assert "is current" in result.output


def test_docs_show_each_action_with_its_form_sample_and_errors():
    from practiceflow.manifest.docs import render_docs

    registry = default_registry()
    text = render_docs([registry.action("send_eform"), registry.action("find_clients")])
    assert text.index("## Client") < text.index("## EForm")
    assert "`POST /api/v1/eforms/send` · create · needs write access (canWrite)" in text
    assert "| `templateId` | integer | yes |" in text
    assert "*(personal)*" in text
    assert "Other fields are accepted and sent as given." in text
    assert '"formKey": "2c4e6a8b-1d3f-4a5b-9c7d-8e0f1a2b3c4d"' in text
    assert "- 403: this API client is read-only" in text
    assert render_docs(reversed(list(registry))) == render_docs(registry)
