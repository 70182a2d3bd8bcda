"""What a check or hook sees: the :class:`ActionContext`, and the client it may read with.

The client protocol is the part of :class:`practiceflow.api.Client` the engine and the hooks
use; any object with these methods works (a fake in a test, the real client in production).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from practiceflow.errors import BugError, Issue
from practiceflow.manifest.yamlpos import JsonPath, format_path

if TYPE_CHECKING:
    from typing import Self

    from practiceflow.api.client import RequestHooks
    from practiceflow.manifest.models import ActionModule


class ResponseLike(Protocol):
    """A response of the client: status, headers and the parsed JSON body."""

    @property
    def status(self) -> int:
        """HTTP status."""

    @property
    def headers(self) -> Mapping[str, str]:
        """Response headers."""

    @property
    def data(self) -> Any:
        """Parsed JSON body (None when empty)."""


class ClientLike(Protocol):
    """The subset of :class:`practiceflow.api.Client` that actions and hooks rely on."""

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """Send one request; return a response (see :class:`ResponseLike`)."""

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        """GET a path and return the parsed JSON body."""

    def describe_request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Describe the exact request that would be sent, secrets masked."""

    def hooked(self, hooks: RequestHooks) -> Self:
        """The same client, telling ``hooks`` about each request it sends (the seam the
        runner journals through; see :meth:`practiceflow.api.Client.hooked`)."""


@dataclass
class ActionContext:
    """The state of one action run, as checks and hooks see it.

    ``client`` is None only in a dry run without one; ``warnings`` are returned with the
    result; ``problems`` are raised by the engine as one
    :class:`~practiceflow.errors.InputError` after the check that found them.
    """

    module: ActionModule
    input: dict[str, Any]
    client: ClientLike | None
    dry_run: bool = False
    warnings: list[str] = field(default_factory=list)
    problems: list[Issue] = field(default_factory=list)
    _reads: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)

    def read(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        """GET a path (``/api/v1/settings/lead-sources``) once per run: repeated reads of
        the same path are served from memory.

        Raises:
            BugError: when called without a client (checks that read are skipped in dry runs).
            ApiError: what the client raises.
        """
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
