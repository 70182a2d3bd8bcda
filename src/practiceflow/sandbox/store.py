"""In-memory records of one practice. Entities are kept in creation order (``order``) and by
``(lastUpdated, seq)`` (``index``, bisected for the ``lastUpdated`` filter), so a page costs
O(log n + page size) at any scale; other collections are small dicts of JSON values.
"""

from __future__ import annotations

import bisect
import hashlib
import random
from dataclasses import dataclass, field
from typing import Any

from practiceflow.sandbox.clock import SandboxClock, format_time

JSON = dict[str, Any]
#: A bill line: amount, tax, total, narration, extItemID, extAccountID, extTaxID.
BillLine = tuple[float, float, float, str | None, int | None, int | None, int | None]

#: Fields of the create body that are stored and returned on load as given.
ENTITY_EXTRA_FIELDS = [
    "externalSystemID",
    "telephone",
    "mobile",
    "taxNumber",
    "regNumber",
    "idNumber",
    "physicalAddress",
    "postalAddress",
]

_VERSION_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_VERSION_SET = (0x4000 << 64) | (0x8000 << 48)


def uuid_from_bits(bits: int) -> str:
    """128 random bits as a version-4 UUID text (version and variant bits set)."""
    text = f"{(bits & _VERSION_CLEAR) | _VERSION_SET:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def mark_uploaded(document: JSON) -> None:
    """Mark an onboarding document uploaded, with the file name its upload gets."""
    document["isUploaded"] = True
    document["fileName"] = document["name"].lower().replace(" ", "-") + ".pdf"


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
        return {
            "entityKey": self.key,
            "entityCode": self.code,
            "entityName": self.name,
            "entitySurname": self.surname,
            "entityType": self.type_name,
            "entityTypeID": self.type_id,
            "status": self.status,
            "email": self.email,
            "externalSystemID": (self.extra or {}).get("externalSystemID"),
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

    def new_uuid(self) -> str:
        """A fresh key, drawn from the practice's seeded generator (reproducible)."""
        return uuid_from_bits(self.rng.getrandbits(128))

    def new_id(self) -> int:
        """A fresh integer id, unique across this practice's integer-keyed records."""
        self.next_id += 1
        return self.next_id

    def now(self) -> float:
        """The sandbox clock in Unix seconds."""
        return self.clock.now()

    def add_entity(self, code: str, type_row: JSON, **fields: Any) -> Entity:
        """Store a new entity of type ``type_row``, stamped now, at the end of both orders."""
        entity = Entity(
            self.new_uuid(),
            len(self.order),
            code,
            type_id=int(type_row["entityTypeID"]),
            type_name=str(type_row["name"]),
            updated=self.now(),
            **fields,
        )
        self.entities[entity.key] = entity
        self.order.append(entity)
        bisect.insort(self.index, (entity.updated, entity.seq, entity))
        return entity

    def touch(self, entity: Entity) -> None:
        """Bump ``lastUpdated`` of an entity to now and move it in the time index."""
        position = bisect.bisect_left(self.index, (entity.updated, entity.seq))
        if position < len(self.index) and self.index[position][2] is entity:
            del self.index[position]
        entity.updated = self.now()
        bisect.insort(self.index, (entity.updated, entity.seq, entity))

    def entities_page(self, page: int, size: int, since: float | None) -> list[Entity]:
        """Page ``page`` (1-based) of entities: creation order, or time order from ``since``."""
        start = (page - 1) * size
        if since is None:
            return self.order[start : start + size]
        first = bisect.bisect_left(self.index, (since,))
        return [row[2] for row in self.index[first + start : first + start + size]]

    def entity_type(self, text: str) -> JSON | None:
        """The entity type named by code or display name (any case), or ``None``."""
        wanted = text.strip().casefold()
        for row in self.entity_types:
            if wanted in (str(row["code"]).casefold(), str(row["name"]).casefold()):
                return row
        return None

    def entity_detail(self, entity: Entity) -> JSON:
        """The detail record: the summary plus addresses, numbers and assignments (a seeded
        entity's derive from its key: free at seed time, the same on every load)."""
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
        url = f"https://ledger.invalid/clients/{pick % 100000}" if xpm else None
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
            "accountingClientUrl": url,
            "bglID": None,
            "bglContactID": None,
            "bglSmsfID": f"BGL{pick % 4999}" if entity.type_name.startswith("Self") else None,
            "bglSmsfFirm": None,
        }

    def add_bill(
        self, entity: Entity, day: str, due: str, stamp: float, lines: list[BillLine], **fields: Any
    ) -> JSON:
        """Store a Draft bill (spec 2.4) of ``entity``; ``fields`` replace the record's defaults."""
        bill_id = self.new_id()
        rows = [
            {
                "billingDetailID": bill_id * 10 + n,
                "billAmount": round(amount, 2),
                "billTax": round(tax, 2),
                "billTotal": round(total, 2),
                "narration": narration,
                "extItemID": item,
                "extAccountID": account,
                "extTaxID": tax_id,
                "fieldOne": None,
                "fieldTwo": None,
                "orderID": None,
                "serviceID": None,
            }
            for n, (amount, tax, total, narration, item, account, tax_id) in enumerate(lines)
        ]
        bill: JSON = {
            "billingID": bill_id,
            "engagementID": 0,
            "engagementStatusID": 0,
            "entityID": entity.seq + 1,
            "entityKey": entity.key,
            "engagementName": None,
            "entityName": entity.name,
            "isEngagementFinalised": False,
            "isOnboardingEntity": False,
            "billDate": day,
            "dueDate": due,
            "billNumber": f"INV-{bill_id}",
            "refNo": None,
            "billAmount": round(sum(line[0] for line in lines), 2),
            "billTax": round(sum(line[1] for line in lines), 2),
            "billTotal": round(sum(line[2] for line in lines), 2),
            "paymentTotal": 0.0,
            "billDetails": None,
            "currencyID": 1,
            "billNow": 1,
            "packageNumber": 0,
            "billPercent": 100.0,
            "syncNow": False,
            "sendBill": False,
            "invoiceStatus": "Draft",
            "externalID": None,
            "externalNumber": None,
            "externalURL": None,
            "syncAttemptCount": 0,
            "syncFailedReason": None,
            "brandingThemeID": None,
            "createdOn": format_time(stamp),
            "updatedOn": format_time(stamp),
            "cancelledOn": None,
            "lineItems": rows,
        }
        bill.update(fields)
        self.bills[bill_id] = bill
        return bill

    def new_documents(self) -> list[JSON]:
        """The documents an onboarding asks of one client, none uploaded yet."""
        return [
            {
                "documentId": self.new_id(),
                "name": name,
                "isUploaded": False,
                "isBypassed": False,
                "fileName": None,
            }
            for name in ("Photo ID", "Proof of Address")
        ]
