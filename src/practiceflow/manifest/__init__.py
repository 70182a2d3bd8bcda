"""Declarative modules: loading and checking actions, triggers, recipes and the connector.

The formats are defined once, by the JSON Schemas in ``manifests/``. Every loader raises one
ManifestError with all the issues of a file, each ``file:line:column json.path: message``.
"""

from __future__ import annotations

from practiceflow.manifest.loader import (
    load_action,
    load_connector,
    load_module,
    load_recipe,
    load_trigger,
)
from practiceflow.manifest.models import (
    ActionModule,
    Module,
    OutputSpec,
    Recipe,
    RecipeStep,
    RequestSpec,
    TriggerModule,
)
from practiceflow.manifest.module_registry import (
    ModuleRegistry,
    default_registry,
    discover,
    load_modules,
)

__all__ = [
    "ActionModule",
    "Module",
    "ModuleRegistry",
    "OutputSpec",
    "Recipe",
    "RecipeStep",
    "RequestSpec",
    "TriggerModule",
    "default_registry",
    "discover",
    "load_action",
    "load_connector",
    "load_module",
    "load_modules",
    "load_recipe",
    "load_trigger",
]
