"""The cassette file format (docs/modules-guide.md, "Cassettes"): one module's recorded
exchange with the API, a versioned YAML file::

    version: 1
    module: find_clients        # an action or trigger key (kind: action | trigger | recipe)
    kind: action
    preset: default             # the sandbox variant preset it was recorded under
    input: {limit: 120}
    exchanges:
      - request: {method: GET, path: /api/v1/entities, query: {pageNumber: '1'}, body: null}
        response: {status: 200, headers: {Content-Type: application/json}, body: {...}}

Personal values (``x-pii``) and secrets are replaced by :func:`scrub` with same-shaped
tokens derived from a hash, so a re-recording gives the same file.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import yaml

from practiceflow.errors import ConfigError

#: The format version this code reads and writes.
CASSETTE_VERSION: Final = 1

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$")
#: Values shorter than this are never scrubbed (an initial, a two-letter code).
_MIN_SCRUBBED = 3
#: Values shorter than this are scrubbed where they are a whole value, never inside text.
_MIN_INSIDE = 6


@dataclass(frozen=True)
class RecordedRequest:
    """One request as it left the client: the path under the base URL (no region prefix), the
    query as sent (text; a list when a name repeats), the JSON body (``{"text": ...}`` when not
    JSON), and only headers a module set (never credentials or the client's own)."""

    method: str
    path: str
    query: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The request as the cassette file holds it."""
        data = dict(method=self.method, path=self.path, query=dict(self.query), body=self.body)
        if self.headers:
            data["headers"] = dict(self.headers)
        return data


@dataclass(frozen=True)
class RecordedResponse:
    """The answer to one request: status, the headers that change what a client does, and the
    body: JSON (``json``), else a ``{"text": ...}`` or ``{"base64": ...}`` wrapper."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    json: bool = True

    def content(self) -> bytes:
        """The body as bytes on the wire."""
        if self.body is None:
            return b""
        if not self.json:
            if "base64" in self.body:
                return base64.b64decode(self.body["base64"])
            return str(self.body["text"]).encode()
        return json.dumps(self.body).encode()

    def as_dict(self) -> dict[str, Any]:
        """The answer as the cassette file holds it."""
        return {"status": self.status, "headers": dict(self.headers), "body": self.body}


@dataclass(frozen=True)
class Exchange:
    """One request and its answer."""

    request: RecordedRequest
    response: RecordedResponse

    def as_dict(self) -> dict[str, Any]:
        """The exchange as the cassette file holds it."""
        return {"request": self.request.as_dict(), "response": self.response.as_dict()}


@dataclass(frozen=True)
class Cassette:
    """A module's recorded exchange (the module docstring shows the file); ``module`` is a
    recipe's name when ``kind`` is ``recipe`` (a test case's whole run), ``input`` a trigger's
    poll settings, ``source`` the file it was read from (for messages)."""

    module: str
    kind: Literal["action", "trigger", "recipe"]
    preset: str
    input: dict[str, Any]
    exchanges: tuple[Exchange, ...]
    source: str = "<cassette>"

    def as_dict(self) -> dict[str, Any]:
        """The cassette as its file holds it."""
        return {
            "version": CASSETTE_VERSION,
            "module": self.module,
            "kind": self.kind,
            "preset": self.preset,
            "input": self.input,
            "exchanges": [exchange.as_dict() for exchange in self.exchanges],
        }


def _problem(source: str, where: str, message: str) -> ConfigError:
    return ConfigError(f"{source}: {where}: {message}")


def _request(raw: Any, source: str, where: str) -> RecordedRequest:
    if not isinstance(raw, Mapping):
        raise _problem(source, where, f"got {type(raw).__name__}; expected a mapping")
    method, path = raw.get("method"), raw.get("path")
    if not isinstance(method, str) or not isinstance(path, str) or not path.startswith("/"):
        message = f"got method={method!r} path={path!r}; expected a method and a path '/api/...'"
        raise _problem(source, where, message)
    query = raw.get("query") or {}
    headers = raw.get("headers") or {}
    if not isinstance(query, Mapping) or not isinstance(headers, Mapping):
        raise _problem(source, where, "query and headers must be mappings")
    return RecordedRequest(
        method.upper(),
        path,
        {str(k): v for k, v in query.items()},
        raw.get("body"),
        {str(k): str(v) for k, v in headers.items()},
    )


def _response(raw: Any, source: str, where: str) -> RecordedResponse:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("status"), int):
        raise _problem(source, where, "expected a mapping with an integer status")
    headers = raw.get("headers") or {}
    if not isinstance(headers, Mapping):
        raise _problem(source, where + ".headers", "expected a mapping")
    body = raw.get("body")
    wrapped = isinstance(body, Mapping) and set(body) in ({"text"}, {"base64"})
    return RecordedResponse(
        raw["status"], {str(k): str(v) for k, v in headers.items()}, body, json=not wrapped
    )


def load_cassette(path: str | Path) -> Cassette:
    """Read a cassette file.

    Raises:
        ConfigError: the file is not a cassette of a version this code reads (the message
            names the file and the field).
    """
    source = str(path)
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        message = f"{source}: cannot read the cassette: {exc}"
        raise ConfigError(message) from None
    return cassette_from_dict(raw, source)


def cassette_from_dict(raw: Any, source: str = "<cassette>") -> Cassette:
    """Check and read a cassette held as plain data; ConfigError when it is not one."""
    if not isinstance(raw, Mapping):
        raise _problem(source, "(top)", "expected a mapping with version, module, exchanges")
    if raw.get("version") != CASSETTE_VERSION:
        message = f"got {raw.get('version')!r}; expected {CASSETTE_VERSION}"
        raise _problem(source, "version", message)
    kind = raw.get("kind")
    if kind not in ("action", "trigger", "recipe"):
        message = f"got {kind!r}; valid values are action, trigger, recipe"
        raise _problem(source, "kind", message)
    module = raw.get("module")
    if not isinstance(module, str) or not module:
        raise _problem(source, "module", f"got {module!r}; expected a module key")
    exchanges = raw.get("exchanges")
    if not isinstance(exchanges, list):
        raise _problem(source, "exchanges", "expected a list of {request, response}")
    parsed = []
    for index, item in enumerate(exchanges):
        where = f"exchanges[{index}]"
        if not isinstance(item, Mapping):
            raise _problem(source, where, "expected a mapping with request and response")
        parsed.append(
            Exchange(
                _request(item.get("request"), source, where + ".request"),
                _response(item.get("response"), source, where + ".response"),
            )
        )
    data = raw.get("input") or {}
    if not isinstance(data, Mapping):
        raise _problem(source, "input", f"got {type(data).__name__}; expected a mapping")
    preset = str(raw.get("preset", "default"))
    return Cassette(module, kind, preset, dict(data), tuple(parsed), source)


def save_cassette(cassette: Cassette, path: str | Path) -> Path:
    """Write a cassette to ``path`` (the folder is created; keys keep their recorded order);
    returns the path written."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(
        cassette.as_dict(), sort_keys=False, allow_unicode=True, width=100, default_flow_style=False
    )
    target.write_text(text, encoding="utf-8")
    return target


def _token(value: str) -> str:
    """A value's stand-in: same length and shape, drawn from a hash of the lower-cased value."""
    digest = hashlib.sha256(value.lower().encode()).digest()
    scheme, sep, rest = value.partition("://")
    if sep and scheme.isalpha():  # a URL stays a URL of its scheme
        return scheme + sep + _token(rest)
    out = []
    for index, char in enumerate(value):
        byte = digest[index % len(digest)] ^ (index // len(digest))
        if char.isdigit():
            out.append(string.digits[byte % 10])
        elif char.isalpha():
            letter = string.ascii_lowercase[byte % 26]
            out.append(letter.upper() if char.isupper() else letter)
        else:
            out.append(char)
    return "".join(out)


def scrubbable(value: str) -> bool:
    """Whether a personal value is replaced: keys and timestamps are structure, not persons."""
    return len(value) >= _MIN_SCRUBBED and not _UUID.match(value) and not _ISO_TIME.match(value)


def scrub(tree: Any, values: Iterable[str]) -> Any:
    """A scrubbed copy of a JSON-like tree (a cassette's ``as_dict()``), deterministically.

    Each of ``values`` (UUIDs, timestamps and values under three characters are left alone)
    becomes its stable token, in any letter case, where it is a whole string, and inside
    longer text when it has six characters or more; a path is scrubbed segment by segment;
    mapping keys are kept.
    """
    chosen = sorted({v for v in values if isinstance(v, str) and scrubbable(v)}, key=len)[::-1]
    if not chosen:
        return tree
    whole = {value.lower() for value in chosen}
    # Inside longer text only long values (a shorter one would hit words), longest first.
    inside = [value for value in chosen if len(value) >= _MIN_INSIDE]
    pattern = (
        re.compile("|".join(re.escape(value) for value in inside), re.IGNORECASE)
        if inside
        else None
    )

    def text(value: str) -> str:
        if value.lower() in whole:
            return _token(value)
        if pattern is None:
            return value
        return pattern.sub(lambda found: _token(found.group(0)), value)

    def path(value: str) -> str:
        return "/".join(text(part) if part.lower() in whole else part for part in value.split("/"))

    def walk(node: Any, key: Any = None) -> Any:
        if isinstance(node, Mapping):
            return {name: walk(child, name) for name, child in node.items()}
        if isinstance(node, list | tuple):
            return [walk(child) for child in node]
        if isinstance(node, str):
            return path(node) if key == "path" else text(node)
        return node

    return walk(tree)
