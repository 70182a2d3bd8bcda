"""The canary scan's planting and scanning, shared by every sink (issue 35).

A canary is a value that appears nowhere else: one per personal field of a client (the
field names come from the modules' ``x-pii`` tags) and one per secret. :func:`plant_client`
writes them into a sandbox client; :func:`hits` finds any of them, in any of the encodings
a leak could take (plain, lower case, JSON-escaped, URL-encoded, base64 at any alignment,
hex), in a text; :func:`sqlite_texts`, :func:`postgres_texts` and :func:`file_texts` turn
a store or a folder into texts to scan.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import psycopg

from practiceflow.manifest import default_registry
from practiceflow.sandbox.store import Entity, Practice
from practiceflow.state import open_store
from practiceflow.testing import SandboxHandle, personal_names

#: Where a text was found, and the text.
Found = list[tuple[str, str]]

#: The personal fields of a client record that the sandbox keeps as attributes.
_ENTITY_ATTRIBUTES = {
    "entityName": "name",
    "entitySurname": "surname",
    "entityInitials": "initials",
    "email": "email",
}
_ADDRESSES = ("physicalAddress", "postalAddress")
_CONTACT_FIELDS = ("firstName", "lastName", "email", "mobile")


def canary(field_name: str) -> str:
    """The canary of one field (an email is a valid address, since writes check it)."""
    if "email" in field_name.lower():
        return f"qz7{field_name.lower()}wv4@example.org"
    return f"Qz7{field_name}Wv4"


def personal_fields() -> list[str]:
    """The names of every field tagged ``x-pii`` in the shipped modules' schemas."""
    registry = default_registry()
    schemas = [m.output.schema or {} for m in registry.actions.values()]
    schemas += [m.input_schema for m in registry.actions.values()]
    return sorted(personal_names(schemas))


@dataclass
class Planted:
    """The canaries planted in a sandbox client."""

    entity_key: str
    values: dict[str, str] = field(default_factory=dict)


def plant_client(practice: Practice, entity: Entity) -> Planted:
    """Write a canary into every personal field of ``entity`` that the sandbox can hold.

    Args:
        practice: the sandbox practice holding the entity.
        entity: the client to plant in.

    Returns:
        The field names and their canaries.
    """
    planted = Planted(entity.key)
    detail = practice.entity_detail(entity)
    extra = dict(entity.extra or {})
    for name in personal_fields():
        if name in _ENTITY_ATTRIBUTES:
            setattr(entity, _ENTITY_ATTRIBUTES[name], canary(name))
        elif name in _ADDRESSES:
            extra[name] = {"address1": canary(name), "city": "Qz7cityWv4", "country": "Australia"}
        elif name in detail:
            extra[name] = canary(name)
        else:
            continue
        planted.values[name] = canary(name)
    entity.extra = extra
    # A contact of the client, every field of it personal (the contacts' whole record is
    # tagged, their fields are not shown by the spec).
    contact = {name: canary(f"contact {name}").replace(" ", "") for name in _CONTACT_FIELDS}
    key = practice.new_uuid()
    practice.contacts[key] = {"contactKey": key, "entityKey": entity.key, **contact}
    planted.values.update({f"contact {name}": value for name, value in contact.items()})
    practice.touch(entity)
    assert len(planted.values) >= 8, planted
    return planted


def encodings(value: str) -> set[str]:
    """The forms ``value`` takes in a text that carries it: plain, lower case, JSON-escaped,
    URL-encoded, hex, and base64 (standard and URL-safe) at each of its three alignments
    inside a longer encoded text (the partial groups at both ends left out)."""
    raw = value.encode("utf-8")
    found = {value, value.lower(), json.dumps(value)[1:-1], quote(value), quote_plus(value)}
    found.add(raw.hex())
    for shift in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(b"\0" * shift + raw).decode("ascii")
            found.add(encoded[4 * ((shift + 2) // 3) : -4])
    return {text for text in found if len(text) >= 8}


def hits(where: str, text: str, canaries: dict[str, str]) -> list[str]:
    """``"<canary name> in <where>"`` for each canary found in ``text`` (any encoding, any
    case)."""
    lowered = text.lower()
    return [
        f"{name} in {where}"
        for name, value in canaries.items()
        if any(encoded.lower() in lowered for encoded in encodings(value))
    ]


def scan(found: Iterable[tuple[str, str]], canaries: dict[str, str]) -> list[str]:
    """Every hit of every canary in every text."""
    return [hit for where, text in found for hit in hits(where, text, canaries)]


def sqlite_texts(path: Path) -> Found:
    """Every table of a SQLite database, one text per table."""
    db = sqlite3.connect(path)
    try:
        names = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return [
            (f"table {name}", repr(db.execute(f'SELECT * FROM "{name}"').fetchall()))  # noqa: S608 - names from the catalog
            for name in names
        ]
    finally:
        db.close()


def postgres_texts(url: str) -> Found:
    """Every table of a PostgreSQL database's ``public`` schema (the job queue's included),
    one text per table."""
    found: Found = []
    with psycopg.connect(url) as db:
        names = [
            str(row[0])
            for row in db.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
            ).fetchall()
        ]
        for name in names:
            rows: list[Any] = db.execute(f'SELECT * FROM "{name}"').fetchall()  # noqa: S608 - names from the catalog
            found.append((f"table {name}", repr(rows)))
    return found


#: The table where :func:`keep_every_row_version` copies every row written.
_ROW_VERSIONS = "canary_row_versions"


def keep_every_row_version(url: str) -> None:
    """Copy every row any table of the database's ``public`` schema is given (inserted or
    updated, before it may be deleted: a finished job, a settled pending write) into a table
    :func:`postgres_texts` scans with the others."""
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(f"CREATE TABLE {_ROW_VERSIONS} (source text, row_version jsonb)")
        db.execute(
            "CREATE FUNCTION canary_keep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            " INSERT INTO canary_row_versions VALUES (TG_TABLE_NAME, to_jsonb(NEW));"
            " RETURN NEW; END $$"
        )
        names = db.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> %s",
            (_ROW_VERSIONS,),
        ).fetchall()
        for (name,) in names:
            db.execute(
                f'CREATE TRIGGER canary_keep AFTER INSERT OR UPDATE ON "{name}"'
                " FOR EACH ROW EXECUTE FUNCTION canary_keep()"
            )


def keep_every_sqlite_row_version(path: Path) -> None:
    """Create the SQLite store at ``path`` and copy every row any of its tables is given
    (inserted or updated, before it may be deleted) into a table :func:`sqlite_texts`
    scans with the others."""
    with open_store(str(path)):
        pass
    db = sqlite3.connect(path)
    try:
        db.execute(f"CREATE TABLE {_ROW_VERSIONS} (source TEXT, row_version TEXT)")
        names = [
            str(row[0])
            for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not str(row[0]).startswith(("sqlite_", _ROW_VERSIONS))
        ]
        for name in names:
            columns = [str(row[1]) for row in db.execute(f'PRAGMA table_info("{name}")')]
            row = " || '|' || ".join(f'quote(NEW."{column}")' for column in columns)
            keep = f"INSERT INTO {_ROW_VERSIONS} VALUES ('{name}', {row})"  # noqa: S608 - ours
            for operation in ("INSERT", "UPDATE"):
                db.execute(
                    f'CREATE TRIGGER "canary_{operation}_{name}" AFTER {operation} ON "{name}"'
                    f" BEGIN {keep}; END"
                )
        db.commit()
    finally:
        db.close()


def file_texts(folder: Path) -> Found:
    """Every file under ``folder``, as text (bytes that are not UTF-8 replaced)."""
    return [
        (str(path), path.read_bytes().decode("utf-8", errors="replace"))
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    ]


@dataclass
class World:
    """What a sink's scenario is given, and what it hands back to be scanned."""

    sandbox: SandboxHandle
    folder: Path
    planted: Planted
    #: The proposal whose acceptance starts the recipe (its client is the planted one).
    proposal_key: str
    #: The recipe run by the sinks that run one (reads the client, writes what it read).
    recipe: str
    client_secret: str
    #: Secrets, by name; a scenario adds the ones it learns (webhook secrets, keys).
    secrets: dict[str, str] = field(default_factory=dict)
    #: Texts to scan for every canary.
    found: Found = field(default_factory=list)
    #: Values a user typed (an assistant's input to a write), by name: scanned for
    #: everywhere but in what the user sent.
    typed: dict[str, str] = field(default_factory=dict)
    #: Texts the user sent (scanned for every canary but the ones they typed).
    sent: Found = field(default_factory=list)
    #: Texts that show the personal values on purpose (scanned for secrets only).
    shown: Found = field(default_factory=list)
    #: What a scenario found besides canaries (a real-looking personal value in a sample).
    problems: list[str] = field(default_factory=list)

    def contact_written(self, email: str) -> bool:
        """Whether the sandbox holds a contact of the planted client with ``email``."""
        rows = self.sandbox.admin("GET", "/_admin/records/contacts")
        return any(
            row.get("entityKey") == self.planted.entity_key and row.get("email") == email
            for row in rows
        )

    def __post_init__(self) -> None:
        self.secrets["client secret"] = self.client_secret
