"""tlparse output folders read back: the same tables as the raw trace they were made from.

Every case runs the real tlparse CLI (0.4.3) on a real trace, removes the ``raw.log`` copy tlparse
keeps (with it, the folder is read from raw.log, losslessly: tested too) and ingests the folder, then
compares every derived table with an ingest of the trace itself. What cannot come back is asserted
explicitly (docs/inputs.md): JSON that tlparse re-serialized (sorted keys, floats that lose their last
bit), chromium events' envelopes, tlparse's copy of the string table in --all-ranks-html output.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import SAMPLES, fixture_path

import pt2logs
from pt2logs.readers import detect
from pt2logs.readers.documents.tlparse_dir import read_tlparse_dir
from pt2logs.readers.kit import FileContext

TLPARSE = shutil.which("tlparse") or str(Path(sys.executable).parent / "tlparse")
TABLES = (
    "compilation_metrics",
    "recompiles_all_sources",
    "graph_breaks_all_sources",
    "kernels_all_sources",
    "extern_calls_all_sources",
    "cache_events_all_sources",
    "failures_all_sources",
    "guards_all_sources",
    "compile_phases_all_sources",
)
DROP = ("run_id", "txn", "ingest_date", "file", "line_no", "source")


def tlparse(logs: list[Path], work: Path, keep_raw_log: bool = False) -> tuple[Path, Path]:
    """Copy the logs (decompressed) to work/trace/, run tlparse on them into work/out/tl_out."""
    if not Path(TLPARSE).exists():
        pytest.skip("tlparse CLI not installed")
    trace = work / "trace"
    trace.mkdir(parents=True)
    for p in logs:
        data = p.read_bytes()
        (trace / p.name.removesuffix(".gz")).write_bytes(
            gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
        )
    out = work / "out" / "tl_out"
    src = trace if len(logs) > 1 else next(trace.iterdir())
    cmd = [TLPARSE, str(src), "-o", str(out), "--overwrite", "--no-browser"] + (
        ["--all-ranks-html"] if len(logs) > 1 else []
    )
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    if not keep_raw_log:
        for p in out.rglob("raw.log"):
            p.unlink()
    return trace, out


def norm(v):
    """Compare values as tlparse can give them back: JSON text parsed, floats to 12 digits."""
    if isinstance(v, float):
        return float(f"{v:.12g}")
    if isinstance(v, str) and v[:1] in "{[":
        try:
            return norm(json.loads(v))
        except ValueError:
            return v
    if isinstance(v, dict):
        return tuple(sorted((k, norm(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return tuple(norm(x) for x in v)
    return v


def table(con, name: str) -> Counter:
    cols = [
        d[0] for d in con.execute(f"SELECT * FROM {name} LIMIT 0").description if d[0] not in DROP
    ]
    sel = ", ".join(f'"{c}"' for c in cols)
    return Counter(
        tuple(norm(x) for x in r) for r in con.execute(f"SELECT {sel} FROM {name}").fetchall()
    )


def both(tmp_path: Path, logs: list[Path]):
    trace, out = tlparse(logs, tmp_path)
    wa, wb = str(tmp_path / "wa"), str(tmp_path / "wb")
    pt2logs.ingest([str(trace)], wa)
    res = pt2logs.ingest([str(out.parent)], wb)
    return pt2logs.connect(wa), pt2logs.connect(wb), res


CASES = {
    "gpu_graph_breaks": lambda: sorted(fixture_path("gpu", "graph_breaks", "trace").glob("*.log")),
    "gpu_train_loop": lambda: sorted(fixture_path("gpu", "train_loop", "trace").glob("*.log")),
    "gpu_compile_failure": lambda: sorted(
        fixture_path("gpu", "compile_failure", "trace").glob("*.log")
    ),
    "sample_recompiles": lambda: sorted((SAMPLES / "recompiles" / "trace").glob("*.gz")),
    "sample_ddp_2rank": lambda: sorted((SAMPLES / "ddp_2rank" / "trace").glob("*.gz")),
    "tlparse_simple": lambda: [fixture_path("tlparse", "simple.log")],
    "tlparse_comp_failure": lambda: [fixture_path("tlparse", "comp_failure.log")],
    "tlparse_cache_hit_miss": lambda: [fixture_path("tlparse", "cache_hit_miss.log")],
    "tlparse_multi_rank": lambda: sorted(fixture_path("tlparse", "multi_rank_logs").glob("*.log")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_tlparse_folder_gives_the_trace_tables(tmp_path, case):
    logs = CASES[case]()
    a, b, res = both(tmp_path, logs)
    assert res.runs_new == 1
    assert b.execute("SELECT name, formats, n_files FROM runs").fetchall() == [
        ("tl_out", ["tlparse_dir"], len(logs))
    ]
    assert sorted(
        r[0] for r in a.execute("SELECT DISTINCT rank FROM events").fetchall() if r[0] is not None
    ) == sorted(
        r[0] for r in b.execute("SELECT DISTINCT rank FROM events").fetchall() if r[0] is not None
    )
    for name in TABLES:
        assert table(a, name) == table(b, name), name
    assert b.execute(
        "SELECT DISTINCT source FROM recompiles_all_sources UNION SELECT DISTINCT source FROM compile_phases_all_sources"
    ).fetchall() in ([("tlparse_dir",)], [])
    # events: every record comes back, with the same kind, compile id and payload (JSON payloads that
    # tlparse re-serialized: equal as JSON, payload_ok NULL)
    q = "SELECT event_type, artifact_name, rank, count(*) FROM events GROUP BY ALL"
    ea = Counter({r[:3]: r[3] for r in a.execute(q).fetchall()})
    eb = Counter({r[:3]: r[3] for r in b.execute(q).fetchall()})
    extra = eb - ea
    assert ea - eb == Counter()
    # documented: with --all-ranks-html, tlparse 0.4.3 gives each rank a string table that also holds
    # the other ranks' strings, so there are more `str` rows
    assert all(k[0] == "str" for k in extra) and (not extra or len(logs) > 1), extra
    q = (
        "SELECT payload_md5, payload FROM events WHERE payload_md5 IS NOT NULL AND event_type <> 'chromium_event' "
        "AND event_type <> 'str'"
    )
    pa_ = dict(a.execute(q).fetchall())
    pb = dict(b.execute(q).fetchall())
    lost = b.execute(
        "SELECT count(*) FROM events WHERE payload_md5 IS NOT NULL AND payload IS NULL"
    ).fetchone()[0]
    assert set(pb) == set(pa_)
    for md5, text in pb.items():
        if text is not None and text != pa_[md5]:
            assert json.loads(text) == json.loads(pa_[md5]), md5
    assert b.execute("SELECT count(*) FROM events WHERE payload_ok = false").fetchone()[0] == 0
    # documented: payloads tlparse keeps no copy of (records outside any compile, e.g. torch_version)
    warn = b.execute("SELECT kind, count(*) FROM ingest_errors GROUP BY 1").fetchall()
    assert (
        warn in ([], [("payload_unavailable", lost)])
        and b.execute("SELECT count(*) FROM ingest_errors WHERE severity = 'error'").fetchone()[0]
        == 0
    )
    # times: the records of raw.jsonl have the trace's times (year and UTC offset from the payloads'
    # epoch times, never tlparse's year); chromium events get their own epoch time
    q = "SELECT event_type, artifact_name, compile_id, rank, ts FROM events WHERE event_type NOT IN ('chromium_event', 'str')"
    assert Counter(a.execute(q).fetchall()) == Counter(b.execute(q).fetchall())
    # (documented: the trace's chromium records have the glog time of the write, not kept by tlparse)
    for ts, payload in b.execute(
        "SELECT epoch_us(ts), payload FROM events WHERE event_type = 'chromium_event'"
    ).fetchall():
        assert abs(ts - json.loads(payload)["ts"]) <= 1


def test_old_log_keeps_its_year(tmp_path):
    """tlparse labels every timestamp with the current year; a 2024 log stays in 2024 (and in UTC)."""
    a, b, _ = both(tmp_path, [fixture_path("tlparse", "simple.log")])
    (year,) = {r[0].year for r in b.execute("SELECT ts FROM events").fetchall()}
    assert year == 2024
    raw = next((tmp_path / "out" / "tl_out").glob("raw.jsonl")).read_text()
    assert (
        '"timestamp":"20' in raw and "2024-" not in raw.split("\n")[1]
    )  # tlparse wrote another year


def test_raw_log_is_preferred_and_format_override(tmp_path):
    logs = sorted(fixture_path("gpu", "graph_breaks", "trace").glob("*.log"))
    _, out = tlparse(logs, tmp_path, keep_raw_log=True)
    wh = str(tmp_path / "wh")
    res = pt2logs.ingest([str(out.parent)], wh)
    con = pt2logs.connect(wh)
    assert con.execute("SELECT name, formats FROM runs").fetchall() == [("tl_out", ["torch_trace"])]
    assert con.execute("SELECT relpath FROM files").fetchall() == [("raw.log",)]
    why = dict(res.skipped)
    assert "raw.log" in why[str(out / "raw.jsonl")]
    assert "not read on their own" in why[str(out)]
    assert con.execute("SELECT count(*) FROM events").fetchone()[0] == 2183
    wh2 = str(tmp_path / "wh2")
    pt2logs.ingest([str(out.parent)], wh2, fmt="tlparse_dir")
    con = pt2logs.connect(wh2)
    assert con.execute("SELECT formats FROM runs").fetchall() == [(["tlparse_dir"],)]
    assert con.execute("SELECT count(*) FROM events").fetchone()[0] == 2183


@pytest.mark.parametrize(
    "logs",
    [
        lambda: sorted(fixture_path("gpu", "graph_breaks", "trace").glob("*.log")),
        lambda: sorted(
            fixture_path("tlparse", "multi_rank_logs").glob("*.log")
        ),  # --all-ranks-html: rank_N/ folders
    ],
    ids=["one_rank", "all_ranks_html"],
)
def test_folder_with_raw_log_but_no_raw_jsonl_is_one_run(tmp_path, logs):
    """A tlparse folder trimmed to its raw.log copy is one run named after the folder, read from
    raw.log, its report files listed once, not one 'not a recognised log format' line each."""
    logs = logs()
    trace, out = tlparse(logs, tmp_path, keep_raw_log=True)
    for p in out.rglob("raw.jsonl"):
        p.unlink()
    n_raw = len(list(out.rglob("raw.log")))
    assert n_raw == len(logs)
    n_report = sum(1 for p in out.rglob("*") if p.is_file()) - n_raw
    wa, wb = str(tmp_path / "wa"), str(tmp_path / "wb")
    pt2logs.ingest([str(trace)], wa)
    res = pt2logs.ingest([str(out)], wb)
    b = pt2logs.connect(wb)
    assert res.runs_new == 1 and res.errors == 0
    assert b.execute("SELECT name, root, formats, n_files FROM runs").fetchall() == [
        ("tl_out", str(out), ["torch_trace"], len(logs))
    ]
    assert sorted(r[0] for r in b.execute("SELECT relpath FROM files").fetchall()) == sorted(
        str(p.relative_to(out)) for p in out.rglob("raw.log")
    )
    assert res.skipped == [
        (
            str(out),
            f"run folder: its {n_report} report/artifact file(s) are not read on their own "
            "(the run is read from the files its format reads, e.g. tlparse's raw.log or raw.jsonl)",
        )
    ]
    a = pt2logs.connect(wa)
    assert (
        a.execute("SELECT n_ranks, n_events FROM runs").fetchall()
        == b.execute("SELECT n_ranks, n_events FROM runs").fetchall()
    )
    for name in ("events", *TABLES):
        assert table(a, name) == table(b, name), name


def test_tlparse_folder_beside_a_stderr_capture_is_one_run(tmp_path):
    logs = sorted(fixture_path("gpu", "recompile_causes", "trace").glob("*.log"))
    _, out = tlparse(logs, tmp_path)
    shutil.copy(
        fixture_path("gpu", "recompile_causes", "torch_logs.txt"), out.parent / "torch_logs.txt"
    )
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(out.parent)], wh)
    con = pt2logs.connect(wh)
    assert con.execute("SELECT name, formats FROM runs").fetchall() == [
        ("out", ["tlparse_dir", "torch_logs"])
    ]
    got = dict(
        con.execute("SELECT source, count(*) FROM recompiles_all_sources GROUP BY 1").fetchall()
    )
    assert got == {"tlparse_dir": 5, "torch_logs": 5}
    assert con.execute("SELECT DISTINCT source FROM recompiles").fetchall() == [("tlparse_dir",)]


# ----------------------------------------------------------------------------- the reader alone


def tl_folder(
    records: list[dict], payloads: dict[str, bytes], chromium: list[dict] | None = None
) -> dict[str, bytes]:
    """A tiny tlparse output folder as {relative path: bytes}."""
    files = {
        "raw.jsonl": b"\n".join(
            [orjson.dumps({"string_table": ["/w/model.py"]})] + [orjson.dumps(r) for r in records]
        )
        + b"\n"
    }
    files.update(payloads)
    if chromium is not None:
        files["chromium_events.json"] = json.dumps(chromium, indent=2).encode()
    return files


def read_folder(files: dict[str, bytes], **kw):
    def sibling(name: str):
        if name not in files:
            raise FileNotFoundError(name)
        return [files[name]]

    ctx = FileContext(
        file="tl_out/raw.jsonl", path="/x/tl_out/raw.jsonl", open_sibling=sibling, **kw
    )
    out: dict[str, list[pa.RecordBatch]] = {}
    for name, batch in read_tlparse_dir([files["raw.jsonl"]], ctx):
        out.setdefault(name, []).append(batch)
    return {k: pa.Table.from_batches(v).to_pylist() for k, v in out.items()}, ctx.stats


def _md5(b: bytes) -> str:
    return hashlib.md5(b).hexdigest()


def test_reader_rebuilds_records_and_reports_what_is_missing():
    gb = b"Graph break in user code at /w/model.py:3\nGraph Break Reason: Data-dependent branching"
    meta = {
        "compile_id": "0/0",
        "start_time": 1733527101.5,
        "co_name": "f",
        "entire_frame_compile_time_s": 0.25,
    }
    recs = [
        {
            "dynamo_start": {"stack": [{"filename": 0, "line": 1, "name": "f"}]},
            "frame_id": 0,
            "frame_compile_id": 0,
            "attempt": 0,
            "timestamp": "2031-12-06T15:18:21.500000Z",
            "thread": 7,
            "pathname": " torch/_dynamo/convert_frame.py",
            "lineno": 9,
        },
        {
            "artifact": {"name": "dynamo_graph_break_reason", "encoding": "string"},
            "frame_id": 0,
            "frame_compile_id": 0,
            "attempt": 0,
            "has_payload": _md5(gb),
            "payload_filename": "-_0_0_0/dynamo_graph_break_reason_0.txt",
            "timestamp": "2031-12-06T15:18:21.600000Z",
            "thread": 7,
            "pathname": " torch/_dynamo/x.py",
            "lineno": 1,
        },
        {
            "artifact": {"name": "lost", "encoding": "string"},
            "has_payload": "0" * 32,
            "timestamp": "2031-12-06T15:18:21.700000Z",
            "thread": 7,
            "pathname": " torch/x.py",
            "lineno": 1,
        },
        {
            "compilation_metrics": meta,
            "frame_id": 0,
            "frame_compile_id": 0,
            "attempt": 0,
            "timestamp": "2031-12-06T15:18:21.900000Z",
            "thread": 7,
            "pathname": " torch/_dynamo/utils.py",
            "lineno": 1,
        },
    ]
    chromium = [
        {
            "name": "entire_frame_compile",
            "ph": "B",
            "ts": 1733527101500000.0,
            "args": {"compile_id": "0/0"},
            "cat": "dynamo_timed",
        },
        {
            "name": "entire_frame_compile",
            "ph": "E",
            "ts": 1733527101750000.0,
            "args": {"compile_id": "0/0"},
            "cat": "dynamo_timed",
        },
    ]
    t, stats = read_folder(
        tl_folder(recs, {"-_0_0_0/dynamo_graph_break_reason_0.txt": gb}, chromium)
    )
    ev = sorted(t["events"], key=lambda e: (e["file"], e["line_no"]))
    assert [(e["file"], e["line_no"], e["event_type"]) for e in ev] == [
        ("tl_out/chromium_events.json", 2, "chromium_event"),
        ("tl_out/chromium_events.json", 11, "chromium_event"),
        ("tl_out/raw.jsonl", 1, "str"),
        ("tl_out/raw.jsonl", 2, "dynamo_start"),
        ("tl_out/raw.jsonl", 3, "artifact"),
        ("tl_out/raw.jsonl", 4, "artifact"),
        ("tl_out/raw.jsonl", 5, "compilation_metrics"),
    ]
    by_type = {(e["event_type"], e["artifact_name"]): e for e in ev}
    assert (
        by_type[("dynamo_start", None)]["pathname"] == "torch/_dynamo/convert_frame.py"
        and by_type[("dynamo_start", None)]["level"] is None
    )
    assert by_type[("artifact", "dynamo_graph_break_reason")]["payload_ok"] is True
    assert (
        by_type[("artifact", "lost")]["payload_ok"] is None
        and by_type[("artifact", "lost")]["payload"] is None
    )
    # the log was written in UTC-8 in 2024: year and offset come from the epoch times, not from tlparse's 2031
    assert by_type[("dynamo_start", None)]["ts"].isoformat() == "2024-12-06T23:18:21.500000+00:00"
    (g,) = t["graph_breaks"]
    assert (g["source"], g["compile_id"], g["co_name"], g["co_filename"], g["gb_type"]) == (
        "tlparse_dir",
        "0/0",
        "f",
        "/w/model.py",
        "Data-dependent branching",
    )
    (ph,) = t["compile_phases"]
    assert (ph["source"], ph["file"], ph["line_no"], ph["duration_us"]) == (
        "tlparse_dir",
        "tl_out/chromium_events.json",
        2,
        250000,
    )
    assert [e["kind"] for e in t["ingest_errors"]] == ["payload_unavailable"]
    assert stats.warnings == 1 and stats.errors == 0 and stats.lines == 5


def test_bad_lines_are_kept_and_reported():
    files = tl_folder([], {})
    files["raw.jsonl"] += (
        b'{"dynamo_start": {}, "timestamp": "2024-12-06T15:18:21.500000Z"\nnot json at all\n[1, 2]\n'
    )
    t, stats = read_folder(files)
    assert sorted(e["kind"] for e in t["ingest_errors"]) == [
        "bad_json",
        "bad_json",
        "no_chromium_events",
        "not_an_object",
    ]
    assert len(t["events"]) == 3 and stats.errors == 3


def test_detection_of_raw_jsonl():
    assert (
        detect(b'{"string_table":["/a.py"]}\n{"dynamo_start":{}}\n', "raw.jsonl").name
        == "tlparse_dir"
    )
    assert (
        detect(b'{"strings": 1}\n', "raw.jsonl") is None
        or detect(b'{"strings": 1}\n', "raw.jsonl").name != "tlparse_dir"
    )


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400), st.binary(max_size=200), st.booleans())
def test_arbitrary_bytes_never_raise(raw, sibling, pretty):
    files = {
        "raw.jsonl": b'{"string_table":[]}\n' + raw,
        "chromium_events.json": (b"[\n  {\n" + sibling + b"\n  }\n]") if pretty else sibling,
    }
    files["payloads/" + "0" * 32 + ".txt"] = sibling
    read_folder(files)


@pytest.mark.slow
def test_real_run_trace_through_tlparse(tmp_path):
    from tests.test_sources_agree import real_run

    logs = sorted((real_run() / "torch_compile_debug" / "tlparse").glob("*.log"))
    a, b, _ = both(tmp_path, logs)
    for name in TABLES:
        assert table(a, name) == table(b, name), name
