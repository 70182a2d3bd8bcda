"""The typed HTTP client of the Partner Integration API: :class:`Client` sends one request
at a time through the rate budget, authenticates with one method, retries by
:mod:`.retry`, raises :mod:`practiceflow.errors` exceptions, pages lists and streams
downloads. Logs method, path (never the query), status and duration; never headers,
secrets or bodies.
"""

from __future__ import annotations

import copy
import json as jsonlib
import logging
import os
import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

import requests

from practiceflow import __version__
from practiceflow.api.auth_methods import make_auth, mask_headers, reject_credential_headers
from practiceflow.api.config import AuthMethodName, Settings, load_settings
from practiceflow.api.connections import fresh_session
from practiceflow.api.paging import Page, iter_items, iter_pages
from practiceflow.api.params import encode_params, utc_now
from practiceflow.api.resource_models import CredentialCheck
from practiceflow.api.retry import RetryPolicy, is_read, refused_before_sending
from practiceflow.api.wire import (
    UNSENDABLE,
    ApiResponse,
    Download,
    RequestHooks,
    clean_path,
    describe_exception,
    error_from_response,
    log_path,
    parse_body,
    save_body,
    unsendable_reason,
    wire_json,
)
from practiceflow.budget.rate_budget import RateBudget, RateLimits, RateLimitStatus
from practiceflow.errors import (
    ConfigError,
    InDoubtError,
    PracticeflowError,
    RateLimitError,
    ServerError,
    TransportError,
)

__all__ = ["AUTH_VALIDATE_PATH", "ApiResponse", "Client", "Download", "RequestHooks"]

logger = logging.getLogger("practiceflow.api")

AUTH_VALIDATE_PATH: Final = "/api/v1/auth/validate"
_USER_AGENT: Final = f"practiceflow/{__version__} python-requests/{requests.__version__}"


def _unsendable(verb: str, where: str, exc: Exception) -> ConfigError:
    return ConfigError(f"{verb} {where}: the request could not be built: {unsendable_reason(exc)}")


@dataclass(frozen=True)
class _Call:
    """A request checked and built, credentials included; nothing is sent yet."""

    method: str
    path: str
    request: requests.PreparedRequest = field(repr=False)
    json: Any = field(repr=False)
    #: How it is sent (proxies, TLS verification, client certificate).
    settings: dict[str, Any] = field(repr=False)


class Client:
    """A client of the Partner Integration API for one practice's credentials.

    Settings are resolved by :func:`~practiceflow.api.config.load_settings`: arguments,
    then environment, then profile file.

    Args:
        client_id: the Client ID.
        client_secret: the Client secret (kept in a :class:`Secret`; never logged).
        region: ``anz``, ``uk`` or ``za``; its base URL comes from configuration.
        base_url: the regional base URL, e.g. ``http://127.0.0.1:8000/anz``.
        auth_method: ``header`` (``X-SVC-Auth-*`` headers) or ``basic``; None takes it
            from the environment or profile, else ``header``.
        profile: the profile to read from the profile file.
        timeout: seconds to wait for the connection and for each read of the answer.
        limits: the rate windows and wait caps (spec defaults when None).
        session: the ``requests`` session (closed by :meth:`close` only if created here).
        clock: current time in seconds for the rate budget and wait caps
            (``time.monotonic``); tests pass a fake.
        sleep: how to wait (``time.sleep``); tests pass a fake.
        retry: how failed requests are retried (defaults when None).
        budget: a rate budget to share with other clients of the same Client ID; built
            from ``limits``, ``clock`` and ``sleep`` when None.
        settings: already resolved settings (skips resolution and the arguments above).
        environ: the environment to read instead of ``os.environ``.
        profiles_file: the profile file instead of ``PRACTICEFLOW_PROFILES`` / the default.
        rng: the random source of backoff jitter.
        utcnow: the current UTC time, for refusing future ``lastUpdated`` values.

    Raises:
        ConfigError: the settings are missing or invalid.

    Example:
        >>> with Client(base_url="http://127.0.0.1:8000/anz") as api:  # doctest: +SKIP
        ...     for group in api.paginate("/api/v1/groups/list", params={"isActive": True}):
        ...         print(group["groupName"])
    """

    def __init__(
        self,
        client_id: str | None = None,
        client_secret: str | None = None,
        *,
        region: str | None = None,
        base_url: str | None = None,
        auth_method: AuthMethodName | None = None,
        profile: str | None = None,
        timeout: float = 30.0,
        limits: RateLimits | None = None,
        session: requests.Session | None = None,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], None] | None = None,
        retry: RetryPolicy | None = None,
        budget: RateBudget | None = None,
        settings: Settings | None = None,
        environ: Mapping[str, str] | None = None,
        profiles_file: str | os.PathLike[str] | None = None,
        rng: random.Random | None = None,
        utcnow: Callable[[], datetime] | None = None,
    ) -> None:
        self.settings = settings or load_settings(
            client_id,
            client_secret,
            region=region,
            base_url=base_url,
            auth_method=auth_method,
            profile=profile,
            environ=environ,
            profiles_file=profiles_file,
        )
        if not timeout > 0:
            message = f"timeout: got {timeout!r}; expected seconds > 0"
            raise ConfigError(message)
        self.timeout = timeout
        self._auth = make_auth(
            self.settings.auth_method, self.settings.client_id, self.settings.client_secret
        )
        self._owns_session = session is None
        self._session = session or fresh_session()
        self._budget = budget or RateBudget(limits, clock=clock, sleep=sleep)
        self.limits = self._budget.limits
        self._clock = clock or self._budget.clock
        self._sleep = sleep or time.sleep
        self.retry = retry or RetryPolicy()
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not security
        self._utcnow = utcnow or utc_now
        self._hooks = RequestHooks()

    def hooked(self, hooks: RequestHooks) -> Self:
        """This client (session, budget, retries) calling ``hooks`` around every request it
        sends, paging and downloads included; closing the copy closes nothing."""
        twin = copy.copy(self)
        twin._hooks = hooks
        twin._owns_session = False
        return twin

    @property
    def base_url(self) -> str:
        """The regional base URL requests go to (no trailing slash)."""
        return self.settings.base_url

    @property
    def budget(self) -> RateBudget:
        """The rate budget this client spends."""
        return self._budget

    @property
    def rate_limit_status(self) -> RateLimitStatus | None:
        """The last ``X-RateLimit-Limit/Remaining/Reset`` values the server sent."""
        return self._budget.status

    def __repr__(self) -> str:
        return (
            f"Client(base_url={self.base_url!r}, client_id={self.settings.client_id!r}, "
            f"auth_method={self.settings.auth_method!r})"
        )

    def close(self) -> None:
        """Close the HTTP session if this client created it."""
        if self._owns_session:
            self._session.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def describe_request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """The exact request :meth:`request` would send (same arguments), secrets masked;
        nothing is sent.

        Returns:
            ``{"method", "url", "headers", "json"}``; the secret-bearing headers read ``***``.

        Raises:
            ConfigError: the path, parameters or headers are invalid.
        """
        call = self._build(method, path, params, json, headers, stream=False)
        return {
            "method": call.method,
            "url": call.request.url,
            "headers": mask_headers(call.request.headers),
            "json": call.json,
        }

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> ApiResponse:
        """Send one request (with retries where safe) and return the successful answer.

        Args:
            method: HTTP method.
            path: path under the base URL, e.g. ``/api/v1/bills``.
            params: query parameters; ``lastUpdated`` must be aware and not in the future,
                booleans are sent as ``true``/``false``.
            json: JSON body (a pydantic model is dumped by alias).
            headers: extra headers (never credentials).

        Returns:
            The :class:`ApiResponse`.

        Raises:
            ConfigError: invalid input; nothing was sent.
            ApiError: the API answered with an error status (a subclass per status).
            TransportError: no usable answer, after the retries allowed.
            InDoubtError: a write may have been acted on (timeout, 5xx, lost connection).
        """
        call = self._build(method, path, params, json, headers, stream=False)
        described = dict(method=call.method, path=path, params=params, json=json, headers=headers)
        response = self._send_call(call, described)
        data, text = parse_body(response)
        return ApiResponse(response.status_code, response.headers, data, text)

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        """GET ``path`` and return its parsed JSON (see :meth:`request`)."""
        return self.request("GET", path, params=params).data

    def post(self, path: str, json: Any = None, params: Mapping[str, Any] | None = None) -> Any:
        """POST ``json`` to ``path`` and return the parsed JSON answer (see :meth:`request`):
        retried only after a 429 or a refused connection, else InDoubtError once sent."""
        return self.request("POST", path, params=params, json=json).data

    def put(self, path: str, json: Any = None, params: Mapping[str, Any] | None = None) -> Any:
        """PUT ``json`` to ``path`` and return the parsed JSON answer (a write, as POST)."""
        return self.request("PUT", path, params=params, json=json).data

    def delete(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        """DELETE ``path`` and return the parsed JSON answer, if any (a write, as POST)."""
        return self.request("DELETE", path, params=params).data

    def validate(self) -> CredentialCheck:
        """Check the credentials with ``GET /api/v1/auth/validate``.

        Returns:
            Who they belong to and whether they can write.

        Raises:
            AuthError: the credentials are missing, wrong, inactive, or for another region.
        """
        return CredentialCheck.model_validate(self.get(AUTH_VALIDATE_PATH))

    def pages(
        self,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        page_size: int | None = None,
        start_page: int = 1,
    ) -> Iterator[Page]:
        """Iterate over the pages of a list endpoint (for checkpointing by page number).

        Args:
            path: the list endpoint, e.g. ``/api/v1/groups/list``.
            params: query parameters sent with every page.
            page_size: ``pageSize`` to send (1 to 100, server default 50); None for lists
                with a fixed server page size (entities, users), learned from page one.
            start_page: the first ``pageNumber`` (resume with the last seen number + 1).

        Yields:
            Each :class:`~practiceflow.api.paging.Page`; the last has ``has_more=False``.

        Raises:
            ConfigError: bad arguments, a non-list answer, or more than 10000 pages.
        """
        clean_path(path)
        encode_params(params, now=self._utcnow)  # refuse a bad lastUpdated before paging
        return iter_pages(
            lambda query: self.get(path, query),
            where=f"GET {log_path(path)}",
            params=params,
            page_size=page_size,
            start_page=start_page,
        )

    def paginate(
        self,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        page_size: int | None = None,
        limit: int | None = None,
        start_page: int = 1,
    ) -> Iterator[Any]:
        """Iterate over every item of every page of a list endpoint.

        Args:
            path, params, page_size, start_page: as for :meth:`pages`.
            limit: stop after this many items (no further page is fetched).

        Yields:
            The rows as parsed JSON.

        Raises:
            ConfigError: as for :meth:`pages`.
        """
        return iter_items(
            self.pages(path, params=params, page_size=page_size, start_page=start_page), limit
        )

    def download(
        self,
        path: str,
        dest: str | os.PathLike[str],
        *,
        params: Mapping[str, Any] | None = None,
    ) -> Download:
        """Stream a body (a PDF, a zip) to ``dest`` in chunks, never holding it in memory.

        The file appears at ``dest`` only once complete (written beside it, then renamed).
        A read broken off midway is retried like any read.

        Args:
            path: the endpoint, e.g. ``/api/v1/bills/12/pdf``.
            dest: the file to write (its folder must exist).
            params: query parameters.

        Returns:
            The :class:`Download` with size and SHA-256.

        Raises:
            ApiError: an error status.
            TransportError: the body could not be read, after the retries allowed.
        """
        target = Path(dest)
        where = log_path(path)
        attempt = 0
        while True:
            attempt += 1
            call = self._build("GET", path, params, None, None, stream=True)
            response = self._send_call(call, {"method": "GET", "path": path, "params": params})
            try:
                return save_body(response, target)
            except requests.RequestException as exc:
                error = TransportError(
                    "GET", where, f"download broke off: {describe_exception(exc)}"
                )
                if attempt >= self.retry.max_attempts:
                    raise error from exc
                logger.warning("GET %s: %s; retrying", where, error.reason)
                self._sleep(self.retry.backoff(attempt, self._rng))
            finally:
                response.close()

    def _build(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any] | None,
        json: Any,
        headers: Mapping[str, str] | None,
        *,
        stream: bool,
    ) -> _Call:
        """Check and build a request, credentials included, before any budget is spent."""
        verb = method.upper()
        url = self.base_url + clean_path(path)
        query = encode_params(params, now=self._utcnow)
        extra = {"Accept": "application/json", "User-Agent": _USER_AGENT}
        if headers:
            reject_credential_headers(headers)
            extra.update(headers)
        body = wire_json(json)
        if body is not None:
            try:
                jsonlib.dumps(body, allow_nan=False)
            except (TypeError, ValueError) as exc:
                message = (
                    f"{verb} {log_path(path)}: the JSON body cannot be encoded ({exc}); "
                    "expected JSON values (dict, list, str, int, float, bool, None) or a "
                    "practiceflow model; nothing was sent"
                )
                raise ConfigError(message) from None
        request = requests.Request(verb, url, params=query, json=body, headers=extra)
        request.auth = self._auth
        try:
            prepared = self._session.prepare_request(request)
            settings = self._session.merge_environment_settings(
                prepared.url, {}, stream, None, None
            )
        except UNSENDABLE as exc:
            raise _unsendable(verb, log_path(path), exc) from None
        return _Call(verb, path, prepared, body, dict(settings))

    def _send_call(self, call: _Call, described: dict[str, Any]) -> requests.Response:
        """Budget, ``on_send``, send, retry where safe (the same request each time)."""
        on_send, on_refused = self._hooks.on_send, self._hooks.on_refused
        verb = call.method
        where = log_path(call.path)
        read = is_read(verb)
        deadline = self._clock() + self.limits.max_wait
        failures = 0
        rate_limited = 0
        while True:
            self._budget.acquire(verb, where, deadline)
            if on_send is not None:
                on_send(described)
            started = time.perf_counter()
            try:
                response = self._session.send(
                    call.request,
                    timeout=self.timeout,
                    # Never follow redirects: the credential headers would travel along.
                    allow_redirects=False,
                    **call.settings,
                )
            except UNSENDABLE as exc:
                raise _unsendable(verb, where, exc) from None
            except requests.RequestException as exc:
                error = TransportError(verb, where, describe_exception(exc))
                took = (time.perf_counter() - started) * 1000
                logger.warning("%s %s failed after %.1f ms: %s", verb, where, took, error.reason)
                if not read and not refused_before_sending(exc):
                    raise InDoubtError(verb, where, error) from exc
                failures += 1
                self._wait(error, failures, deadline, exc)
                continue

            status = response.status_code
            if status >= 400 or logger.isEnabledFor(logging.DEBUG):
                took = (time.perf_counter() - started) * 1000
                level = logging.DEBUG if status < 400 else logging.INFO
                logger.log(level, "%s %s -> %d in %.1f ms", verb, where, status, took)
            self._budget.observe(response.headers)
            if status < 400:
                return response

            api_error = error_from_response(verb, where, response, self.base_url)
            if isinstance(api_error, RateLimitError):
                if on_refused is not None:
                    on_refused()
                rate_limited += 1
                pause = self.retry.pause_after_429(
                    api_error,
                    rate_limited,
                    self._rng,
                    self.limits,
                    now=self._clock(),
                    deadline=deadline,
                )
                logger.warning("%s %s -> 429; pausing the budget %.3fs", verb, where, pause)
                self._budget.pause_for(pause)
                continue
            if isinstance(api_error, ServerError):
                if not read:
                    raise InDoubtError(verb, where, api_error) from api_error
                failures += 1
                self._wait(api_error, failures, deadline, None)
                continue
            raise api_error

    def _wait(
        self, error: PracticeflowError, failures: int, deadline: float, cause: Exception | None
    ) -> None:
        """Back off before the next attempt, or raise (:meth:`RetryPolicy.delay_or_raise`)."""
        delay = self.retry.delay_or_raise(
            error, failures, self._rng, now=self._clock(), deadline=deadline, cause=cause
        )
        logger.info("retrying after %.3fs (attempt %d failed)", delay, failures)
        self._sleep(delay)
