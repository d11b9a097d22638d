"""A kept answer as rows the standard library reads: what the CLI's commands about one run print from, without
pyarrow.

A kept answer (:mod:`pt2logs.query.kept_answers`) is the Arrow IPC stream of the table a named query returned; reading
it back needs pyarrow, and importing pyarrow and numpy costs a command ~0.08 CPU s, more than half the floor of any
Python command that answers from DuckDB. So the keep also writes each answer as JSON text (:func:`encode`): its
columns, each with a kind (int, float, str, bool, a timestamp's unit and zone, a date, a decimal, a list of one of
those, null), and its rows' values, each as :meth:`pyarrow.Table.to_pylist` gives it. :func:`decode` reads it back
as :class:`Rows`: the part of a pyarrow Table the commands' renderers use (``to_pylist``, ``num_rows``,
``column_names``, ``select``), the same Python values, and the Arrow table itself where a writer needs one
(``to_arrow``: from the IPC stream). An answer of a type this does not write (a struct, a duration, a zone given as an
offset...) or that does not read back to the same values (checked when kept) has no text, and is read from its IPC
stream as before.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable
from typing import Any

#: bump when the text's layout changes (the key of the kept answers hashes this module too)
VERSION = 1

#: kinds shown right-justified (numbers), and never shortened (numbers, times, booleans): what the table format
#: decides from an Arrow type (pt2logs.cli.outputs.write_table)
NUMERIC = frozenset({"i", "f", "dec"})
FIXED = NUMERIC | {"ts", "date", "b"}


def _kind(t: Any) -> str | None:
    """The kind of an Arrow type (``l:<kind>`` for a list), None for a type this does not write."""
    import pyarrow as pa

    if pa.types.is_integer(t):
        return "i"
    if pa.types.is_floating(t):
        return "f"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "s"
    if pa.types.is_boolean(t):
        return "b"
    if pa.types.is_null(t):
        return "n"
    if pa.types.is_decimal(t):
        return "dec"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t) and t.unit in ("s", "ms", "us"):
        if t.tz is None:
            return "ts"
        return f"ts@{t.tz}" if "/" in t.tz or t.tz.isalpha() else None
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = _kind(t.value_type)
        return None if inner is None or inner.startswith("l:") else f"l:{inner}"
    return None


def _enc(kind: str, v: Any) -> Any:
    if v is None:
        return None
    if kind.startswith("l:"):
        return [_enc(kind[2:], x) for x in v]
    if kind.startswith("ts"):
        return [v.replace(tzinfo=None).isoformat(), v.fold]
    if kind in ("date", "dec"):
        return str(v)
    return v


def _decoder(kind: str) -> Callable[[Any], Any] | None:
    """The function that makes a value of ``kind`` from its JSON (None: the JSON value is the value)."""
    if kind.startswith("l:"):
        inner = _decoder(kind[2:])
        if inner is None:
            return None
        return lambda v: None if v is None else [inner(x) for x in v]
    if kind.startswith("ts"):
        tz = None
        if "@" in kind:
            from zoneinfo import ZoneInfo

            tz = ZoneInfo(kind.split("@", 1)[1])
        return lambda v: (
            None if v is None else dt.datetime.fromisoformat(v[0]).replace(tzinfo=tz, fold=v[1])
        )
    if kind == "date":
        return lambda v: None if v is None else dt.date.fromisoformat(v)
    if kind == "dec":
        from decimal import Decimal

        return lambda v: None if v is None else Decimal(v)
    return None


def _same(a: Any, b: Any) -> bool:
    """Whether two values are the same Python value: same types (bool is no int, a float no int), a float's bits
    (NaN too), a time's zone object."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return repr(a) == repr(b)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dt.datetime):
        return a == b and a.fold == b.fold and repr(a.tzinfo) == repr(b.tzinfo) and str(a) == str(b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return bool(a == b) and repr(a) == repr(b)


def encode(table: Any) -> str | None:
    """``table`` (a pyarrow Table) as the text :func:`decode` reads back as the same rows; None when it holds a
    type this does not write, or does not read back to the same values."""
    kinds = [_kind(f.type) for f in table.schema]
    if any(k is None for k in kinds):
        return None
    names = table.column_names
    cols = [table.column(i).to_pylist() for i in range(len(names))]
    rows = [[_enc(k, c[i]) for k, c in zip(kinds, cols)] for i in range(table.num_rows)]
    try:
        text = json.dumps({"v": VERSION, "names": names, "kinds": kinds, "rows": rows})
        back = decode(text, lambda: table)
    except (TypeError, ValueError):
        return None
    if back.column_names != names or not _same(back.to_pylist(), table.to_pylist()):
        return None
    return text


class Column:
    """One column of :class:`Rows` (``to_pylist``, as a pyarrow ChunkedArray)."""

    def __init__(self, values: list[Any]):
        self._values = values

    def to_pylist(self) -> list[Any]:
        return list(self._values)


class Rows:
    """A kept answer's rows: what of a pyarrow Table the commands' renderers use, the same values; the Arrow table
    itself from ``arrow()`` (the IPC stream read) where a writer needs one."""

    def __init__(
        self,
        names: list[str],
        kinds: list[str],
        rows: list[list[Any]],
        arrow: Callable[[], Any],
    ):
        self.column_names, self.kinds, self._rows, self._arrow = names, kinds, rows, arrow

    @property
    def num_rows(self) -> int:
        return len(self._rows)

    def to_pylist(self) -> list[dict[str, Any]]:
        names = self.column_names
        return [dict(zip(names, r)) for r in self._rows]

    def column(self, name: str | int) -> Column:
        i = name if isinstance(name, int) else self.column_names.index(name)
        return Column([r[i] for r in self._rows])

    def select(self, names: Iterable[str]) -> Rows:
        names = list(names)
        at = [self.column_names.index(n) for n in names]
        return Rows(
            names,
            [self.kinds[i] for i in at],
            [[r[i] for i in at] for r in self._rows],
            lambda: self.to_arrow().select(names),
        )

    def with_columns(self, add: dict[str, list[str | None]]) -> Rows:
        """These rows with text columns added at the end (``pyarrow.Table.append_column`` of strings)."""
        import itertools

        names = [*self.column_names, *add]
        extra = list(zip(*add.values())) if self._rows else []
        rows = [[*r, *e] for r, e in itertools.zip_longest(self._rows, extra, fillvalue=())]

        def arrow() -> Any:
            import pyarrow as pa

            t = self.to_arrow()
            for k, v in add.items():
                t = t.append_column(k, pa.array(v, pa.string()))
            return t

        return Rows(names, [*self.kinds, *("s" for _ in add)], rows, arrow)

    @property
    def numeric(self) -> list[str]:
        """The columns shown right-justified (numbers)."""
        return [n for n, k in zip(self.column_names, self.kinds) if k in NUMERIC]

    @property
    def fixed(self) -> list[str]:
        """The columns never shortened (numbers, times, booleans)."""
        return self.numeric + [
            n
            for n, k in zip(self.column_names, self.kinds)
            if k.split("@", 1)[0] in FIXED and k not in NUMERIC
        ]

    def to_arrow(self) -> Any:
        return self._arrow()


def decode(text: str, arrow: Callable[[], Any]) -> Rows:
    """The rows :func:`encode` wrote (``arrow()``: the same answer as a pyarrow Table, for :meth:`Rows.to_arrow`)."""
    d = json.loads(text)
    if d.get("v") != VERSION:
        raise ValueError(f"kept rows of version {d.get('v')!r}")
    names, kinds, rows = d["names"], d["kinds"], d["rows"]
    fns = [(i, f) for i, k in enumerate(kinds) if (f := _decoder(k)) is not None]
    for r in rows:
        for i, f in fns:
            r[i] = f(r[i])
    return Rows(names, kinds, rows, arrow)
