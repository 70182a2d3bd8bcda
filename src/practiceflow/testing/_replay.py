"""Recording and replaying cassettes at the client's one transport seam: both are
``requests`` adapters mounted on the session a :class:`practiceflow.api.Client` sends with,
so every caller of the client is recorded or replayed unchanged.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
from collections.abc import Callable, Mapping
from typing import Any, Final
from urllib.parse import parse_qsl, urlsplit

import requests
from requests.adapters import BaseAdapter, HTTPAdapter
from requests.structures import CaseInsensitiveDict

from practiceflow.api.auth_methods import AUTH_HEADER_NAMES
from practiceflow.testing._cassette import (
    Cassette,
    Exchange,
    RecordedRequest,
    RecordedResponse,
    scrub,
)

#: The base URL a replayed client is given; nothing is ever sent to it.
REPLAY_BASE_URL: Final = "https://cassette.invalid/anz"

#: Request headers the client sets on every request: not part of a module's exchange.
_CLIENT_HEADERS: Final = AUTH_HEADER_NAMES | {
    "accept",
    "accept-encoding",
    "connection",
    "content-length",
    "content-type",
    "user-agent",
}
#: Answer headers that change what a client does; the others are not recorded.
_ANSWER_HEADERS: Final = ("Content-Type", "Location", "Retry-After", "Content-Disposition")


class CassetteMismatch(AssertionError):
    """A replayed request matched no exchange of the cassette (the message says why)."""


def _body(raw: bytes | str | None) -> Any:
    if raw is None or raw in (b"", ""):
        return None
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    try:
        return json.loads(text)
    except ValueError:
        return {"text": text}


def recorded_request(request: requests.PreparedRequest, base_url: str) -> RecordedRequest:
    """A request as a cassette records it: the path of ``base_url`` (such as ``/anz``) taken
    off, credentials and the client's own headers left out."""
    parts = urlsplit(request.url or "")
    prefix = urlsplit(base_url).path.rstrip("/")
    path = parts.path[len(prefix) :] if prefix and parts.path.startswith(prefix) else parts.path
    query: dict[str, Any] = {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name in query:
            previous = query[name]
            query[name] = [*previous, value] if isinstance(previous, list) else [previous, value]
        else:
            query[name] = value
    headers = {
        name: str(value)
        for name, value in request.headers.items()
        if name.lower() not in _CLIENT_HEADERS
    }
    return RecordedRequest(
        (request.method or "GET").upper(), path, query, _body(request.body), headers
    )


def _answer(response: requests.Response) -> RecordedResponse:
    content, status = response.content or b"", response.status_code
    headers = {name: response.headers[name] for name in _ANSWER_HEADERS if name in response.headers}
    if not content:
        return RecordedResponse(status, headers, None)
    with contextlib.suppress(ValueError):
        return RecordedResponse(status, headers, json.loads(content))
    try:
        return RecordedResponse(status, headers, {"text": content.decode("utf-8")}, json=False)
    except UnicodeDecodeError:
        encoded = base64.b64encode(content).decode("ascii")
        return RecordedResponse(status, headers, {"base64": encoded}, json=False)


def answer_response(
    answer: RecordedResponse, request: requests.PreparedRequest
) -> requests.Response:
    """A ``requests`` response carrying a recorded (or written) answer to a request."""
    response = requests.Response()
    response.status_code = answer.status
    headers = dict(answer.headers)
    if answer.json and answer.body is not None:
        headers.setdefault("Content-Type", "application/json")
    response.headers = CaseInsensitiveDict(headers)
    content = answer.content()
    response.raw = io.BytesIO(content)
    response._content = content  # the body is known: .content, .json() read it from here
    response.encoding = "utf-8"
    response.url = request.url or ""
    response.request = request
    response.reason = "OK" if answer.status < 400 else "Error"
    return response


def mounted_session(adapter: BaseAdapter) -> requests.Session:
    """A session whose every request goes through ``adapter`` (no proxy of the machine)."""
    session = requests.Session()
    session.trust_env = False  # no proxy or netrc of the machine takes part
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


class CassetteRecorder(HTTPAdapter):
    """Sends requests as usual and records each with its answer in ``exchanges`` (for a
    cassette); the path of ``base_url``, the client's, is taken off the recorded paths."""

    def __init__(self, base_url: str) -> None:
        super().__init__(max_retries=0)
        self.base_url = base_url
        self.exchanges: list[Exchange] = []

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> Any:
        """Send, read the whole answer, and record the exchange."""
        response = super().send(request, *args, **kwargs)
        self.exchanges.append(Exchange(recorded_request(request, self.base_url), _answer(response)))
        return response

    def session(self) -> requests.Session:
        """A session that sends through this recorder."""
        return mounted_session(self)


def _diff(sent: Any, recorded: Any, where: str, out: list[str]) -> None:
    if isinstance(sent, Mapping) and isinstance(recorded, Mapping):
        for key in sorted(set(sent) | set(recorded), key=str):
            if key not in recorded:
                out.append(f"{where}.{key}: sent {sent[key]!r}, not recorded")
            elif key not in sent:
                out.append(f"{where}.{key}: not sent, recorded {recorded[key]!r}")
            else:
                _diff(sent[key], recorded[key], f"{where}.{key}", out)
    elif isinstance(sent, list) and isinstance(recorded, list) and len(sent) == len(recorded):
        for index, (left, right) in enumerate(zip(sent, recorded, strict=True)):
            _diff(left, right, f"{where}[{index}]", out)
    elif sent != recorded and not (isinstance(sent, str) and scrub(sent, [sent]) == recorded):
        out.append(f"{where}: sent {sent!r}, recorded {recorded!r}")


def request_differences(sent: RecordedRequest, recorded: RecordedRequest) -> list[str]:
    """What differs between two requests, field by field (empty: they are the same)."""
    out: list[str] = []
    _diff(sent.as_dict(), recorded.as_dict(), "request", out)
    return out


def one_line(request: RecordedRequest) -> str:
    """``METHOD /path?query``, for messages."""
    query = "&".join(f"{k}={v}" for k, v in request.query.items())
    return f"{request.method} {request.path}" + (f"?{query}" if query else "")


class CassettePlayer(BaseAdapter):
    """Answers a request from the first unplayed exchange with the same request (a sent string
    may match its scrubbed stand-in); sends nothing. A request that matches none is refused
    with :class:`CassetteMismatch`, listing its differences to the nearest exchanges.

    Args:
        cassette: the recorded exchange.
        base_url: the base URL of the client it is mounted under.
        normalize: applied to every request, sent and recorded, before they are compared
            (a runtime's declared difference, such as a run-unique marker, is taken out).

    Attributes:
        sent: every request received, as recorded (after ``normalize``).
        raw_sent: every request received, as recorded (before ``normalize``).
        mismatches: the message of each request that matched no exchange.
    """

    def __init__(
        self,
        cassette: Cassette,
        *,
        base_url: str = REPLAY_BASE_URL,
        normalize: Callable[[RecordedRequest], RecordedRequest] | None = None,
    ) -> None:
        super().__init__()
        self.cassette = cassette
        self.base_url = base_url
        self._normalize = normalize or (lambda request: request)
        self._played = [False] * len(cassette.exchanges)
        self.sent: list[RecordedRequest] = []
        self.raw_sent: list[RecordedRequest] = []
        self.mismatches: list[str] = []

    def session(self) -> requests.Session:
        """A session whose every request is answered by this player."""
        return mounted_session(self)

    @property
    def unplayed(self) -> list[Exchange]:
        """The exchanges no request has matched (yet)."""
        return [
            ex for ex, done in zip(self.cassette.exchanges, self._played, strict=True) if not done
        ]

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> Any:
        """Answer from the first unplayed exchange with the same request, else refuse it."""
        del args, kwargs
        raw = recorded_request(request, self.base_url)
        self.raw_sent.append(raw)
        wanted = self._normalize(raw)
        self.sent.append(wanted)
        candidates: list[tuple[int, list[str]]] = []
        for index, exchange in enumerate(self.cassette.exchanges):
            if self._played[index]:
                continue
            differences = request_differences(wanted, self._normalize(exchange.request))
            if not differences:
                self._played[index] = True
                return answer_response(exchange.response, request)
            candidates.append((index, differences))
        message = self._mismatch(wanted, candidates)
        self.mismatches.append(message)
        raise CassetteMismatch(message)

    def _mismatch(self, wanted: RecordedRequest, candidates: list[tuple[int, list[str]]]) -> str:
        lines = [f"{self.cassette.source}: {one_line(wanted)} matches no exchange left to play"]
        if not candidates:
            lines.append("  every recorded exchange was already played (an extra request)")
        for index, differences in sorted(candidates, key=lambda item: len(item[1]))[:3]:
            lines.append(f"  exchanges[{index}]:")
            lines.extend(f"    {line}" for line in differences[:8])
        return "\n".join(lines)

    def close(self) -> None:
        """Nothing to release."""

    def check(self) -> None:
        """Raise when a request matched nothing or an exchange was never played.

        Raises:
            CassetteMismatch: the differences, and the exchanges left unplayed.
        """
        problems = list(self.mismatches)
        for exchange in self.unplayed:
            problems.append(f"{self.cassette.source}: {one_line(exchange.request)} was never sent")
        if problems:
            raise CassetteMismatch("\n".join(problems))
