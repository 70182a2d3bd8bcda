"""The named read-backs modules declare (``read_back.hook``; listed in docs/modules-guide.md).

A read-back gets the client, the step's input as sent (marker included) and when it was
marked ``sent``, and returns a :class:`Verdict`: ``found``, ``absent`` (sent again) or
``unknown`` (a person decides). ``absent`` needs positive evidence: a list that would show
the record and does not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import cached_property
from typing import Any, Final, Literal

from practiceflow.errors import BugError, NotFoundError
from practiceflow.hooks import tolerant
from practiceflow.hooks.action_context import ClientLike
from practiceflow.templating import filter_pathseg

#: How far before the ``sent`` time a read-back looks (clock skew between us and the API).
WINDOW = timedelta(minutes=10)

Outcome = Literal["found", "absent", "unknown"]

_MARKER: Final = re.compile(r"\bpf-[0-9a-f]{10}\b")


@dataclass(frozen=True)
class Verdict:
    """What a read-back found (module docstring); ``note`` says what was looked for and
    seen, for the journal; ``output`` is the step's output with ``found``."""

    outcome: Outcome
    note: str
    output: dict[str, Any] = field(default_factory=dict)


ReadBack = Callable[[ClientLike, Mapping[str, Any], datetime], Verdict]

READ_BACKS: dict[str, ReadBack] = {}


def register_read_back(name: str) -> Callable[[ReadBack], ReadBack]:
    """Register a read-back under the name modules use in ``read_back.hook`` (a decorator;
    the function is registered unchanged). Raises BugError when the name is taken."""

    def register(func: ReadBack) -> ReadBack:
        if name in READ_BACKS:
            message = f"read-back {name!r} is registered twice"
            raise BugError(message)
        READ_BACKS[name] = func
        return func

    return register


def marker_in(value: Any) -> str | None:
    """The run marker (``pf-`` and ten hex digits) a free field's value carries, if any."""
    if not isinstance(value, str):
        return None
    found = _MARKER.search(value)
    return found.group(0) if found else None


def _since(sent_at: datetime) -> datetime:
    since = sent_at.astimezone(UTC) - WINDOW
    return min(since, datetime.now(UTC) - timedelta(seconds=1))


def _value(row: Any, name: str) -> Any:
    return tolerant.field(row, name)[1]


@register_read_back("client_by_identifier")
def _client_by_identifier(
    client: ClientLike, data: Mapping[str, Any], sent_at: datetime
) -> Verdict:
    field_name = "externalSystemID" if data.get("externalSystemID") else "entityCode"
    wanted = data.get(field_name)
    if not wanted:
        note = "no externalSystemID or entityCode was sent, so the new client cannot be found"
        return Verdict("unknown", note)
    since = _since(sent_at)
    rows = _objects(client, "/api/v1/entities", since)
    matches = [row for row in rows if _value(row, field_name) == wanted]
    where = f"GET /api/v1/entities?lastUpdated={since.isoformat()} by {field_name}"
    if marker_in(wanted) == wanted:  # the run's marker, not the caller's own identifier
        where += f" (marker {wanted})"
    if matches:
        return _one_entity(matches, where, "clients")
    # Absence proves nothing unless every row could have shown the field, and the new
    # record would be listed at all (leads may be listed only under /leads).
    blind = sum(1 for row in rows if not tolerant.field(row, field_name)[0])
    if blind:
        note = f"{where}: {blind} rows do not carry {field_name}; cannot tell, a person decides"
        return Verdict("unknown", note)
    if str(data.get("clientStatus") or "").strip().lower() == "lead":
        return _lead_client_in_leads(client, data, since, field_name, where)
    return Verdict("absent", f"{where}: no client was created")


def _lead_client_in_leads(
    client: ClientLike, data: Mapping[str, Any], since: datetime, field_name: str, where: str
) -> Verdict:
    """A client created as a lead may be listed only under ``/leads``: look there by the
    identifier when its rows carry it, else by name among the rows changed since."""
    where = f"{where}, then GET /api/v1/leads"
    rows = _objects(client, "/api/v1/leads", since, 100)
    if rows and all(tolerant.field(row, field_name)[0] for row in rows):
        matches = [row for row in rows if _value(row, field_name) == data.get(field_name)]
    else:
        wanted = str(data.get("entityName") or "").strip().lower()
        recent = [row for row in rows if _changed_since(row, since)]
        if not wanted or any(not tolerant.field(row, "entityName")[0] for row in recent):
            return Verdict("unknown", f"{where}: the lead rows cannot tell; a person decides")
        if any(_folded(row, "entityName") == wanted for row in recent):
            # A name is no identifier: a lead of that name proves nothing either way.
            note = f"{where}: a lead of that name was created since; a person decides"
            return Verdict("unknown", note)
        matches = []
    if matches:
        return _one_entity(matches, where, "leads")
    return Verdict("absent", f"{where}: no client or lead was created")


def _one_entity(matches: list[Any], where: str, noun: str) -> Verdict:
    """``found`` for the one entity that matches; ``unknown`` when several do."""
    if len(matches) == 1:
        row = dict(matches[0])
        return Verdict("found", f"{where}: found {_value(row, 'entityKey')}", row)
    keys = [_value(row, "entityKey") for row in matches]
    return Verdict("unknown", f"{where}: {len(matches)} {noun} match ({keys}); a person decides")


def _folded(row: Mapping[str, Any], name: str) -> str:
    return str(_value(row, name) or "").strip().lower()


def _changed_since(row: Mapping[str, Any], since: datetime) -> bool:
    """Whether a row changed at or after ``since``; a row without a time may have."""
    moment = tolerant.parse_time(_value(row, "lastUpdated"))
    return moment is None or moment >= since


def _line_totals(line: Mapping[str, Any]) -> set[float]:
    """Every total a server could give one line: either tax field may win when both
    are sent, and amounts may be rounded to cents per line or not."""
    amount = float(line.get("amount", 0))
    taxes: list[float] = []
    if line.get("taxAmount") is not None:
        taxes.append(float(line["taxAmount"]))
    if line.get("taxPercent") is not None:
        taxes.append(amount * float(line["taxPercent"]) / 100)
        taxes.append(round(round(amount, 2) * float(line["taxPercent"]) / 100, 2))
    if not taxes:
        taxes.append(0.0)
    totals = {amount + tax for tax in taxes}
    totals |= {round(amount, 2) + round(tax, 2) for tax in taxes}
    return totals


def _bill_totals(lines: list[Any]) -> set[float]:
    """The plausible bill totals (sums over the lines' plausible totals, in cents)."""
    sums = {0.0}
    for line in lines:
        if isinstance(line, Mapping):
            sums = {round(a + b, 6) for a in sums for b in _line_totals(line)}
            if len(sums) > 256:  # many lines: keep the spread, not every combination
                sums = {min(sums), max(sums)}
    return {round(value, 2) for value in sums}


class _BillReader:
    """Reads what a bill list row leaves out: the bill itself, the client's entityID."""

    def __init__(self, client: ClientLike, entity_key: str) -> None:
        self.client = client
        self.entity_key = entity_key

    def complete(self, row: Mapping[str, Any], *names: str) -> Mapping[str, Any]:
        wanted = names or ("entityKey", "createdOn")
        if all(tolerant.field(row, name)[0] for name in wanted):
            return row
        bill_id = _value(row, "billingID")
        if bill_id is None:
            return row
        detail = self.client.get(f"/api/v1/bills/{filter_pathseg(str(bill_id))}")
        return {**row, **detail} if isinstance(detail, Mapping) else row

    @cached_property
    def entity_id(self) -> Any:
        return _value(
            self.client.get(f"/api/v1/entities/{filter_pathseg(self.entity_key)}"), "entityID"
        )

    def ours(self, row: Mapping[str, Any]) -> bool | None:
        """Whether the row is a bill of our client; None when it cannot tell."""
        has_key, key = tolerant.field(row, "entityKey")
        if has_key and key is not None:
            return str(key) == self.entity_key
        has_id, entity_id = tolerant.field(row, "entityID")
        if has_id and entity_id is not None and self.entity_id is not None:
            return str(entity_id) == str(self.entity_id)
        return None


@register_read_back("bill_by_entity_date_total")
def _bill_by_entity_date_total(
    client: ClientLike, data: Mapping[str, Any], sent_at: datetime
) -> Verdict:
    key = str(data.get("entityKey") or "")
    lines = data.get("lineItems") or []
    totals = _bill_totals(list(lines))
    bill_date = str(data["billDate"]) if data.get("billDate") else None
    if bill_date is not None:
        start = date.fromisoformat(bill_date)
        end = start + timedelta(days=1)  # endDate may be exclusive: one day past
    else:  # the server dates it "today" in its own clock: look a day either side
        start = (sent_at - timedelta(days=1)).date()
        end = (sent_at + timedelta(days=2)).date()
    params = {"startDate": start.isoformat(), "endDate": end.isoformat()}
    since = sent_at.astimezone(UTC) - WINDOW
    reader = _BillReader(client, key)
    listed_rows = _all_rows(client, "/api/v1/bills/list", params, 100)
    tag = marker_in(data.get("billDetails"))
    if tag is not None:
        sent = str(data.get("billDetails"))
        by_marker = _bill_by_marker(reader, listed_rows, tag, f"{start}..{end}", sent)
        if by_marker is not None:
            return by_marker
    matches: list[dict[str, Any]] = []
    doubts: list[str] = []
    for listed in listed_rows:
        if not isinstance(listed, Mapping):
            continue
        row = reader.complete(listed)
        bill_id = _value(row, "billingID")
        ours = reader.ours(row)
        if ours is False:
            continue
        if ours is None:
            doubts.append(f"bill {bill_id} names no client we can compare")
            continue
        if bill_date is not None and _value(row, "billDate") not in (None, bill_date):
            continue
        created = tolerant.parse_time(_value(row, "createdOn"))
        if created is not None and created < since:
            continue
        total = _value(row, "billTotal")
        if isinstance(total, int | float) and not any(abs(total - t) <= 0.005 for t in totals):
            doubts.append(f"bill {bill_id} of this client has total {total}")
            continue
        if created is None:
            doubts.append(f"bill {bill_id} carries no createdOn")
            continue
        matches.append(dict(row))
    shown = "/".join(f"{t:.2f}" for t in sorted(totals))
    where = f"GET /api/v1/bills/list {start}..{end}: entity {key}, total {shown}"
    if len(matches) == 1 and not doubts:
        found = matches[0]
        return Verdict("found", f"{where}: found bill {_value(found, 'billingID')}", found)
    if not matches and not doubts:
        return Verdict("absent", f"{where}: no such bill was created")
    ids = [_value(row, "billingID") for row in matches]
    note = f"{where}: {len(matches)} bills match ({ids}); cannot tell ({'; '.join(doubts)})"
    return Verdict("unknown", note + "; a person decides")


def _bill_by_marker(
    reader: _BillReader, listed_rows: list[Any], tag: str, span: str, sent: str
) -> Verdict | None:
    """Look for the run's marker in ``billDetails``; None when that cannot settle it (a row
    holding a leading part of what was sent may have lost the marker to a cut)."""
    where = f"GET /api/v1/bills/list {span}: billDetails with marker {tag}"
    hits: list[dict[str, Any]] = []
    blind = 0
    for listed in listed_rows:
        if not isinstance(listed, Mapping):
            blind += 1
            continue
        row = reader.complete(listed, "billDetails")
        has, text = tolerant.field(row, "billDetails")
        if not has:
            blind += 1
        elif marker_in(text) == tag:
            hits.append(dict(row))
        elif isinstance(text, str) and text and sent.startswith(text):
            blind += 1  # our text, perhaps cut short: the marker may have been cut off
    if len(hits) == 1:
        return Verdict("found", f"{where}: found bill {_value(hits[0], 'billingID')}", hits[0])
    if not hits and not blind:
        return Verdict("absent", f"{where}: every bill read, none carries it")
    return None


@register_read_back("lead_is_active")
def _lead_is_active(client: ClientLike, data: Mapping[str, Any], sent_at: datetime) -> Verdict:
    del sent_at
    key = str(data.get("entityKey", ""))
    where = f"GET /api/v1/entities/{key}"
    try:
        entity = client.get(f"/api/v1/entities/{filter_pathseg(key)}")
    except NotFoundError:
        return Verdict("unknown", f"{where}: not found; a person decides")
    status = tolerant.entity_status(entity)
    state = (status or "").strip().lower()
    if state == "active":
        output = {"entityKey": key, "status": "Active"}
        return Verdict("found", f"{where}: the entity is Active", output)
    if state == "lead":
        return Verdict("absent", f"{where}: the entity is still a Lead")
    return Verdict("unknown", f"{where}: status {status!r} does not tell")


@register_read_back("lead_by_email")
def _lead_by_email(client: ClientLike, data: Mapping[str, Any], sent_at: datetime) -> Verdict:
    wanted = str(data.get("email") or "").strip().lower()
    if not wanted:
        return Verdict("unknown", "no email was sent, so the new lead cannot be found")
    since = _since(sent_at)
    # The email is personal data: notes name the field, never its value.
    where = f"GET /api/v1/entities?lastUpdated={since.isoformat()}: Lead rows by email"
    rows = _objects(client, "/api/v1/entities", since)
    matches = [
        row
        for row in rows
        if _folded(row, "email") == wanted
        and (tolerant.entity_status(row) or "").strip().lower() == "lead"
    ]
    if not matches:
        # Leads may be listed only under /leads (its shape is guessed): look there too,
        # and conclude "absent" only when both lists could show the lead and neither does.
        where = f"{where}, then GET /api/v1/leads by email"
        leads = _objects(client, "/api/v1/leads", since, 100)
        matches = [row for row in leads if _folded(row, "email") == wanted]
        rows = rows + leads
    if matches:
        return _one_entity(matches, where, "leads")
    if any(not tolerant.field(row, "email")[0] for row in rows):
        return Verdict("unknown", f"{where}: some rows carry no email; a person decides")
    return Verdict("absent", f"{where}: no lead was created")


def _all_rows(
    client: ClientLike, path: str, params: Mapping[str, Any], page_size: int | None
) -> list[Any]:
    paginate = getattr(client, "paginate", None)
    if callable(paginate):
        return list(paginate(path, params=params, page_size=page_size))
    return tolerant.rows(client.get(path, params=params))


def _objects(
    client: ClientLike, path: str, since: datetime, page_size: int | None = None
) -> list[Mapping[str, Any]]:
    """The object rows of a list changed since ``since``."""
    rows = _all_rows(client, path, {"lastUpdated": since}, page_size)
    return [row for row in rows if isinstance(row, Mapping)]
