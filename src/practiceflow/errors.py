"""The one exception tree of practiceflow.

Every error raised on purpose derives from :class:`PracticeflowError`; its ``kind`` says whose
problem it is and gives the CLI's exit code (:data:`EXIT_CODES`; the README lists them).
Messages never contain a secret: they are built from the method, the path (never the query
string, which may carry personal data), the status and the problem-details body.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

ErrorKind = Literal["config", "auth", "transient", "in_doubt", "bug"]

#: Exit code of the CLI for each kind of error (documented in the README).
EXIT_CODES: Mapping[ErrorKind, int] = {
    "config": 2,
    "auth": 3,
    "transient": 4,
    "in_doubt": 5,
    "bug": 70,
}


class PracticeflowError(Exception):
    """Root of every error practiceflow raises on purpose."""

    kind: ClassVar[ErrorKind] = "bug"

    @property
    def exit_code(self) -> int:
        """The CLI exit code for this error's kind."""
        return EXIT_CODES[self.kind]


class ConfigError(PracticeflowError):
    """The user's configuration or input is wrong; fixing it is the user's move."""

    kind: ClassVar[ErrorKind] = "config"


@dataclass(frozen=True)
class Issue:
    """One problem found in a file: the path as the user gave it, 1-based line and column
    (0: unknown), the JSON path inside it (``input.properties.amount``) and the message."""

    file: str
    line: int
    column: int
    path: str
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.line:
            where += f":{self.line}:{self.column}" if self.column else f":{self.line}"
        location = f" {self.path}:" if self.path else ":"
        return f"{where}{location} {self.message}"


class ManifestError(ConfigError):
    """A module, recipe or connector file does not load; carries every issue found."""

    def __init__(self, issues: Sequence[Issue]) -> None:
        self.issues = list(issues)
        lines = "\n".join(str(issue) for issue in self.issues)
        count = len(self.issues)
        message = f"{count} problem{'s' if count != 1 else ''} found:\n{lines}"
        super().__init__(message)


class TemplateError(ManifestError):
    """A template failed to render (undefined name, sandbox refusal) before anything was
    sent; its one issue names the template's file, line and field."""

    def __init__(self, issue: Issue) -> None:
        self.issue = issue
        super().__init__([issue])


class InputError(ConfigError):
    """Input given to an action does not fit its schema; nothing was sent."""

    def __init__(self, action: str, issues: Sequence[Issue]) -> None:
        self.action = action
        self.issues = list(issues)
        lines = "\n".join(str(issue) for issue in self.issues)
        message = f"input for action '{action}' is not valid; nothing was sent:\n{lines}"
        super().__init__(message)


class ApiError(PracticeflowError):
    """The API answered with an error status.

    Attributes:
        method: HTTP method of the request.
        path: URL path of the request (no query string, no host).
        status: HTTP status code.
        problem: the parsed problem-details body (``type``, ``title``, ``status``,
            ``detail``, ``instance`` and ``message`` when present); empty when the body
            was not JSON.
        hint: what the user can do about it.
    """

    kind: ClassVar[ErrorKind] = "config"
    default_hint: ClassVar[str] = ""

    def __init__(
        self,
        method: str,
        path: str,
        status: int,
        problem: Mapping[str, Any] | None = None,
        *,
        hint: str | None = None,
    ) -> None:
        self.method = method
        self.path = path
        self.status = status
        self.problem: dict[str, Any] = dict(problem or {})
        self.hint = self.default_hint if hint is None else hint
        super().__init__(self._render())

    @property
    def detail(self) -> str:
        """The server's own words: ``message``, else ``detail``, else ``title``."""
        for field in ("message", "detail", "title"):
            value = self.problem.get(field)
            if isinstance(value, str) and value:
                return value
        return ""

    def _render(self) -> str:
        text = f"{self.method} {self.path} -> {self.status}"
        if self.detail:
            text += f": {self.detail}"
        if self.hint:
            text += f" ({self.hint})"
        return text


class ValidationError(ApiError):
    """400: the API refused the request as invalid (``message`` says why)."""


class AuthError(ApiError):
    """401: credentials missing, wrong, inactive, or used against the wrong region."""

    kind: ClassVar[ErrorKind] = "auth"
    default_hint: ClassVar[str] = (
        "check the Client ID and secret, that the API client is active, and that the "
        "region matches the practice's (credentials of one region get 401 on another)"
    )


class WriteAccessError(ApiError):
    """403: the credentials are read-only (``canWrite`` is false) on a write route."""

    kind: ClassVar[ErrorKind] = "auth"
    default_hint: ClassVar[str] = (
        "this API client cannot write: ask the practice administrator to enable write "
        "access (canWrite), then check with 'practiceflow auth check'"
    )


class NotFoundError(ApiError):
    """404: the resource does not exist in this practice."""


class RateLimitError(ApiError):
    """429: the Client ID's rate budget is spent.

    Attributes:
        retry_after: seconds the server asked to wait, when it said.
    """

    kind: ClassVar[ErrorKind] = "transient"

    def __init__(
        self,
        method: str,
        path: str,
        status: int = 429,
        problem: Mapping[str, Any] | None = None,
        *,
        retry_after: float | None = None,
        hint: str | None = None,
    ) -> None:
        self.retry_after = retry_after
        super().__init__(method, path, status, problem, hint=hint)


class ServerError(ApiError):
    """5xx: the server failed; reads may be retried, writes become in doubt."""

    kind: ClassVar[ErrorKind] = "transient"


class TransportError(PracticeflowError):
    """No usable answer: connection refused or reset, timeout, broken body."""

    kind: ClassVar[ErrorKind] = "transient"

    def __init__(self, method: str, path: str, reason: str) -> None:
        self.method = method
        self.path = path
        self.reason = reason
        super().__init__(f"{method} {path}: {reason}")


class StoreError(PracticeflowError):
    """The state store cannot be used right now (locked past the wait, disk full, file not
    writable); the transaction was rolled back, nothing half-done."""

    kind: ClassVar[ErrorKind] = "transient"


class InDoubtError(PracticeflowError):
    """A write was sent and its outcome is unknown (timeout, 5xx, dropped answer).

    It is never repeated silently: find out whether the API acted (read it back), then
    decide. ``cause`` holds the underlying :class:`TransportError` or :class:`ServerError`.
    """

    kind: ClassVar[ErrorKind] = "in_doubt"

    def __init__(self, method: str, path: str, cause: PracticeflowError) -> None:
        self.method = method
        self.path = path
        self.cause = cause
        message = (
            f"{method} {path} may or may not have been acted on ({cause}); it was not "
            "repeated. Check the practice's records before trying again."
        )
        super().__init__(message)


class BugError(PracticeflowError):
    """An invariant of practiceflow broke: please report it."""
