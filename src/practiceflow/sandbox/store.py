"""In-memory records of one practice, with the indexes that keep paging cheap.

Entities are kept twice: in creation order (``order``, the stable key of the unfiltered
list, so new entities only ever append) and sorted by ``(lastUpdated, seq)`` (``index``,
bisected for the ``lastUpdated`` filter), so a page costs O(log n + page size) at any scale.
All other collections are small and kept as plain dicts of JSON-ready values.
"""

from __future__ import annotations

import bisect
import hashlib
import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from practiceflow.sandbox.clock import SandboxClock, format_time

JSON = dict[str, Any]

#: Fields of the create body that are stored and returned on load as given.
ENTITY_EXTRA_FIELDS = (
    "externalSystemID",
    "telephone",
    "mobile",
    "taxNumber",
    "regNumber",
    "idNumber",
    "physicalAddress",
    "postalAddress",
)


@dataclass(slots=True)
class Entity:
    """One client or lead of a practice (a lean record: 100,000 of them seed quickly)."""

    key: str
    seq: int
    code: str
    name: str
    surname: str | None
    initials: str | None
    type_id: int
    type_name: str
    status: str
    email: str | None
    updated: float
    lead_source: str | None = None
    lead_status: str | None = None
    extra: JSON | None = None

    def summary(self) -> JSON:
        """The list row (spec 2.1)."""
        extra = self.extra or {}
        return {
            "entityKey": self.key,
            "entityCode": self.code,
            "entityName": self.name,
            "entitySurname": self.surname,
            "entityType": self.type_name,
            "entityTypeID": self.type_id,
            "status": self.status,
            "email": self.email,
            "externalSystemID": extra.get("externalSystemID"),
            "lastUpdated": format_time(self.updated),
        }

    def lead_view(self) -> JSON:
        """The lead record (spec 2.3) plus ``status`` and ``lastUpdated``."""
        return {
            "entityKey": self.key,
            "entityType": self.type_name,
            "entityName": self.name,
            "entitySurname": self.surname,
            "email": self.email,
            "leadSource": self.lead_source,
            "leadStatus": self.lead_status,
            "status": self.status,
            "lastUpdated": format_time(self.updated),
        }


def _digest(key: str, salt: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{salt}:{key}".encode(), digest_size=8).digest())


@dataclass
class Practice:
    """Everything one practice (one region) holds, plus its runtime switches."""

    region: str
    clock: SandboxClock
    rng: random.Random
    entity_types: list[JSON] = field(default_factory=list)
    lead_sources: list[JSON] = field(default_factory=list)
    lead_statuses: list[JSON] = field(default_factory=list)
    users: list[JSON] = field(default_factory=list)
    entities: dict[str, Entity] = field(default_factory=dict)
    order: list[Entity] = field(default_factory=list)
    index: list[tuple[float, int, Entity]] = field(default_factory=list)
    contacts: dict[str, JSON] = field(default_factory=dict)
    lead_notes: dict[str, list[JSON]] = field(default_factory=dict)
    groups: list[JSON] = field(default_factory=list)
    eform_templates: list[JSON] = field(default_factory=list)
    eforms: dict[str, JSON] = field(default_factory=dict)
    proposals: dict[str, JSON] = field(default_factory=dict)
    bills: dict[int, JSON] = field(default_factory=dict)
    recurring: dict[int, JSON] = field(default_factory=dict)
    onboardings: dict[str, JSON] = field(default_factory=dict)
    id_verifications: dict[str, JSON] = field(default_factory=dict)
    subscriptions: dict[str, JSON] = field(default_factory=dict)
    ledger_accounts: list[JSON] = field(default_factory=list)
    ledger_tax_rates: list[JSON] = field(default_factory=list)
    branding_themes: list[JSON] = field(default_factory=list)
    catalogs: dict[str, list[JSON]] = field(default_factory=dict)
    wallet: float = 0.0
    ledger_connected: bool = False
    eform_email_fails: bool = False
    next_id: int = 90_000

    # ---- identifiers and time -------------------------------------------------------

    def new_uuid(self) -> str:
        """A fresh key, drawn from the practice's seeded generator (reproducible)."""
        bits = self.rng.getrandbits(128)
        return str(uuid.UUID(int=bits, version=4))

    def new_id(self) -> int:
        """A fresh integer id, unique across this practice's integer-keyed records."""
        self.next_id += 1
        return self.next_id

    def now(self) -> float:
        """The sandbox clock in Unix seconds."""
        return self.clock.now()

    # ---- entities -------------------------------------------------------------------

    def add_entity(self, entity: Entity) -> None:
        """Store a new entity at the end of both orders.

        Args:
            entity: the record; ``seq`` is assigned here.
        """
        entity.seq = len(self.order)
        self.entities[entity.key] = entity
        self.order.append(entity)
        bisect.insort(self.index, (entity.updated, entity.seq, entity))

    def touch(self, entity: Entity, when: float | None = None) -> None:
        """Bump ``lastUpdated`` of an entity and move it in the time index.

        Args:
            entity: the record.
            when: the new time; the sandbox clock when omitted.
        """
        position = bisect.bisect_left(self.index, (entity.updated, entity.seq))
        if position < len(self.index) and self.index[position][2] is entity:
            del self.index[position]
        entity.updated = self.now() if when is None else when
        bisect.insort(self.index, (entity.updated, entity.seq, entity))

    def entities_page(self, page: int, size: int, since: float | None) -> list[Entity]:
        """One page of entities: creation order, or time order when ``since`` is given.

        Args:
            page: 1-based page number.
            size: rows per page.
            since: keep rows with ``lastUpdated`` at or after this Unix time.

        Returns:
            The rows of the page (fewer than ``size`` on the last one).
        """
        start = (page - 1) * size
        if since is None:
            return self.order[start : start + size]
        first = bisect.bisect_left(self.index, (since,))
        return [row[2] for row in self.index[first + start : first + start + size]]

    def entity_type(self, text: str) -> JSON | None:
        """Resolve an entity type by code or display name (case-insensitive).

        Args:
            text: a code such as ``CO`` or a name such as ``Company``.

        Returns:
            The settings row, or ``None`` when unknown.
        """
        wanted = text.strip().casefold()
        for row in self.entity_types:
            if wanted in (str(row["code"]).casefold(), str(row["name"]).casefold()):
                return row
        return None

    def entity_type_by_id(self, type_id: int) -> JSON | None:
        """The entity type row with this id, or ``None``."""
        return next((row for row in self.entity_types if row["entityTypeID"] == type_id), None)

    def entity_detail(self, entity: Entity) -> JSON:
        """The detail record: the summary plus addresses, numbers and assignments.

        Addresses and assignments of seeded entities are derived from the key, so they
        cost nothing at seed time and are the same on every load.
        """
        extra = entity.extra or {}
        detail = entity.summary()
        detail["entityInitials"] = entity.initials
        for name in ENTITY_EXTRA_FIELDS:
            detail[name] = extra.get(name)
        if detail["physicalAddress"] is None:
            number = _digest(entity.key, "street") % 300 + 1
            detail["physicalAddress"] = {
                "address1": f"{number} {('High', 'Main', 'Station', 'Park')[number % 4]} Street",
                "address2": None,
                "city": ("Northbridge", "Riverside", "Hillcrest")[number % 3],
                "state": None,
                "postcode": f"{1000 + number:04d}",
                "country": {"anz": "Australia", "uk": "United Kingdom", "za": "South Africa"}[
                    self.region
                ],
            }
        if self.users:
            pick = _digest(entity.key, "staff")
            for offset, role in enumerate(("partner", "manager", "inCharge")):
                user = self.users[(pick + offset) % len(self.users)]
                detail[role] = {"userKey": user["userKey"], "name": user["name"]}
        detail["leadSource"] = entity.lead_source
        detail["leadStatus"] = entity.lead_status
        return detail

    def integrations(self, entity: Entity) -> JSON:
        """The integration ids of an entity (spec 2.2): exactly those fields, strings."""
        pick = _digest(entity.key, "ids")
        xpm = f"XPM-{pick % 100000:05d}" if pick % 2 else None
        return {
            "entityKey": entity.key,
            "entityName": entity.name,
            "xpmClientID": xpm,
            "xglClientID": None,
            "gsClientID": None,
            "connectorClientID": f"CN{pick % 9973}" if pick % 3 == 0 else None,
            "fyiClientID": f"FYI{pick % 7919}" if pick % 5 == 0 else None,
            "workflowClientID": xpm,
            "workflowEntityType": entity.type_name if xpm else None,
            "qbClientID": None,
            "accountingClientUrl": f"https://ledger.invalid/clients/{pick % 100000}"
            if xpm
            else None,
            "bglID": None,
            "bglContactID": None,
            "bglSmsfID": f"BGL{pick % 4999}" if entity.type_name.startswith("Self") else None,
            "bglSmsfFirm": None,
        }

    def find_user(self, key: str) -> JSON | None:
        """The user with this key, or ``None``."""
        return next((user for user in self.users if user["userKey"] == key), None)
