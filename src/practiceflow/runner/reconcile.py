"""Reconciling in-doubt writes by reading back, never by sending again.

A write whose answer was lost (timeout, 5xx, dropped connection, or a crash after it was
marked ``sent``) is ``in_doubt``. Where the API lets us look, a named reconciler reads back
and returns a :class:`Verdict`:

``found``
    the write happened: the runner records the found record as the step's output
    (the step becomes ``succeeded``, noted as reconciled);
``absent``
    it certainly did not happen: the step is marked safe to retry and sent again;
``unknown``
    the API cannot tell (no read-back exists, or more than one candidate matched): the run
    is held for a person (``practiceflow runs resolve``).

Reconcilers, by action key (spec sections named):

* ``create_client``: a client created with ``externalSystemID`` (else ``entityCode``) is
  found in ``GET /api/v1/entities?lastUpdated=`` from shortly before it was sent (2.1, 4.1);
* ``create_bill``: a bill for the same ``entityKey`` with the same bill date and total, in
  ``GET /api/v1/bills/list?startDate&endDate`` (2.4, 4.2), created after it was sent;
* ``convert_lead``: the entity is ``Active`` (found) or still a ``Lead`` (absent) in
  ``GET /api/v1/entities/{key}`` (3);
* ``create_lead``: a lead is an entity whose status is Lead (1, 2.3), so one created with an
  ``email`` is found by that email among the Lead rows of ``GET /api/v1/entities?lastUpdated=``
  from shortly before it was sent (2.1 lists ``email`` and ``status`` on every summary; the
  leads list's own parameters are not shown, so it is not relied on).

Every other write (eForms, onboardings, AML checks...) has no read-back the spec shows,
so it is held for a person.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal

from practiceflow.errors import NotFoundError, PracticeflowError
from practiceflow.hooks import ClientLike, tolerant
from practiceflow.templating import filter_pathseg

__all__ = [
    "RECONCILERS",
    "WINDOW",
    "Reconciler",
    "Verdict",
    "reconcile",
    "register_reconciler",
]

logger = logging.getLogger("practiceflow.runner")

#: How far before the ``sent`` time a read-back looks (clock skew between us and the API).
WINDOW = timedelta(minutes=10)

Outcome = Literal["found", "absent", "unknown"]


@dataclass(frozen=True)
class Verdict:
    """What a read-back found.

    Attributes:
        outcome: ``found``, ``absent`` or ``unknown`` (see the module docstring).
        note: what was looked for and what was seen, for the journal.
        output: with ``found``, the step's output.
    """

    outcome: Outcome
    note: str
    output: dict[str, Any] = field(default_factory=dict)


Reconciler = Callable[[ClientLike, Mapping[str, Any], datetime], Verdict]

RECONCILERS: dict[str, Reconciler] = {}


def register_reconciler(action_key: str) -> Callable[[Reconciler], Reconciler]:
    """Register a reconciler for an action (decorator).

    Args:
        action_key: the action it reads back for.

    Returns:
        The decorator; the function is registered unchanged.
    """

    def register(func: Reconciler) -> Reconciler:
        RECONCILERS[action_key] = func
        return func

    return register


def reconcile(
    action_key: str, client: ClientLike | None, data: Mapping[str, Any], sent_at: datetime
) -> Verdict:
    """Find out whether an in-doubt write happened.

    Args:
        action_key: the action of the step.
        client: the API client (None: nothing can be read).
        data: the step's input, rendered again exactly as it was sent.
        sent_at: when the step was marked ``sent`` (UTC).

    Returns:
        The verdict; a failure to read back is ``unknown``, never an exception.
    """
    func = RECONCILERS.get(action_key)
    if func is None:
        note = f"{action_key!r} has no read-back in the API; a person must check and resolve"
        return Verdict("unknown", note)
    if client is None:
        return Verdict("unknown", "no client to read back with")
    try:
        return func(client, data, sent_at)
    except (PracticeflowError, ValueError, TypeError) as exc:
        logger.warning("read-back for %s failed: %s", action_key, exc)
        return Verdict("unknown", f"the read-back failed ({exc}); a person must check")


def _since(sent_at: datetime) -> datetime:
    since = sent_at.astimezone(UTC) - WINDOW
    return min(since, datetime.now(UTC) - timedelta(seconds=1))


@register_reconciler("create_client")
def _client_by_identifier(
    client: ClientLike, data: Mapping[str, Any], sent_at: datetime
) -> Verdict:
    field_name = "externalSystemID" if data.get("externalSystemID") else "entityCode"
    wanted = data.get(field_name)
    if not wanted:
        note = "no externalSystemID or entityCode was sent, so the new client cannot be found"
        return Verdict("unknown", note)
    since = _since(sent_at)
    matches = [
        row
        for row in _all_rows(client, "/api/v1/entities", {"lastUpdated": since}, None)
        if isinstance(row, Mapping) and row.get(field_name) == wanted
    ]
    where = f"GET /api/v1/entities?lastUpdated={since.isoformat()} by {field_name}"
    if len(matches) == 1:
        row = dict(matches[0])
        return Verdict("found", f"{where}: found {row.get('entityKey')}", row)
    if not matches:
        return Verdict("absent", f"{where}: no client was created")
    keys = [row.get("entityKey") for row in matches]
    return Verdict("unknown", f"{where}: {len(matches)} clients match ({keys}); a person decides")


def _line_total(line: Any) -> float:
    amount = float(line.get("amount", 0))
    if line.get("taxAmount") is not None:
        return amount + float(line["taxAmount"])
    return amount + amount * float(line.get("taxPercent", 0)) / 100


def _created(row: Mapping[str, Any]) -> datetime | None:
    text = row.get("createdOn")
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@register_reconciler("create_bill")
def _bill_by_entity_date_total(
    client: ClientLike, data: Mapping[str, Any], sent_at: datetime
) -> Verdict:
    key = data.get("entityKey")
    lines = data.get("lineItems") or []
    total = round(sum(_line_total(line) for line in lines if isinstance(line, Mapping)), 2)
    if data.get("billDate"):
        start = end = date.fromisoformat(str(data["billDate"]))
    else:  # the server dates it "today" in its own clock: look a day either side
        start = (sent_at - timedelta(days=1)).date()
        end = (sent_at + timedelta(days=1)).date()
    params = {"startDate": start.isoformat(), "endDate": end.isoformat()}
    since = sent_at.astimezone(UTC) - WINDOW
    matches = []
    for row in _all_rows(client, "/api/v1/bills/list", params, 100):
        if not isinstance(row, Mapping) or row.get("entityKey") != key:
            continue
        if abs(float(row.get("billTotal") or 0) - total) > 0.005:
            continue
        created = _created(row)
        if created is not None and created < since:
            continue
        matches.append(dict(row))
    where = f"GET /api/v1/bills/list {start}..{end}: entity {key}, total {total:.2f}"
    if len(matches) == 1:
        return Verdict("found", f"{where}: found bill {matches[0].get('billingID')}", matches[0])
    if not matches:
        return Verdict("absent", f"{where}: no such bill was created")
    ids = [row.get("billingID") for row in matches]
    return Verdict("unknown", f"{where}: {len(matches)} bills match ({ids}); a person decides")


@register_reconciler("convert_lead")
def _lead_is_active(client: ClientLike, data: Mapping[str, Any], sent_at: datetime) -> Verdict:
    del sent_at
    key = str(data.get("entityKey", ""))
    where = f"GET /api/v1/entities/{key}"
    try:
        entity = client.get(f"/api/v1/entities/{filter_pathseg(key)}")
    except NotFoundError:
        return Verdict("unknown", f"{where}: not found; a person decides")
    status = tolerant.entity_status(entity)
    if status is not None and status.strip().lower() == "active":
        return Verdict(
            "found", f"{where}: the entity is Active", {"entityKey": key, "status": "Active"}
        )
    if status is not None and status.strip().lower() == "lead":
        return Verdict("absent", f"{where}: the entity is still a Lead")
    return Verdict("unknown", f"{where}: status {status!r} does not tell")


@register_reconciler("create_lead")
def _lead_by_email(client: ClientLike, data: Mapping[str, Any], sent_at: datetime) -> Verdict:
    wanted = str(data.get("email") or "").strip().lower()
    if not wanted:
        return Verdict("unknown", "no email was sent, so the new lead cannot be found")
    since = _since(sent_at)
    matches = [
        row
        for row in _all_rows(client, "/api/v1/entities", {"lastUpdated": since}, None)
        if isinstance(row, Mapping)
        and str(row.get("email") or "").strip().lower() == wanted
        and (tolerant.entity_status(row) or "").strip().lower() == "lead"
    ]
    # The email is personal data: the note names the field, never its value.
    where = f"GET /api/v1/entities?lastUpdated={since.isoformat()}: Lead rows by email"
    if len(matches) == 1:
        row = dict(matches[0])
        return Verdict("found", f"{where}: found {row.get('entityKey')}", row)
    if not matches:
        return Verdict("absent", f"{where}: no lead was created")
    keys = [row.get("entityKey") for row in matches]
    return Verdict("unknown", f"{where}: {len(matches)} leads match ({keys}); a person decides")


def _all_rows(
    client: ClientLike, path: str, params: Mapping[str, Any], page_size: int | None
) -> list[Any]:
    paginate = getattr(client, "paginate", None)
    if callable(paginate):
        return list(paginate(path, params=params, page_size=page_size))
    return tolerant.rows(client.get(path, params=params))
