"""What needs a person: the one writer of the attention table (docs/architecture.md), and the
one definition read by ``attention list``, ``runs list --status in_doubt``, the console and
``/metrics``: an ``open`` entry, or a run held ``in_doubt`` (quarantined, or a step in doubt).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from practiceflow.errors import ConfigError
from practiceflow.runner.quarantine import is_quarantined
from practiceflow.state import RunRecord, StateStore
from practiceflow.state.attention_rows import AttentionRecord, AttentionStatus
from practiceflow.state.runids import MIN_PREFIX

logger = logging.getLogger("practiceflow.runner")

#: Who closes an entry that evidence settled.
SWEEP: Final = "sweep"
#: How each kind is shown where runs are listed (the recipe column).
KIND_LABELS: Final = {
    "gap": "gap: ",
    "subscription_in_doubt": "subscription in doubt: ",
    "unrecognised": "unrecognised:",
    "silent_subscription": "silent subscription: ",
    "retries_exhausted": "retries exhausted: ",
}


def label(entry: AttentionRecord) -> str:
    """The entry as named in lists (``gap: eform_submitted``)."""
    return KIND_LABELS.get(entry.kind, entry.kind + ": ") + entry.trigger


def settle_command(entry: AttentionRecord | str) -> str:
    """The command that settles an entry."""
    ident = entry if isinstance(entry, str) else entry.attention_id
    return f"practiceflow attention settle {ident[:8]} --note TEXT"


_FOR_PERSON: Final = ". Check the practice for them, start what is missing by hand, then settle it"


def list_gap(
    store: StateStore,
    practice: str,
    trigger: str,
    start: datetime,
    end: datetime,
    why: str,
    *,
    who: str = "serve",
    checking: bool = False,
) -> AttentionRecord:
    """List a window (``start``: last sign of life, ``end``: listening again) in which a
    trigger's events may have been missed; ``who`` was down; ``checking``: a sweep will try to
    prove it complete first. Listing the same window again returns the same entry.
    """
    begin, until = (moment.isoformat(timespec="seconds") for moment in (start, end))
    reason = f"{who} was down from {begin} to {until}: {trigger} events in this window may "
    reason += f"have been missed ({why})" + ("" if checking else _FOR_PERSON)
    status: AttentionStatus = "checking" if checking else "open"
    entry, created = store.add_attention(
        "gap", practice, trigger, f"gap:{trigger}:{begin}..{until}", reason, window=(start, end),
        status=status,
    )  # fmt: skip
    if created and not checking:
        logger.warning("needs attention (%s): %s", settle_command(entry), entry.reason)
    return entry


def close_by_evidence(store: StateStore, entry: AttentionRecord, note: str, evidence: Any) -> bool:
    """Close an entry that a check proved settled (``settled_by`` :data:`SWEEP`)."""
    return store.update_attention(
        entry.attention_id, "closed", evidence=evidence, settled_by=SWEEP, note=note
    )


def hold_for_person(store: StateStore, entry: AttentionRecord, reason: str, evidence: Any) -> None:
    """Hand an entry a check could not settle to a person, saying what could not be checked."""
    text = reason + _FOR_PERSON
    if store.update_attention(entry.attention_id, "open", reason=text, evidence=evidence):
        logger.warning("needs attention (%s): %s", settle_command(entry), text)


def record_subscription_doubt(
    store: StateStore, practice: str, trigger: str, *, polled: bool, fleet: bool = False
) -> str:
    """List a trigger whose subscribe got no answer: it may exist on the server and is not
    repeated (a second one could deliver twice). While an entry is open nothing new is listed.
    ``polled``: received by polling meanwhile; ``fleet``: for ``worker``. Returns the entry's id.
    """
    earlier = store.list_attention(
        practice=practice, kind="subscription_in_doubt", trigger=trigger, limit=1000
    )
    for entry in earlier:
        if entry.status != "closed":
            return entry.attention_id
    meanwhile = (
        "Meanwhile its events are received by polling (deduplicated with the webhook, as in "
        "mode: both)."
        if polled
        else "Its events are NOT being received meanwhile: it has no poll source."
    )
    forget = f"practiceflow triggers unsubscribe {trigger} --forget"
    if fleet:
        forget += f" --practice {practice} --state <the fleet's postgresql:// URL>"
    reason = (
        f"the webhook subscription of trigger {trigger!r} is in doubt: its subscribe (POST "
        "/api/v1/webhooks) got no answer, so it may exist on the server; it is not repeated "
        f"(a second one could deliver twice). {meanwhile} To settle it: 1. check the "
        "practice's webhook settings and delete a subscription of this trigger's event "
        f"found there; 2. run '{forget}', which closes this entry; 3. restart "
        f"{'the workers' if fleet else 'serve'}: it subscribes again"
    )
    # Numbered: callers that race to list it (two workers) agree on one entry.
    entry, _ = store.add_attention(
        "subscription_in_doubt",
        practice,
        trigger,
        f"subscription-doubt:{trigger}#{len(earlier) + 1}",
        reason,
        evidence={"trigger": trigger, "polled": polled},
    )
    logger.warning("needs attention (entry %s): %s", entry.attention_id[:8], reason)
    return entry.attention_id


def close_subscription_doubt(
    store: StateStore, practice: str, trigger: str, who: str, note: str
) -> list[str]:
    """Close the open subscription-in-doubt entries of a trigger; returns their ids."""
    closed: list[str] = []
    for entry in store.list_attention(
        practice=practice,
        kind="subscription_in_doubt",
        trigger=trigger,
        statuses=("open", "checking"),
    ):
        if store.update_attention(entry.attention_id, "closed", settled_by=who, note=note):
            closed.append(entry.attention_id)
    return closed


def hold_delivery(
    store: StateStore, practice: str, trigger: str, event_key: str, delivery_id: str, reason: str
) -> tuple[str, bool]:
    """List a delivery held without running; returns the entry's id and whether it is new."""
    text = (
        f"a delivery held without running: {reason}. If it was not a real event, settle it; "
        "if it was, start what it asked for by hand, then settle it saying so"
    )
    entry, created = store.add_attention(
        "unrecognised",
        practice,
        trigger,
        event_key,
        text,
        evidence={"deliveryId": delivery_id, "event": event_key, "reason": reason},
    )
    return entry.attention_id, created


def release_delivery(store: StateStore, practice: str, trigger: str, delivery_id: str) -> None:
    """Close the entry of a held delivery proven to be the test delivery asked for."""
    for entry in store.list_attention(
        practice=practice, kind="unrecognised", trigger=trigger, statuses=("open",)
    ):
        evidence = entry.evidence if isinstance(entry.evidence, Mapping) else {}
        if evidence.get("deliveryId") == delivery_id:
            store.update_attention(
                entry.attention_id,
                "closed",
                settled_by="practiceflow",
                note="it was the test delivery asked for",
            )


def open_entries(store: StateStore, practice: str | None) -> list[AttentionRecord]:
    """The entries that wait for a person."""
    return store.list_attention(practice=practice, statuses=("open",))


def find_entry(store: StateStore, ident: str) -> AttentionRecord | None:
    """The entry with this id or id prefix (8+ characters); ConfigError when ambiguous."""
    text = ident.strip().lower()
    found = store.get_attention(text)
    if found is not None or len(text) < MIN_PREFIX:
        return found
    matches = store.list_attention(id_prefix=text, limit=20)
    if len(matches) > 1:
        shown = ", ".join(f"{entry.attention_id} ({label(entry)})" for entry in matches)
        message = f"id {ident!r} is the start of {len(matches)} entries: {shown}; give more"
        raise ConfigError(message)
    return matches[0] if matches else None


def settle(store: StateStore, entry: AttentionRecord, who: str, note: str) -> None:
    """A person's settling of an entry; ConfigError (who, when, how) when settled already."""
    if not store.update_attention(entry.attention_id, "closed", settled_by=who, note=note):
        message = (
            f"{label(entry)} {entry.attention_id} was settled already by {entry.settled_by} "
            f"at {entry.settled_at.isoformat(timespec='seconds') if entry.settled_at else '?'}"
            f" ({entry.note or 'no note'})"
        )
        raise ConfigError(message)


def needs_person(store: StateStore, run: RunRecord) -> bool:
    """Whether a run waits for a person: held in doubt, quarantined or with a step in doubt."""
    if run.status != "in_doubt":
        return False
    if is_quarantined(run):
        return True
    return any(step.status == "in_doubt" for step in store.get_steps(run.run_id))
