"""Dynamic dropdowns for the exporters: each declared choice list (``x-choices``) once.

Every platform turns a declaration into its own mechanism (a hidden Zapier trigger, an n8n
``loadOptions`` method, a Power Automate ``x-ms-dynamic-values``); this module names each
distinct declaration once, validly for every platform.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from practiceflow.manifest.choices import ChoiceSource, options_from_rows
from practiceflow.manifest.models import ActionModule, TriggerModule
from practiceflow.manifest.module_registry import ModuleRegistry


def source_id(source: ChoiceSource) -> str:
    """A declaration's identity (two fields with the same declaration share one list)."""
    return json.dumps(source.as_data(), sort_keys=True)


class ChoiceLists:
    """The distinct choice lists of a set of modules, each with a platform-safe name.

    Names are ``choices_<action>`` and, when one list action serves several declarations,
    ``choices_<action>_by_<value field>`` (plus ``_<n>`` when filters or input differ).
    """

    def __init__(
        self,
        registry: ModuleRegistry,
        modules: Iterable[ActionModule | TriggerModule],
        available: Iterable[str],
    ) -> None:
        """Collect the declarations of ``modules`` (those the export carries) whose list
        action is ``available`` on the platform's export."""
        usable = set(available)
        found: dict[str, ChoiceSource] = {}
        for module in modules:
            for source in module.choices.values():
                if source.action in usable:
                    found.setdefault(source_id(source), source)
        by_action: dict[str, list[str]] = {}
        for ident in sorted(found):
            by_action.setdefault(found[ident].action, []).append(ident)
        self.sources: dict[str, ChoiceSource] = {}
        self.names: dict[str, str] = {}
        for action, idents in sorted(by_action.items()):
            for index, ident in enumerate(idents):
                name = f"choices_{action}"
                if len(idents) > 1:
                    name += f"_by_{found[ident].value or 'value'}"
                if name in self.sources:
                    name += f"_{index + 1}"
                self.names[ident] = name
                self.sources[name] = found[ident]
        self._registry = registry

    def name_of(self, source: ChoiceSource | None) -> str | None:
        """The list's name for a field's declaration; None when it has none on this export."""
        if source is None:
            return None
        return self.names.get(source_id(source))

    def sample(self, name: str) -> list[tuple[Any, str]]:
        """The ``(value, label)`` options the list action's own sample yields."""
        source = self.sources[name]
        sample: Mapping[str, Any] = self._registry.action(source.action).sample
        rows = sample.get("items")
        return options_from_rows(rows if isinstance(rows, list) else [], source)
