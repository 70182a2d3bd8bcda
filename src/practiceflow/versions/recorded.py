"""What a run's version is, how it is stored once, and how it is rebuilt: the recipe's text,
its modules' texts and the hooks they need, stored by sha256. Rebuilding reads only the
store; hooks are code, so a version whose hook is gone cannot be rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from practiceflow.errors import ConfigError, ManifestError
from practiceflow.manifest import ActionModule, TriggerModule
from practiceflow.manifest.loader import action_from, trigger_from
from practiceflow.manifest.module_registry import ModuleRegistry
from practiceflow.manifest.yamlpos import YamlLoadError, load_yaml
from practiceflow.runner.validate import ValidRecipe, check_recipe
from practiceflow.state import StateStore

#: Digits of a digest shown to people (``runs list``); any unique prefix selects.
SHORT = 12


def short(digest: str | None) -> str:
    """A digest as people see it (its first 12 digits), or ``-`` for none."""
    return digest[:SHORT] if digest else "-"


def _digest(value: Any) -> str:
    canonical = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class VersionUnavailable(ConfigError):
    """A run's recipe version cannot be rebuilt: not stored, or it needs what this
    practiceflow no longer has (a hook, a local step, a schema it now refuses)."""


@dataclass(frozen=True)
class ModuleVersion:
    """One module as a version holds it: ``action`` or ``trigger``, its key, the file it
    was read from (as shown in messages) and its exact YAML text."""

    kind: str
    key: str
    source: str
    text: str

    @property
    def digest(self) -> str:
        """sha256 of its kind, key and text."""
        return _digest({"kind": self.kind, "key": self.key, "text": self.text})

    @property
    def ref(self) -> str:
        """How the recipe version names it: ``action:create_bill``."""
        return f"{self.kind}:{self.key}"


@dataclass(frozen=True)
class RecipeVersion:
    """A recipe and everything it uses, as it was: its modules by :attr:`ModuleVersion.ref`,
    the hooks and checks and built-in local steps they need; ``file`` is not in the digest."""

    name: str
    file: str
    text: str
    modules: Mapping[str, ModuleVersion]
    hooks: tuple[str, ...] = ()
    local: tuple[str, ...] = ()

    def _body(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "modules": {ref: module.digest for ref, module in sorted(self.modules.items())},
            "hooks": list(self.hooks),
            "local": list(self.local),
        }

    @property
    def digest(self) -> str:
        """sha256 of the text, the modules' digests and the names it needs."""
        return _digest(self._body())

    def content(self) -> dict[str, Any]:
        """What the store keeps under the digest (with the file name, for messages)."""
        return {**self._body(), "name": self.name, "file": self.file}


def recipe_version(recipe: ValidRecipe) -> RecipeVersion | None:
    """The version of a checked recipe, or None when it was not read from text (built in
    code: nothing exact to record, and its runs keep the unversioned behaviour)."""
    text = recipe.recipe.text
    modules: dict[str, ModuleVersion] = {}
    hooks: set[str] = set()
    local: set[str] = set()
    used: list[ActionModule | TriggerModule] = [recipe.trigger]
    for action in recipe.actions.values():
        if isinstance(action, ActionModule):
            used.append(action)
            hooks.update(action.checks)
            if action.hook:
                hooks.add(action.hook)
        else:
            local.add(action.key)
    for module in used:
        kind = "action" if isinstance(module, ActionModule) else "trigger"
        found = ModuleVersion(kind, module.key, module.source, module.text)
        modules[found.ref] = found
    if not text or not all(module.text for module in modules.values()):
        return None
    return RecipeVersion(
        recipe.name, recipe.source, text, modules, tuple(sorted(hooks)), tuple(sorted(local))
    )


def save_version(store: StateStore, version: RecipeVersion) -> str:
    """Store a version and its modules (each once: content-addressed), modules first, so
    that a stored recipe version always finds them. Returns its digest."""
    for module in version.modules.values():
        content = {"source": module.source, "text": module.text}
        store.save_version(module.digest, module.kind, module.key, content)
    digest = version.digest
    store.save_version(digest, "recipe", version.name, version.content())
    _remember(digest, version)
    return digest


def _unavailable(digest: str, why: str) -> VersionUnavailable:
    return VersionUnavailable(f"recipe version {short(digest)} cannot be rebuilt: {why}")


def load_version(store: StateStore, digest: str) -> RecipeVersion:
    """Read a stored recipe version and its modules (VersionUnavailable: not stored)."""
    known = _VERSIONS.get(digest)
    if known is not None:
        return known
    record = store.get_version(digest)
    if record is None or record.kind != "recipe" or not isinstance(record.content, Mapping):
        raise _unavailable(digest, "it is not in the state store")
    content = record.content
    modules: dict[str, ModuleVersion] = {}
    for ref, module_digest in dict(content.get("modules") or {}).items():
        stored = store.get_version(str(module_digest))
        if stored is None or not isinstance(stored.content, Mapping):
            raise _unavailable(digest, f"its module {ref} is not in the state store")
        kind, _, key = str(ref).partition(":")
        body = stored.content
        modules[ref] = ModuleVersion(kind, key, str(body.get("source")), str(body.get("text")))
    version = RecipeVersion(
        str(content.get("name") or record.name),
        str(content.get("file") or record.name),
        str(content.get("text")),
        modules,
        tuple(content.get("hooks") or ()),
        tuple(content.get("local") or ()),
    )
    if version.digest != digest:
        raise _unavailable(digest, "its stored content does not match its digest")
    _remember(digest, version)
    return version


def rebuild(version: RecipeVersion) -> ValidRecipe:
    """Check a recipe version again, from its own texts only, as it was when it started;
    VersionUnavailable with every issue when it no longer loads here."""
    digest = version.digest
    with _LOCK:
        built = _REBUILT.get(digest)
    if built is not None:
        return built
    registry = ModuleRegistry()
    try:
        for module in version.modules.values():
            located = load_yaml(module.text)
            if module.kind == "action":
                registry.actions[module.key] = action_from(located, module.source, None)
            else:
                registry.triggers[module.key] = trigger_from(located, module.source, None)
        built = check_recipe(load_yaml(version.text), version.file, registry=registry)
    except ManifestError as exc:
        why = "; ".join(str(issue) for issue in exc.issues) or str(exc)
        raise _unavailable(digest, why) from None
    except YamlLoadError as exc:
        raise _unavailable(digest, str(exc)) from None
    with _LOCK:
        _REBUILT[digest] = built
    return built


def remember_built(digest: str, recipe: ValidRecipe) -> None:
    """Note that ``recipe`` is the version ``digest`` (a runner's own recipe), so that
    its runs use the objects already built."""
    with _LOCK:
        _REBUILT.setdefault(digest, recipe)


def _remember(digest: str, version: RecipeVersion) -> None:
    with _LOCK:
        _VERSIONS.setdefault(digest, version)


# Content-addressed: a digest names one content, so what was read or built once for it
# holds in every store and for the life of the process.
_LOCK = threading.Lock()
_VERSIONS: dict[str, RecipeVersion] = {}
_REBUILT: dict[str, ValidRecipe] = {}
