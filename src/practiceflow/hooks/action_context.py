"""What a check or hook sees (:class:`ActionContext`, the client it reads with), and the
one registry of named checks and hooks that modules refer to (docs/modules-guide.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from practiceflow.errors import BugError, ConfigError, Issue
from practiceflow.manifest.yamlpos import JsonPath, format_path

if TYPE_CHECKING:
    from practiceflow.api import Client
    from practiceflow.manifest.models import ActionModule

    #: The client checks, hooks and the engine read with.
    ClientLike: TypeAlias = Client
else:  # importing practiceflow.api here would be circular (api -> manifest -> hooks)
    ClientLike = Any


@dataclass
class ActionContext:
    """The state of one action run, as checks and hooks see it (``client`` is None only in
    a dry run without one); the engine raises ``problems`` as one InputError after the
    check that found them, and returns ``warnings`` with the result."""

    module: ActionModule
    input: dict[str, Any]
    client: ClientLike | None
    dry_run: bool = False
    warnings: list[str] = field(default_factory=list)
    problems: list[Issue] = field(default_factory=list)
    _reads: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)

    def read(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        """GET a path (``/api/v1/settings/lead-sources``) once per run: repeated reads are
        served from memory. BugError without a client (reading checks skip dry runs)."""
        if self.client is None:
            message = f"{self.module.key}: a check tried to read {path} without a client"
            raise BugError(message)
        key = (path, repr(sorted((params or {}).items())))
        if key not in self._reads:
            self._reads[key] = self.client.get(path, params=params)
        return self._reads[key]

    def problem(self, path: JsonPath, message: str) -> None:
        """Record an input problem at a JSON path of the input (``lineItems[0]``): what is
        wrong and what would be valid."""
        self.problems.append(Issue("input", 0, 0, format_path(path), message))


CheckFunc = Callable[[ActionContext], None]
HookFunc = Callable[[ActionContext], Mapping[str, Any] | None]


@dataclass(frozen=True)
class Named:
    """A registered check or hook; ``reads``: it calls the API (skipped in dry runs);
    ``summary``: the first line of its docstring, for listings."""

    name: str
    func: Callable[[ActionContext], Any]
    reads: bool
    summary: str


CHECKS: dict[str, Named] = {}
HOOKS: dict[str, Named] = {}


def _register(table: dict[str, Named], name: str, reads: bool) -> Callable[[Any], Any]:
    def decorate(func: Callable[[ActionContext], Any]) -> Callable[[ActionContext], Any]:
        if name in table:
            message = f"{name!r} is registered twice"
            raise BugError(message)
        summary = (func.__doc__ or "").strip().splitlines()[0] if func.__doc__ else ""
        table[name] = Named(name, func, reads, summary)
        return func

    return decorate


def register_check(name: str, *, reads: bool = True) -> Callable[[CheckFunc], CheckFunc]:
    """Register a pre-send check under a name.

    Args:
        name: the name modules use in ``checks:``.
        reads: whether it calls the API.

    Returns:
        A decorator that registers the function and returns it unchanged.
    """
    return _register(CHECKS, name, reads)


def register_hook(name: str, *, reads: bool = False) -> Callable[[HookFunc], HookFunc]:
    """Register an input hook under a name.

    Args:
        name: the name modules use in ``hook:``.
        reads: whether it calls the API.

    Returns:
        A decorator that registers the function and returns it unchanged.
    """
    return _register(HOOKS, name, reads)


def _lookup(table: Mapping[str, Named], what: str, name: str) -> Named:
    try:
        return table[name]
    except KeyError:
        message = f"unknown {what} {name!r}; valid values are {sorted(table)}"
        raise ConfigError(message) from None


def get_check(name: str) -> Named:
    """The registered check ``name``; ConfigError (listing the valid names) when none."""
    return _lookup(CHECKS, "check", name)


def get_hook(name: str) -> Named:
    """The registered hook ``name``; ConfigError (listing the valid names) when none."""
    return _lookup(HOOKS, "hook", name)
