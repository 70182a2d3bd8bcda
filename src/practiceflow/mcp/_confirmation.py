"""What makes a confirmation of a previewed write trustworthy and single-use.

* **The sealed state** (:func:`seal_state`, :func:`open_state`): the ``confirm_token`` (or
  ``requestState``) the client carries from preview to confirmation, sealed with the state
  store's key (Fernet), so a process sharing the store opens it and nothing else can make
  or alter one. It binds the practice, the tool, a digest of the exact arguments, the
  write's id and an expiry; the arguments themselves stay in the store.
* **The code only the user sees** (:func:`new_code`, :func:`same_code`): without
  elicitation the server prints it on its standard error, never in a tool result; it is
  kept sealed with the write, and :data:`MAX_CODE_MISSES` wrong codes void the preview.
* **The claim** (:class:`Claimant`): a process sends a write only while it holds its claim;
  another takes it over when the holder's process is gone or the claim is older than
  :data:`CLAIM_LEASE`. The write goes through the runner's journal, so one whose answer
  was lost is read back and never sent again on a guess.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import socket
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from practiceflow.errors import ConfigError
from practiceflow.state.sealing import MARK, Sealer

#: How a sealed state starts (its version): a client's value that lacks it is not ours.
STATE_PREFIX: Final = "pfw1."
#: What a sealed state's payload says it is, so that no other sealed value of the store
#: passes for one.
_KIND: Final = "practiceflow.mcp.confirmation"
#: After this long a claim is stale and another process may take it over: longer than a
#: live confirmation takes (the assistant's budget waits 60 s at most, a request times out
#: well before this).
CLAIM_LEASE: Final = timedelta(minutes=10)
#: Wrong codes that void a preview (a guess has 5 chances in a million).
MAX_CODE_MISSES: Final = 5

_NOT_OURS: Final = (
    "confirm_token: not a confirmation this practice's server issued, or it was altered; "
    "nothing was sent. Call the tool again for a fresh preview."
)


def arguments_digest(arguments: Mapping[str, Any]) -> str:
    """The digest of a call's exact arguments (canonical JSON, SHA-256, hex)."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class SealedState:
    """What a sealed state binds.

    Attributes:
        write_id: the previewed write (its row in the store).
        practice: the practice it belongs to.
        tool: the tool that previewed it.
        digest: the digest of the exact arguments previewed.
        expires_at: when it stops being confirmable (UTC).
    """

    write_id: str
    practice: str
    tool: str
    digest: str
    expires_at: datetime


def seal_state(sealer: Sealer, state: SealedState) -> str:
    """The text handed to the client for ``state`` (sealed with the store's key)."""
    payload = {
        "kind": _KIND,
        "write": state.write_id,
        "practice": state.practice,
        "tool": state.tool,
        "digest": state.digest,
        "expires": state.expires_at.astimezone(UTC).isoformat(),
    }
    sealed = sealer.seal(payload, "confirmation state")
    return STATE_PREFIX + str(sealed[MARK])


def open_state(sealer: Sealer, text: str) -> SealedState:
    """The state a client handed back, checked to be one this store's key sealed.

    Raises:
        ConfigError: it was not sealed with this key, was altered, or is not a
            confirmation state; the message says nothing was sent.
    """
    if not text.startswith(STATE_PREFIX):
        raise ConfigError(_NOT_OURS)
    try:
        payload = sealer.open({MARK: text.removeprefix(STATE_PREFIX)})
    except (ConfigError, UnicodeError, ValueError):
        raise ConfigError(_NOT_OURS) from None
    if not isinstance(payload, dict) or payload.get("kind") != _KIND:
        raise ConfigError(_NOT_OURS)
    try:
        return SealedState(
            str(payload["write"]),
            str(payload["practice"]),
            str(payload["tool"]),
            str(payload["digest"]),
            datetime.fromisoformat(str(payload["expires"])),
        )
    except (KeyError, ValueError):
        raise ConfigError(_NOT_OURS) from None


def new_code() -> str:
    """A fresh six-digit confirmation code."""
    return f"{secrets.randbelow(10**6):06d}"


def same_code(expected: str, offered: str) -> bool:
    """Whether the code offered is the one expected (spaces and dashes ignored; constant
    time)."""
    cleaned = "".join(ch for ch in offered if ch not in " -")
    return hmac.compare_digest(expected.encode(), cleaned.encode("utf-8", "replace"))


class Claimant:
    """This process, as it claims writes in the store: ``host:pid:nonce``."""

    def __init__(self) -> None:
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.name = f"{self.host}:{self.pid}:{uuid.uuid4().hex[:8]}"

    def may_take(self, holder: str, since: datetime, now: datetime) -> bool:
        """Whether a claim held by ``holder`` since ``since`` may be taken over now: it is
        stale, or its process ran on this machine and runs no more."""
        if now - since >= CLAIM_LEASE:
            return True
        host, _, rest = holder.partition(":")
        pid_text = rest.partition(":")[0]
        if host != self.host or not pid_text.isdigit():
            return False  # another machine's: only its lease tells
        pid = int(pid_text)
        return pid != self.pid and not _alive(pid)


def _alive(pid: int) -> bool:
    """Whether a process with that pid runs on this machine (a reused pid counts as
    alive: the claim is then waited out, never taken early)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
