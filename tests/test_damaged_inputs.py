"""Every read command over a warehouse made of damaged inputs: what ingest accepts, the reads answer.

A job killed while writing leaves its last record half-written; ingest keeps the good records and
reports the damage, and every command that reads the warehouse must then still work (exit 0, real
output) with the damaged run in its answer. The corpus (tests/damaged_corpus.py: every format's real
example cut at several offsets, the JSON ones also with every value of another type, cut traces,
multi-rank runs with one rank cut, payloads of every event kind cut in half or of the wrong JSON shape,
record headers with values of the wrong type) is ingested once; then every named query, summary, ranks, advise, diff,
bundle, every export format and every dashboard run over it through the CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from tests.conftest import FIXTURES
from tests.damaged_corpus import FOLDERS, build

import pt2logs
from pt2logs.cli import main
from pt2logs.cli.export import export
from pt2logs.dashboard.registry import load_dashboards
from pt2logs.query.queries import get_query, load_queries
from pt2logs.readers import FORMATS

#: (kept_rows: the corpus keeps its outcomes, advice items, run facts and answers as outside the suite, so every
#: command reads them over damaged inputs too)
pytestmark = [
    pytest.mark.skipif(not FIXTURES.is_dir(), reason="shared fixtures not present"),
    pytest.mark.kept_rows,
]

#: the selection of the weekly pages and of the export of every run: all the corpus's runs that have a
#: time (they span 2024 to 2026); the named queries are run without a selection: every run
EVERYTHING = ["--since", "2000-01-01", "--until", "2100-01-01"]
#: queries that list every selected run (a run with no rows of its own still has its line)
EVERY_RUN = ("runs", "run_overview", "run_outcomes", "rank_outcomes")
#: the runs each one-run command reads at every test run: a trace whose last record is cut (what
#: crashed the reads), the multi-rank runs with one rank cut, a run folder every file of which is cut,
#: the payloads of every event kind cut or of the wrong shape; every other damaged run: marked slow
ONE_RUN = (
    "train_step-cut150000",
    "ddp_2rank-rank0_cut",
    "multi_rank_schedule-rank0_cut",
    "compile_failure-all_cut",
    "every_kind-2ranks",
)


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, tuple[str, str]]]:
    """The damaged corpus ingested once: (warehouse, damaged input's folder -> its run id, name)."""
    tmp = tmp_path_factory.mktemp("damaged")
    folders = build(tmp / "in", tmp / "scratch")
    wh = str(tmp / "wh")
    res = pt2logs.ingest([str(tmp / "in")], wh)
    assert res.errors > 0 and not res.problems
    con = pt2logs.connect(wh)
    files = con.execute(
        "SELECT run_id, name, path, format FROM files JOIN runs USING (run_id)"
    ).fetchall()
    con.close()
    runs = {Path(p).relative_to(tmp / "in").parts[0]: (r, n) for r, n, p, _ in files}
    assert sorted(runs) == sorted(folders), "every damaged input is a run"
    assert {f for *_, f in files} == set(FORMATS), "every format was read"
    return wh, runs


@pytest.fixture(scope="module")
def n_ranks(damaged: tuple[str, dict[str, tuple[str, str]]]) -> dict[str, int]:
    """Each damaged run's n_ranks (one connection for the module, not one per run's test)."""
    con = pt2logs.connect(damaged[0])
    try:
        return dict(con.execute("SELECT run_id, n_ranks FROM runs").fetchall())
    finally:
        con.close()


def cli(*args: str) -> str:
    res = CliRunner().invoke(main, list(args))
    assert res.exit_code == 0, (
        f"pt2logs {' '.join(args)} -> {res.exit_code}: {res.output[-2000:]}{res.exception!r}"
    )
    return res.output


@pytest.mark.parametrize("name", sorted(load_queries()))
def test_every_named_query_answers(
    name: str, damaged: tuple[str, dict[str, tuple[str, str]]]
) -> None:
    wh, runs = damaged
    limit = ["-p", "limit", "100000"] if "limit" in {p.name for p in get_query(name).params} else []
    rows = json.loads(cli("query", name, "-w", wh, "-f", "json", *limit))
    assert isinstance(rows, list)
    if name in EVERY_RUN:
        assert {n for _, n in runs.values()} <= {r.get("name", r.get("run")) for r in rows}, name
    if name == "dash_selection":
        assert rows[0]["runs"] == len(runs)


def test_no_reader_stops_on_damage(damaged: tuple[str, dict[str, tuple[str, str]]]) -> None:
    """Damage costs the damaged records, never the rest of the file: a header whose fields have the wrong
    types (a number for compilation_metrics' fail_type stopped the trace reader) keeps its neighbours."""
    wh, runs = damaged
    con = pt2logs.connect(wh)
    stopped = con.execute(
        "SELECT path, message FROM ingest_errors WHERE kind = 'reader_failed'"
    ).fetchall()
    odd = runs["every_kind-odd_header_values"][0]
    kept = con.execute(
        "SELECT (SELECT count(*) FROM events WHERE run_id = $r), "
        "(SELECT count(*) FROM compilation_metrics WHERE run_id = $r)",
        {"r": odd},
    ).fetchone()
    con.close()
    assert stopped == []
    assert kept[0] == 106 and kept[1] > 0  # every record of the file, its compiles too


def test_each_rank_last_event_and_the_cut_records(
    damaged: tuple[str, dict[str, tuple[str, str]]],
) -> None:
    """The query that crashed: every rank of every run with events has its line; a cut chromium event is
    named by its kind, a whole one by its name and phase."""
    wh, runs = damaged
    rows = json.loads(cli("query", "rank_last_events", "-w", wh, "-f", "json"))
    got = {(r["run_id"], r["rank"]): r["last_event"] for r in rows}
    con = pt2logs.connect(wh)
    ranks = set(con.execute("SELECT DISTINCT run_id, rank FROM events").fetchall())
    con.close()
    assert set(got) == ranks and all(got.values())
    assert got[(runs["ddp_2rank-rank0_cut"][0], 0)] == "unreadable record"  # cut inside its header
    assert (
        got[(runs["train_step-cut150000"][0], None)] == "chromium_event"
    )  # its last record is cut mid-payload
    assert any(v.endswith(("(B)", "(E)", "(i)")) for v in got.values())


def test_fleet_pages_and_exports(
    damaged: tuple[str, dict[str, tuple[str, str]]], tmp_path: Path
) -> None:
    wh, runs = damaged
    for name in load_dashboards():
        if name == "run":
            continue
        out = tmp_path / f"{name}.html"
        assert "wrote" in cli(
            "dashboard", "--dashboard", name, "-w", wh, "-o", str(out), *EVERYTHING
        )
        assert out.read_text().startswith("<!DOCTYPE html>")
    for fmt in export.commands:  # every export format, of the whole corpus
        out = tmp_path / f"all.{fmt}"
        cli("export", fmt, "-w", wh, "-o", str(out), *EVERYTHING)
        assert out.stat().st_size > 1000
    trace = json.loads((tmp_path / "all.perfetto").read_text())
    labels = " ".join(str(e.get("args", {}).get("labels", "")) for e in trace["traceEvents"])
    assert all(
        run_id in labels
        for f, (run_id, _) in runs.items()
        if f.startswith(("train_step", "ddp", "every_kind-2"))
    )


@pytest.mark.parametrize(
    "folder", [f if f in ONE_RUN else pytest.param(f, marks=pytest.mark.slow) for f in FOLDERS]
)
def test_one_run_commands(
    folder: str,
    damaged: tuple[str, dict[str, tuple[str, str]]],
    n_ranks: dict[str, int],
    tmp_path: Path,
) -> None:
    wh, runs = damaged
    run, name = runs[folder]
    ranks = n_ranks[run]
    assert name in cli("summary", run, "-w", wh)
    ranked = cli("ranks", run, "-w", wh, "-f", "csv")
    assert name in ranked or ranks == 1
    cli("advise", run, "-w", wh, "-f", "json")
    assert cli("bundle", run, "-w", wh).startswith("#")
    assert "wrote" in cli("dashboard", "--run", run, "-w", wh, "-o", str(tmp_path / "run.html"))
    other = runs["train_step-cut500000"][0]
    assert "compile" in cli("diff", other, run, "-w", wh).lower()
    for fmt in export.commands:
        res = CliRunner().invoke(main, ["export", fmt, run, "-w", wh, "-o", str(tmp_path / fmt)])
        if res.exit_code == 0:
            assert run in (tmp_path / fmt).read_text()
        else:  # a run with nothing to draw on a time line (a counters file, say): said so, not a crash
            assert res.exit_code == 1 and "no timed events" in res.output, res.output
            assert not folder.startswith(
                ("train_step", "ddp", "multi_rank", "compile_failure", "every_kind")
            )


def test_every_export_format_and_dashboard_is_run() -> None:
    """The loops above go over the registries: every export subcommand, every dashboards/*.toml."""
    assert isinstance(export, click.Group) and "perfetto" in export.commands
    assert set(load_dashboards()) == {
        p.stem for p in (Path(__file__).parents[1] / "dashboards").glob("*.toml")
    }
