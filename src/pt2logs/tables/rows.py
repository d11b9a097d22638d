"""Rows → Arrow: the values readers make, as columns of a declared table's types.

A value that fits no column (inf and NaN included) becomes NULL and is reported through ``on_bad``,
never an exception. :class:`Rows` and :class:`TupleRows` are the row accumulators readers fill;
:func:`stamp` puts ``run_id`` / ``txn`` / ``rank`` on every batch at ingest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from pt2logs.tables.schema import TABLES, Column, Table
from pt2logs.tables.small_batch import SmallBatch

_INT_LIMIT = {"i32": 1 << 31, "i64": 1 << 63}


def safe_text(v: str) -> str:
    """Text that Arrow can store: a file name that is not UTF-8 comes from the OS with surrogate
    escapes; its bad bytes are shown as ``\\xNN``. (Files are opened by their original name.)"""
    try:
        v.encode("utf-8")
        return v
    except UnicodeEncodeError:
        return v.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _coerce(kind: str, v: Any) -> Any:
    """Best-effort conversion of one value to a column kind; None when impossible."""
    if v is None:
        return None
    try:
        if isinstance(v, (bytes, bytearray)):
            v = bytes(v).decode("utf-8", "replace")
        if kind == "str":
            return (
                safe_text(v)
                if isinstance(v, str)
                else (orjson.dumps(v).decode() if isinstance(v, (dict, list)) else str(v))
            )
        if kind == "json":
            return safe_text(v) if isinstance(v, str) else orjson.dumps(v, default=str).decode()
        if kind in ("i32", "i64"):
            if isinstance(v, bool):
                return int(v)
            if isinstance(v, float):
                v = int(v) if v.is_integer() else None
            elif not isinstance(v, int):
                v = int(v)  # a numeric string; anything else raises
            lim = _INT_LIMIT[kind]
            return v if v is not None and -lim <= v < lim else None
        if kind == "f64":  # inf and NaN fit no column: no chart, JSON or sum can use them
            return f if abs(f := float(v)) < float("inf") else None
        if kind == "bool":
            if isinstance(v, str):
                return {"true": True, "false": False}.get(v.lower())
            return bool(v)
        if kind == "ts":
            if isinstance(v, datetime):
                return v
            return datetime.fromtimestamp(int(v) / 1e6, tz=timezone.utc)
        if kind.startswith("list<"):
            if isinstance(v, (list, tuple, set, frozenset)):
                inner = kind[5:-1]
                return [
                    _coerce(inner, x)
                    for x in (sorted(v, key=str) if isinstance(v, (set, frozenset)) else v)
                ]
            return [_coerce(kind[5:-1], v)]
    except (TypeError, ValueError, OverflowError, OSError):
        return None
    return None


_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError, ValueError)
#: a timestamp column holds microseconds since the epoch within what Arrow and Python can show
TS_LIMIT = 253402300800 * 10**6  # 10000-01-01
TS_MIN = -62135596800 * 10**6  # 0001-01-01


def _coerced(kind: str, values: list[Any], bad: list[int] | None) -> list[Any]:
    out = [_coerce(kind, v) for v in values]
    if bad is not None:
        bad.extend(i for i, (v, c) in enumerate(zip(values, out)) if v is not None and c is None)
    return out


def _ts_value(v: Any) -> Any:
    if isinstance(v, datetime):
        return int(v.timestamp() * 1e6)
    v = _coerce("i64", v)
    return v if v is not None and TS_MIN <= v < TS_LIMIT else None


def to_array(values: list[Any], col: Column, bad: list[int] | None = None) -> pa.Array:
    """Build an Arrow array, falling back to per-value coercion for mixed input. A value that cannot
    be stored in the column (a number out of range, a list where a number belongs) becomes NULL and,
    when ``bad`` is given, its index is added there so the caller can report it."""
    t = col.type
    if values.count(None) == len(
        values
    ):  # a column no row has (most of a wide table's, in a small file)
        return pa.nulls(len(values), type=t)
    if col.kind == "ts":
        # timestamps are carried as integer microseconds since the epoch (UTC)
        try:
            arr = pa.array(values, type=pa.int64())
            mm = pc.min_max(arr).as_py()
            if mm["min"] is not None and (
                mm["min"] < TS_MIN or mm["max"] >= TS_LIMIT
            ):  # a damaged log's epoch value
                out_of_range = pc.or_(pc.less(arr, TS_MIN), pc.greater_equal(arr, TS_LIMIT))
                if bad is not None:
                    bad.extend(i for i, o in enumerate(out_of_range.to_pylist()) if o)
                arr = pc.if_else(out_of_range, pa.scalar(None, pa.int64()), arr)
            return arr.cast(t)
        except _ARROW_ERRORS:
            out = [_ts_value(v) for v in values]
            if bad is not None:
                bad.extend(
                    i for i, (v, c) in enumerate(zip(values, out)) if v is not None and c is None
                )
            return pa.array(out, type=pa.int64()).cast(t)
    if col.kind in ("str", "json"):
        # bytes -> binary is a memcpy, the cast validates UTF-8 in one pass (much faster than per value)
        first = next((v for v in values if v is not None), None)
        if isinstance(first, bytes):
            try:
                return pa.array(values, type=pa.binary()).cast(t)
            except _ARROW_ERRORS:
                return pa.array(_coerced(col.kind, values, bad), type=t)
    try:
        arr = pa.array(values, type=t)
    except _ARROW_ERRORS:
        return pa.array(_coerced(col.kind, values, bad), type=t)
    if col.kind == "f64" and not pc.all(finite := pc.is_finite(arr)).as_py():  # (nulls skipped)
        if bad is not None:
            bad.extend(i for i, f in enumerate(finite.to_pylist()) if f is False)
        arr = pc.if_else(finite, arr, pa.scalar(None, t))
    return arr


#: on_bad(table, column, value, row's line_no): a value that became NULL because it does not fit
OnBad = Callable[[str, str, Any, Any], None]


def from_numpy(
    values: np.ndarray, typ: pa.DataType | None = None, null: np.ndarray | None = None
) -> pa.Array:
    """A 1-D numpy array of fixed-width numbers as an Arrow array of the same width (``null``: True where
    the value is NULL), made from its buffers: ``pa.array(ndarray)`` checks whether it was given a masked
    array, and that check imports ``numpy.ma`` (~0.05 s of CPU, a tenth of a one-trace ingest)."""
    if values.dtype.kind not in "iuf":  # (booleans are bits in Arrow, bytes in numpy)
        raise TypeError(f"from_numpy takes fixed-width numbers, not {values.dtype}")
    values = np.ascontiguousarray(values)
    typ = pa.from_numpy_dtype(values.dtype) if typ is None else typ
    validity = None
    if null is not None and null.any():
        validity = pa.py_buffer(np.packbits(~null, bitorder="little"))
    return pa.Array.from_buffers(typ, len(values), [validity, pa.py_buffer(values)])


def _columns(
    table: Table, names: list[str], cols: dict[str, list[Any]] | None, n: int, on_bad: OnBad | None
) -> list[pa.Array]:
    arrays = []
    lines = cols.get("line_no") if cols else None
    for name in names:
        col = table.column(name)
        vals = cols.get(name) if cols else None
        if vals is None:
            arrays.append(pa.nulls(n, type=col.type))
            continue
        bad: list[int] | None = [] if on_bad is not None else None
        arrays.append(to_array(vals, col, bad))
        for i in bad or ():
            on_bad(table.name, name, vals[i], lines[i] if lines is not None else None)  # type: ignore[misc]
    return arrays


#: Rows' and TupleRows' columns: a small batch's a type at a time, as _columns (the per-column path) makes them
_small = SmallBatch(_columns, TS_MIN, TS_LIMIT)


class Rows:
    """Column-wise accumulator for one table; becomes Arrow record batches.

    Readers append with :meth:`add` (a dict per row: fine for tables with
    thousands of rows) or straight into :attr:`cols` lists in hot loops.
    Columns stamped by the ingest layer (``run_id``, ``txn``) are not held.
    """

    __slots__ = ("table", "cols", "_names")

    def __init__(self, t: Table | str, *, full: bool = False):
        self.table = TABLES[t] if isinstance(t, str) else t
        self._names = (
            [c for c in self.table.names if c != "txn"] if full else self.table.reader_columns
        )
        self.cols: dict[str, list[Any]] = {n: [] for n in self._names}

    def __len__(self) -> int:
        return len(self.cols[self._names[0]])

    def add(self, row: dict[str, Any]) -> None:
        for n, lst in self.cols.items():
            lst.append(row.get(n))

    def extend(self, rows: Iterable[dict[str, Any]]) -> None:
        for r in rows:
            self.add(r)

    def take(self, on_bad: OnBad | None = None) -> pa.RecordBatch:
        """Return the accumulated rows as a batch and start empty (values that fit no column: ``on_bad``)."""
        arrays = _small.arrays(self.table, self._names, self.cols, len(self), on_bad)
        self.cols = {n: [] for n in self._names}
        if self._names is self.table.reader_columns:
            return pa.RecordBatch.from_arrays(arrays, schema=self.table.reader_schema)
        return pa.RecordBatch.from_arrays(
            arrays, schema=pa.schema([pa.field(n, self.table.column(n).type) for n in self._names])
        )


#: the values ingest stamps on every batch: run id and transaction (columns readers never fill), rank (fills gaps)
_STAMP_KEYS = frozenset(("run_id", "txn", "rank"))


def _constant(value: Any, typ: pa.DataType, n: int) -> pa.Array:
    """``value`` ``n`` times (one scalar repeated natively: a Python list of n copies cost 0.25 µs a row)."""
    if value is None or n == 0:
        return pa.nulls(n, type=typ) if value is None else pa.array([], type=typ)
    a = pa.repeat(pa.scalar(value, type=typ), n)
    return a if a.type == typ else a.cast(typ)


def stamp(batch: pa.RecordBatch, t: Table, values: dict[str, Any]) -> pa.RecordBatch:
    """Add the stamped columns (and any missing ones as NULL) in declared order."""
    n = batch.num_rows
    if batch.schema.equals(t.reader_schema) and values.keys() <= _STAMP_KEYS:
        # a reader's batch (every column already of its type, in order): the stamped columns go in between
        arrays = batch.columns
        for i, c in t.stamped_at:
            arrays.insert(i, _constant(values.get(c.name), c.type, n))
        rank = values.get("rank")
        if rank is not None and "rank" in t.reader_columns:
            i = t.names.index("rank")
            if arrays[i].null_count:
                arrays[i] = pc.fill_null(arrays[i], pa.scalar(rank, type=arrays[i].type))
        return pa.RecordBatch.from_arrays(arrays, schema=t.schema)
    arrays = []
    have = dict(
        zip(batch.schema.names, batch.columns)
    )  # one call for all the columns, not one lookup each
    for c in t.columns:
        # a stamped value: for a column the batch lacks, or over the batch's (the rank only fills its gaps)
        if c.name in values and (
            c.name not in have or (c.name != "rank" and values[c.name] is not None)
        ):
            arrays.append(_constant(values[c.name], c.type, n))
        elif c.name in have:
            a = have[c.name]
            if c.name == "rank" and values.get("rank") is not None and a.null_count:
                a = pc.fill_null(a, pa.scalar(values["rank"], type=c.type))
            arrays.append(a if a.type == c.type else a.cast(c.type))
        else:
            arrays.append(pa.nulls(n, type=c.type))
    return pa.RecordBatch.from_arrays(arrays, schema=t.schema)


class TupleRows:
    """Rows of a hot table as tuples in a fixed field order (one tuple and one append per row);
    columns are made by transposing at :meth:`take`. Fields not listed are NULL."""

    __slots__ = ("table", "fields", "rows")

    def __init__(self, t: Table | str, fields: tuple[str, ...]):
        self.table = TABLES[t] if isinstance(t, str) else t
        unknown = [f for f in fields if f not in self.table.reader_columns]
        if unknown:
            raise ValueError(f"{self.table.name}: no columns {unknown}")
        self.fields = fields
        self.rows: list[tuple] = []

    def __len__(self) -> int:
        return len(self.rows)

    def take(self, on_bad: OnBad | None = None) -> pa.RecordBatch:
        n = len(self.rows)
        cols = {k: list(v) for k, v in zip(self.fields, zip(*self.rows))} if n else {}
        self.rows = []
        names = self.table.reader_columns
        arrays = _small.arrays(self.table, names, cols, n, on_bad)
        return pa.RecordBatch.from_arrays(arrays, schema=self.table.reader_schema)
