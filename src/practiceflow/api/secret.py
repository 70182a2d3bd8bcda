"""A string that never shows itself: the client secret and other credentials.

:class:`Secret` holds the value and masks it in ``repr()``, ``str()`` and f-strings, so an
object that carries one (settings, a client, an error's ``__dict__`` in a traceback) can be
printed or logged without leaking it. Code that really needs the value calls
:meth:`Secret.reveal`, which makes every such place easy to find.
"""

from __future__ import annotations

import hmac
from typing import Final, NoReturn

__all__ = ["MASK", "Secret"]

#: What is shown wherever a secret would have been.
MASK: Final = "***"


class Secret:
    """A credential whose ``repr`` and ``str`` are masked.

    Args:
        value: the secret text.

    Example:
        >>> s = Secret("hunter2")
        >>> s, str(s), f"{s}"
        (Secret('***'), '***', '***')
        >>> s.reveal()
        'hunter2'
    """

    __slots__ = ("_value",)

    def __init__(self, value: str | Secret) -> None:
        if isinstance(value, Secret):
            value = value.reveal()
        if not isinstance(value, str):
            # Untyped callers (YAML, environment readers) can still get here.
            message = f"Secret: got {type(value).__name__}; expected str"  # type: ignore[unreachable]
            raise TypeError(message)
        self._value = value

    def reveal(self) -> str:
        """Return the secret text itself; only for building the request that needs it."""
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return f"Secret('{MASK}')"

    def __str__(self) -> str:
        return MASK

    def __format__(self, format_spec: str) -> str:
        return MASK

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        # Constant time, so comparing secrets leaks nothing through timing.
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __reduce__(self) -> NoReturn:
        # Pickling would write the plain value into a file or a queue message.
        message = "a Secret cannot be pickled; store where to read it from instead"
        raise TypeError(message)
