"""Per-run facts kept per committed transaction (pt2logs.query.kept_rows, kind FACTS: run_facts()): the kept rows
are the macro's answer computed at query time, row for row; the weekly cards that total them give the rows they
gave when they read the tables (tests/query_oracles), kept or not; a run ingested again is computed again; rows
kept under other rules are never read."""

from __future__ import annotations

import shutil

import pytest
from tests import query_oracles as oracle
from tests.conftest import SAMPLES, fixture_path
from tests.test_outcome_store import check_ingested_again_is_kept_again, rewrite_kept

import pt2logs
from pt2logs.query import kept_rows
from pt2logs.query.kept_rows import FACTS
from pt2logs.query.queries import run_named

#: the kept rows and answers are what these tests are about (tests/conftest.py: the suite keeps none elsewhere)
pytestmark = pytest.mark.kept_rows

#: fixed ends of "this week" (the cards' windows do not move with the clock): the sample runs started on
#: 2026-11-22 from 09:41 to 10:48, so the first ends this week amid them, the second puts some in each week
UNTIL, LATER = "2026-11-22T10:47:00", "2026-11-29T10:47:00"
#: the weekly cards that read run_facts(), with parameters that select every run
CARDS = {
    "dash_week_over_week": {"until": UNTIL},
    "dash_week_over_week_later": {"until": LATER},
    "dash_compile_time_trend": {"since": "2020-01-01", "until": LATER},
    "dash_compile_time_trend_by": {"since": "2020-01-01", "until": LATER, "by": "model"},
    "dash_recompiles_trend": {"since": "2020-01-01", "until": LATER},
    "dash_top_failures": {"since": "2020-01-01", "until": LATER, "limit": 100},
    "dash_kernel_counts": {"since": "2020-01-01", "until": LATER},
    "graph_break_hotspots": {"since": "2020-01-01", "until": LATER, "limit": 100},
    "graph_break_hotspots_later": {"until": UNTIL},
    "cache_hit_rate": {"since": "2020-01-01", "until": LATER},
    "compile_time_by_function": {"since": "2020-01-01", "until": LATER, "limit": 100},
    "compile_time_by_function_later": {"until": UNTIL, "limit": 3},
}


def _name(card: str) -> str:
    return card.removesuffix("_by").removesuffix("_later")


#: the facts' seconds
SECONDS = ("compile_s", "total", "dynamo", "aot", "inductor", "codegen")


def _rows(con, sql: str) -> list[str]:
    return sorted(map(repr, con.sql(sql).fetchall()))


def _answers(wh: str, monkeypatch: pytest.MonkeyPatch, kept: bool) -> dict[str, list]:
    monkeypatch.setenv(kept_rows.ENV, "1" if kept else "0")
    con = pt2logs.connect(wh)
    out = {k: run_named(con, _name(k), p).to_pylist() for k, p in CARDS.items()}
    # the cards as they were (tests/query_oracles): the tables summed, no fact kept
    out["before"] = {k: oracle.rows(con, oracle.oracle_sql(_name(k)), p) for k, p in CARDS.items()}
    out["facts"] = _rows(con, "SELECT * FROM run_facts(NULL, NULL, NULL, NULL)")
    out["_kept"] = con.sql(
        "SELECT run_id, count(*) FROM _run_facts_kept GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    monkeypatch.setenv(kept_rows.ENV, "1")
    return out


def _same(wh: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, list]:
    """The answers read from the kept rows, after checking they equal those computed at query time and what the
    cards gave before they read run_facts(), row for row and in order."""
    kept, computed = _answers(wh, monkeypatch, True), _answers(wh, monkeypatch, False)
    assert computed.pop("_kept") == []
    for q in computed:
        assert kept[q] == computed[q], q
    for k in CARDS:
        assert kept[k] == kept["before"][k], k
    return kept


def _strip(a: dict[str, list]) -> dict[str, list]:
    return {q: v for q, v in a.items() if q != "_kept"}


@pytest.fixture(scope="module")
def real_wh(tmp_path_factory: pytest.TempPathFactory) -> str:
    wh = str(tmp_path_factory.mktemp("kept_facts") / "wh")
    pt2logs.ingest([str(SAMPLES)], wh)
    pt2logs.ingest(
        [str(fixture_path("gpu", x)) for x in ("recompile_causes", "compile_failure")], wh
    )
    return wh


def test_every_run_is_kept_and_the_facts_are_the_tables_totals(real_wh, monkeypatch):
    got = _same(real_wh, monkeypatch)
    assert all(got[k] for k in CARDS)  # every card has rows to compare
    con = pt2logs.connect(real_wh)
    runs = con.sql("SELECT count(*) FROM runs").fetchall()[0][0]
    assert len(got["_kept"]) == runs == 7  # every run, those without breaks too
    assert sum(n for _, n in got["_kept"]) == len(got["facts"]) > runs  # and their break sites
    # the cards have something to say: compile time, recompiles, breaks, failures, a new site this week
    wow = run_named(con, "dash_week_over_week", CARDS["dash_week_over_week"]).to_pylist()
    assert sum(r["compile_s"] for r in wow) > 0 and sum(r["recompiles"] for r in wow) > 0
    assert sum(r["graph_breaks"] for r in wow) > 0 and sum(r["failures"] for r in wow) > 0
    assert any(r["new_break_sites"] for r in wow)
    later = run_named(con, "dash_week_over_week", CARDS["dash_week_over_week_later"]).to_pylist()
    assert all(r["runs"] for r in later)  # runs in each week


def test_a_run_ingested_again_is_computed_again(tmp_path, monkeypatch):
    check_ingested_again_is_kept_again(tmp_path, FACTS, lambda w: _same(w, monkeypatch))


def test_rows_kept_under_other_rules_are_never_read(real_wh, tmp_path, monkeypatch):
    wh = tmp_path / "old"
    shutil.copytree(real_wh, wh)
    # kept under other rules, and made to differ: were they read, the cards would say so
    rewrite_kept(
        wh, FACTS, "compile_s * 7 AS compile_s, total * 7 AS total, recompiles + 1 AS recompiles"
    )
    (wh / FACTS.folder / kept_rows.key(FACTS)).rename(wh / FACTS.folder / "0123456789abcdef")
    old = _answers(str(wh), monkeypatch, True)
    assert old["_kept"] == []
    assert _strip(old) == _strip(_answers(real_wh, monkeypatch, True))


def test_kept_facts_are_read_not_computed_again(real_wh, tmp_path, monkeypatch):
    """The cards read a kept run's facts as they are (here made to say so)."""
    wh = tmp_path / "wh"
    shutil.copytree(real_wh, wh)
    rewrite_kept(wh, FACTS, ", ".join(f"{c} * 7 AS {c}" for c in SECONDS))
    con = pt2logs.connect(str(wh))
    real = pt2logs.connect(real_wh)
    for q in ("dash_week_over_week", "dash_compile_time_trend"):
        p = CARDS[q]
        got, want = run_named(con, q, p).to_pylist(), run_named(real, q, p).to_pylist()
        key = "compile_s" if q == "dash_week_over_week" else "seconds"
        assert sum(r[key] for r in got) == pytest.approx(7 * sum(r[key] for r in want), rel=1e-3)
