"""Rows of a table that arrive in pieces: many rows at once that share most of their values.

A cache key's hundreds of components, say: every row of a lookup has the same file, line, compile id,
cache and key, and its own name, hash and value, which the native pass (``_native/components.c``)
hands over as Arrow arrays. :class:`SegmentRows` keeps each piece as it came (its shared values once,
its row count, its own columns) and makes the batch at :meth:`SegmentRows.take`: a shared column is
one small array of the pieces' values, repeated; the pieces' own columns are concatenated; a derived
column is computed once per distinct value of the column it comes from. Same batch, row for row, as
:class:`~pt2logs.tables.rows.Rows` would make from the same rows added one dict at a time (values that fit
no column reported through ``on_bad`` once per row, as there).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from pt2logs.tables import TABLES
from pt2logs.tables.rows import OnBad, TupleRows, from_numpy, safe_text, to_array
from pt2logs.tables.schema import Table

#: column → (the column it is computed from, the function of one value)
Derived = dict[str, tuple[str, Callable[[Any], Any]]]


class SegmentRows:
    """Pieces of rows of one table: ``(shared, n, columns)``, ``columns`` holding ``n`` values each
    (an Arrow array, or a list); any other column of the table takes ``shared``'s value (None if absent)."""

    __slots__ = ("table", "derived", "pieces", "n")

    def __init__(self, t: Table | str, derived: Derived | None = None):
        self.table = TABLES[t] if isinstance(t, str) else t
        self.derived = dict(derived or {})
        self.pieces: list[tuple[dict[str, Any], int, dict[str, Any]]] = []
        self.n = 0

    def __len__(self) -> int:
        return self.n

    def add_piece(self, shared: dict[str, Any], n: int, columns: dict[str, Any]) -> None:
        if n:
            self.pieces.append((shared, n, columns))
            self.n += n

    def add(self, row: dict[str, Any]) -> None:
        self.add_piece(row, 1, {})

    def take(self, on_bad: OnBad | None = None) -> pa.RecordBatch:
        pieces, self.pieces, self.n = self.pieces, [], 0
        t = self.table
        names = t.reader_columns
        counts = np.fromiter((p[1] for p in pieces), dtype=np.int64, count=len(pieces))
        rows_of: pa.Array | None = None  # row -> its piece
        arrays: dict[str, pa.Array] = {}
        for name in names:
            if name in self.derived:
                continue
            col = t.column(name)
            if not any(
                name in p[2] for p in pieces
            ):  # shared by every piece: one value each, repeated
                vals = [p[0].get(name) for p in pieces]
                bad: list[int] | None = [] if on_bad is not None else None
                arr = to_array(vals, col, bad)
                for i in bad or ():
                    for _ in range(pieces[i][1]):
                        on_bad(t.name, name, vals[i], pieces[i][0].get("line_no"))  # type: ignore[misc]
                if rows_of is None:
                    rows_of = from_numpy(np.repeat(np.arange(len(pieces), dtype=np.int64), counts))
                arrays[name] = arr.take(rows_of)
            else:
                arrays[name] = self._own(name, pieces, on_bad)
        for name, (source, fn) in self.derived.items():
            enc = arrays[source].dictionary_encode()
            values = pa.array([fn(v) for v in enc.dictionary.to_pylist()], type=t.column(name).type)
            arrays[name] = values.take(enc.indices)
        return pa.RecordBatch.from_arrays([arrays[n] for n in names], schema=t.reader_schema)

    def _own(self, name: str, pieces: list, on_bad: OnBad | None) -> pa.Array:
        """A column the pieces give row by row (or as their shared value): arrays as they are, the lists
        between them made into one array each."""
        col = self.table.column(name)
        parts: list[pa.Array] = []
        vals: list[Any] = []
        lines: list[Any] = []

        def lists_done() -> None:
            if not vals:
                return
            bad: list[int] | None = [] if on_bad is not None else None
            parts.append(to_array(vals, col, bad))
            for i in bad or ():
                on_bad(self.table.name, name, vals[i], lines[i])  # type: ignore[misc]
            vals.clear()
            lines.clear()

        for shared, n, columns in pieces:
            v = columns.get(name) if name in columns else [shared.get(name)] * n
            if isinstance(v, list):
                vals.extend(v)
                lines.extend([shared.get("line_no")] * n)
            else:
                lists_done()
                parts.append(v if v.type == col.type else v.cast(col.type))
        lists_done()
        return parts[0] if len(parts) == 1 else pa.concat_arrays(parts)


class NativeTupleRows(TupleRows):
    """:class:`~pt2logs.tables.rows.TupleRows` (the Python handlers' rows, one tuple each) beside rows written
    natively as Arrow column buffers: ``native`` (``_native/phase_cols.c``'s PhaseCols: the columns
    ``native_fields``, and for each of its rows how many tuple rows were added before it); the ``shared``
    columns (the same for every native row: source, file) are not in them. :meth:`take` makes the batch of
    both in the order their rows were added, the tuples' values converted (and reported through
    ``on_bad``) exactly as TupleRows does; the native ones fit their columns by construction."""

    __slots__ = ("native", "native_fields", "shared")

    def __init__(
        self,
        t: Table | str,
        fields: tuple[str, ...],
        native: Any,
        native_fields: tuple[str, ...],
        shared: dict[str, Any],
    ):
        super().__init__(t, fields)
        self.native, self.native_fields = native, native_fields
        self.shared = {k: safe_text(v) if isinstance(v, str) else v for k, v in shared.items()}

    def __len__(self) -> int:
        return len(self.rows) + len(self.native)

    def take(self, on_bad: OnBad | None = None) -> pa.RecordBatch:
        n, before, bufs = self.native.take()
        rows = self.rows[:]
        self.rows.clear()  # in place: the native pass holds this list (its length places the native rows)
        t = self.table
        native = {
            name: pa.Array.from_buffers(
                t.column(name).type,
                n,
                [
                    None if v is None else pa.py_buffer(v),
                    *(() if o is None else (pa.py_buffer(o),)),
                    pa.py_buffer(d),
                ],
            )
            for name, (v, o, d) in zip(self.native_fields, bufs)
        }
        # runs in the order rows were added: (False, tuple rows [a, b)) or (True, native rows [a, b))
        at = np.frombuffer(before, dtype=np.int64)
        cuts = [0, *(np.flatnonzero(np.diff(at)) + 1).tolist(), n] if n else [0]
        runs: list[tuple[bool, int, int]] = []
        prev = 0
        for a, b in zip(cuts, cuts[1:]):
            if at[a] > prev:
                runs.append((False, prev, int(at[a])))
                prev = int(at[a])
            runs.append((True, a, b))
        if prev < len(rows) or not runs:  # (no rows at all: an empty batch)
            runs.append((False, prev, len(rows)))
        index = {f: i for i, f in enumerate(self.fields)}
        line = index.get("line_no")
        arrays = []
        for name in t.reader_columns:
            col, i = t.column(name), index.get(name)
            parts = []
            for is_native, a, b in runs:
                if is_native:
                    arr = native.get(name)
                    if arr is None:
                        v = self.shared.get(name)
                        arr = (
                            pa.nulls(b - a, col.type)
                            if v is None
                            else pa.repeat(pa.scalar(v, col.type), b - a)
                        )
                    parts.append(arr.slice(a, b - a) if name in native else arr)
                    continue
                vals = [r[i] for r in rows[a:b]] if i is not None else [None] * (b - a)
                bad: list[int] | None = [] if on_bad is not None else None
                parts.append(to_array(vals, col, bad))
                for k in bad or ():
                    on_bad(t.name, name, vals[k], rows[a + k][line] if line is not None else None)  # type: ignore[misc]
            arrays.append(parts[0] if len(parts) == 1 else pa.concat_arrays(parts))
        return pa.RecordBatch.from_arrays(arrays, schema=t.reader_schema)
