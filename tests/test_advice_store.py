"""Advice items kept per committed transaction (pt2logs.query.kept_rows, kind ADVICE): the kept rows are what the rules
match at query time, row for row, on real runs (the samples, the GPU fixtures: recompile causes, graph breaks,
a backend failure, CUDA-graph skips); a run ingested again is matched again; rows kept under other rules, or a
warehouse without kept rows, answer the same by matching at query time."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest
from click.testing import CliRunner
from tests.conftest import SAMPLES, fixture_path
from tests.test_outcome_store import check_ingested_again_is_kept_again, rewrite_kept

import pt2logs
from pt2logs.cli import main
from pt2logs.query import kept_rows
from pt2logs.query.kept_rows import ADVICE
from pt2logs.query.queries import run_named

#: the kept rows and answers are what these tests are about (tests/conftest.py: the suite keeps none elsewhere)
pytestmark = pytest.mark.kept_rows

#: every named query that reads advice_items(), with parameters that select every run
QUERIES = {
    "advice": {"limit": 1000},
}


def _answers(wh: str, monkeypatch: pytest.MonkeyPatch, kept: bool) -> dict[str, list]:
    monkeypatch.setenv(kept_rows.ENV, "1" if kept else "0")
    con = pt2logs.connect(wh)
    out: dict[str, list] = {q: run_named(con, q, p).to_pylist() for q, p in QUERIES.items()}
    out["items"] = con.sql(
        "SELECT * EXCLUDE (ranks), list_sort(ranks) AS ranks FROM advice_items(NULL, NULL, NULL, NULL)"
    ).fetchall()
    for (run_id,) in con.sql("SELECT run_id FROM runs ORDER BY run_id").fetchall():
        out[run_id] = run_named(con, "advice", {"run_id": run_id}).to_pylist()
    # the weekly card over every run's week: the runs' start times are those the logs carry
    t = con.sql("SELECT max(started_at) + INTERVAL 1 DAY FROM runs").fetchall()[0][0]
    out["week"] = run_named(con, "dash_advice", {"until": t, "limit": 1000}).to_pylist()
    out["_kept"] = con.sql(
        "SELECT run_id, count(id) FROM _advice_items_kept GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    monkeypatch.setenv(kept_rows.ENV, "1")
    return out


def _same(wh: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, list]:
    """The answers read from the kept rows, after checking they equal those matched at query time."""
    kept, matched = _answers(wh, monkeypatch, True), _answers(wh, monkeypatch, False)
    assert matched.pop("_kept") == []
    for q in matched:
        assert sorted(map(repr, kept[q])) == sorted(map(repr, matched[q])), q
    return kept


def _strip(a: dict[str, list]) -> dict[str, list[str]]:
    return {q: sorted(map(repr, v)) for q, v in a.items() if q != "_kept"}


@pytest.fixture(scope="module")
def real_wh(tmp_path_factory: pytest.TempPathFactory) -> str:
    wh = str(tmp_path_factory.mktemp("kept_advice") / "wh")
    pt2logs.ingest([str(SAMPLES)], wh)
    pt2logs.ingest(
        [
            str(fixture_path("gpu", x))
            for x in ("recompile_causes", "compile_failure", "cudagraphs")
        ],
        wh,
    )
    return wh


def test_every_ingested_run_is_kept_and_reads_what_the_rules_match(real_wh, monkeypatch):
    got = _same(real_wh, monkeypatch)
    con = pt2logs.connect(real_wh)
    runs = con.sql("SELECT count(*) FROM runs").fetchall()[0][0]
    assert len(got["_kept"]) == runs == 8  # every run, those without items too
    assert sum(n for _, n in got["_kept"]) == len(got["items"]) > 10
    assert {r["id"] for r in got["advice"]} >= {"shape_storm", "backend_failed"}
    assert got["week"]


def test_a_run_ingested_again_is_matched_again(tmp_path, monkeypatch):
    check_ingested_again_is_kept_again(tmp_path, ADVICE, lambda w: _same(w, monkeypatch))


def test_rows_kept_under_other_rules_are_never_read(real_wh, tmp_path, monkeypatch):
    wh = tmp_path / "old"
    shutil.copytree(real_wh, wh)
    kept = _answers(str(wh), monkeypatch, True)
    other = wh / ADVICE.folder / "0123456789abcdef"
    (wh / ADVICE.folder / kept_rows.key(ADVICE)).rename(other)  # kept under other rules
    old = _answers(str(wh), monkeypatch, True)
    assert old["_kept"] == [] and kept["_kept"]
    assert _strip(old) == _strip(kept)
    # compact keeps them under the current rules
    r = CliRunner().invoke(main, ["compact", "-w", str(wh), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["advice_kept_runs"] == 8
    again = _answers(str(wh), monkeypatch, True)
    assert len(again["_kept"]) == 8
    assert _strip(again) == _strip(kept)


#: per kind: macros its macro calls (graph_break_sites(): the sites the items name; function_file(); the run
#: selection), itself included
CALLED = {
    ADVICE: ("graph_break_sites", "advice_items", "function_file"),
    kept_rows.OUTCOMES: ("rank_outcomes", "selected_runs"),
    kept_rows.FACTS: ("run_facts", "frame_compile_stages", "graph_break_sites", "selected_runs"),
}


@pytest.mark.parametrize("kind", kept_rows.KINDS, ids=lambda k: k.folder)
def test_the_key_follows_every_macro_the_rows_read(monkeypatch, kind):
    """A change to any macro a kind's macro calls, to the advice table filled into advice_items(), or to the kept
    columns' version is another folder: nothing stale is read."""
    from pt2logs.query import macros

    # (the key is the hash made once per code, pt2logs.query.kept_files: here the hash itself, of changed macros)
    base = kept_rows._rules_key(kind)
    assert kept_rows.key(kind) == base
    real = macros.macro_sql
    assert set(CALLED[kind]) <= kept_rows.called(kind)[0]
    for changed in CALLED[kind]:
        monkeypatch.setattr(
            macros, "macro_sql", lambda n, c=changed: real(n) + (" -- new" if n == c else "")
        )
        assert kept_rows._rules_key(kind) != base, changed
    monkeypatch.setattr(macros, "macro_sql", real)
    assert kept_rows._rules_key(dataclasses.replace(kind, version=kind.version + 1)) != base
    monkeypatch.undo()
    assert kept_rows._rules_key(kind) == base


def test_kept_items_are_read_not_matched_again(real_wh, tmp_path, monkeypatch):
    """The queries read a kept run's items as they are (here made to say so): the advice of one run, of every
    run, and the weekly card."""
    wh = tmp_path / "wh"
    shutil.copytree(real_wh, wh)
    rewrite_kept(wh, ADVICE, "'kept: ' || evidence AS evidence")
    got = _answers(str(wh), monkeypatch, True)
    assert got["advice"] and all(r["evidence"].startswith("kept: ") for r in got["advice"])
    assert all(r["example"].startswith("kept: ") for r in got["week"])


def _scans(con, macro: str) -> int:
    plan = "".join(
        r[1] for r in con.sql(f"EXPLAIN SELECT * FROM {macro}(NULL, NULL, NULL, NULL)").fetchall()
    )
    return plan.count("READ_PARQUET")


def test_with_every_run_kept_the_rules_are_no_part_of_a_query(real_wh, tmp_path, monkeypatch):
    """Every live transaction kept: rank_outcomes() and advice_items() read the kept rows alone (one file
    read, not the tables the rules read: DuckDB planned the rules' whole body at every call, 100-170 ms
    whatever the warehouse's size). One transaction not kept: the rules are back, for its runs, and the
    answers are still the same."""
    con = pt2logs.connect(real_wh)
    assert _scans(con, "advice_items") == _scans(con, "rank_outcomes") == 1
    wh = tmp_path / "wh"
    shutil.copytree(real_wh, wh)
    for kind in kept_rows.KINDS:
        folder = wh / kind.folder / kept_rows.key(kind)
        min(folder.iterdir()).unlink()  # one transaction's rows not kept (a keep that failed)
    con = pt2logs.connect(str(wh))
    assert _scans(con, "advice_items") > 1 and _scans(con, "rank_outcomes") > 1
    assert _strip(_answers(str(wh), monkeypatch, True)) == _strip(
        _answers(real_wh, monkeypatch, True)
    )


def test_serve_takes_the_kept_rows_when_a_keep_lands_after_its_snapshot(
    real_wh, tmp_path, monkeypatch
):
    """`pt2logs ingest` keeps a commit's outcomes and advice items in a process of its own after the commit: a
    server that took its snapshot in between makes its views again once they are there (no commit lands to
    say so), and its pages then read the kept rows alone."""
    from pt2logs.query import kept_cache
    from pt2logs.serve import connection

    wh = tmp_path / "wh"
    shutil.copytree(real_wh, wh)
    aside = tmp_path / "aside"
    for kind in kept_rows.KINDS:
        f = min((wh / kind.folder / kept_rows.key(kind)).iterdir())
        (aside / kind.folder).mkdir(parents=True)
        f.rename(aside / kind.folder / f.name)  # that commit's keep has not run yet
    monkeypatch.setattr(connection, "CHECK_S", 0.0)
    server = connection.Connection(str(wh))
    try:
        assert len(server.unkept) == 1 and server.current() == 1
        with server.read() as con:
            assert _scans(con, "advice_items") > 1
        kept_cache.keep(str(wh))  # the keep lands
        assert server.current() == 2 and server.unkept == frozenset()
        with server.read() as con:
            assert _scans(con, "advice_items") == _scans(con, "rank_outcomes") == 1
        assert server.current() == 2  # nothing more to take
    finally:
        server.close()
