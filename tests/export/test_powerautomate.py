"""The Power Automate connector folder passes our checker of Microsoft's published rules."""

from __future__ import annotations

import copy
import json
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from powerautomate_checker import check

from practiceflow.export import generate

FOLDER = "powerautomate/"


@pytest.fixture(scope="module")
def files() -> dict[str, str | bytes]:
    return {
        name.removeprefix(FOLDER): content
        for name, content in generate("openapi").items()
        if name.startswith(FOLDER)
    }


def _write(folder: Path, files: dict[str, Any]) -> Path:
    for name, content in files.items():
        if isinstance(content, bytes):
            (folder / name).write_bytes(content)
        else:
            (folder / name).write_text(content if isinstance(content, str) else json.dumps(content))
    return folder


def test_the_exported_folder_has_no_blocker_and_no_error(files, tmp_path):
    findings = check(_write(tmp_path, files))
    assert [str(f) for f in findings if f.severity in ("blocker", "error")] == []


def test_the_committed_folder_is_the_export_and_passes(files):
    committed = Path(__file__).parents[2] / "connectors" / "openapi" / "powerautomate"
    assert sorted(path.name for path in committed.iterdir()) == sorted(files)
    assert check(committed) == []


def _swagger(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def apply(folder: dict[str, Any]) -> None:
        document = json.loads(folder["apiDefinition.swagger.json"])
        change(document)
        folder["apiDefinition.swagger.json"] = json.dumps(document)

    return apply


def _properties(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def apply(folder: dict[str, Any]) -> None:
        document = json.loads(folder["apiProperties.json"])
        change(document)
        folder["apiProperties.json"] = json.dumps(document)

    return apply


def _trigger(document: dict[str, Any]) -> dict[str, Any]:
    return document["paths"]["/api/v1/webhooks"]["post"]


def _path_param(document: dict[str, Any]) -> dict[str, Any]:
    return document["paths"]["/api/v1/entities/{entityKey}"]["get"]["parameters"][0]


def _drop_location(document: dict[str, Any]) -> None:
    del _trigger(document)["responses"]["201"]["headers"]["Location"]


def _tiny_icon(folder: dict[str, Any]) -> None:
    data = folder["icon.png"]
    folder["icon.png"] = data[:16] + (10).to_bytes(4, "big") * 2 + data[24:]


CASES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    (
        "long title",
        _swagger(lambda d: d["info"].update(title="Practice-management Partner API")),
        "info/title",
    ),
    ("API in title", _swagger(lambda d: d["info"].update(title="Practiceflow API")), "info/title"),
    (
        "no metadata",
        _swagger(lambda d: d.pop("x-ms-connector-metadata")),
        "x-ms-connector-metadata",
    ),
    (
        "bad category",
        _swagger(lambda d: d["x-ms-connector-metadata"][2].update(propertyValue="Stuff")),
        "x-ms-connector-metadata",
    ),
    ("placeholder host", _swagger(lambda d: d.update(host="{base_url_anz}")), "host"),
    (
        "snake operationId",
        _swagger(lambda d: _trigger(d).update(operationId="on_event")),
        "operationId",
    ),
    (
        "summary period",
        _swagger(lambda d: _trigger(d).update(summary="When an event occurs.")),
        "summary",
    ),
    ("no x-ms-summary", _swagger(lambda d: _path_param(d).pop("x-ms-summary")), "x-ms-summary"),
    (
        "no url encoding",
        _swagger(lambda d: _path_param(d).pop("x-ms-url-encoding")),
        "x-ms-url-encoding",
    ),
    (
        "no notification content",
        _swagger(lambda d: d["paths"]["/api/v1/webhooks"].pop("x-ms-notification-content")),
        "x-ms-notification-content",
    ),
    ("no Location", _swagger(_drop_location), "Location"),
    (
        "dangling dynamic values",
        _swagger(
            lambda d: d["definitions"]["create_lead_request"]["properties"]["leadSource"][
                "x-ms-dynamic-values"
            ].update(operationId="Nope")
        ),
        "names no operation",
    ),
    (
        "default brand colour",
        _properties(lambda d: d["properties"].update(iconBrandColor="#007ee5")),
        "iconBrandColor",
    ),
    (
        "no host policy",
        _properties(lambda d: d["properties"].update(policyTemplateInstances=[])),
        "dynamichosturl",
    ),
    (
        "undeclared host parameter",
        _properties(lambda d: d["properties"]["connectionParameters"].pop("host")),
        "undeclared",
    ),
    ("tiny icon", _tiny_icon, "icon.png"),
    (
        "no README section",
        lambda f: f.update({"README.md": "# Practiceflow\n"}),
        "Obtaining Credentials",
    ),
]


@pytest.mark.parametrize(("case", "change", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_checker_catches_each_broken_rule(files, tmp_path, case, change, expected):
    folder = copy.deepcopy(files)
    change(folder)
    findings = [str(f) for f in check(_write(tmp_path, folder)) if f.severity != "warning"]
    assert any(expected in finding for finding in findings), (case, findings)


def test_the_icon_is_the_brand_colour_behind_a_white_mark(files):
    data = files["icon.png"]
    assert isinstance(data, bytes)
    width = int.from_bytes(data[16:20], "big")
    start = data.index(b"IDAT") + 4
    length = int.from_bytes(data[start - 8 : start - 4], "big")
    pixels = zlib.decompress(data[start : start + length])
    properties = json.loads(files["apiProperties.json"])
    colour = properties["properties"]["iconBrandColor"]
    assert pixels[1:4].hex() == colour.removeprefix("#")  # top-left corner
    middle = (width // 2) * (1 + 3 * width) + 1 + 3 * (width // 2 - 20)
    assert pixels[middle : middle + 3] == b"\xff\xff\xff"


def test_choices_become_dynamic_values_of_the_list_operations(files):
    swagger = json.loads(files["apiDefinition.swagger.json"])
    lead = swagger["definitions"]["create_lead_request"]["properties"]
    assert lead["leadSource"]["x-ms-dynamic-values"] == {
        "operationId": "ListLeadSources",
        "value-path": "name",
        "value-title": "name",
    }
    assert lead["entityType"]["x-ms-dynamic-values"]["operationId"] == "ListEntityTypes"
    eform = swagger["definitions"]["send_eform_request"]["properties"]["templateId"]
    assert eform["x-ms-dynamic-values"]["value-path"] == "formTemplateId"
    assert (
        swagger["paths"]["/api/v1/settings/lead-sources"]["get"]["operationId"] == "ListLeadSources"
    )


def test_downloads_answer_binary_files(files):
    swagger = json.loads(files["apiDefinition.swagger.json"])
    pdf = swagger["paths"]["/api/v1/bills/{billingID}/pdf"]["get"]
    assert pdf["produces"] == ["application/pdf"]
    assert pdf["responses"]["200"]["schema"] == {"type": "string", "format": "binary"}
