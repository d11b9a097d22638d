"""vLLM's log lines and TORCH_TRACE artifacts → vllm_log_events, vllm_compiles, vllm_piecewise.

The inputs are RECONSTRUCTED FROM vLLM's SOURCE (tests/vllm_inputs.py says from which files and
versions), not captured from a vLLM run; the trace is written by real torch during a real compile.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from tests import vllm_inputs as V
from tests.conftest import fixture_path

import pt2logs
from pt2logs.readers import detect
from pt2logs.readers.kit import FileContext
from pt2logs.readers.lines.torch_logs import read_torch_logs
from pt2logs.readers.lines.vllm_log import read_vllm_log


def read(reader, text: str, chunk: int | None = None) -> tuple[dict[str, list[dict]], FileContext]:
    data = text.encode()
    ctx = FileContext(file="stdout.txt", path="/in/stdout.txt", mtime=1.76e9)
    chunks = [data] if not chunk else [data[i : i + chunk] for i in range(0, len(data), chunk)]
    out: dict[str, list[dict]] = {}
    for table, batch in reader(chunks, ctx):
        out.setdefault(table, []).extend(batch.to_pylist())
    return out, ctx


def _check(lines: list[tuple[str, dict]], rows: list[dict]) -> None:
    by = {r["line_no"]: r for r in rows}
    for no, (text, exp) in enumerate(lines, 1):
        assert no in by, f"line {no} not read: {text!r}"
        got = {k: by[no][k] for k in exp}
        assert got == exp, text


def test_every_wording_of_every_version_is_read():
    lines = V.every_wording()
    out, ctx = read(read_vllm_log, "\n".join(t for t, _ in lines) + "\n")
    _check(lines, out["vllm_log_events"])
    assert len(out["vllm_log_events"]) == len(lines)
    assert ctx.stats.errors == 0


def test_a_worker_capture_gives_cold_start_rows_with_its_rank_and_time():
    lines = V.cold_start_010(pid=8123, rank=3)
    out, _ = read(read_vllm_log, "\n".join(t for t, _ in lines) + "\n", chunk=97)
    _check(lines, out["vllm_log_events"])
    first = out["vllm_log_events"][0]
    assert first["ts"].timestamp() == pytest.approx(
        V.T0 + 1
    )  # %m-%d %H:%M:%S, the year from the mtime


def test_the_rank_comes_from_the_cache_directory_when_the_prefix_has_none():
    """vLLM ≥ 0.10.1 names workers `Worker_TP1` (no rank=); the cache dir is rank_<rank>_<dp_rank>."""
    dec = f"{V.CYAN}(Worker_TP1 pid=9001){V.RESET} "
    text = (
        "\n".join(
            [
                V.line(
                    V.FMT_011,
                    "Using cache directory: %s for vLLM's torch.compile",
                    ("/c/vllm/torch_compile_cache/ab12/rank_1_0/backbone",),
                    file="compilation/backends.py",
                    lineno=548,
                    when=V.T0,
                    decorate=dec,
                ),
                V.line(
                    V.FMT_011,
                    "Compiling a graph for dynamic shape takes %.2f s",
                    (3.0,),
                    file="compilation/backends.py",
                    lineno=218,
                    when=V.T0 + 3,
                    decorate=dec,
                ),
            ]
        )
        + "\n"
    )
    rows = read(read_vllm_log, text)[0]["vllm_log_events"]
    assert [(r["kind"], r["rank"], r["process"]) for r in rows] == [
        ("cache_dir", 1, "Worker_TP1"),
        ("compile_range", 1, "Worker_TP1"),
    ]


def test_every_line_stays_a_log_line():
    data = V.capture().decode()
    assert detect(data.encode()[: 64 << 10], "stdout.txt").name == "vllm_log"
    out, ctx = read(read_vllm_log, data)
    assert sum(r["n_lines"] for r in out["log_lines"]) == data.count("\n") == ctx.stats.lines
    assert len(out["vllm_log_events"]) == len(V.cold_start_010())


def test_a_capture_mixing_vllm_and_torch_logs_loses_neither():
    """vLLM's stdout and TORCH_LOGS on stderr, sent to one file: torch's rows are those of the plain
    capture, vLLM's those of the vLLM lines alone."""
    torch_text = fixture_path("torch_logs", "recompiles.txt").read_text()
    vllm = [t for t, _ in V.cold_start_010()]
    tl = torch_text.rstrip("\n").split("\n")
    step = max(1, len(tl) // (len(vllm) + 1))
    mixed: list[str] = []
    for i, ln in enumerate(tl):
        mixed.append(ln)
        if i % step == step - 1 and vllm:
            mixed.append(vllm.pop(0))
    mixed += vllm
    text = "\n".join(mixed) + "\n"
    assert detect(text.encode()[: 64 << 10], "err.txt").name == "torch_logs"
    both, _ = read(read_torch_logs, text)
    plain, _ = read(read_torch_logs, torch_text)
    alone, _ = read(read_vllm_log, "\n".join(t for t, _ in V.cold_start_010()))
    strip = ("line_no",)
    assert [{k: v for k, v in r.items() if k not in strip} for r in both["recompiles"]] == [
        {k: v for k, v in r.items() if k not in strip} for r in plain["recompiles"]
    ]
    assert [{k: v for k, v in r.items() if k not in strip} for r in both["vllm_log_events"]] == [
        {k: v for k, v in r.items() if k not in strip} for r in alone["vllm_log_events"]
    ]
    assert sum(r["n_lines"] for r in both["log_lines"]) == len(mixed)


# ----------------------------------------------------------------------------- the trace


@pytest.fixture(scope="module")
def vllm_trace(tmp_path_factory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("vllm_trace")
    trace = V.make_trace(folder)
    wh = str(folder / "wh")
    pt2logs.ingest([str(trace)], wh)
    return trace, wh


def _payloads(trace: Path, name: str) -> list[dict]:
    """The JSON payloads of one artifact, read from the trace text directly."""
    text = next(trace.glob("*.log")).read_text()
    out = []
    for m in re.finditer(r'\{"artifact": \{"name": "' + name + r'".*\n((?:\t.*\n)+)', text):
        out.append(json.loads("".join(ln[1:] for ln in m.group(1).splitlines())))
    return out


def _rows(wh: str, table: str) -> list[dict]:
    cur = duckdb.connect().execute(
        f"SELECT * FROM read_parquet('{wh}/{table}/**/*.parquet') ORDER BY line_no"
    )
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def test_the_compilation_config_and_the_piecewise_split(vllm_trace):
    trace, wh = vllm_trace
    [cfg] = _payloads(trace, "vllm_compilation_config")
    [row] = _rows(wh, "vllm_compiles")
    assert {
        k: row[k]
        for k in (
            "model",
            "prefix",
            "mode",
            "backend",
            "cudagraph_mode",
            "splitting_ops",
            "compile_ranges",
        )
    } == {
        k: cfg[k] for k in ("model", "prefix", "mode", "backend", "cudagraph_mode", "splitting_ops")
    } | {"compile_ranges": cfg["compile_ranges_endpoints"]}
    assert json.loads(row["config"]) == cfg
    starts = _payloads(trace, "vllm_piecewise_compile_start")
    assert row["n_piecewise"] == len(starts)
    assert row["n_ranges"] == len(
        {(s["compile_range_start"], s["compile_range_end"]) for s in starts}
    )
    text = next(trace.glob("*.log")).read_text()
    split = text[text.index('"vllm_piecewise_split_graph"') :].split("\n", 1)[1]
    split = split[: split.index("\nV")]
    assert row["n_subgraphs"] == len(set(re.findall(r"\bsubmod_\d+\b", split)))
    assert row["compile_id"] == "0/0"


def test_each_piecewise_compile_with_its_range_and_time(vllm_trace):
    trace, wh = vllm_trace
    starts = _payloads(trace, "vllm_piecewise_compile_start")
    rows = _rows(wh, "vllm_piecewise")
    assert [
        (
            r["submod_name"],
            r["piecewise_index"],
            r["range_start"],
            r["range_end"],
            r["single_size"],
            r["cudagraph_size"],
        )
        for r in rows
    ] == [
        (
            s["submod_name"],
            s["piecewise_index"],
            s["compile_range_start"],
            s["compile_range_end"],
            s["is_single_size"],
            s["is_cudagraph_capture_size"],
        )
        for s in starts
    ]
    # the backend sleeps 20 ms after each start: every compile, the last one included (it ends at the metrics), lasts that long
    assert all(r["seconds"] is not None and r["seconds"] >= 0.019 for r in rows)
    [c] = _rows(wh, "vllm_compiles")
    assert c["piecewise_s"] == pytest.approx(sum(r["seconds"] for r in rows), abs=1e-6)


def test_a_cut_trace_keeps_its_rows_without_the_last_time(vllm_trace, tmp_path):
    trace, _ = vllm_trace
    text = next(trace.glob("*.log")).read_text()
    cut = text[: text.index('{"compilation_metrics"')]
    cut = cut[: cut.rindex("\n", 0, len(cut) - 1) + 1]
    f = tmp_path / "dedicated_log_torch_trace_cut.log"
    f.write_text(cut)
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(f)], wh)
    rows = _rows(wh, "vllm_piecewise")
    assert len(rows) == len(_payloads(trace, "vllm_piecewise_compile_start"))
    assert rows[-1]["seconds"] is None and all(r["seconds"] is not None for r in rows[:-1])
    assert len(_rows(wh, "vllm_compiles")) == 1


def test_batches_do_not_change_the_rows(vllm_trace):
    trace, _ = vllm_trace
    from pt2logs.readers.trace.torch_trace import read_trace

    data = next(trace.glob("*.log")).read_bytes()

    def rows(batch_rows: int, chunk: int) -> dict[str, list]:
        ctx = FileContext(file="t.log", mtime=1.76e9, batch_rows=batch_rows)
        out: dict[str, list] = {}
        for t, b in read_trace([data[i : i + chunk] for i in range(0, len(data), chunk)], ctx):
            if t.startswith("vllm"):
                out.setdefault(t, []).extend(pa.Table.from_batches([b]).to_pylist())
        return out

    assert rows(3, 101) == rows(50_000, 1 << 20)


@pytest.mark.parametrize(
    "weird", ['"abc"', "[1, 2]", '{"a": 1}', "null", "123456789012345678901234567890", "1e300"]
)
def test_weird_payload_values_are_bad_values_not_exceptions(vllm_trace, weird):
    """Every number of the vLLM payloads replaced by another JSON value (md5s left stale: damage)."""
    trace, _ = vllm_trace
    from pt2logs.readers.trace.torch_trace import read_trace

    text = next(trace.glob("*.log")).read_text()
    text = re.sub(
        r'("(?:piecewise_index|total_piecewise_compiles|compile_range_start|compile_range_end|is_single_size|model|backend)": )[^,}]+',
        lambda m: m.group(1) + weird,
        text,
    )
    ctx = FileContext(file="t.log", mtime=1.76e9)
    out: dict[str, list] = {}
    for t, b in read_trace([text.encode()], ctx):
        out.setdefault(t, []).extend(b.to_pylist())
    assert len(out["vllm_piecewise"]) == len(_payloads(trace, "vllm_piecewise_compile_start"))
    assert len(out["vllm_compiles"]) == 1
