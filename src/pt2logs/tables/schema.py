"""Table schemas: declared once, documented, versioned.

Every warehouse table is declared with :func:`table` in one of the modules of
:mod:`pt2logs.tables`, as a small text block with one column per line::

    table("recompiles", version=1, grain="recompilation", doc="...", columns='''
        co_name        str        function that was recompiled
        all_reasons    list<str>  every failed guard, newest first
    ''')

The declaration gives the Arrow schema written to Parquet (with the table name
and version in the file metadata), the documentation in ``docs/tables.md``
(checked by a test) and the column order of :class:`Rows`.

Every table starts with ``run_id`` and ``rank`` (``runs`` has no rank) and ends with ``txn`` (the
ingest transaction that wrote the row; see :mod:`pt2logs.store.warehouse`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import TYPE_CHECKING

if (
    TYPE_CHECKING
):  # (pyarrow loads with the first Arrow type asked: a command that reads kept rows needs none)
    import pyarrow as pa

#: Bumped when the layout of the warehouse itself (folders, commit protocol) changes.
WAREHOUSE_FORMAT = 1


@cache
def _types() -> dict[str, pa.DataType]:
    """The Arrow type of each kind."""
    import pyarrow as pa

    return {
        "str": pa.string(),
        "i32": pa.int32(),
        "i64": pa.int64(),
        "f64": pa.float64(),
        "bool": pa.bool_(),
        "ts": pa.timestamp("us", tz="UTC"),
        "json": pa.string(),  # JSON text; DuckDB: json(col), col->>'key'
        "list<str>": pa.list_(pa.string()),
        "list<i64>": pa.list_(pa.int64()),
        "list<i32>": pa.list_(pa.int32()),
    }


#: the DuckDB type of each kind (the views' casts, the kept rows' views)
_DUCK: dict[str, str] = {
    "str": "VARCHAR",
    "i32": "INTEGER",
    "i64": "BIGINT",
    "f64": "DOUBLE",
    "bool": "BOOLEAN",
    "ts": "TIMESTAMPTZ",
    "json": "VARCHAR",
    "list<str>": "VARCHAR[]",
    "list<i64>": "BIGINT[]",
    "list<i32>": "INTEGER[]",
}

COMMON_HEAD = (
    ("run_id", "str", "the run this row belongs to (see `runs`)"),
    (
        "rank",
        "i32",
        "distributed rank of the process that wrote the log; NULL when the log has no rank",
    ),
)
COMMON_TAIL = (
    ("txn", "str", "ingest transaction that wrote this row (internal; views keep the live one)"),
)


@dataclass(frozen=True)
class Column:
    name: str
    kind: str
    doc: str

    @property
    def type(self) -> pa.DataType:
        return _types()[self.kind]

    @property
    def duck(self) -> str:
        """The column's DuckDB type."""
        return _DUCK[self.kind]


@dataclass(frozen=True)
class Table:
    name: str
    version: int
    grain: str
    doc: str
    columns: tuple[Column, ...]
    group: str = "core"
    #: user-code path columns the views make relative to the run's root: (column, kind column or None
    #: when the column only ever holds user code); see pt2logs.analysis.identity
    run_relative: tuple[tuple[str, str | None], ...] = ()
    #: columns set by the ingest layer rather than by readers
    stamped: tuple[str, ...] = ("run_id", "txn")
    #: columns that say two sources' rows are the same fact: the views then keep another source's row unless
    #: the run's best source has one with these values (a CUDA-graph skip torch decides after the compile's
    #: metrics were written is only in the text log); empty: only the best source's rows
    same_fact: tuple[str, ...] = ()
    _index: dict[str, Column] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._index.update({c.name: c for c in self.columns})

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        return self._index[name]

    @cached_property
    def schema(self) -> pa.Schema:
        """The Arrow schema (built once: every stamped batch and Parquet file uses it)."""
        import pyarrow as pa

        meta = {
            b"pt2logs.table": self.name.encode(),
            b"pt2logs.schema_version": str(self.version).encode(),
            b"pt2logs.warehouse_format": str(WAREHOUSE_FORMAT).encode(),
        }
        return pa.schema([pa.field(c.name, c.type) for c in self.columns], metadata=meta)

    @cached_property
    def reader_columns(self) -> tuple[str, ...]:
        """Columns a reader fills (everything except what ingest stamps on)."""
        return tuple(c.name for c in self.columns if c.name not in self.stamped)

    @cached_property
    def stamped_at(self) -> tuple[tuple[int, Column], ...]:
        """The stamped columns with their positions, in order (what :func:`stamp` inserts into a reader's batch)."""
        return tuple((i, c) for i, c in enumerate(self.columns) if c.name in self.stamped)

    @cached_property
    def reader_schema(self) -> pa.Schema:
        """The Arrow schema of a reader's batches (:attr:`reader_columns`), built once: a file's batch of each
        table is made with it."""
        import pyarrow as pa

        return pa.schema([pa.field(n, self._index[n].type) for n in self.reader_columns])


TABLES: dict[str, Table] = {}


def _parse_columns(block: str) -> list[Column]:
    cols = []
    for raw in block.strip().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, kind, doc = (line.split(None, 2) + [""])[:3]
        if kind not in _DUCK:
            raise ValueError(f"column {name}: unknown type {kind!r} (known: {', '.join(_DUCK)})")
        cols.append(Column(name, kind, doc.strip()))
    return cols


def table(
    name: str,
    *,
    version: int,
    grain: str,
    doc: str,
    columns: str,
    group: str = "core",
    per_rank: bool = True,
    run_relative: dict[str, str | None] | None = None,
    same_fact: tuple[str, ...] = (),
) -> Table:
    """Declare and register a table (``per_rank=False``: no ``rank`` column, e.g. ``runs``;
    ``run_relative``: user-code path columns the views make relative to the run's root, each with
    the column that says its kind, or None when it only holds user code; ``same_fact``: see
    :attr:`Table.same_fact`)."""
    head = COMMON_HEAD if per_rank else COMMON_HEAD[:1]
    cols = [Column(*c) for c in head] + _parse_columns(columns) + [Column(*c) for c in COMMON_TAIL]
    seen: set[str] = set()
    for c in cols:
        if c.name in seen:
            raise ValueError(f"table {name}: column {c.name} declared twice")
        seen.add(c.name)
    rel = tuple((run_relative or {}).items())
    if not set(same_fact) <= seen:
        raise ValueError(f"table {name}: same_fact names an undeclared column")
    for col, kind in rel:
        if col not in seen or (kind is not None and kind not in seen):
            raise ValueError(
                f"table {name}: run_relative names an undeclared column ({col}, {kind})"
            )
    t = Table(
        name,
        version,
        grain,
        " ".join(doc.split()),
        tuple(cols),
        group,
        rel,
        same_fact=tuple(same_fact),
    )
    if name in TABLES and TABLES[name] != t:
        raise ValueError(f"table {name} declared twice")
    TABLES[name] = t
    return t
