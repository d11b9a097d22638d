"""A small batch's columns made a type at a time, not one column at a time.

A file's batch of a wide table (``compilation_metrics``: ~110 columns) holds a few rows, and making
each column with its own ``pa.array`` call (plus the checks around it) costs ~5 µs a column, far more
than converting its handful of values. :class:`SmallBatch` puts the values of every column of one
Arrow type into one list, converts it with one ``pa.array`` call and hands each column its slice; a
column of only None gets a null array (cached per kind and length).

It is a shortcut, never a second set of rules. The per-column path (``schema._columns`` →
``rows.to_array``) makes a column with ``pa.array(values, type=...)`` and only does something else
when that call fails (or, for ``ts``, finds a value out of range; for text, sees ``bytes`` first).
Given the type, pyarrow converts each value on its own, so one call on a group's values succeeds
exactly when every column's own call would, and gives their arrays one after another. A group is
converted this way only when a cheap check shows the per-column path would have made that call and
kept its result: every value of a Python type the group allows, timestamps within range, floats finite. Anything else
(another type, a conversion that fails, a timestamp out of range, inf or NaN, lists of uneven length, a batch
that is not small) goes to the per-column path itself, column by column in declared order, so values
that fit no column are reported through ``on_bad`` exactly as there, in the same order. (The columns
of a group share its buffers: ``get_total_buffer_size`` counts a shared buffer once.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import isfinite
from typing import Any

import pyarrow as pa

#: batches of more rows go to the per-column path (there a call's overhead is small beside its values)
MAX_ROWS = 1024
#: null arrays are kept for batches of up to this many rows (one per kind and length)
_NULLS_UP_TO = 64

_NONE = type(None)
#: column kind → (group, the Python types its values may have for the group's one call to stand
#: for the column's own call); ``ts`` is converted as int64 (as the per-column path does) and cast
_GROUP: dict[str, tuple[str, frozenset[type]]] = {
    "str": ("string", frozenset((str, _NONE))),
    "json": ("string", frozenset((str, _NONE))),  # bytes: the per-column path's UTF-8 check
    "i32": ("i32", frozenset((int, _NONE))),  # bool is not int here: its own path
    "i64": ("i64", frozenset((int, _NONE))),
    "ts": ("ts", frozenset((int, _NONE))),  # datetime, float: the per-column path
    "f64": ("f64", frozenset((float, int, _NONE))),
    "bool": ("bool", frozenset((bool, _NONE))),
    "list<str>": ("list<str>", frozenset((list, _NONE))),
    "list<i64>": ("list<i64>", frozenset((list, _NONE))),
}

#: the per-column path: (table, names, cols, n, on_bad) → one array per name, bad values reported
PerColumn = Callable[[Any, Sequence[str], Any, int, Any], list[pa.Array]]


class _Plan:
    """A table's columns (in the order asked for) sorted into groups, made once per table and names."""

    __slots__ = ("table", "slots", "group_type", "group_types_ok")

    def __init__(self, table: Any, names: Sequence[str]):
        self.table = table
        cols = [table.column(n) for n in names]
        #: per column: (position, kind, group, Arrow type)
        grouped = [_GROUP.get(c.kind, (f"{c.kind} (per column)", frozenset())) for c in cols]
        self.slots = [(i, c.kind, g, c.type) for i, (c, (g, _)) in enumerate(zip(cols, grouped))]
        self.group_type = {
            g: pa.int64() if g == "ts" else c.type for c, (g, _) in zip(cols, grouped)
        }
        #: a kind not in _GROUP allows no type: its columns always take the per-column path
        self.group_types_ok = dict(grouped)


class SmallBatch:
    """Makes the arrays of a small batch's columns; ``per_column`` is the path it must agree with
    (and falls back to), ``ts_min``/``ts_limit`` the range a timestamp column holds."""

    def __init__(self, per_column: PerColumn, ts_min: int, ts_limit: int):
        self.per_column = per_column
        self.ts_min, self.ts_limit = ts_min, ts_limit
        self._plans: dict[tuple[str, tuple[str, ...]], _Plan] = {}
        self._nulls: dict[tuple[str, int], pa.Array] = {}

    def _plan(self, table: Any, names: Sequence[str]) -> _Plan:
        key = (table.name, names if type(names) is tuple else tuple(names))
        plan = self._plans.get(key)
        if plan is None or plan.table is not table:
            plan = self._plans[key] = _Plan(table, names)
        return plan

    def _null(self, kind: str, typ: pa.DataType, n: int) -> pa.Array:
        if n > _NULLS_UP_TO:
            return pa.nulls(n, type=typ)
        a = self._nulls.get((kind, n))
        if a is None:
            a = self._nulls[(kind, n)] = pa.nulls(n, type=typ)
        return a

    def arrays(
        self,
        table: Any,
        names: Sequence[str],
        cols: dict[str, list[Any]] | None,
        n: int,
        on_bad: Any,
    ) -> list[pa.Array]:
        """One array per name, as ``per_column(table, names, cols, n, on_bad)`` makes them."""
        if not cols or not 0 < n <= MAX_ROWS:
            return self.per_column(table, names, cols, n, on_bad)
        plan = self._plan(table, names)
        out: list[pa.Array | None] = [None] * len(names)
        flat: dict[str, list[Any]] = {}  # group → its columns' values, one after another
        members: dict[str, list[int]] = {}  # group → its columns (positions in names)
        for v, (i, kind, g, typ) in zip(map(cols.get, names), plan.slots):
            if v is not None:
                if type(v) is not list or len(v) != n:
                    return self.per_column(
                        table, names, cols, n, on_bad
                    )  # (whatever it makes of them)
                if v.count(None) != n:
                    f = flat.get(g)
                    if f is None:
                        flat[g], members[g] = v[:], [i]
                    else:
                        f += v
                        members[g].append(i)
                    continue
            out[i] = self._null(kind, typ, n)
        for g, values in flat.items():
            got = self._group(g, values, plan)
            if got is None:
                continue  # its columns: the per-column path, below
            idx = members[g]
            if g == "ts":
                for j, i in enumerate(idx):
                    out[i] = got.slice(j * n, n).cast(plan.slots[i][3])
            elif len(idx) == 1:
                out[idx[0]] = got
            else:
                for j, i in enumerate(idx):
                    out[i] = got.slice(j * n, n)
        for i, a in enumerate(out):
            if a is None:
                out[i] = self.per_column(table, [names[i]], cols, n, on_bad)[0]
        return out  # type: ignore[return-value]

    def _group(self, g: str, values: list[Any], plan: _Plan) -> pa.Array | None:
        """The group's values as one array, or None where the per-column path might do otherwise."""
        if not set(map(type, values)) <= plan.group_types_ok[g]:
            return None
        if g == "ts":
            present = [v for v in values if v is not None]
            if min(present) < self.ts_min or max(present) >= self.ts_limit:
                return None  # (reported there)
        elif g == "f64":  # inf, NaN or an int beyond a double: NULL and reported there
            try:
                if not all(map(isfinite, [v for v in values if v is not None])):
                    return None
            except OverflowError:
                return None
        try:
            arr = pa.array(values, type=plan.group_type[g])
        except (
            Exception
        ):  # whatever it is, the per-column path meets it again (and reports or raises)
            return None
        return arr if isinstance(arr, pa.Array) and len(arr) == len(values) else None
