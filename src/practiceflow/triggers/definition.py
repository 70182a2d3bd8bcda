"""A loaded trigger module turned into what the engine runs: webhook and poll specs
(fields: docs/modules-guide.md, "Triggers"). Bodies and rows have shapes the spec does not
show: an event keeps the whole body or row, and a template that fails on an odd body falls
back to the body and the delivery id, never losing the delivery.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Final, Literal

from practiceflow.errors import ConfigError, PracticeflowError
from practiceflow.hooks.tolerant import any_case
from practiceflow.hooks.tolerant import parse_time as parse_time
from practiceflow.manifest import TriggerModule, load_trigger
from practiceflow.manifest.resources import data_dir
from practiceflow.templating import CompiledTemplate, render_tree, utcnow

logger = logging.getLogger("practiceflow.triggers")

#: Prefix of the dedupe key of a delivery whose module gives no ``webhook.id``.
DELIVERY_PREFIX: Final = "delivery:"

CursorKind = Literal["lastUpdated", "date_range", "none"]


def _render(template: Any, context: Mapping[str, Any]) -> Any:
    return template.render(context) if isinstance(template, CompiledTemplate) else template


@dataclass(frozen=True)
class WebhookSpec:
    """The module's ``webhook`` section: ``map`` reads ``body``, ``data``, ``headers`` and
    ``input`` (``None``: the body); ``id`` the cross-source dedupe key (``None``: delivery id)."""

    event: CompiledTemplate | str
    map: Any
    passthrough: bool
    id: CompiledTemplate | None

    def event_key(self, options: Mapping[str, Any]) -> str:
        """The event key to subscribe to, rendered with the trigger's options."""
        value = _render(self.event, {"input": options, "now": utcnow()})
        if not isinstance(value, str) or "." not in value:
            message = (
                f"webhook.event: got {value!r}; expected an event key such as "
                "'proposal.accepted' (see GET /api/v1/webhooks/events)"
            )
            raise ConfigError(message)
        return value

    def to_event(
        self,
        body: Any,
        headers: Mapping[str, str],
        options: Mapping[str, Any],
        delivery_id: str,
    ) -> tuple[str, Any]:
        """``(dedupe_key, event)`` of a verified delivery; never raises: on a template
        failure the body is the event and the delivery id the key (logged, body left out)."""
        # Senders wrap the record in ``data`` or send it bare: templates read it as ``data``.
        inner = body.get("data") if isinstance(body, dict) else None
        context = {
            "body": body,
            "data": any_case(inner if isinstance(inner, dict) else body),
            "headers": dict(headers),
            "input": options,
            "now": utcnow(),
        }
        key = DELIVERY_PREFIX + delivery_id
        if self.id is not None:
            try:
                rendered = self.id.render(context)
            except PracticeflowError as exc:
                logger.warning("webhook.id did not render, using the delivery id: %s", exc)
            else:
                if isinstance(rendered, str | int) and str(rendered).strip():
                    key = str(rendered)
        try:
            data = map_record(self.map, self.passthrough, body, context)
        except PracticeflowError as exc:
            logger.warning("webhook.map did not render, keeping the body: %s", exc)
            data = body if isinstance(body, dict) else {"body": body}
        return key, data


@dataclass(frozen=True)
class KnownKeys:
    """Keys remembered across polls (``poll.known``): ``key`` and ``when`` are templates
    over ``item``; ``fire`` is ``unknown`` (new records) or ``known`` (seen before)."""

    key: CompiledTemplate | str
    when: CompiledTemplate | None
    fire: Literal["unknown", "known"]


@dataclass(frozen=True)
class SweepSource:
    """How a downtime is proven complete when the poll needs an input (``poll.sweep``):
    the list at ``path`` gives every value of input ``each`` in its rows' ``field``."""

    each: str
    path: str
    field: str
    changed: str | None
    when: tuple[str, ...]

    def event_time(self, row: Any) -> datetime | None:
        """When the event of a poll row happened (the first field present), or None."""
        found = [row.get(name) for name in self.when] if isinstance(row, Mapping) else []
        return next((parse_time(str(value)) for value in found if value), None)


@dataclass(frozen=True)
class PollSpec:
    """How a trigger receives by polling a list endpoint (the module's ``poll`` section;
    templates read ``item`` and ``input``, ``map`` ``None`` means the row itself)."""

    path: CompiledTemplate | str
    params: Any
    items: str | None
    cursor: CursorKind
    cursor_param: str
    cursor_field: str | None
    start_param: str
    end_param: str
    lookback_days: int
    dedupe: CompiledTemplate | str
    filters: Mapping[str, Any]
    map: Any
    passthrough: bool
    page_size: int | None
    known: KnownKeys | None
    sweep: SweepSource | None = None

    def request(self, options: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """The path and fixed query of a poll, rendered with the trigger's options
        (TemplateError: an option they need is missing)."""
        context = {"input": options, "now": utcnow()}
        path = str(_render(self.path, context))
        params = render_tree(self.params, context) if self.params else {}
        return path, dict(params)

    def context(self, row: Any, options: Mapping[str, Any]) -> dict[str, Any]:
        """The names a row's templates read."""
        return {"item": any_case(row), "input": options, "now": utcnow()}

    def dedupe_key(self, context: Mapping[str, Any]) -> str | None:
        """The row's dedupe key, or ``None`` when it renders empty."""
        value = _render(self.dedupe, context)
        return None if value is None or str(value).strip() == "" else str(value)

    def passes(self, context: Mapping[str, Any]) -> bool:
        """Whether every filter is true for the row."""
        return all(bool(_render(test, context)) for test in self.filters.values())

    def to_event(self, row: Any, context: Mapping[str, Any]) -> Any:
        """Map a row to the event."""
        return map_record(self.map, self.passthrough, row, context)

    def known_key(self, context: Mapping[str, Any]) -> tuple[str | None, bool]:
        """``(key, remember)`` of a row under ``known``; ``(None, False)`` without it."""
        if self.known is None:
            return None, False
        key = _render(self.known.key, context)
        remember = True if self.known.when is None else bool(self.known.when.render(context))
        return (None if key is None else str(key)), remember


def map_record(tree: Any, passthrough: bool, record: Any, context: Mapping[str, Any]) -> Any:
    """Render a ``map`` (``None``: the record is the event) over a body or row, copying
    the record's unnamed fields with ``passthrough``."""
    if tree is None:
        return record
    mapped = render_tree(tree, context)
    if passthrough and isinstance(mapped, dict) and isinstance(record, dict):
        return {**{k: v for k, v in record.items() if k not in mapped}, **mapped}
    if passthrough and isinstance(mapped, dict) and record is not None:
        # A body that is not an object is kept whole rather than dropped.
        return {"body": record, **mapped}
    return mapped


@dataclass(frozen=True)
class TriggerDefinition:
    """A trigger module ready to run: its webhook and poll specs (``None``: cannot)."""

    module: TriggerModule
    webhook: WebhookSpec | None
    poll: PollSpec | None

    @property
    def key(self) -> str:
        """The module's key."""
        return self.module.key

    def polled(self) -> PollSpec:
        """The poll spec; ConfigError (saying why) when the trigger cannot be polled."""
        if self.poll is None:
            raise ConfigError(f"trigger {self.key!r} cannot be polled: {self.module.description}")
        return self.poll


def _known(section: Mapping[str, Any] | None) -> KnownKeys | None:
    if not section:
        return None
    when = section.get("when")
    return KnownKeys(
        key=section["key"],
        when=when if isinstance(when, CompiledTemplate) else None,
        fire="known" if section["fire"] == "known" else "unknown",
    )


def _sweep(section: Mapping[str, Any] | None) -> SweepSource | None:
    if not section:
        return None
    changed = section.get("changed")
    return SweepSource(
        each=str(section["each"]),
        path=str(section["from"]),
        field=str(section["field"]),
        changed=None if changed is None else str(changed),
        when=tuple(str(name) for name in section["when"]),
    )


def definition(module: TriggerModule) -> TriggerDefinition:
    """Read a loaded trigger module into its webhook and poll specs."""
    webhook = None
    if module.webhook is not None:
        section = module.webhook
        ident = section.get("id")
        webhook = WebhookSpec(
            event=section["event"],
            map=section.get("map"),
            passthrough=bool(section.get("passthrough", False)),
            id=ident if isinstance(ident, CompiledTemplate) else None,
        )
    poll = None
    if module.poll is not None:
        section = module.poll
        cursor = dict(section["cursor"])
        kind: CursorKind = cursor["kind"]
        poll = PollSpec(
            path=section["path"],
            params=section.get("params"),
            items=section.get("items"),
            cursor=kind,
            cursor_param=str(cursor.get("param", "lastUpdated")),
            cursor_field=cursor.get("field", "lastUpdated" if kind == "lastUpdated" else None),
            start_param=str(cursor.get("start_param", "startDate")),
            end_param=str(cursor.get("end_param", "endDate")),
            lookback_days=int(cursor.get("lookback_days", 0)),
            dedupe=section["dedupe"],
            filters=dict(section.get("filters") or {}),
            map=section.get("map"),
            passthrough=bool(section.get("passthrough", False)),
            page_size=section.get("page_size"),
            known=_known(section.get("known")),
            sweep=_sweep(section.get("sweep")),
        )
    return TriggerDefinition(module=module, webhook=webhook, poll=poll)


def shipped_trigger_keys() -> list[str]:
    """Keys of the trigger modules shipped with practiceflow, sorted."""
    entries = data_dir("triggers").iterdir()
    return sorted(entry.name[: -len(".yaml")] for entry in entries if entry.name.endswith(".yaml"))


def load_definition(key_or_path: str | Path) -> TriggerDefinition:
    """Load a shipped trigger by key (``proposal_accepted``), or a module file by path
    (ConfigError listing the valid keys; ManifestError when the file does not load)."""
    text = str(key_or_path)
    if text.endswith((".yaml", ".yml")) or "/" in text:
        return definition(load_trigger(Path(text)))
    entry: Traversable = data_dir("triggers") / f"{text}.yaml"
    if not entry.is_file():
        message = f"trigger: got {text!r}; valid values are {shipped_trigger_keys()}"
        raise ConfigError(message)
    return definition(load_trigger(entry, display=f"triggers/{text}.yaml"))
