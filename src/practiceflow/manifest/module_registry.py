"""Finding modules: the shipped ``actions/`` and ``triggers/`` plus any ``--modules DIR`` (a
user module with a shipped key needs ``override: true``; two user modules never share a key)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.resources.abc import Traversable
from pathlib import Path

from practiceflow.errors import ConfigError, Issue, ManifestError
from practiceflow.manifest.choices import check_sources
from practiceflow.manifest.loader import PathLike, load_module, read_located
from practiceflow.manifest.models import ActionModule, Module, TriggerModule
from practiceflow.manifest.resources import data_dir
from practiceflow.manifest.validation import hint

_SUFFIXES = (".yaml", ".yml")
#: Test files (``practiceflow test``) may sit beside modules; they are not modules.
_TESTS = (".test.yaml", ".test.yml")


@dataclass
class ModuleRegistry:
    """The loaded modules, by key."""

    actions: dict[str, ActionModule] = field(default_factory=dict)
    triggers: dict[str, TriggerModule] = field(default_factory=dict)

    def action(self, key: str) -> ActionModule:
        """Return an action by key (ConfigError with "did you mean" or the valid keys)."""
        if key in self.actions:
            return self.actions[key]
        raise _missing(self.actions, key, "action")

    def trigger(self, key: str) -> TriggerModule:
        """Return a trigger by key (see :meth:`action`)."""
        if key in self.triggers:
            return self.triggers[key]
        raise _missing(self.triggers, key, "trigger")

    def __iter__(self) -> Iterator[Module]:
        yield from self.actions.values()
        yield from self.triggers.values()


def _missing(table: Mapping[str, Module], key: str, what: str) -> ConfigError:
    message = f"no {what} named {key!r}; {hint(key, table, f'valid values are {sorted(table)}')}"
    return ConfigError(message)


def _files(folder: Traversable) -> list[Traversable]:
    if not folder.is_dir():
        return []
    # Anything named like a module but a folder is loaded, so that a FIFO, a device or a
    # dangling link is reported (not a regular file) instead of silently skipped.
    return sorted(
        (
            item
            for item in folder.iterdir()
            if item.name.endswith(_SUFFIXES)
            and not item.name.endswith(_TESTS)  # a test file beside its module
            and not item.is_dir()
        ),
        key=lambda item: item.name,
    )


def discover(
    dirs: Iterable[PathLike] = (), *, shipped: bool = True
) -> list[tuple[Traversable, str, bool]]:
    """List module files: (file, name shown in messages, shipped?)."""
    found: list[tuple[Traversable, str, bool]] = []
    if shipped:
        for kind in ("actions", "triggers"):
            found.extend((item, f"{kind}/{item.name}", True) for item in _files(data_dir(kind)))
    for raw in dirs:
        folder = Path(str(raw))
        if not folder.is_dir():
            message = f"--modules {raw}: not a folder"
            raise ConfigError(message)
        for sub in (folder / "actions", folder / "triggers", folder):
            found.extend(
                (item, str(Path(str(raw)) / item.relative_to(folder)), False)
                for item in _files(sub)
                if isinstance(item, Path)
            )
    return found


def load_modules(dirs: Iterable[PathLike] = (), *, shipped: bool = True) -> ModuleRegistry:
    """Load every module: the shipped ones and those in user folders.

    Args:
        dirs: user folders (``--modules DIR``), in order.
        shipped: include the shipped modules.

    Returns:
        The registry.

    Raises:
        ManifestError: with every issue of every file (a duplicate key included).
        ConfigError: when a user folder does not exist.
    """
    registry = ModuleRegistry()
    issues: list[Issue] = []
    origin: dict[tuple[str, str], tuple[str, bool]] = {}
    for item, display, is_shipped in discover(dirs, shipped=shipped):
        try:
            module = load_module(item, display=display)
        except ManifestError as exc:
            issues.extend(exc.issues)
            continue
        kind = "action" if isinstance(module, ActionModule) else "trigger"
        previous = origin.get((kind, module.key))
        if previous is not None:
            where, previous_shipped = previous
            if not (previous_shipped and not is_shipped and module.override):
                issues.append(_duplicate(item, display, kind, module.key, where, previous_shipped))
                continue
        origin[(kind, module.key)] = (display, is_shipped)
        if isinstance(module, ActionModule):
            registry.actions[module.key] = module
        else:
            registry.triggers[module.key] = module
    lists = [key for key, action in registry.actions.items() if action.extensions.list]
    for module in registry:
        issues += check_sources(module.key, module.source, module.choices, lists, registry.actions)
    if issues:
        raise ManifestError(issues)
    return registry


def _duplicate(
    item: Traversable, display: str, kind: str, key: str, where: str, shipped: bool
) -> Issue:
    located, _ = read_located(item, display)
    if shipped:
        message = (
            f"{kind} {key!r} is already shipped ({where}); add 'override: true' to replace it, "
            "or choose another key"
        )
    else:
        message = f"{kind} {key!r} is also defined in {where}; keys must be unique"
    return located.issue(display, ("key",), message)


@lru_cache(maxsize=1)
def default_registry() -> ModuleRegistry:
    """Return the shipped modules, loaded once per process.

    Returns:
        The registry of shipped actions and triggers.

    Raises:
        ManifestError: when a shipped module does not load (a packaging bug).
    """
    return load_modules()
