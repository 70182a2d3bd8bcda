"""Seeded practice data: the same ``--seed`` gives the same records. Each region (and practice)
draws from its own ``random.Random``; seeded times lie in the two years before the fixed
:data:`SEED_EPOCH`, so the data does not drift with the day it is built.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

from practiceflow.sandbox.clock import SandboxClock, format_time
from practiceflow.sandbox.config import SandboxConfig
from practiceflow.sandbox.store import JSON, Entity, Practice, mark_uploaded, uuid_from_bits

#: Seeded records were last updated before this instant (2025-07-01T00:00:00Z).
SEED_EPOCH = datetime(2025, 7, 1, tzinfo=UTC).timestamp()
_SPAN = 730 * 86400.0


def _types(sole: str, last: tuple[str, str]) -> list[tuple[str, str]]:
    common = [("IND", "Individual"), ("CO", "Company"), ("TR", "Trust")]
    return [*common, ("SP", sole), ("PS", "Partnership"), last]


_TYPES = {
    "anz": _types("Sole Trader", ("SMSF", "Self Managed Super Fund")),
    "uk": _types("Sole Trader", ("LLP", "Limited Liability Partnership")),
    "za": _types("Sole Proprietor", ("CC", "Close Corporation")),
}
_TYPE_WEIGHTS = [45, 20, 10, 10, 8, 7]
_PERSON_TYPES = {"IND", "SP"}
_FIRST = [
    "Ava",
    "Noah",
    "Mia",
    "Liam",
    "Zara",
    "Ethan",
    "Isla",
    "Oliver",
    "Aisha",
    "Lucas",
    "Grace",
    "Thabo",
    "Priya",
    "Jack",
    "Chloe",
    "Sipho",
    "Emma",
    "Leo",
    "Ruby",
    "Kai",
]
_LAST = [
    "Smith",
    "Nguyen",
    "Patel",
    "Brown",
    "Williams",
    "Naidoo",
    "Taylor",
    "Wilson",
    "Khan",
    "Jones",
    "Walker",
    "Dlamini",
    "Evans",
    "Clarke",
    "Murphy",
    "Singh",
    "Harris",
    "Botha",
]
_SUFFIX = dict(
    CO="Holdings", TR="Family Trust", PS="& Partners", SMSF="Super Fund", LLP="LLP", CC="CC"
)
_LEAD_SOURCES = ["Website", "Referral", "Seminar", "Social Media", "Walk-in"]
_LEAD_STATUSES = ["New", "Contacted", "Qualified", "Proposal Sent", "Won", "Lost"]
_OPEN_LEAD_STATUSES = _LEAD_STATUSES[:4]
_TAX = {
    "anz": [("GST on Income", 10.0), ("GST Free Income", 0.0), ("BAS Excluded", 0.0)],
    "uk": [("20% (VAT on Income)", 20.0), ("5% (VAT on Income)", 5.0), ("Zero Rated", 0.0)],
    "za": [("Standard Rate Sales", 15.0), ("Zero Rated Sales", 0.0)],
}
_EFORMS = [
    "New Client Details",
    "Tax Return Checklist",
    "Engagement Letter",
    "AML Questionnaire",
    "Payroll Setup",
    "Trust Deed Request",
    "Rental Schedule",
    "Bank Details",
    "Director Details",
    "SMSF Annual Return",
    "Vehicle Logbook",
    "GST Registration",
    "Feedback Survey",
    "Change of Address",
    "Authority to Act",
]
_SERVICES = [
    ("Annual Accounts", 1800.0),
    ("Tax Return", 450.0),
    ("Bookkeeping", 250.0),
    ("Payroll", 120.0),
    ("Advisory", 300.0),
]


def _stamp(rng: random.Random) -> float:
    return float(int(SEED_EPOCH - rng.random() * _SPAN))


def _named(id_name: str, names: list[str], start: int = 1) -> list[JSON]:
    return [{id_name: n, "name": name} for n, name in enumerate(names, start)]


def build_practice(
    config: SandboxConfig, region: str, clock: SandboxClock, practice_number: int = 0
) -> Practice:
    """Generate practice ``practice_number`` of ``region`` from the configured seed."""
    key = f"{config.seed}:{region}" + (f":{practice_number}" if practice_number else "")
    rng = random.Random(key)  # noqa: S311 - reproducible fake data
    practice = Practice(region, clock, rng, wallet=config.wallet)
    practice.ledger_connected = config.ledger_connected
    practice.entity_types = [
        {"entityTypeID": number, "code": code, "name": name}
        for number, (code, name) in enumerate(_TYPES[region], start=1)
    ]
    practice.lead_sources = _named("leadSourceID", _LEAD_SOURCES)
    practice.lead_statuses = _named("leadStatusID", _LEAD_STATUSES)
    practice.users = [
        {
            "userKey": practice.new_uuid(),
            "userID": 10 + n,
            "name": f"{_FIRST[n % 20]} {_LAST[(n * 7) % 18]}",
            "email": f"staff{n}@practice-{region}.example",
            "role": ("Partner", "Manager", "Staff")[n % 3],
            "isActive": n % 9 != 8,
        }
        for n in range(12)
    ]
    _seed_entities(practice, rng, config.entities)
    _seed_contacts(practice, rng)
    _seed_groups(practice, rng)
    practice.eform_templates = [
        {"formTemplateId": n, "name": name, "isActive": n % 7 != 0, "category": "General"}
        for n, name in enumerate(_EFORMS, start=101)
    ]
    _seed_ledger(practice, region)
    _seed_proposals(practice, rng)
    _seed_bills(practice, rng)
    _seed_onboardings(practice, rng)
    return practice


def _seed_entities(practice: Practice, rng: random.Random, count: int) -> None:
    types = [(row["entityTypeID"], row["code"], row["name"]) for row in practice.entity_types]
    kinds = rng.choices(range(len(types)), weights=_TYPE_WEIGHTS, k=count)
    stamps = sorted(_stamp(rng) for _ in range(count))
    getbits = rng.getrandbits
    order = practice.order
    entities = practice.entities

    for seq in range(count):
        type_id, code, type_name = types[kinds[seq]]
        bits = getbits(64)
        first = _FIRST[bits % 20]
        last = _LAST[(bits >> 5) % 18]
        is_lead = (bits >> 10) % 5 == 0
        if code in _PERSON_TYPES:
            name, surname, initials = first, last, first[0]
            email: str | None = f"{first}.{last}{seq}@example.com".lower()
        else:
            name, surname, initials = f"{last} {_SUFFIX.get(code, 'Group')}", None, None
            email = f"accounts{seq}@{last.lower()}.example" if bits >> 13 & 1 else None
        entity = Entity(
            key=uuid_from_bits(getbits(128)),
            seq=seq,
            code=f"C{seq + 1:06d}",
            name=name,
            surname=surname,
            initials=initials,
            type_id=type_id,
            type_name=type_name,
            status="Lead" if is_lead else "Active",
            email=email,
            updated=stamps[seq],
        )
        if is_lead:
            entity.lead_source = _LEAD_SOURCES[(bits >> 16) % len(_LEAD_SOURCES)]
            entity.lead_status = _OPEN_LEAD_STATUSES[(bits >> 20) % len(_OPEN_LEAD_STATUSES)]
        entities[entity.key] = entity
        order.append(entity)
    practice.index = [(entity.updated, entity.seq, entity) for entity in order]


def _actives(practice: Practice, limit: int) -> list[Entity]:
    return [entity for entity in practice.order[:limit] if entity.status == "Active"]


def _seed_contacts(practice: Practice, rng: random.Random) -> None:
    for entity in practice.order[:400]:
        for n in range(1 + rng.getrandbits(1)):
            key = practice.new_uuid()
            first = _FIRST[rng.randrange(20)]
            practice.contacts[key] = {
                "contactKey": key,
                "entityKey": entity.key,
                "firstName": first,
                "lastName": entity.surname or _LAST[rng.randrange(18)],
                "email": f"{first.lower()}.{n}{entity.code.lower()}@example.com",
                "mobile": f"04{rng.randrange(10**8):08d}",
                "role": ("Director", "Primary", "Accounts")[n % 3],
                "isPrimary": n == 0,
                "lastUpdated": format_time(entity.updated),
            }


def _seed_groups(practice: Practice, rng: random.Random) -> None:
    pool = practice.order[:500]
    for n in range(1, 26):
        stamp = _stamp(rng)
        members = rng.sample(pool, k=min(len(pool), rng.randint(2, 6)))
        practice.groups.append(
            {
                "groupID": n,
                "groupName": f"{_LAST[n % 18]} {('Family', 'Group', 'Entities')[n % 3]}",
                "groupCode": f"GRP{n:03d}",
                "isActive": n % 6 != 0,
                "practiceOfficeID": 1 + n % 2,
                "createdOn": format_time(stamp - 86400 * 30),
                "updatedOn": format_time(stamp),
                "_updated": stamp,
                "_members": [entity.key for entity in members],
            }
        )


def _seed_ledger(practice: Practice, region: str) -> None:
    practice.ledger_accounts = [
        {"accountID": 200 + n, "code": str(200 + n), "name": name, "type": "REVENUE"}
        for n, name in enumerate(["Sales", "Consulting Fees", "Tax Return Fees", "Other Income"])
    ]
    practice.ledger_tax_rates = [
        {"taxID": 300 + n, "name": name, "rate": rate}
        for n, (name, rate) in enumerate(_TAX[region])
    ]
    practice.branding_themes = [
        {"brandingThemeID": "theme-standard", "name": "Standard"},
        {"brandingThemeID": "theme-modern", "name": "Modern"},
    ]
    practice.catalogs = {
        "services": [
            {"serviceID": 400 + n, "name": name, "price": price}
            for n, (name, price) in enumerate(_SERVICES)
        ],
        "xpm-job-templates": _named("templateID", ["Year End", "BAS"], 501),
        "xpm-job-categories": _named("categoryID", ["Compliance", "Advisory"], 601),
        "xpm-staff": [{"staffID": user["userID"], "name": user["name"]} for user in practice.users],
        "fyi-job-templates": _named("templateID", ["Client Onboarding"], 701),
        "fyi-job-states": _named("stateID", ["Planned", "In Progress", "Complete"], 801),
    }


def _seed_proposals(practice: Practice, rng: random.Random) -> None:
    statuses = ["Draft", "Sent", "Accepted", "Sent", "Declined"]
    services = practice.catalogs["services"]
    for n, entity in enumerate(_actives(practice, 400)[:60]):
        key = practice.new_uuid()
        stamp = _stamp(rng)
        chosen = rng.sample(services, k=rng.randint(1, 3))
        practice.proposals[key] = {
            "proposalKey": key,
            "proposalNumber": f"P{1000 + n}",
            "entityKey": entity.key,
            "entityName": entity.name,
            "title": f"Engagement {2024 + n % 2} for {entity.name}",
            "status": statuses[n % len(statuses)],
            "createdOn": format_time(stamp - 86400 * 7),
            "updatedOn": format_time(stamp),
            "acceptedOn": format_time(stamp) if statuses[n % len(statuses)] == "Accepted" else None,
            "totalAmount": round(sum(float(s["price"]) for s in chosen), 2),
            "services": [dict(s, quantity=1) for s in chosen],
            "billings": [{"billingType": "Once", "amount": float(s["price"])} for s in chosen],
            "jobs": [{"name": "Year End", "templateID": 501}],
            "renewedFrom": None,
        }


def _bill(practice: Practice, entity: Entity, stamp: float, amount: float, rate: float) -> JSON:
    tax, total = round(amount * rate / 100, 2), round(amount * (1 + rate / 100), 2)
    line = (amount, tax, total, "Professional services", None, 200, None)
    day = format_time(stamp)[:10]
    return practice.add_bill(entity, day, day, stamp, [line], billDetails="Seeded bill")


def _seed_bills(practice: Practice, rng: random.Random) -> None:
    rate = float(practice.ledger_tax_rates[0]["rate"])
    actives = _actives(practice, 400)
    for entity in actives[:30]:
        _bill(practice, entity, _stamp(rng), float(rng.randrange(100, 2000)), rate)
    for n, entity in enumerate(actives[30:38]):
        schedule_id = 5000 + n
        amount = float(rng.randrange(100, 600))
        runs = []
        start = _stamp(rng)
        for run in range(rng.randint(2, 5)):
            bill = _bill(practice, entity, start + run * 30 * 86400, amount, rate)
            bill_id = bill["billingID"]
            bill.update(
                invoiceStatus="Generated",
                externalID=f"ledger-{bill_id}",
                externalNumber=f"LINV-{bill_id}",
                externalURL=f"https://ledger.invalid/invoices/{bill_id}",
                syncAttemptCount=1,
                recurringBillingID=schedule_id,
            )
            runs.append(
                {
                    "runID": schedule_id * 10 + run,
                    "runDate": bill["billDate"],
                    "billingID": bill_id,
                    "status": "Generated",
                }
            )
        practice.recurring[schedule_id] = {
            "recurringBillingID": schedule_id,
            "entityKey": entity.key,
            "entityName": entity.name,
            "description": "Monthly bookkeeping",
            "frequency": "Monthly",
            "amount": amount,
            "isActive": n % 4 != 3,
            "startDate": format_time(start)[:10],
            "nextRunDate": format_time(start + len(runs) * 30 * 86400)[:10],
            "runs": runs,
        }


def _seed_onboardings(practice: Practice, rng: random.Random) -> None:
    statuses = ["Draft", "Sent", "Sent", "Completed"]
    actives = _actives(practice, 400)[40:]
    for n in range(10):
        key = practice.new_uuid()
        clients = actives[n * 2 : n * 2 + rng.randint(1, 2)]
        status = statuses[n % len(statuses)]
        stamp = _stamp(rng)
        rows = []
        for client in clients:
            entity_onboarding_id = practice.new_id()
            documents = practice.new_documents()
            for document in documents:
                if status == "Completed" or rng.random() < 0.4:
                    mark_uploaded(document)
            rows.append(
                {
                    "entityOnboardingId": entity_onboarding_id,
                    "entityKey": client.key,
                    "entityName": client.name,
                    "documents": documents,
                }
            )
        practice.onboardings[key] = {
            "onboardingKey": key,
            "status": status,
            "userKey": practice.users[n % len(practice.users)]["userKey"],
            "recipient": {
                "name": clients[0].name if clients else "Recipient",
                "email": clients[0].email if clients else None,
                "mobile": None,
            },
            "clients": rows,
            "createdOn": format_time(stamp),
            "updatedOn": format_time(stamp),
        }
