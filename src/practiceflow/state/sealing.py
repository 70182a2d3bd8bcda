"""How the store writes a JSON value: its text (:func:`to_json`), sealed with Fernet.

Every JSON value the store writes may hold personal data, so it is sealed as
``{"$enc": "<token>"}`` (a dump or backup shows none of it; an event's ``source``, queried
in SQL, stays beside it). The key: ``PRACTICEFLOW_STATE_KEY``, else the file
``PRACTICEFLOW_STATE_KEY_FILE`` names, else the store's own key file (created 0600 at the
first seal). Nothing is ever guessed or written in clear.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final

from cryptography.fernet import Fernet, InvalidToken

from practiceflow.errors import BugError, ConfigError
from practiceflow.state.rows import Json

KEY_ENV: Final = "PRACTICEFLOW_STATE_KEY"
KEY_FILE_ENV: Final = "PRACTICEFLOW_STATE_KEY_FILE"
#: The key of a sealed value's token.
MARK: Final = "$enc"
#: Keys of a sealed object kept in clear: never personal, and queried in SQL.
_PLAIN_KEYS: Final = ("source",)


def to_json(value: Json, what: str) -> str:
    """A JSON value as ASCII text with sorted keys (BugError when it is not JSON): a lone
    surrogate (a name cut inside an emoji by a UTF-16 service) survives, as UTF-8 could not."""
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        message = f"{what} is not JSON: {exc}"
        raise BugError(message) from exc


def json_or_null(value: Json, what: str) -> str | None:
    """Encode a JSON column; ``None`` is stored as SQL NULL (see :func:`to_json`)."""
    return None if value is None else to_json(value, what)


def from_json(text: str | None) -> Json:
    """Decode a value written by :func:`to_json` (``None`` stays ``None``)."""
    return None if text is None else json.loads(text)


class Sealer:
    """Seals and opens a store's JSON values with its key (read on first need); ``key_file``
    is the store's own, used when neither environment variable is set."""

    __slots__ = ("_fernet", "_key_file")

    def __init__(self, key_file: Path | None) -> None:
        self._key_file = key_file
        self._fernet: Fernet | None = None

    def _where(self) -> str:
        """How the key is supplied, for error messages (never the key)."""
        named = os.environ.get(KEY_FILE_ENV)
        if os.environ.get(KEY_ENV):
            return f"the key in {KEY_ENV}"
        if named:
            return f"the key file {named} ({KEY_FILE_ENV})"
        return f"the key file {self._key_file}"

    def _key(self, *, create: bool) -> Fernet | None:
        if self._fernet is not None:
            return self._fernet
        text = os.environ.get(KEY_ENV)
        named = os.environ.get(KEY_FILE_ENV)
        path = Path(named) if named else self._key_file
        if not text and path is not None:
            if path.is_file():
                text = path.read_text(encoding="ascii").strip()
            elif create and not named:
                text = _create_key_file(path)
        if not text:
            return None
        try:
            self._fernet = Fernet(text.encode("ascii"))
        except (ValueError, UnicodeEncodeError):
            message = f"state store: {self._where()} is not a valid key (expected a Fernet key)"
            raise ConfigError(message) from None
        return self._fernet

    def check(self) -> None:
        """Raise :class:`ConfigError` for a key given but unusable (not a Fernet key, or a
        ``PRACTICEFLOW_STATE_KEY_FILE`` that is no file)."""
        named = os.environ.get(KEY_FILE_ENV)
        if named and not os.environ.get(KEY_ENV) and not Path(named).is_file():
            message = f"state store: {KEY_FILE_ENV} names {named}, which is not a file"
            raise ConfigError(message)
        self._key(create=False)

    def seal(self, value: Any, what: str) -> Any:
        """``value`` sealed for storage (``None`` stays ``None``; ``what`` names it in
        errors): ConfigError when no key can be found or created, BugError if not JSON."""
        if value is None:
            return None
        fernet = self._key(create=True)
        if fernet is None:
            message = (
                f"state store: no key to encrypt personal data; set {KEY_ENV} "
                f"(or {KEY_FILE_ENV} to a key file)"
            )
            raise ConfigError(message)
        text = to_json(value, what)
        sealed: dict[str, Any] = {MARK: fernet.encrypt(text.encode("utf-8")).decode("ascii")}
        if isinstance(value, dict):
            sealed.update({k: value[k] for k in _PLAIN_KEYS if isinstance(value.get(k), str)})
        return sealed

    def open(self, value: Any) -> Any:
        """A value as stored, opened (one not sealed as it is); ConfigError, saying how to
        supply the key, when the key is missing or not the one that sealed it."""
        if not (isinstance(value, dict) and isinstance(value.get(MARK), str)):
            return value
        fernet = self._key(create=False)
        if fernet is None:
            message = (
                f"state store: stored data is encrypted and no key was found ({self._where()} "
                f"is missing); set {KEY_ENV} to the key that encrypted it, or restore the key file"
            )
            raise ConfigError(message)
        try:
            plain = fernet.decrypt(value[MARK].encode("ascii"))
        except InvalidToken:
            message = (
                f"state store: stored data cannot be decrypted with {self._where()}; set "
                f"{KEY_ENV} to the key that encrypted it, or restore its key file"
            )
            raise ConfigError(message) from None
        return json.loads(plain)


def _create_key_file(path: Path) -> str:
    """A new key written to ``path`` (owner read/write only); a racing creator's wins."""
    path.parent.mkdir(parents=True, exist_ok=True)
    key = Fernet.generate_key().decode("ascii")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text(encoding="ascii").strip()
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(key + "\n")
        out.flush()
        os.fsync(out.fileno())
    return key
