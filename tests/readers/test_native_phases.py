"""The native chromium-event handler (_native/phases.c) against the Python handler, its oracle.

Every table must be identical, row for row, whichever handler reads a trace. The payloads generated here
walk the edges of the JSON subset the native handler writes canonically itself (what
``orjson.dumps(orjson.loads(text))`` writes), and mix what it takes with what it leaves to Python, so open
spans pass from one handler to the other.
"""

from __future__ import annotations

import json

import orjson
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.readers.test_native_events import line, md5, tables

from pt2logs.readers.trace import native as records_native
from pt2logs.readers.trace.events.phases import NATIVE_FIELDS, ROOTS, WRAPPERS
from pt2logs.tables.rows import TS_LIMIT, TS_MIN

pytestmark = pytest.mark.skipif(records_native._ext is None, reason="native extension not built")

#: the first chromium event sets the file's time base (the Python handler does that one)
FIRST = '{"name": "start", "ts": 1733498295925105, "ph": "i", "args": {}}'


def chrom(payload: str, t: int, frame: int = 0, rank: int | None = None) -> str:
    env = {
        "chromium_event": {},
        "frame_id": frame,
        "frame_compile_id": 0,
        "attempt": 0,
        "has_payload": md5(payload),
    }
    if (
        rank is not None
    ):  # one of more than 9 digits: the native events pass leaves the record to the Python loop
        env["rank"] = rank
    return line(json.dumps(env), payload, t)


def trace(payloads: list[str | tuple[str, int | None]]) -> bytes:
    items = [p if isinstance(p, tuple) else (p, None) for p in [FIRST, *payloads]]
    return "".join(chrom(p, i, rank=r) for i, (p, r) in enumerate(items)).encode()


def canonical(args_text: str | bytes) -> tuple[int, bytes | None]:
    """(what the native handler returned, the row's args) for an instant event with these args."""
    cols = records_native._ext.PhaseCols()
    raw = args_text if isinstance(args_text, bytes) else args_text.encode()
    payload = b'{"name": "x", "ts": 5, "ph": "i", "args": ' + raw + b"}"
    r = records_native._ext.chromium(cols, payload, None, [], [], 0, 1, ROOTS, WRAPPERS)
    n, _, bufs = cols.take()
    if not n:
        return r, None
    valid, offsets, data = bufs[NATIVE_FIELDS.index("args")]
    return r, pa.Array.from_buffers(
        pa.binary(), n, [valid and pa.py_buffer(valid), pa.py_buffer(offsets), pa.py_buffer(data)]
    )[0].as_py()


TAKEN = [
    '{"a": "\\u00e9\\ud83d\\ude00 \\u0001 \\u001f \\u0022 \\u005c \\/ \\n\\t\\b\\f\\r\\""}',  # escapes orjson rewrites
    '{"a": "é ☃"}',  # raw UTF-8
    '{"big": 18446744073709551615, "neg": -9223372036854775808, "f": 0.1, "g": 1E5, "h": -0.0, "i": 123456789012345.6}',
    '{"d": {"e": [1, [2, {"f": null}], true, false]}}',
    '  {  "a" :  1 ,"b":[ ] }  ',
    "[1, 2]",
    '"text"',
    "0",
    "0.0",
    "{}",
    "[]",
    '""',
    "null",
    "false",
    "{" + ", ".join(f'"k{i}": {i}' for i in range(64)) + "}",  # as many members as it takes
]
LEFT = [
    '{"a": 1e-05}',  # repr has an exponent: orjson writes 0.00001
    '{"a": 1e400}',  # orjson: infinity is an error
    '{"a": 18446744073709551616}',  # over 2**64 - 1: orjson reads a float
    '{"a": -9223372036854775809}',
    '{"a": -0}',  # orjson reads 0
    '{"a": "\\ud800"}',
    '{"a": "\\udc00"}',
    '{"a": "\\ud800\\u0041"}',  # lone surrogates: orjson refuses them
    '{"a": "\\x"}',
    '{"a": "\\u12"}',
    '{"a": 1, "a": 2}',  # duplicate keys
    '{"a": {"b": 1, "b": 1}}',
    '{"a": 01}',
    '{"a": [1,]}',
    '{"a": .5}',
    '{"a": 1.}',
    '{"a": "\x01"}',
    b'{"a": "\xff"}',
    b'{"a": "\xed\xa0\x80"}',
    b'{"a": "\xc0\x80"}',  # not UTF-8; an encoded surrogate; overlong
    "[" * 40 + "]" * 40,  # deeper than the subset
    "{"
    + ", ".join(f'"k{i}": {i}' for i in range(65))
    + "}",  # more members than the (quadratic) duplicate check takes
    '{"a": ['
    + ", ".join("{" + ", ".join(f'"k{i}": 1' for i in range(65)) + "}" for _ in range(2))
    + "]}",
]


def test_the_canonical_form_is_orjsons():
    for text in TAKEN:
        r, out = canonical(text)
        assert r == 1, text
        value = orjson.loads(text)
        assert out == (orjson.dumps(value) if value else None), text


def test_it_leaves_what_it_cannot_write_exactly():
    for text in LEFT:
        assert canonical(text) == (0, None), text


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
_floats = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.1, 1e16, 1e-5, 1e15, -0.0, 5e-324]),
)
_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**65), 2**65), _floats, _text),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(_text, kids, max_size=3),
    max_leaves=10,
)
_names = st.sampled_from(
    [
        "dynamo",
        "entire_frame_compile",
        "entire_backward_compile",
        "inductor_compile",
        "x",
        "é",
        'a"b',
    ]
)


#: starts on both sides of the ts column's range (years 1-9999): a row starting outside it is reported (bad_value)
_ts_edges = st.one_of(
    st.sampled_from([TS_MIN - 1, TS_MIN, TS_LIMIT - 1, TS_LIMIT, 10**18 - 1, -(10**18) + 1]),
    st.integers(TS_LIMIT - 5, TS_LIMIT + 10**6),
    st.integers(TS_MIN - 10**6, TS_MIN + 5),
)


@st.composite
def payloads(draw) -> str:
    d: dict = {}
    for key in draw(st.permutations(["name", "ts", "ph", "args", "cat", "dur", "tid"])):
        if key == "name" and draw(st.integers(0, 20)):
            d["name"] = draw(_names)
        elif key == "ts" and draw(st.integers(0, 20)):
            d["ts"] = draw(
                st.one_of(
                    st.integers(1733498295925105, 1733498295999999),
                    st.integers(-(2**64), 2**64),
                    _floats,
                    st.booleans(),
                    _text,
                    _ts_edges,
                )
            )
        elif key == "ph" and draw(st.integers(0, 20)):
            d["ph"] = draw(st.one_of(st.sampled_from(["B", "E", "i", "I", "X", "M"]), _json))
        elif key == "args" and draw(st.booleans()):
            args = draw(st.one_of(st.dictionaries(_text, _json, max_size=4), _json))
            if isinstance(args, dict) and draw(st.booleans()):
                args["compile_id"] = draw(
                    st.one_of(st.sampled_from(["0/0", "1/0", "None", 'a"b']), _json)
                )
            d["args"] = args
        elif key == "cat" and draw(st.booleans()):
            d["cat"] = draw(st.one_of(st.sampled_from(["dynamo_timed", "é"]), _json))
        elif key in ("dur", "tid") and draw(st.booleans()):
            d[key] = draw(st.one_of(st.integers(-10, 10**6), _floats, st.booleans(), _text))
    text = json.dumps(
        d, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 0, 1]))
    )
    if draw(st.integers(0, 9)) == 0:
        text = text.replace("/", "\\/")
    if draw(st.integers(0, 9)) == 0 and text.startswith("{") and len(text) > 2:
        text = '{"ph": "B", ' + text[1:]  # a duplicate key, maybe
    return text


#: the envelope's rank: none, one that fits, one for the Python loop (10 digits) that does not fit the column
_ranks = st.sampled_from([None, None, None, 3, 2**31 - 1, 12345678901])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(payloads(), _ranks), min_size=1, max_size=14),
    st.sampled_from([1 << 16, 300, 7]),
)
def test_generated_events_same_tables(items, chunk):
    data = trace(items)
    assert tables(data, True, chunk) == tables(data, False, chunk)


#: records between the chromium events: other handlers (the metrics one reads a closed frame span's duration),
#: and records the native events pass leaves to the Python loop (a float id; a payload whose md5 differs)
OTHERS = [
    (
        '{"compilation_metrics": {"co_name": "f"}, "frame_id": 0, "frame_compile_id": 0, "attempt": 0}',
        None,
    ),
    ('{"str": ["torch/x.py", 3]}', None),
    ('{"dynamo_start": {"stack": []}, "frame_id": 0, "frame_compile_id": 0, "attempt": 0}', None),
    ('{"dynamo_start": {}, "frame_id": 1.0}', None),
    (
        '{"chromium_event": {}, "frame_id": 0, "frame_compile_id": 0, "has_payload": "'
        + "0" * 32
        + '"}',
        '{"name": "entire_frame_compile", "ts": 1733498295925900, "ph": "E"}',
    ),
]
_frame = st.builds(
    '{{"name": "entire_frame_compile", "ts": {}, "ph": "{}", "args": {{"compile_id": "0/0"}}}}'.format,
    st.integers(1733498295925105, 1733498295999999),
    st.sampled_from("BE"),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.one_of(payloads(), _frame, st.sampled_from(OTHERS)), min_size=1, max_size=24),
    st.sampled_from([1 << 16, 300]),
    st.booleans(),
)
def test_generated_events_among_other_records_same_tables(items, chunk, first):
    """Chromium events done inside the native events pass among records Python handles after it (in the
    same pass) or before it (the records the pass leaves): same spans, rows, order, frame durations; with
    or without a first event that sets the time base."""
    lines = [chrom(FIRST, 0)] if first else []
    for t, item in enumerate(items, 1):
        lines.append(line(item[0], item[1], t) if isinstance(item, tuple) else chrom(item, t))
    data = "".join(lines).encode()
    assert tables(data, True, chunk) == tables(data, False, chunk)


def test_values_that_do_not_fit_are_left_to_python():
    """A row whose start is outside the ts column's years is the Python handler's (which reports the
    value); the spans around it stay the native handler's."""
    ev = '{{"name": "{n}", "ts": {t}, "ph": "{ph}", "args": {{"k": {a}}}}}'
    items = [
        ev.format(n="far", t=TS_LIMIT, ph="B", a=1),  # opened natively, beyond year 9999
        ev.format(n="x", t=TS_LIMIT - 1, ph="i", a=2),
        ev.format(n="x", t=TS_LIMIT, ph="i", a=3),  # an instant beyond year 9999
        ev.format(n="far", t=TS_LIMIT + 5, ph="E", a=4),
        (
            ev.format(n="python", t=1733498295925300, ph="B", a=5),
            12345678901,
        ),  # the Python loop opens it
        ev.format(n="python", t=1733498295925400, ph="E", a=6),
        ev.format(n="x", t=TS_MIN - 1, ph="X", a=7),
        ev.format(n="x", t=TS_MIN, ph="X", a=8),
    ]
    native, _ = tables(trace(items), True)
    assert native == tables(trace(items), False)[0]
    bad = [r["message"] for r in native["ingest_errors"] if r["kind"] == "bad_value"]
    assert sum("compile_phases.ts" in m for m in bad) == 3, bad
    assert sum("compile_phases.start_us" in m for m in bad) == 0, bad
    assert [r["phase"] for r in native["compile_phases"]][1:] == [
        "x",
        "x",
        "far",
        "python",
        "x",
        "x",
    ]
    assert [r["ts"] is None for r in native["compile_phases"]][1:] == [
        False,
        True,
        True,
        False,
        True,
        False,
    ]


class Text(str):
    pass


def test_a_rank_or_text_that_does_not_fit_leaves_the_row():
    """Values only Python code can put in an open span (or pass): the native handler writes no row for them."""
    ext = records_native._ext
    end = b'{"name": "s", "ts": 1733498295925400, "ph": "E"}'
    span = ["s", "0/0", 1733498295925300, 0, None, None, 3, None, 0, "other", True]
    for field, value in (
        (8, 2**40),
        (8, "0"),
        (1, "\ud800"),
        (9, 5),
        (0, Text("s")),
        (7, {"a": 1}),
        (10, 1),
        (2, 10**19),
        (6, 2**70),
    ):
        bad = list(span)
        bad[field] = value
        cols, spans = ext.PhaseCols(), [bad]
        assert ext.chromium(cols, end, None, spans, [], 0, 9, ROOTS, WRAPPERS) == 0, (field, value)
        assert spans == [bad] and len(cols) == 0
    cols, spans = ext.PhaseCols(), [list(span)]
    assert (
        ext.chromium(cols, end, None, spans, [(), ()], 0, 9, ROOTS, WRAPPERS) == 1
        and spans == []
        and len(cols) == 1
    )
    n, before, _ = cols.take()
    assert (n, bytes(memoryview(before))) == (
        1,
        (2).to_bytes(8, "little"),
    )  # after the two tuple rows
    instant = b'{"name": "i", "ts": 1733498295925400, "ph": "i"}'
    assert (
        ext.chromium(cols, instant, None, [], [], 2**31, 9, ROOTS, WRAPPERS) == 0 and len(cols) == 0
    )
    assert (
        ext.chromium(cols, instant, None, [], [], -(2**31), 9, ROOTS, WRAPPERS) == 1
        and len(cols) == 1
    )


def test_spans_pass_between_the_handlers():
    """A span opened by one handler and closed by the other, both ways, nested and overlapping."""
    begin = '{{"name": "{n}", "ts": {t}, "ph": "B", "args": {{"compile_id": "0/0", "k": {a}}}}}'
    end = '{{"name": "{n}", "ts": {t}, "ph": "E", "args": {{"k": {a}, "extra": "x"}}}}'
    python_only = "1e-05"  # an arg the native handler leaves to Python
    items = [
        begin.format(n="entire_frame_compile", t=1733498295925200, a=1),
        begin.format(n="inductor_compile", t=1733498295925300, a=python_only),
        begin.format(n="x", t=1733498295925310, a=2),
        end.format(
            n="inductor_compile", t=1733498295925400, a=3
        ),  # native closes a span Python opened
        end.format(n="x", t=1733498295925410, a=python_only),  # Python closes a span native opened
        end.format(n="entire_frame_compile", t=1733498295925500, a=4),
        end.format(n="never_opened", t=1733498295925600, a=5),
        begin.format(n="left_open", t=1733498295925700, a=6),
    ]
    native, _ = tables(trace(items), True)
    assert native == tables(trace(items), False)[0]
    spans = {r["phase"]: r for r in native["compile_phases"]}
    assert json.loads(spans["inductor_compile"]["args"]) == {
        "compile_id": "0/0",
        "k": 3,
        "extra": "x",
    }
    assert spans["left_open"]["duration_us"] is None


def test_the_native_handler_takes_the_real_traces(monkeypatch):
    """On the real traces nearly every chromium event is done natively, inside the events pass (else the
    tests above prove little)."""
    from tests.readers.test_native_records import trace_files

    from pt2logs.readers.trace.events.phases import chromium_event

    ext, calls = records_native._ext, {"in_pass": 0, "to_python": 0, "python_taken": 0, "left": 0}

    class Counting:
        def __getattr__(self, name):
            return getattr(ext, name)

        def event_columns(self, *args):
            out = ext.event_columns(*args)
            python = sum(h is chromium_event for _, h, *_ in out[3])
            kinds = pa.Array.from_buffers(
                pa.string(), out[1], [None, *map(pa.py_buffer, out[2][8][1:])]
            )
            calls["in_pass"] += kinds.to_pylist().count("chromium_event") - python
            calls["to_python"] += python
            return out

        def chromium(self, *args):
            r = ext.chromium(*args)
            calls["python_taken" if r else "left"] += 1
            return r

    monkeypatch.setattr(records_native, "_ext", Counting())
    for path in trace_files():
        tables(path.read_bytes(), True)
    # to Python: before the time base is set, and after an event left to it in the same pass (batches of 7 here)
    assert calls["in_pass"] > 1000 and calls["to_python"] < calls["in_pass"] / 20, calls
    assert calls["left"] < calls["in_pass"] / 100, calls


def test_taken_columns_outlive_their_builder():
    """take() hands the columns' memory over (no copy): arrays on it stay valid while the builder goes on
    and after it is gone."""
    ext = records_native._ext
    cols = ext.PhaseCols()
    payload = (
        b'{"name": "i", "ts": 1733498295925400, "ph": "i", "args": {"a": "' + b"x" * 5000 + b'"}}'
    )
    for line_no in range(3):
        assert ext.chromium(cols, payload, None, [], [], 0, line_no, ROOTS, WRAPPERS) == 1
    n, _, bufs = cols.take()
    assert len(cols) == 0 and ext.chromium(cols, payload, None, [], [], 0, 7, ROOTS, WRAPPERS) == 1
    del cols

    def array(field: str, typ: pa.DataType) -> list:
        valid, offsets, data = bufs[NATIVE_FIELDS.index(field)]
        return pa.Array.from_buffers(
            typ,
            n,
            [
                valid and pa.py_buffer(valid),
                *([pa.py_buffer(offsets)] if offsets is not None else []),
                pa.py_buffer(data),
            ],
        ).to_pylist()

    assert array("args", pa.string()) == [orjson.dumps({"a": "x" * 5000}).decode()] * 3
    assert array("line_no", pa.int64()) == [0, 1, 2]
