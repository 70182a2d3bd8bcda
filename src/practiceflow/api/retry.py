"""When a failed request is sent again, and how long to wait before it (DESIGN.md): reads
are retried on 429, 5xx and connection failures; writes only when the API certainly did not
act (a 429, a connection refused before sending). Any other failure of a write is *in doubt*
and is never repeated.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Final

import requests

from practiceflow.budget.rate_budget import RateLimits
from practiceflow.errors import ConfigError, PracticeflowError, RateLimitError

#: Methods that change nothing on the server, so repeating them is harmless.
SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})


def is_read(method: str) -> bool:
    """Whether ``method`` is a read that may be repeated freely."""
    return method.upper() in SAFE_METHODS


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a request is tried again.

    Attributes:
        max_attempts: attempts in all (first included) for a read failing with 5xx or a
            connection problem, and for a write whose connection was refused.
        max_rate_limited: 429 answers accepted for one call before it gives up.
        backoff_base: the first backoff, in seconds; it doubles with each attempt.
        backoff_max: the largest backoff, in seconds.
    """

    max_attempts: int = 4
    max_rate_limited: int = 8
    backoff_base: float = 0.5
    backoff_max: float = 30.0

    def __post_init__(self) -> None:
        for name in ("max_attempts", "max_rate_limited"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                message = f"RetryPolicy.{name}: got {value!r}; expected an integer >= 1"
                raise ConfigError(message)
        if not 0 < self.backoff_base <= self.backoff_max:
            message = (
                f"RetryPolicy: got backoff_base={self.backoff_base!r}, backoff_max="
                f"{self.backoff_max!r}; expected 0 < backoff_base <= backoff_max"
            )
            raise ConfigError(message)

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Backoff after ``attempt`` failures, drawn from ``[d/2, d]``, ``d = min(backoff_max,
        backoff_base * 2**(attempt-1))``: jitter spreads clients apart, never to zero."""
        ceiling = min(self.backoff_max, self.backoff_base * 2.0 ** max(0, attempt - 1))
        return ceiling / 2 + rng.random() * ceiling / 2

    def pause_after_429(
        self,
        error: RateLimitError,
        count: int,
        rng: random.Random,
        limits: RateLimits,
        *,
        now: float,
        deadline: float,
    ) -> float:
        """Seconds to pause the whole budget after the ``count``-th 429 of one call:
        ``Retry-After`` (or a backoff), at least ``limits.retry_after_floor``.

        Raises:
            RateLimitError: ``error`` with a hint, when this call gives up.
        """
        floor = limits.retry_after_floor
        if error.retry_after is not None:
            pause = max(error.retry_after, floor)
        else:
            pause = max(self.backoff(count, rng), floor)
        if count > self.max_rate_limited:
            extra = f"gave up after {count} answers of 429 (RetryPolicy.max_rate_limited)"
            raise with_hint(error, extra)
        if now + pause > deadline:
            extra = (
                f"waiting {pause:g}s more would pass the wait cap "
                f"(RateLimits.max_wait={limits.max_wait:g}s)"
            )
            raise with_hint(error, extra)
        return pause

    def delay_or_raise(
        self,
        error: PracticeflowError,
        failures: int,
        rng: random.Random,
        *,
        now: float,
        deadline: float,
        cause: BaseException | None,
    ) -> float:
        """After a retryable failure: the backoff before the next attempt.

        Raises:
            PracticeflowError: ``error`` (from ``cause``), when out of attempts or when
                the backoff would pass ``deadline``.
        """
        if failures >= self.max_attempts:
            raise error from cause
        delay = self.backoff(failures, rng)
        if now + delay > deadline:
            raise error from cause
        return delay


def with_hint(error: RateLimitError, extra: str) -> RateLimitError:
    """The same 429 error with ``extra`` appended to its hint (the message is rebuilt)."""
    hint = f"{error.hint}; {extra}" if error.hint else extra
    return RateLimitError(
        error.method,
        error.path,
        error.status,
        error.problem,
        retry_after=error.retry_after,
        hint=hint,
    )


#: The transport's errors for a connection that was never opened.
_CONNECT_FAILURES: Final = frozenset({"ConnectTimeoutError", "NewConnectionError"})


def refused_before_sending(exc: BaseException) -> bool:
    """Whether a ``requests`` error means the request never left this machine: the connection
    was never opened (a ``ConnectTimeout``, or urllib3's connect failures, recognised by name
    anywhere in the chain); a read timeout or a reset is not one."""
    seen: set[int] = set()
    pending: list[object] = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen or not isinstance(current, BaseException):
            continue
        seen.add(id(current))
        if isinstance(current, requests.ConnectTimeout) or _CONNECT_FAILURES.intersection(
            cls.__name__ for cls in type(current).__mro__
        ):
            return True
        pending.extend(current.args)
        pending.extend(
            getattr(current, name, None) for name in ("reason", "__cause__", "__context__")
        )
    return False
