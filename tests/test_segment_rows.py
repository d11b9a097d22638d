"""SegmentRows (rows arriving in pieces) makes the batch :class:`~pt2logs.tables.rows.Rows` makes from the same
rows added one at a time: same values, same order, the same values reported as not fitting their column."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pt2logs.tables  # noqa: F401  (registers the tables)
from pt2logs.analysis.cache_keys import component_kind
from pt2logs.readers.segment_rows import SegmentRows
from pt2logs.tables.rows import Rows

_INT = st.one_of(
    st.integers(-5, 5), st.just(2**40), st.just("7"), st.just("x"), st.none(), st.just(1.5)
)
_STR = st.one_of(st.text(max_size=4), st.none(), st.integers(0, 3), st.just(["a"]))


@st.composite
def pieces(draw) -> list[tuple[dict, int, dict]]:
    out = []
    for _ in range(draw(st.integers(0, 5))):
        n = draw(st.integers(0, 4))
        shared = {
            "file": draw(_STR),
            "line_no": draw(_INT),
            "rank": draw(_INT),
            "cache": draw(_STR),
            "key": draw(_STR),
            "time_saved_ms": draw(st.one_of(st.none(), st.floats(allow_nan=False), st.just("no"))),
        }
        cols: dict = {}
        if draw(st.booleans()):
            cols["n_components"] = draw(st.lists(_INT, min_size=n, max_size=n))
        if draw(st.booleans()):
            texts = draw(st.lists(st.text(max_size=4), min_size=n, max_size=n))
            cols["outcome"] = pa.array(texts, type=pa.string()) if draw(st.booleans()) else texts
        out.append((shared, n, cols))
    return out


def _rows_batch(ps: list) -> tuple:
    bad: list = []
    r = Rows("cache_events")
    for shared, n, cols in ps:
        for i in range(n):
            row = dict(shared)
            row.update(
                {k: (v[i].as_py() if isinstance(v, pa.Array) else v[i]) for k, v in cols.items()}
            )
            r.add(row)
    return r.take(lambda *a: bad.append(a)), bad


@settings(max_examples=300, deadline=None)
@given(pieces())
def test_same_batch_and_reports_as_rows(ps):
    bad: list = []
    s = SegmentRows("cache_events")
    for shared, n, cols in ps:
        s.add_piece(shared, n, cols)
    assert len(s) == sum(p[1] for p in ps)
    if not len(s):
        return
    got = s.take(lambda *a: bad.append(a))
    want, want_bad = _rows_batch(ps)
    assert got.equals(want) and got.schema == want.schema
    assert bad == want_bad  # in the same order
    assert len(s) == 0 and not s.pieces  # it starts empty


def test_derived_column_once_per_distinct_value():
    calls: list = []

    def kind(name):
        calls.append(name)
        return component_kind(name)

    s = SegmentRows("cache_key_components", {"kind": ("component", kind)})
    names = ["gm", "example_inputs[0]", "gm", "inductor_config[x]"]
    s.add_piece(
        {"line_no": 1, "key": "k"}, 4, {"component": pa.array(names), "hash": names, "value": names}
    )
    s.add_piece(
        {"line_no": 2, "key": "j"},
        2,
        {"component": ["gm", "zzz"], "hash": ["h", "h"], "value": ["v", "w"]},
    )
    s.add({"line_no": 3, "component": "torch_version", "hash": "h", "value": "2.13"})
    b = s.take().to_pydict()
    assert b["kind"] == ["graph", "inputs", "graph", "config", "graph", "other", "torch_version"]
    assert b["line_no"] == [1, 1, 1, 1, 2, 2, 3] and b["key"] == ["k"] * 4 + ["j"] * 2 + [None]
    assert sorted(calls) == sorted({*names, "zzz", "torch_version"})


def _state():
    from pt2logs.readers.kit import FileContext
    from pt2logs.readers.trace.records import Record
    from pt2logs.readers.trace.state import TraceState

    st = TraceState(FileContext(file="t.log", path="/x/t.log", mtime=1.7e9))
    st.rec = Record(5, 1, b"I", 1206, 3_600_000_123, 1, b"x.py", 1, b"{}", None)
    st.key = 20241206
    return st


def test_add_many_fills_and_times_rows_as_add_does():
    """TraceState.add_many's rows get the file, line, rank and UTC time add() gives a row."""
    one, many = _state(), _state()
    for i in (1, 2):
        one.add("cache_events", {"source": "trace", "cache": "fx_graph", "n_components": i})
    many.add_many(
        "cache_events", {"source": "trace", "cache": "fx_graph"}, {"n_components": [1, 2]}
    )
    a = dict(one.flush(final=True))["cache_events"].to_pylist()
    b = dict(many.flush(final=True))["cache_events"].to_pylist()
    assert a == b and a[0]["ts"] is not None and a[0]["line_no"] == 5 and a[0]["file"] == "t.log"
    many.add("cache_events", {"n_components": 3})  # a row after pieces: a piece of one
    assert dict(many.flush(final=True))["cache_events"].column("n_components").to_pylist() == [3]


def test_pieces_after_single_rows_is_an_error_not_a_mixup():
    st = _state()
    st.add("cache_key_components", {"component": "gm"})
    with pytest.raises(TypeError, match="one by one"):
        st.add_many("cache_key_components", {}, {"component": ["a"]})


class _Native:
    """What NativeTupleRows reads from _native/phase_cols.c's PhaseCols: rows as Arrow buffers, and for each
    how many tuple rows came before it (made here from Python values, as the C builder makes them)."""

    def __init__(self, fields: tuple):
        self.fields, self.rows, self.before = fields, [], []

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, row: dict, before: int) -> None:
        self.rows.append(row)
        self.before.append(before)

    def take(self) -> tuple:
        from pt2logs.tables.schema import TABLES

        t = TABLES["compile_phases"]
        cols = []
        for f in self.fields:
            bufs = pa.array([r[f] for r in self.rows], type=t.column(f).type).buffers()
            cols.append(
                tuple(
                    None if b is None else bytes(b)
                    for b in ([bufs[0], None, bufs[1]] if len(bufs) == 2 else bufs)
                )
            )
        out = (len(self.rows), pa.array(self.before, type=pa.int64()).buffers()[1], tuple(cols))
        self.rows, self.before = [], []
        return out


_V = st.one_of(
    st.none(),
    st.integers(-3, 3),
    st.just(2**63),
    st.just(10**18),
    st.text(max_size=2),
    st.just({"a": 1}),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.lists(_V, min_size=16, max_size=16)), max_size=12))
def test_native_tuple_rows_keep_the_order_and_reports_of_tuple_rows(items):
    """Rows made natively (Arrow buffers) among tuple rows: the batch and the values reported are those of
    a TupleRows given every row as a tuple, in the order they were added."""
    from pt2logs.readers.segment_rows import NativeTupleRows
    from pt2logs.readers.trace.events.phases import FIELDS, NATIVE_FIELDS
    from pt2logs.tables.rows import TupleRows

    fits = {
        "rank": 2,
        "line_no": 7,
        "compile_id": "0/0",
        "phase": "p",
        "parent_phase": None,
        "depth": 1,
        "stage": "s",
        "top_level": True,
        "start_us": 5,
        "duration_us": None,
        "ts": 1733498295925105,
        "is_instant": False,
        "category": "c",
        "args": '{"a":1}',
    }
    native = _Native(NATIVE_FIELDS)
    mixed = NativeTupleRows(
        "compile_phases", FIELDS, native, NATIVE_FIELDS, {"source": "trace", "file": "f"}
    )
    plain = TupleRows("compile_phases", FIELDS)
    for k, (is_native, values) in enumerate(items):
        if is_native:  # a row whose values fit (what phases.c writes)
            row = {**fits, "line_no": k}
            native.add(row, len(mixed.rows))
            plain.rows.append(tuple({"source": "trace", "file": "f", **row}[f] for f in FIELDS))
        else:  # any values, some of which fit no column
            row = (*values[:3], k, *values[4:])  # line_no (the 4th field) identifies the row
            mixed.rows.append(row)
            plain.rows.append(row)
    assert len(mixed) == len(items)
    got_bad: list = []
    want_bad: list = []
    got, want = mixed.take(lambda *a: got_bad.append(a)), plain.take(lambda *a: want_bad.append(a))
    assert got.equals(want), (got.to_pylist(), want.to_pylist())
    assert got_bad == want_bad
    assert len(mixed) == 0
