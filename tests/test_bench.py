"""The benchmark's reference scans do the work they claim: every record of a real log, as pt2logs sees it.

(Speed itself is measured by `python -m bench`, never by a unit test.)
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

import pt2logs


def test_floor_and_bound_cover_every_record(tmp_path):
    from bench import bound, corpus, floor

    log = corpus.big_log(tmp_path, 3)  # real traces back to back, ≥ 3 MB
    size = log.stat().st_size
    headers, scanned = floor.scan(str(log))
    low = bound.bound(str(log))
    wh = tmp_path / "wh"
    res = pt2logs.ingest([str(log)], str(wh))
    assert res.errors == 0
    (events,) = pt2logs.connect(str(wh)).execute("SELECT count(*) FROM events").fetchone()
    assert headers == events == low["records"]
    assert scanned == size == round(low["size_mb"] * 1e6)
    assert list(low["steps"]) == list(bound.STEPS) and all(v > 0 for v in low["steps"].values())
    assert 0 < low["parquet_mb"] < size / 1e6
    assert low["total_s"] == pytest.approx(sum(low["steps"].values()))


def test_results_page_reports_each_section_with_its_time():
    from bench.report import markdown

    r = {
        "reingest": {
            "runs": 3,
            "size_mb": 1.0,
            "first_s": 2.0,
            "again_s": 0.1,
            "ratio_pct": 5.0,
            "unchanged": 3,
            "new": 0,
        },
        "measured_at": {"reingest": "2026-01-02 03:04 UTC"},
    }
    page = markdown(
        json.loads(json.dumps(r)), "a machine", "--only reingest", dt.datetime(2026, 1, 2, 3, 5)
    )
    assert "## Re-ingest of an unchanged corpus\n\n_Measured 2026-01-02 03:04 UTC._" in page
    assert "**5.0 %** of the first (3 unchanged, 0 new)" in page


def test_a_partial_run_replaces_its_own_section_and_keeps_the_others():
    from pathlib import Path

    from bench.report import keep_sections, markdown

    committed = (Path(__file__).parents[1] / "bench" / "RESULTS.md").read_text()
    headings = [line for line in committed.splitlines() if line.startswith("## ")]
    r = {
        "reingest": {
            "runs": 3,
            "size_mb": 1.0,
            "first_s": 2.0,
            "again_s": 0.1,
            "ratio_pct": 5.0,
            "unchanged": 3,
            "new": 0,
        },
        "measured_at": {"reingest": "2026-01-02 03:04 UTC"},
    }
    page = keep_sections(
        markdown(r, "a machine", "--only reingest", dt.datetime(2026, 1, 2, 3, 5)), committed
    )
    assert [
        line for line in page.splitlines() if line.startswith("## ")
    ] == headings  # same sections, same order
    assert "**5.0 %** of the first (3 unchanged, 0 new)" in page and "--only reingest" in page
    ours = page.split("## Re-ingest of an unchanged corpus")[1].split("\n## ")[0]
    assert "2026-01-02 03:04 UTC" in ours
    for h in headings:  # every other section exactly as committed
        if "Re-ingest" not in h:
            assert (
                committed.split(h)[1].split("\n## ")[0].rstrip()
                == page.split(h)[1].split("\n## ")[0].rstrip()
            )


def test_native_vs_python_rows_show_every_run_and_the_ratio_of_the_best():
    from bench.report import markdown

    ab = {"native": [[2.0, 1.5], [1.0, 0.9]], "python": [[3.0, 2.7], [4.0, 3.0]]}
    r = {
        "many": {
            "runs": 3,
            "size_mb": 1.0,
            "jobs1_s": 1.0,
            "jobs_all_s": 1.0,
            "jobs1_mbps": 1.0,
            "jobs_all_mbps": 1.0,
            "speedup": 1.0,
            "rss_jobs_all_mb": 1.0,
            "ab": ab,
        }
    }
    page = markdown(r, "a machine", "--only many", dt.datetime(2026, 1, 2, 3, 5))
    assert (
        "| 3 runs | 2.00 / 1.00 (CPU 1.50 / 0.90) | 3.00 / 4.00 (CPU 2.70 / 3.00) | **3.00×** | **3.00×** |"
        in page
    )


def test_many_runs_rounds_show_every_run_of_both_job_counts():
    from bench.report import markdown

    rounds = {
        "jobs1": [[9.0, 8.5], [8.0, 7.9], [8.5, 8.0]],
        "jobs_all": [[5.0, 9.0, 0.5], [4.5, 8.8, 0.0], [6.0, 9.5, 3.0]],
    }
    r = {
        "many": {
            "runs": 3,
            "size_mb": 1.0,
            "jobs1_s": 8.0,
            "jobs_all_s": 4.5,
            "jobs1_mbps": 1.0,
            "jobs_all_mbps": 1.0,
            "speedup": 8.0 / 4.5,
            "rss_jobs_all_mb": 1.0,
            "cores": 2,
            "rounds": rounds,
            "jobs1_cpu_s": 7.9,
            "jobs_all_cpu_s": 8.8,
        }
    }
    page = markdown(r, "a machine", "--only many", dt.datetime(2026, 1, 2, 3, 5))
    assert "| 1 | 9.00 / 8.00 / 8.50 (CPU 8.50 / 7.90 / 8.00) | 8.00 | 7.90 |" in page
    assert (
        "| 2 | 5.00 / 4.50 / 6.00 (CPU 9.00 / 8.80 / 9.50) [others 0.5 / 0.0 / 3.0] | 4.50 | 8.80 |"
        in page
    )
    assert "**1.78× speed-up**" in page
    assert "tlparse per log" not in page  # an older results file: no tlparse rounds


def test_many_runs_rounds_include_tlparse_once_per_log_when_it_ran_in_them():
    from bench.report import markdown

    rounds = {
        "jobs1": [[9.0, 8.5]],
        "jobs_all": [[5.0, 9.0, 0.5]],
        "tlparse_each": [[50.0, 45.0, 0.1], [48.0, 44.0, 0.2]],
        "tlparse_each_all": [[26.0, 47.0, 0.0], [27.0, 46.5, 0.0]],
    }
    r = {
        "many": {
            "runs": 3,
            "size_mb": 1.0,
            "jobs1_s": 9.0,
            "jobs_all_s": 5.0,
            "jobs1_mbps": 1.0,
            "jobs_all_mbps": 1.0,
            "speedup": 1.8,
            "rss_jobs_all_mb": 1.0,
            "cores": 2,
            "rounds": rounds,
            "jobs1_cpu_s": 8.5,
            "jobs_all_cpu_s": 9.0,
        }
    }
    page = markdown(r, "a machine", "--only many", dt.datetime(2026, 1, 2, 3, 5))
    assert "`--jobs 1`, `--jobs 2` and tlparse once per log (below) run interleaved" in page
    assert (
        "| tlparse per log, one after the other | 50.00 / 48.00 (CPU 45.00 / 44.00) [others 0.1 / 0.2] | – | 44.00 |"
        in page
    )
    assert (
        "| tlparse per log, all cores | 26.00 / 27.00 (CPU 47.00 / 46.50) [others 0.0 / 0.0] | – | 46.50 |"
        in page
    )


def _ingest_row(**over):
    row = {
        "size_mb": 1000.0,
        "floor_mbps": 300.0,
        "pt2logs_1_mbps": 90.0,
        "pt2logs_all_mbps": 150.0,
        "tlparse_mbps": 100.0,
        "tlparse_plain_mbps": 110.0,
        "x_tlparse": 1.5,
        "x_tlparse_plain": 1.4,
        "x_floor": 0.5,
        "rss_pt2logs_1_mb": 270.0,
        "rss_pt2logs_all_mb": 210.0,
        "rss_tlparse_mb": 1400.0,
        "floor_s": 3.3,
        "pt2logs_all_s": 6.6,
        "bound_cpu_s": 5.0,
        "bound_wall_s": 2.5,
        "bound_x_floor": 1.32,
        "bound_steps": {"read": 1.0},
        "rounds": {
            "floor": [3.3, 4.1],
            "pt2logs_1": [11.0, 12.5],
            "pt2logs_all": [6.6, 9.0],
            "tlparse": [9.9, 10.5],
            "tlparse_plain": [9.0, 9.5],
            "bound_cpu": [5.0, 5.5],
        },
    }
    return row | over


def test_big_log_rounds_are_listed_and_the_why_text_follows_the_figures():
    from bench.report import markdown

    page = markdown(
        {"ingest": [_ingest_row()]}, "a machine", "--only ingest", dt.datetime(2026, 1, 2, 3, 5)
    )
    assert "2 rounds interleaved" in page
    assert (
        "- 1,000 MB: floor 3.30 / 4.10; pt2logs -j1 11.00 / 12.50; pt2logs all cores 6.60 / 9.00; "
        "tlparse 9.90 / 10.50; tlparse --plain-text 9.00 / 9.50."
    ) in page
    # the bound faster than the floor is said as a speed, slower as a time; the gap to 3x tlparse from the ratio
    assert "spread perfectly over the cores runs at 1.32× the floor's speed" in page
    assert "3× tlparse needs the ingest to take 50 % less time than now" in page
    slow = markdown(
        {"ingest": [_ingest_row(bound_x_floor=0.8, x_tlparse=2.4)]},
        "a machine",
        "--only ingest",
        dt.datetime(2026, 1, 2, 3, 5),
    )
    assert "spread perfectly over the cores takes 1.25× the floor's time" in slow
    assert "3× tlparse needs the ingest to take 20 % less time than now" in slow


def test_the_readers_bombs_are_inputs_of_their_format_and_their_section_shows_each_run(tmp_path):
    """Each bomb of bench/hostile.py, made at 1 MB, is sniffed as the format it is ingested as (so the
    bench measures the reader it names); the section lists before and after rows with their figures."""
    from bench import hostile
    from bench.report import markdown

    from pt2logs.inputs.sources import filesystem, read_head
    from pt2logs.readers import detect

    for name, (_, fname, _, fmt, _, _) in hostile.BOMBS.items():
        folder = hostile.make(tmp_path, name, 1)
        head, _ = read_head(*filesystem(str(folder / fname)))
        found = detect(head, fname.rsplit("/", 1)[-1].removesuffix(".gz"))
        assert found is not None and found.name == fmt, (name, found)
    row = {
        "bomb": "newlines_gz",
        "what": ".gz capture of blank lines",
        "content_mb": 100,
        "stored_mb": 0.1,
        "peak_rss_mb": 150.0,
        "wall_s": 1.5,
        "cpu_s": 1.2,
        "rc": 0,
        "killed": None,
        "errors": 0,
        "warnings": 0,
        "error_tail": None,
    }
    r = {
        "hostile": [
            {**row, "code": "before", "content_mb": 20, "cpu_s": 33.0, "wall_s": 34.0},
            {**row, "code": "after"},
        ],
        "measured_at": {"hostile": "2026-01-02 03:04 UTC"},
    }
    page = markdown(r, "a machine", "--only bombs", dt.datetime(2026, 1, 2, 3, 5))
    assert "## Bombs: documents, lines and blank lines\n\n_Measured 2026-01-02 03:04 UTC._" in page
    assert (
        "| .gz capture of blank lines | before | 20 | 0.1 | **150** | 34.0 | 33.0 | 0 / 0 | ok |"
        in page
    )
    assert (
        "| .gz capture of blank lines | after | 100 | 0.1 | **150** | 1.5 | 1.2 | 0 / 0 | ok |"
        in page
    )


def test_one_trace_times_each_tool_as_a_process_and_reports_the_ratios(tmp_path):
    """`--only one_trace`: pt2logs and tlparse (and tlhub where installed) on one real GPU trace, each a
    whole process; every round listed, the ratios of the best runs in the section."""
    import sys

    from bench import one_trace
    from bench.report import markdown
    from tests.conftest import FIXTURES

    trace = next(FIXTURES.glob("gpu/compile_failure/trace/*.log"))  # the smallest real GPU trace
    assert one_trace.default_trace().stat().st_size >= trace.stat().st_size
    row = one_trace.bench(tmp_path, trace, sys.executable, rounds=1)
    assert row["trace"] == str(trace.relative_to(FIXTURES))
    assert "pt2logs" in row["best"] and "tlparse" in row["best"]  # tlparse is a test dependency
    assert row["x_tlparse"] == row["best"]["pt2logs"][0] / row["best"]["tlparse"][0]
    assert ("tlhub" in row["best"]) != ("tlhub" in row["missing"])
    # pt2logs leaves its views file to a process it does not wait for: its CPU is counted in the "all" figures
    (wall, cpu, _), (all_wall, all_cpu) = row["best"]["pt2logs"], row["best_all"]["pt2logs"]
    assert all_wall >= wall and all_cpu > cpu
    page = markdown({"one_trace": row}, "a machine", "--only one_trace", dt.datetime(2026, 1, 2))
    assert "with what it left running" in page
    assert "## One GPU trace: pt2logs vs tlhub vs tlparse" in page
    assert f"pt2logs ÷ tlparse: **{row['x_tlparse']:.2f}×** wall" in page
    assert list(tmp_path.iterdir()) == []  # its work folders are removed


def test_commands_section_and_targets_show_each_ratio_of_the_best_runs():
    """`python -m bench --only commands` (issue 36): start vs import click, the commands vs the floor, in one run."""
    from bench.commands import _ratios
    from bench.measure import Measure
    from bench.report import markdown

    def ms(*pairs):
        return [Measure(w, 50.0, 0, "", c) for w, c in pairs]

    start = _ratios(
        {
            "import click": ms((0.10, 0.05), (0.08, 0.04)),
            "pt2logs --help": ms((0.12, 0.06), (0.20, 0.05)),
        },
        "import click",
    )
    lines = {"summary": ["summary", "abc", "--warehouse", "/wh"]}
    small = _ratios(
        {
            "floor": ms((0.2, 0.1), (0.3, 0.15)),
            "summary (first)": ms((0.8, 0.6), (1.0, 0.5)),
            "summary": ms((0.5, 0.3), (0.9, 0.25)),
        },
        "floor",
    )
    r = {
        "commands": {
            "rounds": 2,
            "start": start,
            "small": {"runs": 14, "commands": lines, "results": small},
        }
    }
    page = markdown(r, "a machine", "--only commands", dt.datetime(2026, 1, 2, 3, 5))
    assert "## Start and the commands about one run (issue 36)" in page
    # best wall and best CPU of each, even from different rounds: 0.12 / 0.08 and 0.05 / 0.04
    assert "| `pt2logs --help` | 0.120 | 0.050 | **1.50×** | **1.25×** | 50 |" in page
    # each command cold (its answers not kept: the first call) and warm (kept), each row named so
    assert (
        "| `pt2logs summary abc`, first call (answers not kept) | 0.800 | 0.500 | **4.00×** | **5.00×** | 50 |"
        in page
    )
    assert (
        "| `pt2logs summary abc`, answers kept | 0.500 | 0.250 | **2.50×** | **2.50×** | 50 |"
        in page
    )
    assert (
        "| `summary` on 14 runs (first call, answers not kept) ≤ 2× the Python + DuckDB floor "
        "| 5.00× CPU, 4.00× wall | **no** |" in page
    )
    assert "| `pt2logs --help` ≤ 1.5× `import click` | 1.25× CPU, 1.50× wall | yes |" in page
    assert (
        "| `summary` on 14 runs ≤ 2× the Python + DuckDB floor | 2.50× CPU, 2.50× wall | **no** |"
        in page
    )
