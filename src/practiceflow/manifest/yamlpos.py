"""Safe YAML loading that remembers the line and column of every value and key.

Stricter than YAML 1.1, so that a file can neither explode nor surprise: aliases and merge keys
are refused; size, node count and depth are capped, checked first on the (non-recursive) event
stream, with the pure-Python parser as fallback so every PyYAML build answers alike; timestamps
stay strings and mapping keys are always strings.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.events import AliasEvent, CollectionEndEvent, CollectionStartEvent, NodeEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from practiceflow.errors import Issue

#: The limits of one document: nodes, bytes, and nesting of mappings and sequences.
MAX_NODES = 100_000
MAX_BYTES = 2_000_000
MAX_DEPTH = 100

JsonPath = tuple[str | int, ...]


class YamlLoadError(Exception):
    """The text is not a YAML document this loader accepts."""

    def __init__(self, message: str, line: int = 0, column: int = 0) -> None:
        self.message = message
        self.line = line
        self.column = column
        super().__init__(f"{line}:{column} {message}" if line else message)


class _Loader(yaml.SafeLoader):
    """SafeLoader without timestamps and without aliases."""

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]  # PyYAML is untyped here
            message = (
                f"YAML aliases (*{getattr(event, 'anchor', '')}) are not accepted; "
                "write the value out in full"
            )
            raise YamlLoadError(message, *_at(event.start_mark))
        return super().compose_node(parent, index)


# Timestamps stay strings, as they would in JSON.
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


_FastLoader: type[Any] | None = None
if getattr(yaml, "__with_libyaml__", False):  # pragma: no branch - libyaml ships in the wheels

    class _CLoader(yaml.CSafeLoader):
        """libyaml's parser, same resolvers; aliases are caught after composition."""

    _CLoader.yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers
    _FastLoader = _CLoader


class _AliasSeen(Exception):
    """A node was reached twice: the document uses an alias (found by the fast path)."""


@dataclass
class Located:
    """A loaded document and where each of its parts is."""

    data: Any
    positions: dict[JsonPath, tuple[int, int]] = field(default_factory=dict)
    key_positions: dict[JsonPath, tuple[int, int]] = field(default_factory=dict)
    text: str = ""

    def where(self, path: JsonPath, *, key: bool = False) -> tuple[int, int]:
        """Return the best known (line, column) for a path: itself, else its nearest parent."""
        if key and path in self.key_positions:
            return self.key_positions[path]
        probe = path
        while True:
            if probe in self.positions:
                return self.positions[probe]
            if not probe:
                return (0, 0)
            probe = probe[:-1]

    def issue(self, file: str, path: JsonPath, message: str, *, key: bool = False) -> Issue:
        """An issue of this document at a path, located as :meth:`where` finds it."""
        return Issue(file, *self.where(path, key=key), format_path(path), message)


def format_path(path: JsonPath) -> str:
    """Render a JSON path the way error messages show it: ``steps[1].with.templateId``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part.isidentifier() or part.replace("-", "_").isidentifier() or part.isdigit():
            text += f".{part}" if text else part
        else:
            text += f"[{part!r}]"
    return text


def load_yaml(text: str, *, max_bytes: int = MAX_BYTES, max_nodes: int = MAX_NODES) -> Located:
    """Parse one YAML document into plain data plus positions (YamlLoadError, located, on a
    syntax error, an alias, a merge key, an unsupported tag or a document over the limits;
    a fleet file of thousands of practices passes larger limits than a recipe's)."""
    if len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise YamlLoadError(f"document is larger than {max_bytes} bytes")
    try:
        located = _load_checked(text, max_nodes)
    except (RecursionError, MemoryError):
        message = f"document is too deeply nested or too large to read (at most {MAX_DEPTH} levels)"
        raise YamlLoadError(message) from None
    located.text = text
    return located


def _load_checked(text: str, max_nodes: int) -> Located:
    if _FastLoader is not None:
        try:
            _check_shape(text, _FastLoader, max_nodes)
        except yaml.YAMLError:
            pass  # libyaml refused the stream itself: the pure-Python one decides below
        else:
            # libyaml loads the well-formed file; on any problem the pure-Python loader,
            # which locates aliases where they are written, reports it.
            try:
                return _load_with(_FastLoader, text, max_nodes, refuse_shared=True)
            except (_AliasSeen, YamlLoadError, yaml.YAMLError):
                return _load_with(_Loader, text, max_nodes, refuse_shared=False)
    # The pure-Python event stream is not recursive; a syntax error is left to the load, which
    # locates it (the stream reached it within the limits, so composing stays shallow).
    with contextlib.suppress(yaml.YAMLError):
        _check_shape(text, _Loader, max_nodes)
    return _load_with(_Loader, text, max_nodes, refuse_shared=False)


def _check_shape(text: str, loader_class: type[Any], max_nodes: int) -> None:
    """Refuse too deep nesting or too many nodes, before composing."""
    loader: Any = None
    try:
        loader = loader_class(text)
        depth = nodes = 0
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, NodeEvent):
                nodes += 1
                if nodes > max_nodes:
                    message = f"document has more than {max_nodes} nodes"
                    raise YamlLoadError(message, *_at(event.start_mark))
            if isinstance(event, CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    message = f"nesting deeper than {MAX_DEPTH} levels is not accepted"
                    raise YamlLoadError(message, *_at(event.start_mark))
            elif isinstance(event, CollectionEndEvent):
                depth -= 1
    finally:
        if loader is not None:
            loader.dispose()


def _reader_error(text: str, exc: yaml.reader.ReaderError) -> YamlLoadError:
    """A character YAML does not allow (NUL, other control characters), located."""
    line = text.count("\n", 0, exc.position) + 1
    column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
    return YamlLoadError(f"YAML syntax: {exc.reason} (character {exc.character!r})", line, column)


def _load_with(
    loader_class: type[Any], text: str, max_nodes: int, *, refuse_shared: bool
) -> Located:
    try:
        loader = loader_class(text)
    except yaml.reader.ReaderError as exc:  # the reader checks the first chunk at once
        raise _reader_error(text, exc) from None
    try:
        root = loader.get_single_node()
    except YamlLoadError:
        raise
    except yaml.reader.ReaderError as exc:  # ... and later chunks as it reads them
        raise _reader_error(text, exc) from None
    except (ComposerError, yaml.MarkedYAMLError) as exc:
        problem = exc.problem or exc.context or "not valid YAML"
        message = f"YAML syntax: {problem}"
        raise YamlLoadError(message, *_at(exc.problem_mark or exc.context_mark)) from None
    finally:
        loader.dispose()
    located = Located(data=None)
    shared: set[int] | None = set() if refuse_shared else None

    def build(node: Node, path: JsonPath) -> Any:
        if shared is not None:
            if id(node) in shared:
                raise _AliasSeen
            shared.add(id(node))
        if len(located.positions) >= max_nodes:
            raise YamlLoadError(f"document has more than {max_nodes} nodes", *_mark(node))
        located.positions[path] = _mark(node)
        if isinstance(node, MappingNode | SequenceNode) and node.tag not in _PLAIN_TAGS:
            raise YamlLoadError(f"YAML tag {node.tag!r} is not accepted", *_mark(node))
        if isinstance(node, SequenceNode):
            return [build(child, (*path, index)) for index, child in enumerate(node.value)]
        if isinstance(node, MappingNode):
            mapping: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    raise YamlLoadError("YAML merge keys (<<) are not accepted", *_mark(key_node))
                if not isinstance(key_node, ScalarNode):
                    raise YamlLoadError("mapping keys must be plain scalars", *_mark(key_node))
                key = str(key_node.value)
                if key in mapping:
                    raise YamlLoadError(f"duplicate key {key!r}", *_mark(key_node))
                located.key_positions[(*path, key)] = _mark(key_node)
                mapping[key] = build(value_node, (*path, key))
            return mapping
        if isinstance(node, ScalarNode):
            try:
                return loader.construct_object(node)
            except yaml.constructor.ConstructorError as exc:
                problem = exc.problem or "cannot construct this value"
                raise YamlLoadError(f"YAML value: {problem}", *_mark(node)) from None
        raise YamlLoadError(f"unsupported YAML node {node.tag}", *_mark(node))  # pragma: no cover

    located.data = None if root is None else build(root, ())
    return located


_PLAIN_TAGS = frozenset({"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"})


def _at(mark: Any) -> tuple[int, int]:
    return (mark.line + 1, mark.column + 1) if mark else (0, 0)


def _mark(node: Node) -> tuple[int, int]:
    return _at(node.start_mark)
