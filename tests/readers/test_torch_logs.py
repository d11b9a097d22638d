"""The TORCH_LOGS reader: message joining, foreign lines, every interpreted artifact, sniffing, time.

Real inputs: the stderr captures of fixtures/torch_logs (torch 2.13 CPU, one per TORCH_LOGS setting),
the users' pastes in fixtures/torch_logs/wild_pastes (2022-2025 formats), and the stderr of a real
torch run made by the tests (tests/test_sources_agree.py::real_run).
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import ROOT, SAMPLES, fixture_path

from pt2logs.readers import detect
from pt2logs.readers.kit import FileContext
from pt2logs.readers.lines.torch_logs import read_torch_logs, sniff_torch_logs

NOV_2026 = dt.datetime(2026, 11, 22, 12, tzinfo=dt.timezone.utc).timestamp()


def read(data: str | bytes, *, chunk: int | None = None, **ctx_kw):
    raw = data.encode() if isinstance(data, str) else data
    chunks = [raw] if chunk is None else [raw[i : i + chunk] for i in range(0, len(raw), chunk)]
    ctx_kw.setdefault("mtime", NOV_2026)
    ctx = FileContext(file="torch_logs.txt", path="/x/torch_logs.txt", **ctx_kw)
    out: dict[str, list[pa.RecordBatch]] = {}
    for name, batch in read_torch_logs(chunks, ctx):
        out.setdefault(name, []).append(batch)
    return {k: pa.Table.from_batches(v).to_pylist() for k, v in out.items()}, ctx.stats


def read_file(path: Path, **kw):
    return read(path.read_bytes(), **kw)


P = "V1122 09:44:39.380000 15437 torch/_dynamo/guards.py:5396] [0/1] [__recompiles] "
RECOMPILE = (
    P
    + "Recompiling function forward in /w/model.py:30\n"
    + P
    + "    triggered by the following guard failure(s):\n"
    + P
    + "    - 0/0: tensor 'x' size mismatch at index 0. expected 4, actual 8\n"
)


def test_multi_line_message_is_one_row_and_foreign_lines_are_kept():
    text = (
        "hello from print()\n"
        + RECOMPILE
        + 'Traceback (most recent call last):\n  File "x.py", line 1\n'
    )
    t, stats = read(text)
    logs = sorted(t["log_lines"], key=lambda r: r["line_no"])
    assert [(r["line_no"], r["n_lines"], r["foreign"]) for r in logs] == [
        (1, 1, True),
        (2, 3, False),
        (5, 2, True),
    ]
    msg = logs[1]
    assert (
        msg["message"].startswith("Recompiling function forward")
        and msg["message"].count("\n") == 2
    )
    assert (msg["level"], msg["pid"], msg["pathname"], msg["lineno"]) == (
        "V",
        15437,
        "torch/_dynamo/guards.py",
        5396,
    )
    assert (msg["compile_id"], msg["attempt"], msg["artifact"]) == ("0/1", 0, "recompiles")
    assert msg["ts"] == dt.datetime(2026, 11, 22, 9, 44, 39, 380000, tzinfo=dt.timezone.utc)
    assert (
        stats.events == 1
        and stats.kinds["foreign"] == 3
        and stats.errors == 0
        and stats.warnings == 0
    )
    assert stats.lines == 6
    (rc,) = t["recompiles"]
    assert (
        rc["source"] == "torch_logs"
        and rc["co_name"] == "forward"
        and rc["cause"] == "shape_mismatch"
    )
    assert (
        rc["prev_compile_id"] == "0/0" and rc["compile_id"] == "0/1" and rc["is_limit_hit"] is False
    )


def test_empty_message_lines_without_their_trailing_space_stay_in_the_message():
    text = fixture_path("torch_logs", "graph_breaks.txt").read_text()
    stripped = "\n".join(line.rstrip() for line in text.split("\n"))
    a, _ = read(text)
    b, _ = read(stripped)
    assert len(a["log_lines"]) == len(b["log_lines"])
    key = lambda g: (g["compile_id"], g["gb_id"], g["user_lineno"], g["occurrences"])  # noqa: E731
    assert sorted(map(key, a["graph_breaks"])) == sorted(map(key, b["graph_breaks"]))


@pytest.mark.parametrize("chunk", [1, 2, 7, 64, 1000])
def test_chunks_may_cut_lines_anywhere(chunk):
    text = ("x" * 50 + "\r\n") + RECOMPILE.replace("\n", "\r\n") + "tail without newline"
    assert read(text, chunk=chunk)[0] == read(text)[0]


def test_interleaved_ranks_and_attempt_suffix():
    a = "[rank0]:V1122 10:47:58.401000 10875 torch/_dynamo/symbolic_convert.py:5124] [0/0_1] [__graph_breaks] "
    b = "[rank1]:V1122 10:47:58.412000 10876 torch/_dynamo/symbolic_convert.py:5124] [0/0_1] [__graph_breaks] "
    body = [
        "Graph break in user code at /w/m.py:7",
        "Graph Break Reason: Unsupported method call",
        "  Explanation: nope",
        " For more details, see https://x/gb/gb0156.html",
    ]
    # rank 1's message arrives in the middle of rank 0's (a large write split in two)
    lines = [
        a + body[0],
        a + body[1],
        b + body[0],
        b + body[1],
        b + body[2],
        b + body[3],
        a + body[2],
        a + body[3],
    ]
    t, stats = read("\n".join(lines) + "\n")
    logs = [r for r in t["log_lines"] if not r["foreign"]]
    assert sorted((r["rank"], r["n_lines"], r["attempt"], r["compile_id"]) for r in logs) == [
        (0, 4, 1, "0/0"),
        (1, 4, 1, "0/0"),
    ]
    gbs = sorted(t["graph_breaks"], key=lambda r: r["rank"])
    assert [(g["rank"], g["gb_id"], g["user_lineno"], g["occurrences"]) for g in gbs] == [
        (0, "gb0156", 7, 1),
        (1, "gb0156", 7, 1),
    ]
    assert stats.ranks == {0, 1}


def test_duplicate_suppressed_break_in_the_same_compile_is_an_occurrence():
    p = "V1122 09:40:54.836000 661 torch/_dynamo/symbolic_convert.py:5134] [5/0] [__graph_breaks] "
    q = "V1122 09:40:54.900000 661 torch/_dynamo/symbolic_convert.py:5127] [5/0] [__graph_breaks] "
    r = "V1122 09:40:55.000000 661 torch/_dynamo/symbolic_convert.py:5134] [5/1] [__graph_breaks] "
    first = [
        q + "Graph break in user code at /w/m.py:62",
        q + "Graph Break Reason: Data-dependent branching",
        q + "  Explanation: x",
        q + " see https://x/gb/gb0170.html",
    ]
    dup = [
        p
        + "Graph break (user stack suppressed due to duplicate graph break) in user code at /w/m.py:62",
        p + "Graph Break Reason: Data-dependent branching",
        p + "  Explanation: x",
        p + " see https://x/gb/gb0170.html",
    ]
    other = [line.replace(p, r) for line in dup]
    t, _ = read("\n".join(first + dup + other) + "\n")
    rows = sorted(
        (g["compile_id"], g["gb_id"], g["gb_type"], g["occurrences"], g["origin"])
        for g in t["graph_breaks"]
    )
    assert rows == [
        ("5/0", "gb0170", "Data-dependent branching", 2, "log_line"),
        ("5/1", "gb0170", "Data-dependent branching", 1, "log_line"),
    ]


def test_recompiles_fixture_and_the_limit_warning():
    t, stats = read_file(fixture_path("torch_logs", "recompiles.txt"))
    rows = {r["compile_id"]: r for r in t["recompiles"]}
    assert len(t["recompiles"]) == 10 and len(rows) == 10
    assert rows["6/4"]["is_limit_hit"] and rows["6/4"]["cause"] == "recompile_limit_hit"
    assert rows["6/4"]["reason"] == "tensor 'x' dtype mismatch. expected Half, actual Long"
    assert len(rows["6/4"]["all_reasons"]) == 4
    assert sum(r["is_limit_hit"] for r in rows.values()) == 1
    assert rows["5/1"]["cause"] == "python_value_changed" and rows["5/1"]["guard_subject"] == "k"
    assert {rows[c]["cause"] for c in ("0/1", "1/1", "2/1")} == {"shape_mismatch"}
    assert rows["6/1"]["cause"] == "dtype_mismatch" and rows["6/1"]["co_name"] == "act"
    assert stats.errors == stats.warnings == 0
    # the limit warning is a message of its own (W, no artifact tag)
    (w,) = [r for r in t["log_lines"] if r["level"] == "W"]
    assert w["artifact"] is None and w["n_lines"] == 5 and w["compile_id"] == "6/4"


def test_recompiles_verbose_gives_the_same_rows():
    a, _ = read_file(fixture_path("torch_logs", "recompiles.txt"))
    b, _ = read_file(fixture_path("torch_logs", "recompiles_verbose.txt"))

    def key(r):
        return (
            r["compile_id"],
            r["cause"],
            r["is_limit_hit"],
            r["prev_compile_id"],
            r["co_name"],
        )  # noqa: E731

    assert sorted(map(key, a["recompiles"])) == sorted(map(key, b["recompiles"]))


def test_graph_breaks_fixture():
    t, _ = read_file(fixture_path("torch_logs", "graph_breaks.txt"))
    text = fixture_path("torch_logs", "graph_breaks.txt").read_text()
    reports = len(
        re.findall(r"\] Graph break (?:\(user stack suppressed[^)]*\) )?in user code at", text)
    )
    assert sum(g["occurrences"] for g in t["graph_breaks"]) == reports == 8
    assert all(g["gb_id"] and g["user_filename"].endswith("workload.py") for g in t["graph_breaks"])
    # a graph-break message does not name the function being compiled: only a Recompiling line of the
    # same frame does (TORCH_LOGS=graph_breaks alone: none)
    assert all(g["co_name"] is None for g in t["graph_breaks"])
    gb = "V1122 09:44:39.300000 15437 torch/_dynamo/symbolic_convert.py:5124] [0/0] [__graph_breaks] "
    t, _ = read(
        gb
        + "Graph break in user code at /w/model.py:32\n"
        + gb
        + "Graph Break Reason: Data-dependent branching\n"
        + RECOMPILE
    )
    (g,) = t["graph_breaks"]
    assert (g["compile_id"], g["co_name"], g["co_filename"], g["co_firstlineno"]) == (
        "0/0",
        "forward",
        "/w/model.py",
        30,
    )
    v, _ = read_file(fixture_path("torch_logs", "verbose_graph_breaks.txt"))
    assert sum(g["occurrences"] for g in v["graph_breaks"]) == 8


def test_output_code_fixture_kernels_equal_an_independent_scan():
    path = fixture_path("torch_logs", "output_code.txt")
    t, _ = read_file(path)
    # naive: kernel definitions at the start of a message line
    names = re.findall(r"\[__output_code\] (\w+) = async_compile\.\w+\(", path.read_text())
    assert sorted(k["kernel_name"] for k in t["kernels"]) == sorted(names)
    assert {k["backend"] for k in t["kernels"]} == {"cpp"} and all(
        k["cache_hit"] is None for k in t["kernels"]
    )
    assert {k["graph"] for k in t["kernels"]} <= {"forward", "backward", "inference"}
    assert all(k["compile_id"] for k in t["kernels"])
    assert sum(e["count"] for e in t["extern_calls"]) == len(
        re.findall(r"extern_kernels\.\w+\(", _outside_sources(path.read_text()))
    )


def _outside_sources(text: str) -> str:
    return re.sub(r"'''.*?'''", "", text, flags=re.S)


def test_rank_prefix_fixture():
    t, stats = read_file(fixture_path("torch_logs", "dist_rank_recompiles.txt"))
    (rc,) = t["recompiles"]
    assert rc["rank"] == 0 and rc["co_name"] == "f" and rc["cause"] == "python_value_changed"
    assert stats.ranks == {0}


@pytest.mark.parametrize(
    "name",
    [
        "dynamo.txt",
        "plus_dynamo.txt",
        "guards.txt",
        "inductor.txt",
        "fusion.txt",
        "perf_hints.txt",
        "schedule.txt",
        "plus_aot_graphs.txt",
    ],
)
def test_every_other_fixture_reads_without_errors_and_loses_no_line(name):
    path = fixture_path("torch_logs", name)
    t, stats = read_file(path)
    n = path.read_bytes().count(b"\n")
    assert stats.errors == 0 and stats.warnings == 0
    assert sum(r["n_lines"] for r in t["log_lines"]) == n == stats.lines
    assert stats.events == sum(1 for r in t["log_lines"] if not r["foreign"]) > 0


WILD = {  # paste -> (recompile rows, limit hits, graph break reports)
    "huggingface_diffusers_11970.txt": (1, 0, 0),
    "huggingface_transformers_36484.txt": (
        1,
        1,
        0,
    ),  # the paste starts after the limit's first line: still a limit hit
    "kijai_ComfyUI-MochiWrapper_44.txt": (1, 1, 0),  # Windows paths
    "pytorch-blog_rag-graviton_recompiles.txt": (1, 0, 0),
    "pytorch_pytorch_126722.txt": (0, 0, 1),  # torch 2.4 "Graph break: from user code at:"
    "pytorch_pytorch_99091.txt": (4, 0, 0),  # 2023 "[date] logger: [LEVEL]" format, tuple messages
    "pytorch_torchdynamo_1955.txt": (2, 2, 0),  # 2022 cache_size_limit warnings
    "vllm-project_vllm_8821.txt": (1, 0, 0),  # log line glued behind a progress bar
}


@pytest.mark.parametrize("name", sorted(WILD))
def test_wild_pastes(name):
    path = fixture_path("torch_logs", "wild_pastes", name)
    assert detect(path.read_bytes()[:65536], name).name == "torch_logs"
    t, stats = read_file(path)
    rc, hits, gbs = WILD[name]
    assert len(t.get("recompiles", [])) == rc
    assert sum(r["is_limit_hit"] for r in t.get("recompiles", [])) == hits
    assert sum(g["occurrences"] for g in t.get("graph_breaks", [])) == gbs
    assert stats.errors == 0
    assert sum(r["n_lines"] for r in t["log_lines"]) >= path.read_bytes().count(b"\n")


def test_old_format_has_a_full_date_and_continuation_lines():
    t, _ = read_file(fixture_path("torch_logs", "wild_pastes", "pytorch_torchdynamo_1955.txt"))
    rows = sorted(t["recompiles"], key=lambda r: r["line_no"])
    assert rows[0]["co_name"] == "run" and rows[0]["ts"] == dt.datetime(
        2022, 12, 22, 3, 54, 3, 390000, tzinfo=dt.timezone.utc
    )
    assert rows[1]["co_firstlineno"] == 861 and rows[1]["guard_subject"] == "past_key_values"


def test_progress_bar_glued_line_is_split_off():
    t, _ = read_file(fixture_path("torch_logs", "wild_pastes", "vllm-project_vllm_8821.txt"))
    msg = next(r for r in t["log_lines"] if r["artifact"] == "recompiles_verbose")
    assert msg["rank"] == 0 and msg["message"].startswith("Recompiling function")
    assert any(r["foreign"] and "Processed prompts" in r["message"] for r in t["log_lines"])


# ----------------------------------------------------------------------------- time


def test_year_from_mtime_and_december_log_read_in_january():
    line = "W1231 23:59:59.500000 1 torch/_dynamo/convert_frame.py:1] hello\nW0101 00:00:01.000000 1 torch/x.py:2] new year\n"
    jan = dt.datetime(2027, 1, 1, 8, tzinfo=dt.timezone.utc).timestamp()
    t, stats = read(line, mtime=jan)
    ts = sorted(r["ts"] for r in t["log_lines"])
    assert ts == [
        dt.datetime(2026, 12, 31, 23, 59, 59, 500000, tzinfo=dt.timezone.utc),
        dt.datetime(2027, 1, 1, 0, 0, 1, tzinfo=dt.timezone.utc),
    ]
    assert stats.first_ts < stats.last_ts


def test_impossible_time_is_a_warning_and_the_message_stays():
    t, stats = read("I0230 25:61:00.000000 1 torch/a.py:1] x\n")
    (row,) = t["log_lines"]
    assert row["ts"] is None and row["message"] == "x"
    assert stats.warnings == 1 and t["ingest_errors"][0]["kind"] == "bad_timestamp"


def test_invalid_utf8_is_replaced_and_reported():
    t, stats = read(b"I1122 01:02:03.000000 1 torch/a.py:1] caf\xe9\n")
    assert t["log_lines"][0]["message"] == "caf\ufffd"
    assert stats.warnings == 1 and t["ingest_errors"][0]["kind"] == "decode_error"


def test_batches_leave_as_the_file_is_read():
    text = "".join(
        f"I1122 01:02:{i % 60:02d}.000000 7 torch/a.py:{i}] line {i}\n" for i in range(5000)
    )
    ctx = FileContext(file="f", path="/f", mtime=NOV_2026, batch_rows=500)
    sizes = [b.num_rows for name, b in read_torch_logs([text.encode()], ctx) if name == "log_lines"]
    assert len(sizes) >= 10 and sum(sizes) == 5000 and max(sizes) <= 501


# ----------------------------------------------------------------------------- sniffing


def test_sniffing_tells_text_from_traces_and_other_files():
    for name in (
        "recompiles.txt",
        "graph_breaks.txt",
        "output_code.txt",
        "dist_rank_recompiles.txt",
        "guards.txt",
    ):
        p = fixture_path("torch_logs", name)
        assert detect(p.read_bytes()[:65536], name).name == "torch_logs", name
    trace = fixture_path("torch_logs", "trace_one_per_kind.log")
    assert not sniff_torch_logs(trace.read_bytes()[:65536], trace.name)
    assert detect(trace.read_bytes()[:65536], trace.name).name == "torch_trace"
    for p in (
        ROOT / "README.md",
        SAMPLES / "README.md",
        SAMPLES / "generate.py",
        fixture_path("torch_logs", "COMMANDS.txt"),
        fixture_path("torch_logs", "workload.py"),
        fixture_path("torch_logs", "structured_event_catalog.tsv"),
    ):
        assert not sniff_torch_logs(p.read_bytes()[:65536], p.name), p
    assert not sniff_torch_logs(b"just some text\nV is for vendetta\n", "x.txt")


def test_foreign_output_first_is_still_text():
    head = b"".join(b"Epoch %d: loss=0.1\n" % i for i in range(500)) + RECOMPILE.encode()
    assert sniff_torch_logs(head, "stderr.txt")


def test_spyre_captures_are_read_by_the_spyre_format_with_both_line_readers():
    p = fixture_path("spyre", "issue_excerpts.txt")
    head = p.read_bytes()[:65536]
    fmt = detect(head, p.name)
    assert fmt is not None and fmt.name == "spyre_log"
    # a capture that mixes both: the Spyre format comes first in the registry and keeps torch's lines
    mixed = (
        RECOMPILE.encode()
        + b"[DEBUG] [spyre.runtime] 2026-08-14 07:08:11 copyAsync: src (Half) is on:cpu\n"
    )
    assert detect(mixed, "stderr.txt").name == "spyre_log"
    assert sniff_torch_logs(mixed, "stderr.txt")  # it is torch text too; the order decides
    out = {}
    for name, batch in detect(mixed, "stderr.txt").read(
        [mixed], FileContext(file="f", path="/f", mtime=NOV_2026)
    ):
        out.setdefault(name, []).extend(batch.to_pylist())
    assert [r["cause"] for r in out["recompiles"]] == ["shape_mismatch"]
    assert len(out["spyre_messages"]) == 1 and [r["artifact"] for r in out["log_lines"]] == [
        "recompiles"
    ]


# ----------------------------------------------------------------------------- robustness


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=80),
            st.sampled_from(
                [
                    RECOMPILE.encode(),
                    b"\n",
                    b"\r",
                    b"[rank3]:",
                    b"W1122 09:44:40.765000 1 a.py:1] [6/4] torch._dynamo hit config.recompile_limit (4)\n",
                    b"V1122 09:40:54.836000 661 s.py:5134] [5/0] [__graph_breaks] Graph break in user code at /w.py:1\n",
                    b"V1122 09:46:37.848000 1 g.py:2722] [0/0_1] [__output_code] Output code: \n",
                    b"[2023-04-13 21:42:57,808] torch._dynamo.x.__recompiles: [DEBUG] hi\n",
                ]
            ),
        ),
        max_size=30,
    ),
    st.integers(1, 50),
)
def test_arbitrary_bytes_never_raise(parts, chunk):
    data = b"".join(parts)
    t, stats = read(data, chunk=chunk)
    n_lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    assert n_lines == stats.lines
    # every line is in a row (a log line glued behind other output is in two: the output, the message;
    # a process's message may continue after other processes' lines, so rows need not be contiguous)
    rows = t.get("log_lines", [])
    assert sum(r["n_lines"] for r in rows) >= n_lines
    assert all(1 <= r["line_no"] <= n_lines for r in rows)
    assert stats.errors == 0


# ----------------------------------------------------------------------------- a real torch run


@pytest.mark.slow
def test_real_run_stderr():
    from tests.test_sources_agree import real_run

    run = real_run()
    path = run / "torch_logs.txt"
    assert detect(path.read_bytes()[:65536], path.name).name == "torch_logs"
    t, stats = read_file(path)
    assert stats.errors == 0
    rc = {r["compile_id"]: r for r in t["recompiles"]}
    assert {r["cause"] for r in rc.values()} == {"dtype_mismatch", "recompile_limit_hit"}
    assert sum(r["is_limit_hit"] for r in rc.values()) == 1
    assert sum(g["occurrences"] for g in t["graph_breaks"]) == 2  # the print(), in 0/0 and in 0/1
    assert len(t["kernels"]) >= 2 and all(k["backend"] == "cpp" for k in t["kernels"])
