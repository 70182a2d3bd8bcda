"""Which replica owns which practice: leases in the fleet's PostgreSQL database.

``pf_fleet_replicas`` holds each replica's sign of life; ``pf_practice_leases`` one row per
owned practice, expiring a lease timeout after its last renewal. Each renewal (one
transaction) moves toward an even share, ``ceil(practices / live replicas)``: claims are
conditional upserts (two claimers get a practice once), and every clock is PostgreSQL's
``now()``. A replica counts its leases valid only until its renewal *began* plus the
timeout minus a margin, so it stops polling before another can take over; an overlapping
poll stores events deduplicated, so each is handed over once. The tables hold nothing a
restart needs (``CREATE TABLE IF NOT EXISTS`` on first use).
"""

from __future__ import annotations

import logging
import math
import os
import random
import socket
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

import psycopg

__all__ = ["LEASE_S", "LeaseChange", "PracticeLeases"]

logger = logging.getLogger("practiceflow.fleet")

#: Default lease timeout, seconds: a dead replica's practices move within about this.
LEASE_S: Final = 30.0
#: Part of the timeout a replica keeps in hand: it stops polling that long before expiry.
_MARGIN: Final = 0.2

#: Seconds after another replica's lease expires that a renewal comes to claim it.
_AFTER_EXPIRY: Final = 0.5
#: Longest wait for a new connection, seconds.
_CONNECT_S: Final = 5

_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS pf_fleet_replicas ("
    " replica text PRIMARY KEY, seen_at timestamptz NOT NULL)",
    "CREATE TABLE IF NOT EXISTS pf_practice_leases ("
    " practice text PRIMARY KEY, owner text NOT NULL, expires_at timestamptz NOT NULL)",
    "CREATE INDEX IF NOT EXISTS pf_practice_leases_owner ON pf_practice_leases (owner)",
)


@dataclass(frozen=True)
class LeaseChange:
    """What one renewal changed.

    Attributes:
        gained: practices this replica owns since this renewal.
        lost: practices it no longer owns (given back, or taken while it could not renew).
        owned: every practice it owns now.
        replicas: live replicas counted (itself included).
    """

    gained: frozenset[str]
    lost: frozenset[str]
    owned: frozenset[str]
    replicas: int


class PracticeLeases:
    """One replica's leases on the practices of a fleet (see the module docstring).

    Args:
        url: the fleet's ``postgresql://`` URL.
        practices: every practice of the fleet file.
        lease_s: the lease timeout, seconds.
        replica: this replica's id (a new unique one when None).
    """

    def __init__(
        self,
        url: str,
        practices: Iterable[str],
        *,
        lease_s: float = LEASE_S,
        replica: str | None = None,
    ) -> None:
        self.url = url
        self.practices = sorted(set(practices))
        self.lease_s = float(lease_s)
        self.replica = replica or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.owned: frozenset[str] = frozenset()
        self._valid_until = -math.inf
        self._due = -math.inf
        self._connection: psycopg.Connection[Any] | None = None

    @property
    def renew_every(self) -> float:
        """Seconds between two renewals: a third of the timeout."""
        return self.lease_s / 3

    def valid_until(self) -> float:
        """Monotonic time until which the leases held are surely this replica's."""
        return self._valid_until

    def due(self) -> float:
        """Monotonic time of the next renewal: :attr:`renew_every` after the last one, or
        just after another replica's lease expires if that comes sooner (a dead replica's
        practices move within the lease timeout, not up to a third of it later)."""
        return self._due

    def _db(self) -> psycopg.Connection[Any]:
        if self._connection is None or self._connection.closed:
            self._connection = psycopg.connect(self.url, connect_timeout=_CONNECT_S)
            with self._connection.transaction():
                self._connection.execute("SELECT pg_advisory_xact_lock(hashtext('pf leases'))")
                for statement in _SCHEMA:
                    self._connection.execute(statement)
        return self._connection

    def renew(self) -> LeaseChange:
        """Renew, count the replicas, claim or give back toward an even share; returns what
        changed (psycopg.Error when the database did not answer: the leases held stay
        valid until :meth:`valid_until`, after which the caller stops polling)."""
        began = time.monotonic()
        self._due = began + self.renew_every
        lease = f"{self.lease_s} seconds"
        try:
            db = self._db()
            with db.transaction():
                db.execute(
                    "INSERT INTO pf_fleet_replicas (replica, seen_at) VALUES (%s, now())"
                    " ON CONFLICT (replica) DO UPDATE SET seen_at = now()",
                    (self.replica,),
                )
                # A replica's leases expire a timeout after its last sign of life (both
                # written with one now()): the others' soonest is their oldest sign.
                row = db.execute(
                    "SELECT count(*), extract(epoch FROM min(seen_at) FILTER (WHERE replica <> %s)"
                    " + %s::interval - now()) FROM pf_fleet_replicas"
                    " WHERE seen_at >= now() - %s::interval",
                    (self.replica, lease, lease),
                ).fetchone()
                live = max(1, int(row[0]) if row is not None else 1)
                others_expire = None if row is None or row[1] is None else float(row[1])
                rows = db.execute(
                    "UPDATE pf_practice_leases SET expires_at = now() + %s::interval"
                    " WHERE owner = %s AND practice = ANY(%s) RETURNING practice",
                    (lease, self.replica, self.practices),
                ).fetchall()
                owned = {str(r[0]) for r in rows}
                share = math.ceil(len(self.practices) / live)
                if len(owned) > share:
                    excess = sorted(owned)[share:]
                    db.execute(
                        "DELETE FROM pf_practice_leases WHERE owner = %s AND practice = ANY(%s)",
                        (self.replica, excess),
                    )
                    owned -= set(excess)
                elif len(owned) < share:
                    owned |= self._claim(db, share - len(owned), lease)
                if others_expire is not None:
                    self._due = min(self._due, began + others_expire + _AFTER_EXPIRY)
        except psycopg.Error:
            if self._connection is not None:
                self._connection.close()
            raise
        self._valid_until = began + self.lease_s * (1 - _MARGIN)
        previous, self.owned = self.owned, frozenset(owned)
        return LeaseChange(self.owned - previous, previous - self.owned, self.owned, live)

    def _claim(self, db: psycopg.Connection[Any], wanted: int, lease: str) -> set[str]:
        """Claim up to ``wanted`` practices whose lease is free or expired."""
        rows = db.execute(
            "SELECT p FROM unnest(%s::text[]) AS p WHERE NOT EXISTS (SELECT 1 FROM"
            " pf_practice_leases l WHERE l.practice = p AND l.expires_at >= now())",
            (self.practices,),
        ).fetchall()
        free = [str(r[0]) for r in rows]
        # Chosen at random, so that two replicas starting together claim mostly different
        # rows; locked in name order, so that two claims never wait on each other in a
        # circle (a deadlock).
        chosen = sorted(random.sample(free, min(wanted, len(free))))
        if not chosen:
            return set()
        claimed = db.execute(
            "INSERT INTO pf_practice_leases (practice, owner, expires_at)"
            " SELECT p, %s, now() + %s::interval FROM unnest(%s::text[]) AS p"
            " ON CONFLICT (practice) DO UPDATE SET owner = excluded.owner,"
            " expires_at = excluded.expires_at WHERE pf_practice_leases.expires_at < now()"
            " RETURNING practice",
            (self.replica, lease, chosen),
        ).fetchall()
        taken = {str(r[0]) for r in claimed}
        if taken:
            logger.info("leases: %s claimed %d practice(s)", self.replica, len(taken))
        return taken

    def release(self, practices: Iterable[str] | None = None) -> None:
        """Give back ``practices`` (all when None) and, for all, the replica's sign of life.

        Called as the replica stops: the others take its practices at their next renewal
        instead of after the timeout. Errors are logged (the timeout frees them anyway).
        """
        names = sorted(self.owned if practices is None else set(practices))
        try:
            db = self._db()
            with db.transaction():
                db.execute(
                    "DELETE FROM pf_practice_leases WHERE owner = %s AND practice = ANY(%s)",
                    (self.replica, names),
                )
                if practices is None:
                    db.execute("DELETE FROM pf_fleet_replicas WHERE replica = %s", (self.replica,))
        except psycopg.Error as exc:
            logger.warning("leases: could not give back %d practice(s): %s", len(names), exc)
        self.owned = self.owned - set(names)

    def close(self) -> None:
        """Close the connection (the leases stay until released or expired)."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None
