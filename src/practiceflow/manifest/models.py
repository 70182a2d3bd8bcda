"""The loaded forms of modules and recipes, built only by the loader (the meta-schemas in
``manifests/`` define each format; these hold what the engine needs)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from jsonschema.protocols import Validator

from practiceflow.manifest.choices import ChoiceSource, FieldPath
from practiceflow.templating import CompiledTemplate, iter_templates

Template = CompiledTemplate | str | None


@dataclass(frozen=True)
class ListSpec:
    """How a list answer becomes ``{items, count, hasMore}``."""

    paged: bool = False
    page_size: int | None = None
    limit: Template = None
    filter: Template = None


@dataclass(frozen=True)
class DownloadSpec:
    """Where a file answer is written."""

    to: Template
    filename: Template = None


@dataclass(frozen=True)
class WarningSpec:
    """One ``warn_if`` entry: when ``when`` renders true, ``message`` is a warning."""

    when: Template
    message: Template


@dataclass(frozen=True)
class Extensions:
    """The optional sections of one action module (all empty for a plain request)."""

    list: ListSpec | None = None
    download: DownloadSpec | None = None
    warn_if: tuple[WarningSpec, ...] = field(default_factory=tuple)

    def __bool__(self) -> bool:
        return self.list is not None or self.download is not None or bool(self.warn_if)


@dataclass(frozen=True)
class RequestSpec:
    """The request an action sends, as compiled template trees."""

    method: str
    path: CompiledTemplate | str
    query: Any = None
    headers: Any = None
    body: Any = None


@dataclass(frozen=True)
class OutputSpec:
    """How a response becomes the action's output."""

    map: Any
    passthrough: bool
    schema: Mapping[str, Any]
    validator: Validator

    @cached_property
    def reads_headers(self) -> bool:
        """Whether ``map`` reads ``headers`` (the engine gathers them only then)."""
        return any("headers" in template.names for template in iter_templates(self.map))


@dataclass(frozen=True)
class ReadBackSpec:
    """How an in-doubt write of the action is looked for (``read_back`` in its YAML)."""

    hook: str
    marker_field: str | None = None
    marker_placement: str = "when_empty"


@dataclass(frozen=True, eq=False)
class ActionModule:
    """A loaded action module (see ``manifests/action.schema.json`` for every field).

    Attributes:
        pii_paths: paths of the input's ``x-pii`` fields (``*``: any index); ``secret_paths``
            and ``output_pii_paths``: the output's ``x-secret`` and ``x-pii`` fields.
        read_back: how an in-doubt write is looked for; None: a person decides.
        text: the YAML text it was built from (a run's version records it).
    """

    key: str
    title: str
    description: str
    noun: str
    kind: str | None
    input_schema: Mapping[str, Any]
    input_validator: Validator
    request: RequestSpec
    output: OutputSpec
    sample: Mapping[str, Any]
    needs_write: bool
    checks: tuple[str, ...]
    hook: str | None
    errors: Mapping[int, str]
    override: bool
    source: str
    pii_paths: frozenset[tuple[str, ...]] = frozenset()
    secret_paths: frozenset[tuple[str, ...]] = frozenset()
    output_pii_paths: frozenset[tuple[str, ...]] = frozenset()
    extensions: Extensions = field(default_factory=Extensions)
    choices: Mapping[FieldPath, ChoiceSource] = field(default_factory=dict)
    read_back: ReadBackSpec | None = None
    text: str = ""

    @property
    def required(self) -> tuple[str, ...]:
        """Names of the required top-level input fields."""
        return tuple(self.input_schema.get("required", ()))

    def example_input(self) -> dict[str, Any]:
        """Build an example input from the first ``examples`` entry of each top-level field."""
        properties: Mapping[str, Any] = self.input_schema.get("properties", {})
        order = list(self.required) + [name for name in properties if name not in self.required]
        example: dict[str, Any] = {}
        for name in order:
            examples = properties.get(name, {}).get("examples")
            if examples:
                example[name] = examples[0]
        return example


@dataclass(frozen=True, eq=False)
class TriggerModule:
    """A loaded trigger module (see ``manifests/trigger.schema.json``); ``input_schema``
    holds its options, ``output_schema`` each event's shape, the rest as in an action."""

    key: str
    title: str
    description: str
    noun: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any]
    output_validator: Validator
    sample: Mapping[str, Any]
    webhook: Mapping[str, Any] | None
    poll: Mapping[str, Any] | None
    override: bool
    source: str
    choices: Mapping[FieldPath, ChoiceSource] = field(default_factory=dict)
    text: str = ""
    output_pii_paths: frozenset[tuple[str, ...]] = frozenset()


Module = ActionModule | TriggerModule


@dataclass(frozen=True)
class RecipeStep:
    """One step of a recipe; later steps read its output as ``steps.<id>``."""

    id: str
    use: str
    with_: Any
    if_: CompiledTemplate | None
    for_each: CompiledTemplate | None
    on_error: str
    retry: Mapping[str, Any] | None


@dataclass(frozen=True)
class Recipe:
    """A loaded recipe (see ``manifests/recipe.schema.json``); ``max_delay``: seconds the
    trigger's events may wait to be seen, or None: the poll interval."""

    name: str
    description: str
    profile: str | None
    trigger: str
    mode: str
    trigger_with: Any
    vars: Mapping[str, Any]
    steps: tuple[RecipeStep, ...]
    source: str
    raw: Mapping[str, Any] = field(default_factory=dict)
    text: str = ""
    max_delay: float | None = None
