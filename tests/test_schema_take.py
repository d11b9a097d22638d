"""Rows.take / TupleRows.take (a small batch's columns made a type at a time: pt2logs.tables.small_batch) make
the batch the per-column path (``rows._columns``, the oracle) makes from the same values, and report the
same values as not fitting their column, in the same order; where the oracle raises, so does take."""

from __future__ import annotations

import math
from datetime import datetime, timezone

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pt2logs.tables  # noqa: F401  (registers the tables)
from pt2logs.tables import rows
from pt2logs.tables.rows import TS_LIMIT, TS_MIN, Rows, TupleRows, _columns
from pt2logs.tables.schema import TABLES
from pt2logs.tables.small_batch import SmallBatch

_UTC = timezone.utc
_INTS = [
    0,
    1,
    -1,
    7,
    2**31 - 1,
    2**31,
    -(2**31),
    -(2**31) - 1,
    2**53 + 1,
    2**63 - 1,
    2**63,
    -(2**63),
    -(2**63) - 1,
    2**64,
    10**30,
]
_FLOATS = [
    0.0,
    -0.0,
    1.5,
    2.0,
    -3.0,
    float("nan"),
    float("inf"),
    float("-inf"),
    1e300,
    2.0**63,
    2.0**31,
    1e-300,
]
_STRS = [
    "",
    "abc",
    "é€😀",
    "\ud800",
    "a\udcffb",
    "true",
    "False",
    "12",
    "-5",
    "1.5",
    "nan",
    "x" * 300,
]
_BYTES = [b"", b"abc", b"\xff\xfe", "é".encode(), b"\xed\xa0\x80", bytearray(b"ba")]
_LISTS = [
    [],
    ["a"],
    ["a", None],
    [1, 2],
    [2**63],
    ["\ud800"],
    [b"x"],
    [b"\xff"],
    [[1]],
    [1.5],
    [True],
    (1, 2),
    {"b", "a"},
    frozenset({3}),
    [{"k": 1}],
]
_DICTS = [{}, {"a": 1}, {"a": [1, "x"]}]
_TIMES = [
    datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=_UTC),
    datetime(2024, 5, 1, 12),
    datetime(1, 1, 1, tzinfo=_UTC),
    datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=_UTC),
]
_TS = [TS_MIN - 1, TS_MIN, TS_MIN + 1, TS_LIMIT - 1, TS_LIMIT, 0, 1_714_564_800_123_456, -1]
_ODD = [np.int64(5), np.float64(1.5), np.bool_(True), np.int32(-3)]
_ANY = [
    None,
    True,
    False,
    *_INTS,
    *_FLOATS,
    *_STRS,
    *_BYTES,
    *_LISTS,
    *_DICTS,
    *_TIMES,
    *_TS,
    *_ODD,
]

#: values a column of each kind usually holds (the batches the fast path takes)
_TYPICAL = {
    "str": st.sampled_from(_STRS[:3] + ["co_name", "/a/b.py"]) | st.text(max_size=6),
    "json": st.sampled_from(['{"a": 1}', "[]", "null"]) | st.text(max_size=6),
    "i32": st.integers(-(2**31), 2**31 - 1),
    "i64": st.integers(-(2**63), 2**63 - 1),
    "f64": st.floats() | st.integers(-(2**53), 2**53),
    "bool": st.booleans(),
    "ts": st.integers(TS_MIN, TS_LIMIT - 1),
    "list<str>": st.lists(st.text(max_size=3), max_size=3),
    "list<i64>": st.lists(st.integers(-(2**63), 2**63 - 1), max_size=3),
}
#: values a column of each kind may hold that still fit it in some way (bytes as text, floats as ints, ...)
_NEAR = {
    "str": _BYTES + _STRS,
    "json": _BYTES + _STRS,
    "i32": _INTS + [True, 2.0, 2.5],
    "i64": _INTS + [True, 2.0, 2.5],
    "f64": _FLOATS + _INTS[:5] + [True],
    "bool": [True, False, 0, 1, "true"],
    "ts": _TS + _TIMES + [1.0, True],
    "list<str>": _LISTS,
    "list<i64>": _LISTS,
}


#: values of a column's usual Python type that do not fit it (out of range, not finite)
_EDGE = {
    "str": ["\ud800", "a\udcffb"],
    "json": ["\udfff"],
    "i32": [2**31, -(2**31) - 1, 2**31 - 1, -(2**31)],
    "i64": [2**63, -(2**63) - 1, 2**63 - 1, -(2**63), 10**30],
    "f64": [float("nan"), float("inf"), 2**64, 10**400],
    "bool": [True, False],
    "ts": [TS_MIN - 1, TS_MIN, TS_LIMIT - 1, TS_LIMIT, -(2**63), 2**63],
    "list<str>": [["\ud800"], [None], [1]],
    "list<i64>": [[2**63], [None], ["1"]],
}


@st.composite
def _column(draw, kind: str, n: int) -> list | None:
    mode = draw(
        st.sampled_from(
            ["none", "none", "missing", "typical", "typical", "typical", "edge", "near", "any"]
        )
    )
    if mode == "missing":
        return None
    if mode == "none":
        return [None] * n
    none = st.none()
    pick = {
        "typical": _TYPICAL[kind],
        "edge": _TYPICAL[kind] | st.sampled_from(_EDGE[kind]),
        "near": st.sampled_from(_NEAR[kind]),
        "any": st.sampled_from(_ANY),
    }[mode]
    return draw(st.lists(none | pick, min_size=n, max_size=n))


_NAMES = [
    "compilation_metrics",
    "compile_phases",
    "recompiles",
    "graph_breaks",
    "cache_events",
    "failures",
    "kernels",
    "ingest_errors",
]


@st.composite
def batches(draw) -> tuple[str, bool, dict[str, list | None], int]:
    name = draw(st.sampled_from(_NAMES + ["runs", "files"]))
    full = name in ("runs", "files")
    t = TABLES[name]
    names = [c for c in t.names if c != "txn"] if full else list(t.reader_columns)
    n = draw(st.integers(0, 6))
    cols = {c: draw(_column(t.column(c).kind, n)) for c in names}
    return name, full, cols, n


def _oracle(t, names, cols: dict, n: int, full: bool) -> tuple:
    bad: list = []
    try:
        arrays = _columns(
            t, names, {k: v for k, v in cols.items() if v is not None}, n, lambda *a: bad.append(a)
        )
        sch = pa.schema([pa.field(c, t.column(c).type) for c in names]) if full else t.reader_schema
        return pa.RecordBatch.from_arrays(arrays, schema=sch), bad
    except Exception as e:  # noqa: BLE001
        return e, bad


def _same_array(a: pa.Array, b: pa.Array) -> bool:
    if a.type != b.type or len(a) != len(b) or a.null_count != b.null_count:
        return False
    if a.equals(b):
        return True
    if not pa.types.is_floating(a.type):  # NaN is unequal to itself: compare the floats' bits
        return False
    valid_a, valid_b = (
        a.is_valid().to_numpy(zero_copy_only=False),
        b.is_valid().to_numpy(zero_copy_only=False),
    )
    bits = [
        np.asarray(x.fill_null(0.0).to_numpy(zero_copy_only=False), dtype=np.float64).view(np.int64)
        for x in (a, b)
    ]
    return bool((valid_a == valid_b).all() and (bits[0][valid_a] == bits[1][valid_a]).all())


def assert_same_batch(got: pa.RecordBatch, want: pa.RecordBatch) -> None:
    assert got.schema.equals(want.schema, check_metadata=True), (got.schema, want.schema)
    assert got.num_rows == want.num_rows
    for name, a, b in zip(got.schema.names, got.columns, want.columns):
        assert _same_array(a, b), (name, a, b)


def _reports_equal(got: list, want: list) -> bool:
    def key(r: tuple) -> tuple:  # NaN reported: equal to itself here
        return tuple("nan" if isinstance(x, float) and math.isnan(x) else repr(x) for x in r)

    return [key(r) for r in got] == [key(r) for r in want]


def _check(name: str, full: bool, cols: dict, n: int) -> None:
    t = TABLES[name]
    r = Rows(name, full=full)
    names = list(r._names)
    want, want_bad = _oracle(t, names, cols, n, full)
    r.cols = {
        k: list(v) for k, v in cols.items() if v is not None
    }  # a column no reader filled: absent
    for k in names:
        if k not in r.cols:
            r.cols[k] = [None] * n
    got_bad: list = []
    if isinstance(want, Exception):
        with pytest.raises(type(want)):
            r.take(lambda *a: got_bad.append(a))
    else:
        got = r.take(lambda *a: got_bad.append(a))
        assert_same_batch(got, want)
    assert _reports_equal(got_bad, want_bad), (got_bad, want_bad)


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(batches())
def test_rows_take_is_the_per_column_path(b):
    _check(*b)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_tuple_rows_take_is_the_per_column_path(data):
    name = data.draw(st.sampled_from(["compile_phases", "compilation_metrics", "graph_breaks"]))
    t = TABLES[name]
    fields = tuple(
        data.draw(st.lists(st.sampled_from(t.reader_columns), unique=True, min_size=1, max_size=12))
    )
    n = data.draw(st.integers(0, 5))
    cols = {f: data.draw(_column(t.column(f).kind, n)) or [None] * n for f in fields}
    tr = TupleRows(name, fields)
    tr.rows = list(zip(*(cols[f] for f in fields))) if n else []
    want, want_bad = _oracle(t, t.reader_columns, cols if n else {}, n, False)
    got_bad: list = []
    if isinstance(want, Exception):
        with pytest.raises(type(want)):
            tr.take(lambda *a: got_bad.append(a))
    else:
        assert_same_batch(tr.take(lambda *a: got_bad.append(a)), want)
    assert _reports_equal(got_bad, want_bad)


def _typical_row(t, i: int) -> dict:
    row = {"rank": 0, "line_no": 10 + i, "file": "f.log", "ts": 1_714_564_800_000_000 + i}
    for c in t.columns:
        if c.name not in row:
            row[c.name] = {
                "str": f"s{i}",
                "json": '{"a": 1}',
                "i32": i,
                "i64": 2**40 + i,
                "f64": i / 3,
                "bool": i % 2 == 0,
                "ts": 1_714_564_800_000_000 - i,
                "list<str>": ["a", str(i)],
                "list<i64>": [i],
            }[c.kind]
    return row


@pytest.mark.parametrize("n", [1, 8, 64, 65, 300])
def test_typical_rows_never_take_the_per_column_path(n):
    """Well-typed rows (the ingest's): every column made by the fast path, none by the per-column one."""
    calls: list = []

    def spy(*a):
        calls.append(a[1])
        return _columns(*a)

    fast = SmallBatch(spy, TS_MIN, TS_LIMIT)
    for name in _NAMES:
        t = TABLES[name]
        r = Rows(name)
        for i in range(n):
            r.add(_typical_row(t, i) if i % 3 else {"line_no": i})  # every third row: mostly NULL
        cols = {k: list(v) for k, v in r.cols.items()}
        got = fast.arrays(t, t.reader_columns, cols, n, lambda *a: pytest.fail(f"reported {a}"))
        want = _columns(t, t.reader_columns, cols, n, None)
        assert_same_batch(
            pa.RecordBatch.from_arrays(got, schema=t.reader_schema),
            pa.RecordBatch.from_arrays(want, schema=t.reader_schema),
        )
    assert calls == []


def test_uneven_columns_fail_as_before():
    r = Rows("recompiles")
    r.add({"line_no": 1})
    r.cols["co_name"].append("extra")
    t = TABLES["recompiles"]
    want, _ = _oracle(t, list(t.reader_columns), r.cols, 1, False)
    assert isinstance(want, ValueError)
    with pytest.raises(ValueError, match="not all the same length"):
        r.take()


def test_the_fast_path_is_the_one_in_use():
    assert rows._small.per_column is _columns


def test_text_arrow_cannot_store_in_a_json_column_is_reported_as_in_a_str_column():
    """A lone surrogate (Python's json module writes them) in a json column raised UnicodeEncodeError out
    of take(); it becomes NULL and is reported, as in a str column (surrogate escapes of a file name that
    is not UTF-8 are kept, as ``\\xNN``)."""

    rows = Rows("compile_phases")
    rows.add({"phase": "p\udfff", "args": '{"k": "\udfff"}', "line_no": 1})
    rows.add({"phase": "q\udcff", "args": '{"k": "\udcff"}', "line_no": 2})
    bad: list = []
    batch = rows.take(lambda table, column, value, line: bad.append((column, line)))
    assert batch.column("args").to_pylist() == [None, '{"k": "\\xff"}']
    assert batch.column("phase").to_pylist() == [None, "q\\xff"]
    assert sorted(bad) == [("args", 1), ("phase", 1)]
