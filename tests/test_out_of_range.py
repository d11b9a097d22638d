"""One out-of-range number never breaks a chart or a reader (issue 31 item 3).

A vLLM capture (tests/vllm_inputs.py, from vLLM's own format strings) whose "takes N s" lines say 400 nines,
``inf``, ``nan`` or ``1e999``: ingest keeps each line's row with ``seconds`` NULL and a ``bad_value`` warning
at file:line (as a trace's bad values are), and the weekly and vLLM dashboards, ``query -f json`` and
``summary --format json`` all work. Other text readers' numbers too: a torchrun/NCCL stderr, a
``pt2logs_run.json``, a compile_times() table. And a chart built from a query result holding inf / NaN
(a warehouse written before this rule) renders: they are null in the page's JSON.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner
from tests import vllm_inputs as V
from tests.conftest import fixture_path

import pt2logs
from pt2logs import dashboard as D
from pt2logs.cli import main

NINES = "9" * 400
BAD = {"nines": NINES, "inf": "inf", "nan": "nan", "e999": "1e999"}
SINCE = (
    "2000-01-01"  # the captures' lines are dated 2025-08 (vllm_inputs.T0): any window from before
)


def _strict(text: str) -> object:
    """JSON as a browser's JSON.parse reads it: NaN / Infinity are not JSON."""

    def no(c: str) -> None:
        raise ValueError(f"{c} in JSON")

    return json.loads(text, parse_constant=no)


@pytest.fixture(scope="module")
def bad_wh(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[str, dict[str, tuple[Path, list[int]]]]:
    """One run per bad number, each a vLLM capture with every "takes N s" number replaced; ingested once."""
    root = tmp_path_factory.mktemp("out_of_range")
    lines = V.capture().decode().splitlines()
    runs = {}
    for name, text in BAD.items():
        d = root / "logs" / name
        d.mkdir(parents=True)
        new = [re.sub(r"takes [\d.]+ s", f"takes {text} s", ln) for ln in lines]
        changed = [i + 1 for i, (a, b) in enumerate(zip(lines, new)) if a != b]
        assert changed  # the capture has "takes N s" lines (compile ranges, the total)
        (d / "stdout.txt").write_text("\n".join(new) + "\n")
        runs[name] = (d / "stdout.txt", changed)
    wh = str(root / "wh")
    r = CliRunner().invoke(
        main,
        ["ingest", str(root / "logs"), "-w", wh, "--strict", "-j", "1"],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output  # warnings, not errors
    return wh, runs


def test_ingest_stores_null_and_says_where(bad_wh):
    wh, runs = bad_wh
    con = pt2logs.connect(wh)
    for name, (path, changed) in runs.items():
        got = con.execute(
            "SELECT e.line_no, e.message, e.excerpt FROM ingest_errors e JOIN runs USING (run_id) "
            "WHERE runs.name = ? AND e.kind = 'bad_value' AND e.severity = 'warning' AND e.path = ? "
            "ORDER BY 1",
            [name, str(path)],
        ).fetchall()
        assert [g[0] for g in got] == changed, (name, got)
        for _, message, excerpt in got:
            assert (
                message.startswith("vllm_log_events.seconds: ")
                and "stored as NULL, row kept" in message
            )
            assert BAD[name] in excerpt  # the number as the line wrote it, all 400 digits too
        rows = con.execute(
            "SELECT v.line_no, v.seconds FROM vllm_log_events v JOIN runs USING (run_id) "
            "WHERE runs.name = ? AND v.line_no IN (SELECT unnest(?))",
            [name, changed],
        ).fetchall()
        assert sorted(r[0] for r in rows) == changed and all(
            r[1] is None for r in rows
        )  # the rows kept
    assert (
        con.execute("SELECT count(*) FROM vllm_log_events WHERE NOT isfinite(seconds)").fetchone()[
            0
        ]
        == 0
    )


@pytest.mark.parametrize("which", [[], ["--dashboard", "vllm"]], ids=["weekly", "vllm"])
def test_dashboards_work(bad_wh, tmp_path, which):
    wh, _ = bad_wh
    out = tmp_path / "d.html"
    r = CliRunner().invoke(main, ["dashboard", "-w", wh, "--since", SINCE, "-o", str(out), *which])
    assert r.exit_code == 0, r.output
    specs = re.search(
        r'<script type="application/json" id="pt2logs-specs">(.*?)</script>', out.read_text(), re.S
    )
    assert _strict(specs.group(1))


def test_query_json_and_summary_json_work(bad_wh):
    wh, _ = bad_wh
    for args in (
        ["query", "vllm_cold_start", "-f", "json"],
        ["query", "SELECT * FROM vllm_log_events", "-f", "json"],
        ["summary", "nines", "--format", "json"],
    ):
        r = CliRunner().invoke(main, [*args, "-w", wh])
        assert r.exit_code == 0, (args, r.output)
        assert _strict(r.stdout)


def test_a_chart_of_inf_and_nan_renders(bad_wh):
    """A query result with inf / NaN in a numeric column (a warehouse written before this rule, a SQL
    division): the chart's data hold null there and the page's JSON is JSON."""
    wh, _ = bad_wh
    page = D.build(pt2logs.connect(wh), "vllm", since=SINCE)
    section = next(s for s in D.get_dashboard("vllm").sections if s.key == "vllm_cold_start")
    card = next(c for c in page.cards if c.key == "vllm_cold_start")
    t = card.data
    n = t.num_rows
    vals = ([math.inf, math.nan, -math.inf] * n)[:n]
    for col in ("cold_start_s", "dynamo_s"):
        t = t.set_column(t.schema.get_field_index(col), col, pa.array(vals, pa.float64()))
    data = D.chart_data(t, section.chart)
    assert data["cold_start_s"].to_pylist() == [None] * n
    card.spec = D.chart_spec(t, section.chart, D.ChartContext(D.WIDTH, {}))
    card.spec["extra"] = {
        "domain": [0, math.inf],
        "nan": math.nan,
    }  # a spec value too: null, not an error
    html = D.render_html(page, bundle="")
    specs = _strict(re.search(r'id="pt2logs-specs">(.*?)</script>', html, re.S).group(1))
    assert specs["vllm_cold_start"]["extra"] == {"domain": [0, None], "nan": None}
    assert D.script_json({"x": math.nan, "y": [math.inf, 1.5]}) == '{"x": null, "y": [null, 1.5]}'


def _warnings(wh: str) -> list[tuple]:
    return (
        pt2logs.connect(wh)
        .execute(
            "SELECT line_no, kind, severity, message FROM ingest_errors ORDER BY line_no, message"
        )
        .fetchall()
    )


def test_outcome_lines_with_huge_numbers_keep_reading(tmp_path):
    """A torchrun / NCCL stderr whose seconds, exit code, pid, rank, sequence number are 400 digits: each
    row is kept with NULL there and a bad_value warning, and the reader reads on (it stopped at the first
    such line: reader_failed, OverflowError, every later row lost)."""
    lines = [
        f"[W1126 10:00:00.000000 123 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:100] [PG 0 Rank 0] "
        f"Waiting in store based barrier to initialize process group for {NINES} seconds",
        f"[E1126 10:00:01.000000 123 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:100] [PG 0 Rank 0] "
        f"watchdog got stuck for {NINES} seconds",
        f"[E1126 10:00:03.000000 123 torch/distributed/elastic/multiprocessing/api.py:100] failed (exitcode: {NINES}) "
        f"local_rank: {NINES} (pid: {NINES}) of binary: /usr/bin/python",
        "Signal 15 (SIGTERM) received by PID 4242",
    ]
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "stderr.log").write_text("\n".join(lines) + "\n")
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(tmp_path / "logs")], wh, fmt="job_stderr")
    got = _warnings(wh)
    assert not [g for g in got if g[1] == "reader_failed"], got
    assert {(g[0], g[3].split(":")[0]) for g in got if g[1] == "bad_value"} == {
        (1, "outcome_evidence.elapsed_ms"),
        (2, "outcome_evidence.elapsed_ms"),
        (3, "outcome_evidence.exit_code"),
        (3, "outcome_evidence.local_rank"),
        (3, "outcome_evidence.pid"),
    }
    kinds = (
        pt2logs.connect(wh)
        .execute("SELECT line_no, kind FROM outcome_evidence ORDER BY 1")
        .fetchall()
    )
    assert kinds == [
        (1, "barrier_wait"),
        (2, "heartbeat_timeout"),
        (3, "worker_exit"),
        (4, "signal_received"),
    ]


def test_run_record_with_a_time_no_timestamp_holds(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "pt2logs_run.json").write_text(
        json.dumps(
            {
                "pt2logs_run": 1,
                "command": ["python", "x.py"],
                "exit_code": 0,
                "started_at": 1.7e9,
                "ended_at": 1e303,
            }
        )
    )
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(tmp_path / "logs")], wh)
    got = _warnings(wh)
    assert [(g[0], g[1], g[3].split(":")[0]) for g in got] == [
        (1, "bad_value", "outcome_evidence.ts")
    ], got
    assert pt2logs.connect(wh).execute("SELECT exit_code, ts FROM outcome_evidence").fetchall() == [
        (0, None)
    ]


def test_compile_times_inf_is_null_and_reported(tmp_path):
    src = fixture_path("torch_logs", "compile_times.txt").read_text().split("\n")
    i = next(i for i, ln in enumerate(src) if ln.startswith("_compile.compile_inner, "))
    src[i] = re.sub(r"\d+\.\d+", "inf", src[i], count=1)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "compile_times.txt").write_text("\n".join(src))
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(tmp_path / "logs")], wh)
    got = _warnings(wh)
    assert [(g[0], g[1], g[3].split(":")[0]) for g in got] == [
        (i + 1, "bad_value", "compile_times.seconds")
    ], got
    con = pt2logs.connect(wh)
    assert con.execute(
        "SELECT seconds FROM compile_times WHERE line_no = ? AND call_index = 0", [i + 1]
    ).fetchall() == [(None,)]
    assert (
        con.execute("SELECT count(*) FROM compile_times WHERE NOT isfinite(seconds)").fetchone()[0]
        == 0
    )
