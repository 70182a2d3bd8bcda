"""Declarative modules: loading and checking actions, triggers, recipes and the connector.

This package owns the file formats whose one definition is the JSON Schemas in
``manifests/`` (``action``, ``trigger``, ``recipe``, ``connector``):

* :mod:`.yamlpos`: safe YAML with line and column for every value (no aliases, size caps);
* :mod:`.validation`: schema validation whose errors say where, what and "did you mean";
* :mod:`.lint`: load-time checks a schema cannot express;
* :mod:`.loader`: :func:`load_action`, :func:`load_trigger`, :func:`load_module`,
  :func:`load_recipe`, :func:`load_connector`;
* :mod:`.module_registry`: discovery of shipped and ``--modules DIR`` modules
  (:func:`load_modules`);
* :mod:`.models`: the loaded forms the engine runs.

Every loader raises one :class:`~practiceflow.errors.ManifestError` with all the issues of a
file, each as ``file:line:column json.path: message``.
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
