"""The TORCH_TRACE reader on small hand-made traces: every bad-input rule, time, metrics."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import fixture_path
from tests.tracegen import chromium, record

from pt2logs.readers.kit import FileContext
from pt2logs.readers.trace.torch_trace import read_trace


def read(text: str | bytes, **ctx_kw):
    data = text.encode() if isinstance(text, str) else text
    ctx = FileContext(file="t.log", path="/x/t.log", **ctx_kw)
    out: dict[str, list[pa.RecordBatch]] = {}
    for name, batch in read_trace([data], ctx):
        out.setdefault(name, []).append(batch)
    tables = {k: pa.Table.from_batches(v).to_pylist() for k, v in out.items()}
    return tables, ctx.stats


def test_invalid_utf8_payload_is_kept_and_reported():
    good = record({"artifact": {"name": "x", "encoding": "string"}}, "héllo")
    raw = good.encode().replace("é".encode(), b"\xff")
    tables, stats = read(raw)
    ev = tables["events"][0]
    assert ev["payload"] == "h\ufffdllo" and ev["payload_ok"] is False
    kinds = {e["kind"] for e in tables["ingest_errors"]}
    assert {"decode_error", "payload_md5_mismatch"} <= kinds
    assert stats.errors == 0 and stats.warnings == 2


def test_non_object_envelope_and_bad_json_are_errors_but_rows_stay():
    text = (
        record({"str": ["/a.py", 0]}).replace('{"str": ["/a.py", 0]}', "[1, 2]")
        + "V1206 15:18:16.000000 1 a.py:1] {not json\n"
        + record({"str": ["/b.py", 1]})
    )
    tables, stats = read(text)
    assert len(tables["events"]) == 3
    assert [e["event_type"] for e in tables["events"]] == [None, None, "str"]
    assert sorted(e["kind"] for e in tables["ingest_errors"]) == ["bad_json", "not_an_object"]
    assert [e["line_no"] for e in sorted(tables["ingest_errors"], key=lambda e: e["line_no"])] == [
        1,
        2,
    ]
    assert stats.errors == 2


def test_unknown_event_kind_kept_and_counted():
    tables, stats = read(
        record(
            {"brand_new_event_2030": {"x": 1}, "frame_id": 3, "frame_compile_id": 1, "attempt": 0}
        )
    )
    ev = tables["events"][0]
    assert ev["event_type"] == "brand_new_event_2030" and ev["compile_id"] == "3/1"
    assert json.loads(ev["envelope"])["brand_new_event_2030"] == {"x": 1}
    assert stats.unknown == 1 and stats.errors == 0


def test_compile_id_forms():
    text = (
        record({"dynamo_start": {}, "frame_id": 0, "frame_compile_id": 1, "attempt": 1})
        + record(
            {
                "dynamo_start": {},
                "compiled_autograd_id": 2,
                "frame_id": 0,
                "frame_compile_id": 0,
                "attempt": 0,
            }
        )
        + record({"compiled_autograd_graph": {}, "compiled_autograd_id": 5})
    )
    tables, _ = read(text)
    assert [e["compile_id"] for e in tables["events"]] == ["0/1", "!2/0/0", "!5"]
    assert tables["events"][0]["attempt"] == 1


def test_year_and_utc_offset_come_from_epoch_times():
    # a December log (glog local time 15:18, PST) whose epoch says 2024-12-06 23:18 UTC
    ts = dt.datetime(2024, 12, 6, 23, 18, 15, 925000, tzinfo=dt.timezone.utc).timestamp() * 1e6
    text = record({"str": ["/a.py", 0]}, when="1206 15:18:15.000000") + chromium(
        "dynamo", "B", ts, when="1206 15:18:15.925000"
    )
    tables, stats = read(text, mtime=dt.datetime(2026, 1, 5).timestamp())
    got = [e["ts"] for e in tables["events"]]
    assert got[0] == dt.datetime(2024, 12, 6, 23, 18, 15, tzinfo=dt.timezone.utc)
    assert got[1] == dt.datetime(2024, 12, 6, 23, 18, 15, 925000, tzinfo=dt.timezone.utc)


def test_new_year_inside_one_file():
    ts = dt.datetime(2025, 12, 31, 23, 59, 59, tzinfo=dt.timezone.utc).timestamp() * 1e6
    text = chromium("a", "B", ts, when="1231 23:59:59.000000") + chromium(
        "a", "E", ts + 2e6, when="0101 00:00:01.000000"
    )
    tables, _ = read(text)
    assert [e["ts"].year for e in tables["events"]] == [2025, 2026]
    phase = tables["compile_phases"][0]
    assert phase["duration_us"] == 2_000_000


def test_without_epoch_times_the_year_comes_from_mtime():
    tables, _ = read(
        record({"str": ["/a.py", 0]}, when="0301 10:00:00.000000"),
        mtime=dt.datetime(2023, 5, 1).timestamp(),
    )
    assert tables["events"][0]["ts"] == dt.datetime(2023, 3, 1, 10, tzinfo=dt.timezone.utc)


def test_compilation_metrics_every_field_and_extra():
    meta = {
        "compile_id": "0/0",
        "co_name": "forward",
        "co_filename": "/m.py",
        "co_firstlineno": 3,
        "start_time": 1.7e9,
        "entire_frame_compile_time_s": 1.5,
        "guard_count": 7,
        "restart_reasons": ["a", "b"],
        "fail_type": "Unsupported",
        "fail_reason": None,
        "field_from_torch_2_20": {"x": 1},
        "graph_op_count": "many",
    }
    tables, stats = read(
        record({"compilation_metrics": meta, "frame_id": 0, "frame_compile_id": 0, "attempt": 0})
    )
    row = tables["compilation_metrics"][0]
    assert (
        row["co_name"] == "forward"
        and row["guard_count"] == 7
        and row["restart_reasons"] == ["a", "b"]
    )
    assert row["fail_type"] == "Unsupported" and row["fail_reason"] is None
    extra = json.loads(row["extra"])
    assert extra == {"field_from_torch_2_20": {"x": 1}, "graph_op_count": "many"}
    assert row["graph_op_count"] is None
    assert row["ts"] == dt.datetime.fromtimestamp(1.7e9, tz=dt.timezone.utc)
    assert stats.errors == 0


@pytest.mark.parametrize(
    "field,value",
    [
        ("co_firstlineno", 2**31 - 1),
        ("co_firstlineno", 2**31),
        ("co_firstlineno", -(2**31)),
        ("co_firstlineno", -(2**31) - 1),
        ("guard_count", 2**63 - 1),
        ("guard_count", 2**63),
        ("guard_count", True),
        ("guard_count", 7.0),
        ("guard_count", 7.5),
        ("guard_count", "12"),
        ("entire_frame_compile_time_s", 2),
        ("entire_frame_compile_time_s", True),
        ("entire_frame_compile_time_s", "x"),
        ("has_guarded_code", 1),
        ("has_guarded_code", "true"),
        ("has_guarded_code", False),
        ("co_name", 5),
        ("co_name", {"a": 1}),
        ("dynamo_config", {"b": [1]}),
        ("dynamo_config", "{}"),
        ("restart_reasons", "one"),
    ],
)
def test_compilation_metrics_values_are_coerced_as_the_column_kind_says(field, value):
    """Each field's value as :func:`pt2logs.tables.schema._coerce` makes it for its column (a value already of the
    column's type as it is); one that fits no column is NULL there and kept in ``extra``."""
    from pt2logs.tables.rows import _coerce
    from pt2logs.tables.schema import TABLES

    kind = TABLES["compilation_metrics"].column(field).kind
    tables, _ = read(
        record(
            {
                "compilation_metrics": {"compile_id": "0/0", field: value},
                "frame_id": 0,
                "frame_compile_id": 0,
            }
        )
    )
    row = tables["compilation_metrics"][0]
    want = _coerce(kind, value)
    if kind == "json" and want is not None:
        assert json.loads(row[field]) == json.loads(want)
    else:
        assert row[field] == want and type(row[field]) is type(want)
    assert (field in json.loads(row["extra"] or "{}")) == (want is None)


def test_rank_from_envelope_else_file_hint():
    text = record({"str": ["/a.py", 0]}) + record(
        {"dynamo_start": {}, "rank": 3, "frame_id": 0, "frame_compile_id": 0, "attempt": 0}
    )
    tables, stats = read(text, rank=7)
    assert [e["rank"] for e in tables["events"]] == [7, 3]
    assert stats.ranks == {3}


def test_phases_nest_and_unclosed_spans_are_kept():
    t0 = 1.7e15
    text = (
        chromium("dynamo", "B", t0)
        + chromium("entire_frame_compile", "B", t0 + 10)
        + chromium("backend_compile", "B", t0 + 20)
        + chromium("backend_compile", "E", t0 + 120)
        + chromium("entire_frame_compile", "E", t0 + 200)
        + chromium("open_forever", "B", t0 + 300)
    )
    tables, stats = read(text)
    ph = {p["phase"]: p for p in tables["compile_phases"]}
    assert (
        ph["backend_compile"]["depth"] == 2
        and ph["backend_compile"]["parent_phase"] == "entire_frame_compile"
    )
    assert (
        ph["backend_compile"]["duration_us"] == 100
        and ph["entire_frame_compile"]["duration_us"] == 190
    )
    assert ph["dynamo"]["duration_us"] is None and ph["open_forever"]["duration_us"] is None
    assert stats.warnings == 2 and stats.errors == 0


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=80),
            st.sampled_from(
                [
                    chromium("a", "B", 1.7e15).encode(),
                    record({"str": ["/a", 0]}).encode(),
                    b'V1206 15:18:15.000000 1 a.py:1] {"x": ',
                    b"\t\xff\xfe",
                    b"V1399 99:99:99.000000 1 a.py:1] {}\n",
                ]
            ),
        ),
        max_size=20,
    )
)
def test_arbitrary_input_never_raises(parts):
    tables, stats = read(b"".join(parts))
    assert stats.events == len(tables.get("events", []))


def test_many_small_batches_equal_one_big_one():
    text = "".join(
        chromium(f"s{i % 7}", "B" if i % 2 == 0 else "E", 1.7e15 + i) for i in range(200)
    )
    text += record(
        {
            "compilation_metrics": {"compile_id": "0/0", "start_time": 1.7e9},
            "frame_id": 0,
            "frame_compile_id": 0,
            "attempt": 0,
        }
    )
    one, s1 = read(text)
    many, s2 = read(text, batch_rows=7)
    assert one == many and s1.events == s2.events == 201


def test_a_file_with_crlf_and_lf_mixed_gives_no_md5_warnings():
    """A log that went through a tool converting only some line ends (its second half is CRLF) reads
    like the original: every payload verifies, no spurious payload_md5_mismatch."""
    data = fixture_path("tlparse", "simple.log").read_bytes()
    lines = data.split(b"\n")
    half = len(lines) // 2
    mixed = b"\n".join(lines[:half] + [ln + b"\r" for ln in lines[half:-1]] + lines[-1:])

    def rows(raw: bytes) -> tuple[list, list]:
        ctx = FileContext(file="t.log", path="/t.log")
        ev, err = [], []
        for name, b in read_trace([raw[i : i + 7000] for i in range(0, len(raw), 7000)], ctx):
            (ev if name == "events" else err if name == "ingest_errors" else []).extend(
                b.to_pylist()
            )
        return ev, err

    ev_lf, err_lf = rows(data)
    ev_mixed, err_mixed = rows(mixed)
    assert [e["kind"] for e in err_mixed] == [e["kind"] for e in err_lf]
    assert [(e["payload"], e["payload_ok"]) for e in ev_mixed] == [
        (e["payload"], e["payload_ok"]) for e in ev_lf
    ]


def test_the_restart_placeholder_is_a_restart_not_a_graph_break():
    """torch's 'Unknown fail_and_restart_analysis' (a speculation that failed without a reason) names no
    break: in a log older than the graph-break artifact it is a restart, the real reasons are breaks."""
    meta = {
        "compile_id": "0/0",
        "co_name": "f",
        "co_filename": "/m.py",
        "co_firstlineno": 3,
        "start_time": 1.7e9,
        "entire_frame_compile_time_s": 1.0,
        "restart_reasons": [
            "Unknown fail_and_restart_analysis",
            "call_function BuiltinVariable(print) [] {}",
        ],
    }
    tables, _ = read(
        record({"compilation_metrics": meta, "frame_id": 0, "frame_compile_id": 0, "attempt": 0})
    )
    assert [g["reason"] for g in tables["graph_breaks"]] == [
        "call_function BuiltinVariable(print) [] {}"
    ]
    assert sorted(f["fail_reason"] for f in tables["failures"] if f["is_restart"]) == sorted(
        meta["restart_reasons"]
    )


def test_a_time_beyond_year_9999_is_null_and_reported_not_stored():
    """A damaged epoch (1e18 µs: the year 33658) cannot be a timestamp: the span is kept with a NULL time and the value is
    reported; every table still reads back in Python (a stored out-of-range time would not)."""
    text = (
        chromium("dynamo", "B", 1.7e15)
        + chromium("weird", "i", 1e18)
        + chromium("dynamo", "E", 1.7e15 + 5)
    )
    tables, _ = read(text)  # to_pylist: raises on a timestamp Python cannot show
    rows = {r["phase"]: r for r in tables["compile_phases"]}
    assert rows["weird"]["ts"] is None and rows["dynamo"]["ts"] is not None
    bad = [e for e in tables["ingest_errors"] if e["kind"] == "bad_value"]
    assert any("compile_phases.ts" in e["message"] for e in bad), bad
