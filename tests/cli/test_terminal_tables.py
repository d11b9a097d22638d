"""Terminal tables never drop data silently: at 80 columns and in a pipe, every column of a result is
shown or named in a note, guard reasons keep their expected/actual values, and --wide shows all."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner
from tests.conftest import ROOT

from pt2logs.cli import main
from pt2logs.cli.layout import elide, fit
from pt2logs.reports.pages import get_page


def cli(*args: str) -> str:
    r = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.stdout


def piped(*args: str) -> str:
    """The CLI in a real pipe, with no $COLUMNS."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "pt2logs", *args]
    r = subprocess.run(
        cmd, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=120
    )
    assert r.returncode == 0, r.stderr
    _kept(cmd)
    return r.stdout


def _kept(cmd: list[str], timeout: float = 120.0) -> None:
    """Until the process the command forked to keep its answers (a copy of it: the same command line) ended:
    it writes into the session's sample warehouse, which other tests copy."""
    import time

    import psutil

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = []
        for p in psutil.process_iter(["cmdline", "status"]):
            try:
                if p.info["cmdline"] == cmd and p.info["status"] != psutil.STATUS_ZOMBIE:
                    alive.append(p.pid)
            except psutil.Error:
                continue
        if not alive:
            return
        time.sleep(0.05)
    raise AssertionError(f"{' '.join(cmd)} still keeps its answers after {timeout} s")


def named_in_notes(out: str) -> set[str]:
    names: set[str] = set()
    for m in re.finditer(
        r"(?:hidden at \d+ columns|cut to fit \(…\)): ([^(]+) \(", out.replace("\n", " ")
    ):
        names |= {x.strip() for x in m.group(1).split(",")}
    return names


def shown(out: str, columns: list[str]) -> set[str]:
    """Columns named in a table's header line (a line made of column names only) or, in the
    one-block-per-row display, at the start of a line."""
    got: set[str] = set()
    for line in out.splitlines():
        words = line.split()
        if len(words) >= 2 and set(words) <= set(columns):
            got |= set(words)
        elif words and words[0] in columns and "one block per row" in out:
            got.add(words[0])
    return got


def assert_nothing_silently_dropped(out: str, columns: list[str]) -> None:
    missing = set(columns) - shown(out, columns) - named_in_notes(out)
    assert not missing, f"columns neither shown nor named in a note: {sorted(missing)}\n{out}"


def column_text(out: str, header: str, column: str) -> str:
    """The text of ``column`` in the table whose header line starts with ``header``, wrapped lines joined."""
    lines = out.splitlines()
    i = next(n for n, ln in enumerate(lines) if ln.startswith(header))
    at = lines[i].index(column)
    nxt = re.search(r"\S", lines[i][at + len(column) :])
    end = at + len(column) + nxt.start() if nxt else None
    body = []
    for ln in lines[i + 1 :]:
        if not ln.strip() or re.match(r"\s*(cut to fit|hidden at|… \d+ more|\d+ rows?$)", ln):
            break
        body.append(ln[at:end].strip())
    return " ".join(body)


def squeezed(s: str) -> str:
    return "".join(s.split())


@pytest.fixture(params=["80", "pipe"])
def run(request, monkeypatch):
    if request.param == "80":
        monkeypatch.setenv("COLUMNS", "80")
        return cli
    return piped


def _json(*args: str) -> list[dict]:
    return json.loads(cli(*args, "-f", "json"))


def test_query_tables(run, sample_wh):
    many = "SELECT * FROM recompiles ORDER BY run_id, line_no"  # more rows than one block each
    for args in (
        ["query", "run_overview"],
        ["query", "graph_break_hotspots"],
        ["query", many],
        ["query", "recompile_list", "--run", "recompiles"],
    ):
        columns = list(_json(*args, "-w", sample_wh)[0])
        out = run(*args, "-w", sample_wh)
        assert_nothing_silently_dropped(out, columns)
    out = run("query", many, "-w", sample_wh)
    assert (
        "hidden at" in out and "--wide" in out
    )  # too many rows for blocks: columns hidden, and named


def test_ranks_table(run, sample_wh):
    columns = [c for c in _json("ranks", "ddp", "-w", sample_wh)[0] if c != "run"]
    out = run("ranks", "ddp", "-w", sample_wh)
    assert_nothing_silently_dropped(out, columns)
    if "one block per row" in out:
        assert re.search(r"\ndiffers_in +compile ids, recompiles, cache outcomes", out)
    else:
        assert squeezed("compile ids, recompiles, cache outcomes") in squeezed(
            column_text(out, "rank ", "differs_in")
        )


def _summary_columns(sample_wh: str, run_name: str) -> dict[str, list[str]]:
    data = json.loads(cli("summary", run_name, "-w", sample_wh, "-f", "json"))
    out = {}
    for s in get_page("summary").sections:
        rows = data.get(s.key) or []
        if rows:
            cols = [c for c in s.columns if c in rows[0] and c != "run"]
            out[s.key] = [
                c for c in cols if c != "rank" or any(r["rank"] is not None for r in rows)
            ]
    return out


@pytest.mark.parametrize("run_name", ["recompiles", "ddp", "graph_breaks"])
def test_summary(run, sample_wh, run_name):
    out = run("summary", run_name, "-w", sample_wh)
    for columns in _summary_columns(sample_wh, run_name).values():
        assert_nothing_silently_dropped(out, columns)
    assert "--wide shows all" in out  # the sections' own choice of columns is said too


def test_guard_reasons_keep_expected_and_actual(run, sample_wh):
    out = run("summary", "recompiles", "-w", sample_wh)
    reasons = squeezed(
        column_text(out, "compile_id", "reason")
    )  # wrapped over lines, every character kept
    for r in _json("query", "recompile_list", "--run", "recompiles", "-w", sample_wh):
        assert squeezed(r["reason"]) in reasons


def test_diff(run, sample_wh):
    out = run("diff", "recompiles", "graph_breaks", "-w", sample_wh)
    data = _json("diff", "recompiles", "graph_breaks", "-w", sample_wh)
    assert_nothing_silently_dropped(out, list(data["headline"][0]))
    for key in ("functions", "phases", "recompile_causes", "graph_breaks", "kernels"):
        assert_nothing_silently_dropped(out, list(data[key][0]))


def test_wide_shows_every_column_and_every_cell_in_full(sample_wh, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    rows = _json("query", "graph_break_hotspots", "-w", sample_wh)
    out = cli("query", "graph_break_hotspots", "-w", sample_wh, "--wide")
    assert out.splitlines()[0].split() == list(rows[0])
    for r in rows:
        assert " ".join(r["explanation"].split()) in out and r["location"] in out
    assert "…" not in out and "hidden" not in out
    out = cli("query", "run_overview", "-w", sample_wh, "--wide")
    assert out.splitlines()[0].split() == list(_json("query", "run_overview", "-w", sample_wh)[0])
    out = cli("summary", "recompiles", "-w", sample_wh, "--wide")
    assert (
        "max_s" in out and "location" in out and "…" not in out
    )  # every column of the sections' queries
    for r in _json("query", "recompile_list", "--run", "recompiles", "-w", sample_wh):
        assert " ".join(r["reason"].split()) in out and r["location"] in out
    out = cli("diff", "recompiles", "graph_breaks", "-w", sample_wh, "--wide")
    assert "…/" not in out and "Attempted to call function marked as skipped" in out
    out = cli("ranks", "ddp", "-w", sample_wh, "--wide")
    header = next(line for line in out.splitlines() if line.startswith("rank "))
    assert header.split()[-4:] == ["extra_compiles", "missing_compiles", "outcome", "why"]


def test_elide_keeps_both_ends():
    reason = "tensor 'x' size mismatch at index 0. expected 8, actual 16"
    cut = elide(reason, 30)
    assert (
        len(cut) == 30
        and cut.startswith("tensor 'x' si")
        and cut.endswith("8, actual 16")
        and "…" in cut
    )
    path = "/very/long/path/to/some/file.py:123"
    assert elide(path, 16) == "…" + path[-15:]  # a path keeps its end: the file and line
    assert elide(reason, len(reason)) == reason
    lay = fit([{"n": 123456789, "s": "x" * 100}], ["n", "s"], 40, fixed=["n"])
    assert (
        lay.rows[0][0] == "123456789"
        and lay.width <= 40
        and lay.shortened == ["s"]
        and not lay.hidden
    )
