"""practiceflow: the Partner Integration API as declarative actions, triggers and recipes.

The public surface is what ``__all__`` lists; a test pins it.
"""

from __future__ import annotations

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
    TransportError,
    ValidationError,
    WriteAccessError,
)

__version__ = "0.1.0"

__all__ = [
    "ApiError",
    "AuthError",
    "BugError",
    "ConfigError",
    "InDoubtError",
    "InputError",
    "ManifestError",
    "NotFoundError",
    "PracticeflowError",
    "RateLimitError",
    "ServerError",
    "TransportError",
    "ValidationError",
    "WriteAccessError",
    "__version__",
]
