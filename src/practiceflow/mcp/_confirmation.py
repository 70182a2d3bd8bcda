"""What makes a confirmation of a previewed write trustworthy and single-use: the sealed
state the client carries (Fernet, the store's key; binds practice, tool, arguments digest,
write id, expiry), the code only the user sees (:data:`MAX_CODE_MISSES` wrong ones void the
preview), and the claim (:class:`Claimant`) a process holds while it sends.
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
#: So that no other sealed value of the store passes for a confirmation state.
_KIND: Final = "practiceflow.mcp.confirmation"
#: After this a claim is stale and may be taken over: longer than a live confirmation
#: takes (the assistant's budget waits 60 s at most).
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
    """What a sealed state binds (``digest``: of the exact arguments previewed)."""

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
    """The state a client handed back; ConfigError unless this store's key sealed it."""
    if not text.startswith(STATE_PREFIX):
        raise ConfigError(_NOT_OURS)
    try:
        payload = sealer.open({MARK: text.removeprefix(STATE_PREFIX)})
        if not isinstance(payload, dict) or payload.get("kind") != _KIND:
            raise ConfigError(_NOT_OURS)
        return SealedState(
            str(payload["write"]),
            str(payload["practice"]),
            str(payload["tool"]),
            str(payload["digest"]),
            datetime.fromisoformat(str(payload["expires"])),
        )
    except (ConfigError, KeyError, UnicodeError, ValueError):
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
