"""The OpenAPI 3.1 document of the actions (``openapi.json``), one operation per action.

Parameters and body come from the request templates and input schema, the 2xx response from
the output schema, errors as problem details, ``$defs`` hoisted into ``components/schemas``; a
list is one request paged by the caller (connectors/README.md, "Lists on the OpenAPI platforms").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from practiceflow import __version__
from practiceflow.api.paging import DEFAULT_PAGE_SIZE, MAX_PAGE_NUMBER, MAX_PAGE_SIZE
from practiceflow.errors import ManifestError
from practiceflow.export.descriptions import export_description
from practiceflow.export.expression_tree import LEAF, action_plan, file_media_type
from practiceflow.export.schemas import portable_types, rewrite_refs
from practiceflow.manifest.models import ActionModule
from practiceflow.manifest.module_registry import ModuleRegistry

_PROBLEM = {
    "type": "object",
    "description": "Problem details (spec section 7); 400 and 404 bodies also carry message.",
    "additionalProperties": True,
    "properties": {
        name: {"type": ["integer" if name == "status" else "string", "null"]}
        for name in ("type", "title", "status", "detail", "instance", "message")
    },
}
_ALWAYS = {"400": "Validation failure.", "401": "Missing, wrong or inactive credentials.",
           "429": "Rate limit exceeded.", "500": "Internal server error."}  # fmt: skip
_STATUS_TEXT = {"403": "Read-only API client on a write route.",
                "404": "Not found in the practice."}  # fmt: skip


def _direct_ref(node: Any, root: str) -> tuple[str, bool] | None:
    """``(field, has_default)`` when a leaf is ``{{ root.field }}`` (maybe ``| default``)."""
    if not isinstance(node, Mapping) or set(node) != {LEAF}:
        return None
    expr = node[LEAF]
    has_default = "default" in expr
    if has_default:
        expr = expr["default"][0]
    if "filter" in expr and expr["filter"][0] == "pathseg":
        expr = expr["filter"][1]
    ref = expr.get("ref")
    if isinstance(ref, list) and len(ref) == 2 and ref[0] == root and isinstance(ref[1], str):
        return ref[1], has_default
    return None


def _path(plan_path: Any) -> tuple[str, list[str]]:
    """OpenAPI path template and its parameter names, from the action's path plan."""
    if isinstance(plan_path, str):
        return plan_path, []
    expr = plan_path[LEAF]
    parts = list(expr.get("concat", [expr]))
    text, names = "", []
    while parts:
        part = parts.pop(0)
        then = _optional_segment(part)
        if then is not None:
            # A segment sent only when its field is given: OpenAPI has no optional path
            # part, so the operation takes the fuller path and the field becomes required.
            parts[:0] = then
            continue
        if "const" in part:
            text += str(part["const"])
            continue
        found = _direct_ref({LEAF: part}, "input")
        if found is None:
            raise ValueError(f"path part {part!r} is not a plain input field")
        text += "{" + found[0] + "}"
        names.append(found[0])
    return text, names


def _optional_segment(part: Any) -> list[Any] | None:
    """The parts of ``{% if input.X is defined %}...{% endif %}`` (nothing in its else)."""
    branches = part.get("if") if isinstance(part, Mapping) else None
    if not isinstance(branches, list) or len(branches) != 3:
        return None
    test, then, otherwise = branches
    if not (isinstance(test, Mapping) and test.get("test", [None])[0] == "defined"):
        return None
    if otherwise != {"concat": []} or not isinstance(then, Mapping):
        return None
    return list(then.get("concat", [then]))


class _Builder:
    """Collects component schemas while the operations are built."""

    def __init__(self, connector: Mapping[str, Any], modules: ModuleRegistry) -> None:
        self.connector = connector
        self.choice_fields = choice_fields(modules)
        self.schemas: dict[str, Any] = {"Problem": _PROBLEM}

    def hoist(self, prefix: str, schema: Mapping[str, Any]) -> dict[str, Any]:
        """Move ``$defs`` into components (named ``prefix_def``) and rewrite the refs."""
        defs = schema.get("$defs") or {}
        mapping = {f"#/$defs/{name}": f"#/components/schemas/{prefix}_{name}" for name in defs}
        for name, sub in defs.items():
            self.schemas[f"{prefix}_{name}"] = rewrite_refs(sub, mapping)
        body = {key: value for key, value in schema.items() if key != "$defs"}
        return rewrite_refs(body, mapping)  # type: ignore[no-any-return]

    def request_parts(self, action: ActionModule) -> tuple[str, list[Any], Any, set[str]]:
        """Path, parameters, request body and the input fields they carry, of one action."""
        plan = action_plan(action)
        schema = self.hoist(f"{action.key}_input", action.input_schema)
        properties: Mapping[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", ()))
        path, path_names = _path(plan["path"])
        parameters = [_parameter(name, "path", True, properties, name) for name in path_names]
        carried = set(path_names)
        query = plan["query"] or {}
        if LEAF in query:
            query = _spread_query(query, properties, path_names)
        for name, leaf in sorted(query.items()):
            found = _direct_ref(leaf, "input")
            source = found[0] if found else name
            carried.add(source)
            needed = bool(found and source in required and not found[1])
            parameters.append(_parameter(name, "query", needed, properties, source))
        shape = list_shape(action, self.connector)
        if shape is not None:
            taken = {parameter["name"] for parameter in parameters}
            parameters.extend(
                parameter
                for parameter in page_parameters(shape, self.connector)
                if parameter["name"] not in taken
            )
        body = None
        if plan["body"] is not None:
            name = f"{action.key}_request"
            self.schemas[name], fields = _body_schema(plan["body"], schema, path_names)
            body = {"required": True, "content": {"application/json": {"schema": _ref(name)}}}
            carried |= fields
        return path, parameters, body, carried

    def response_parts(self, action: ActionModule) -> tuple[str, dict[str, Any]]:
        """Component name of the response body schema, and response headers."""
        output = self.hoist(f"{action.key}_output", action.output.schema)
        mapping = action.output.map
        headers: dict[str, Any] = {}
        shape = list_shape(action, self.connector)
        if shape is not None:
            # One page of the API's answer (the action itself would turn every page into
            # {items, count, hasMore}): its rows typed by the module's row schema.
            fields = self.choice_fields.get(action.key, {})
            self.schemas[f"{action.key}_row"] = with_fields(row_schema(output), fields)
            output = {"anyOf": response_alternatives(shape, _ref(f"{action.key}_row"))}
        elif mapping is not None:
            plan = action_plan(action)["map"]
            properties = {}
            required = []
            for name, sub in output.get("properties", {}).items():
                leaf = plan.get(name) if isinstance(plan, Mapping) else None
                from_body = _direct_ref(leaf, "response")
                from_header = _direct_ref(leaf, "headers")
                if from_body and from_body[0] == name:
                    properties[name] = sub
                    if name in output.get("required", ()) and not from_body[1]:
                        required.append(name)
                elif from_header:
                    header = from_header[0].title()
                    headers[header] = {"description": sub.get("description", name),
                                       "schema": {"type": "string"}}  # fmt: skip
            output = {
                "type": "object",
                "additionalProperties": True,
                "properties": properties,
            } | ({"required": required} if required else {})
        name = f"{action.key}_response"
        self.schemas[name] = output
        return name, headers


def _body_schema(tree: Any, schema: Mapping[str, Any], taken: list[str]) -> tuple[Any, set[str]]:
    """The schema of an action's request body, and the input fields it carries."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", ()))
    whole = _whole_input(tree)
    if whole is not None:
        # The body is the input (less what the path and omit() took): those fields only.
        dropped = set(taken) | whole
        kept = {name: sub for name, sub in properties.items() if name not in dropped}
        schema = {
            key: value
            for key, value in schema.items()
            if key not in ("properties", "required", "anyOf", "oneOf", "allOf")
        } | {"properties": kept}
        needed = sorted(name for name in required if name in kept)
        if needed:
            schema["required"] = needed
        return schema, set(kept)
    field = _direct_ref(tree, "input") if isinstance(tree, Mapping) and LEAF in tree else None
    if field is not None and field[0] in properties:
        # The body is one input field (such as {{ input.contact }}): its schema.
        return properties[field[0]], {field[0]}
    direct = {key: _direct_ref(leaf, "input") for key, leaf in tree.items()}
    carried = set(properties)
    if isinstance(tree, Mapping) and all(direct.values()):
        carried = {ref[0] for ref in direct.values() if ref}
        body_props = {key: properties[ref[0]] for key, ref in direct.items() if ref}
        body: dict[str, Any] = {
            "type": "object",
            "additionalProperties": bool(schema.get("additionalProperties", True)),
            "properties": body_props,
        }
        needed = sorted(k for k, ref in direct.items() if ref and ref[0] in required and not ref[1])
        if needed:
            body["required"] = needed
        same = all(ref and ref[0] == key for key, ref in direct.items())
        for keyword in ("anyOf", "oneOf", "allOf", "dependentRequired"):
            if same and keyword in schema:
                body[keyword] = schema[keyword]
    else:
        body = dict(schema)
    return body, carried


def _whole_input(tree: Any) -> set[str] | None:
    """For a body of ``{{ input }}`` or ``{{ input | omit(...) }}``: the omitted names."""
    if not isinstance(tree, Mapping) or set(tree) != {LEAF}:
        return None
    expr = tree[LEAF]
    if expr == {"ref": ["input"]}:
        return set()
    if "filter" in expr and expr["filter"][0] == "omit" and expr["filter"][1] == {"ref": ["input"]}:
        return {str(arg.get("const")) for arg in expr["filter"][2:]}
    return None


def _spread_query(leaf: Any, properties: Mapping[str, Any], taken: list[str]) -> dict[str, Any]:
    """``{{ input | omit(...) }}`` as the whole query: one parameter per remaining field."""
    omitted = _whole_input(leaf)
    if omitted is None or leaf[LEAF] == {"ref": ["input"]}:
        raise ValueError("the query is one template that is not input | omit(...)")
    dropped = omitted | set(taken)
    return {name: {LEAF: {"ref": ["input", name]}} for name in properties if name not in dropped}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _parameter(
    name: str, where: str, required: bool, properties: Mapping[str, Any], field: str
) -> dict[str, Any]:
    """A path or query parameter carrying the input ``field``, described by its schema."""
    sub: Mapping[str, Any] = properties.get(field, {"type": "string"})
    schema = {key: value for key, value in sub.items() if key not in ("title", "description")}
    parameter = {"name": name, "in": where, "required": required, "schema": schema}
    text = sub.get("description") or sub.get("title")
    return parameter | {"description": text} if text else parameter


def _error_codes(action: ActionModule, has_params: bool) -> dict[str, str]:
    codes = dict(_ALWAYS)
    if has_params:
        codes["404"] = _STATUS_TEXT["404"]
    if action.needs_write:
        codes["403"] = _STATUS_TEXT["403"]
    codes.update((str(status), advice) for status, advice in action.errors.items())
    return dict(sorted(codes.items()))


def openapi_document(modules: ModuleRegistry, connector: Mapping[str, Any]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of every action."""
    builder = _Builder(connector, modules)
    paths: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    for action in sorted(modules.actions.values(), key=lambda item: item.key):
        download = action.extensions.download is not None
        try:
            path, parameters, body, carried = builder.request_parts(action)
            response, headers = ("", {}) if download else builder.response_parts(action)
        except (ValueError, ManifestError) as exc:
            error = exc.issues[0] if isinstance(exc, ManifestError) else exc
            skipped[f"actions/{action.key}"] = str(error)
            continue
        method = action.request.method.lower()
        if method in paths.get(path, {}):
            other = paths[path][method]["operationId"]
            skipped[f"actions/{action.key}"] = f"same method and path as {other}: {path}"
            continue
        responses: dict[str, Any] = {}
        # A download answers the file itself (the module's own saving to disk stays local).
        content = (
            {file_media_type(action): {"schema": {"type": "string", "format": "binary"}}}
            if download
            else {"application/json": {"schema": _ref(response)}}
        )
        posted = action.request.method == "POST" and not download
        for code in ["200", "201"] if posted else ["200"]:
            responses[code] = {
                "description": f"{action.title}: the {'file' if download else 'result'}.",
                "content": content,
            } | ({"headers": headers} if headers else {})
        for code, text in _error_codes(action, bool(parameters)).items():
            responses[code] = {
                "description": text,
                "content": {"application/problem+json": {"schema": _ref("Problem")}},
            }
        shape = list_shape(action, connector)
        missing = set(action.input_schema.get("properties", {})) - carried
        notes = [paging_note(shape)] if shape is not None else []
        if download:
            notes.append("The answer is the file itself.")
        operation: dict[str, Any] = {
            "operationId": action.key,
            "summary": action.title,
            "description": export_description(action.description, action.title, missing, notes),
            "tags": [action.noun],
            "responses": responses,
            "x-practiceflow-needs-write": action.needs_write,
        }
        if parameters:
            operation["parameters"] = parameters
        if body:
            operation["requestBody"] = body
        paths.setdefault(path, {})[method] = operation
    header = connector["auth"]["methods"]["header"]
    regions = sorted(connector["regions"].items())
    names = ", ".join(f"{key}: {region['base_url']}" for key, region in regions)
    api_key = {"type": "apiKey", "in": "header"}
    document = {
        "openapi": "3.1.0",
        "info": {
            "title": connector["title"],
            "version": __version__,
            "description": " ".join(str(connector.get("description", "")).split()),
            "x-practiceflow-skipped": skipped,
        },
        "servers": [
            {
                "url": "{baseUrl}",
                "description": "The practice's regional base URL; the API names them "
                f"({names}) without publishing the hosts.",
                "variables": {"baseUrl": {"default": "https://api.example.invalid"}},
            }
        ],
        # Basic first: an importer that keeps one scheme of the first requirement (Postman)
        # then still sends both halves of the credential; the header pair is the other
        # way, its two schemes AND-ed in one requirement (spec 5: never mixed with Basic).
        "security": [{"basic": []}, {"clientId": [], "clientSecret": []}],
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": dict(sorted(builder.schemas.items())),
            "securitySchemes": {
                "clientId": api_key
                | {
                    "name": header["client_id_header"],
                    "description": "The Client ID; always sent with clientSecret.",
                },
                "clientSecret": api_key
                | {
                    "name": header["client_secret_header"],
                    "description": "The Client secret; always sent with clientId.",
                },
                "basic": {
                    "type": "http",
                    "scheme": "basic",
                    "description": "Client ID as the user name, Client secret as the password.",
                },
            },
        },
    }
    return portable_types(document)  # type: ignore[no-any-return]


#: Where the rows sit in an enveloped list answer.
ENVELOPE_ITEMS = "items"


@dataclass(frozen=True)
class ListShape:
    """How one list operation pages, and the answer it most likely gives."""

    paged: bool
    page_size: bool
    shape: Literal["array", "envelope"]


def list_shape(action: ActionModule, connector: Mapping[str, Any]) -> ListShape | None:
    """The paging and answer shape of a list action (None for any other action)."""
    spec = action.extensions.list
    if spec is None:
        return None
    fixed = set(connector.get("paging", {}).get("fixed_size", ()))
    page_size = spec.paged and action.request.path not in fixed
    return ListShape(spec.paged, page_size, "envelope" if page_size else "array")


def page_parameters(shape: ListShape, connector: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The query parameters that choose a page (none when the list is not paged)."""
    if not shape.paged:
        return []
    paging = connector.get("paging", {})

    def integer(name: str, text: str, low: int, high: int, default: int) -> dict[str, Any]:
        schema = {"type": "integer", "minimum": low, "maximum": high, "default": default}
        head = {"name": name, "in": "query", "required": False, "description": text}
        return head | {"schema": schema}

    number = integer(
        paging.get("page_param", "pageNumber"),
        "The page to read, 1-based; ask for the next page while the answer says hasMore, or "
        "while a page is full.",
        int(paging.get("page_min", 1)),
        int(paging.get("page_max", MAX_PAGE_NUMBER)),
        1,
    )
    if not shape.page_size:
        return [number]
    size = integer(
        paging.get("size_param", "pageSize"),
        "Rows per page, where the list supports it (a list that does not answers its own "
        "page size).",
        1,
        int(paging.get("size_max", MAX_PAGE_SIZE)),
        int(paging.get("size_default", DEFAULT_PAGE_SIZE)),
    )
    return [number, size]


def row_schema(output: Mapping[str, Any]) -> Any:
    """The schema of one row of a list action's answer (an open object when unsaid)."""
    items = output.get("properties", {}).get("items", {})
    rows = items.get("items") if isinstance(items, Mapping) else None
    if isinstance(rows, Mapping) and rows:
        return dict(rows)
    return {"type": "object", "additionalProperties": True}


def choice_fields(registry: ModuleRegistry) -> dict[str, dict[str, Any]]:
    """List action key -> the row fields the modules' choices name -> a schema saying so."""
    found: dict[str, dict[str, Any]] = {}
    for module in sorted(registry, key=lambda item: item.key):
        for source in module.choices.values():
            for name in (source.value, source.label, *source.also):
                if name:
                    text = f"The row field {module.key}'s choices read."
                    found.setdefault(source.action, {}).setdefault(name, {"description": text})
    return found


def with_fields(row: Any, fields: Mapping[str, Any]) -> Any:
    """A row schema with ``fields`` added to its properties (those it already has win)."""
    if not fields or not isinstance(row, Mapping):
        return row
    properties = {**fields, **dict(row.get("properties") or {})}
    return {**row, "properties": dict(sorted(properties.items()))}


def response_alternatives(shape: ListShape, row_ref: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The answer of one page: a bare array of rows and the envelope, the likely first."""
    array = {"type": "array", "items": dict(row_ref)}
    envelope = {
        "type": "object",
        "additionalProperties": True,
        "properties": {
            ENVELOPE_ITEMS: {
                "type": "array",
                "items": dict(row_ref),
                "description": "The rows of this page.",
            },
            "hasMore": {
                "type": "boolean",
                "description": "True when another page follows; read pageNumber + 1.",
            },
            "pageNumber": {"type": "integer", "description": "This page's number."},
            "pageSize": {"type": "integer", "description": "Rows per page."},
            "totalCount": {"type": "integer", "description": "Rows in the whole list."},
        },
    }
    return [envelope, array] if shape.shape == "envelope" else [array, envelope]


def paging_note(shape: ListShape) -> str:
    """A sentence for the operation's description saying how to read every page."""
    if not shape.paged:
        return "The whole list comes in one answer."
    size = "; pageSize sets the rows per page (1 to 100)" if shape.page_size else ""
    return (
        f"One page per call: pageNumber picks the page (1-based){size}. To read the whole "
        "list, ask for the next page while the answer's hasMore is true, or, where the answer "
        "has no hasMore, until a page holds fewer rows than the first or repeats the page "
        "before (a service that ignores pageNumber answers every page alike)."
    )
