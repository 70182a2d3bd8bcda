"""What differs between the SQL databases of the store, a connection that speaks the
store's one form of SQL (``?`` for each parameter, ``{p}`` before each table name,
``{serial}``, ``{time}`` and ``{json}`` for the column types that differ), and the rows
read as records: a record dataclass's fields are its table's columns, in order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from practiceflow.state.rows import Json

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_Row = TypeVar("_Row", bound="DataclassInstance")


#: Each record dataclass's column names and field annotations (text: ``from __future__``).
_SHAPES: dict[type, tuple[str, tuple[str, ...]]] = {}


def shape(record: type[DataclassInstance]) -> tuple[str, tuple[str, ...]]:
    """A record's column list and its fields' annotations, in order."""
    shape = _SHAPES.get(record)
    if shape is None:
        found = fields(record)
        columns = ", ".join(field.metadata.get("column", field.name) for field in found)
        shape = _SHAPES[record] = (columns, tuple(str(field.type) for field in found))
    return shape


def select(record: type[DataclassInstance], table: str) -> str:
    """The ``SELECT`` of a record's columns from ``{p}table`` (a field's ``column``
    metadata names a column of another name)."""
    return f"SELECT {shape(record)[0]} FROM {{p}}{table}"  # noqa: S608 - names are the code's


class Cursor(Protocol):
    """What the store reads from a statement's cursor (sqlite3's and psycopg's alike)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def executemany(self, sql: Any, rows: Sequence[Sequence[Any]], /) -> Any: ...


class Connection(Protocol):
    """What the store calls on a database connection (sqlite3's and psycopg's alike)."""

    def execute(self, sql: Any, params: Any = ..., /) -> Cursor: ...

    def cursor(self) -> Cursor: ...


@dataclass(frozen=True)
class Dialect:
    """What differs between databases in the SQL text and in the values.

    Attributes:
        lock_row: appended to the SELECT of a row a write transaction reads then changes,
            where the database needs it to keep other writers off the row.
        json_text: a JSON column's top-level text field, ``{column}`` and ``{key}`` to fill.
        dump_time: an aware datetime as a parameter (``what`` names it in the error that
            refuses a naive one); ``load_time`` and ``load_json`` read a column back.
    """

    prefix: str
    mark: str
    types: Mapping[str, str]
    lock_row: str
    json_text: str
    dump_time: Callable[[datetime, str], Any]
    load_time: Callable[[Any], datetime]
    load_json: Callable[[Any], Json]

    def sql(self, statement: str) -> str:
        """A statement in this database's SQL: table prefix, types and placeholders."""
        text = statement.format(p=self.prefix, **self.types)
        return text if self.mark == "?" else text.replace("?", self.mark)

    def maybe_time(self, value: Any) -> datetime | None:
        """:attr:`load_time` of a column that may be NULL."""
        return None if value is None else self.load_time(value)


def _as_read(value: Any) -> Any:
    return value


class SQLConnection:
    """A database connection (``raw``, in the statements' transaction) taking statements in
    the store's form, which its dialect translates."""

    __slots__ = ("dialect", "raw")

    def __init__(self, raw: Connection, dialect: Dialect) -> None:
        self.raw = raw
        self.dialect = dialect

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        """Run one statement with its parameters."""
        return self.raw.execute(self.dialect.sql(sql), params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for each row of parameters (none: nothing is run)."""
        if rows:
            self.raw.cursor().executemany(self.dialect.sql(sql), rows)
