"""Recipe versions in SQL (``{p}versions``, the run's ``version`` column), mixed into
``StateStore``: each version stored once by digest, sealed like every payload."""

from __future__ import annotations

from practiceflow.state._sql import StoreBase
from practiceflow.state.rows import Json, VersionRecord
from practiceflow.state.sealing import json_or_null


class SQLVersions(StoreBase):
    """The version methods of the store interface on the store's connections."""

    def save_version(self, digest: str, kind: str, name: str, content: Json) -> bool:
        """Store a version under its digest unless it is stored already (content-addressed:
        the same content is stored once). Returns ``True`` when it was new."""
        encoded = json_or_null(self.sealer.seal(content, f"version {digest}"), digest)
        sql = "INSERT INTO {p}versions VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING 1"
        with self._write() as db:
            params = (digest, kind, name, encoded, self._stamp(None, "created_at"))
            return db.execute(sql, params).fetchone() is not None

    def get_version(self, digest: str) -> VersionRecord | None:
        """One stored version, or ``None``."""
        sql = "SELECT digest, kind, name, content, created_at FROM {p}versions WHERE digest = ?"
        row = self._one(sql, (digest,))
        return None if row is None else self._load.decode(VersionRecord, row)

    def move_run_version(self, run_id: str, from_digest: str | None, to_digest: str) -> bool:
        """Move a run to another stored version, only if it is still on ``from_digest``
        (an explicit migration; :mod:`practiceflow.versions`). Returns whether it moved."""
        was = "version IS NULL" if from_digest is None else "version = ?"
        sql = "UPDATE {p}runs SET version = ? WHERE run_id = ? AND " + was + " RETURNING 1"
        params = (to_digest, run_id) + (() if from_digest is None else (from_digest,))
        with self._write(durable=True) as db:
            return db.execute(sql, params).fetchone() is not None
