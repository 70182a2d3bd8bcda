"""The one registry of named checks and hooks that action modules refer to.

A **check** looks at the validated input (and may read the API through
:meth:`ActionContext.read`) and records problems or warnings; it never changes anything. A
**hook** may return a replacement input. Both are small, named and tested on their own; a
module names them in ``checks:`` and ``hook:``. Those that read the API are skipped in dry
runs (a dry run sends nothing) and say so in the warnings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from practiceflow.errors import BugError, ConfigError
from practiceflow.hooks.action_context import ActionContext

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
