"""practiceflow: the Partner Integration API as declarative actions, triggers and recipes.

The public surface is ``__all__`` (a test pins it). The error classes are imported eagerly;
the rest on first use, so that ``import practiceflow`` and the CLI start fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from practiceflow.errors import (
    ApiError,
    AuthError,
    BugError,
    ConfigError,
    InDoubtError,
    InputError,
    ManifestError,
    NotFoundError,
    PracticeflowError,
    RateLimitError,
    ServerError,
    StoreError,
    TemplateError,
    TransportError,
    ValidationError,
    WriteAccessError,
)

if TYPE_CHECKING:
    from practiceflow import webhooks
    from practiceflow.api import Client
    from practiceflow.engine import ActionResult, run_action
    from practiceflow.manifest import default_registry, load_modules, load_recipe
    from practiceflow.state import open_store
    from practiceflow.webhooks import verify

__version__ = "0.1.0"

#: Names imported on first use: name -> module that defines it.
_LAZY: dict[str, str] = {
    "ActionResult": "practiceflow.engine",
    "Client": "practiceflow.api",
    "default_registry": "practiceflow.manifest",
    "load_modules": "practiceflow.manifest",
    "load_recipe": "practiceflow.manifest",
    "open_store": "practiceflow.state",
    "run_action": "practiceflow.engine",
    "verify": "practiceflow.webhooks",
    "webhooks": "practiceflow.webhooks",
}

__all__ = [
    "ActionResult",
    "ApiError",
    "AuthError",
    "BugError",
    "Client",
    "ConfigError",
    "InDoubtError",
    "InputError",
    "ManifestError",
    "NotFoundError",
    "PracticeflowError",
    "RateLimitError",
    "ServerError",
    "StoreError",
    "TemplateError",
    "TransportError",
    "ValidationError",
    "WriteAccessError",
    "__version__",
    "default_registry",
    "load_modules",
    "load_recipe",
    "open_store",
    "run_action",
    "verify",
    "webhooks",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'practiceflow' has no attribute {name!r}")
    loaded = importlib.import_module(module)
    value = loaded if name == "webhooks" else getattr(loaded, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
