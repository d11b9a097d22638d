"""What a run scope spends on planning (pt2logs.query.run_scope): DuckDB's costlier optimizers off inside it and the
snapshot's per-run tables narrowed to its runs, both as they were after it; the stored texts put back only for the
text columns its questions name. Every answer the same as over the views."""

from __future__ import annotations

import json

import pytest

import pt2logs
from pt2logs.query import run_scope, scope_plan
from pt2logs.reports.compose import page_queries, summary
from pt2logs.reports.diff import QUERIES as DIFF_QUERIES
from pt2logs.reports.diff import diff


def _plain(x):
    return json.loads(json.dumps(x, default=str, sort_keys=True))


def _setting(con) -> str:
    return con.execute("SELECT current_setting('disabled_optimizers')").fetchall()[0][0]


def _runs_in(con, table: str) -> list[str]:
    return sorted(r[0] for r in con.execute(f"SELECT DISTINCT run_id FROM {table}").fetchall())


@pytest.fixture(scope="module")
def runs(sample_wh) -> tuple[str, str]:
    con = pt2logs.connect(sample_wh)
    pick = "SELECT run_id FROM runs WHERE name = ?"
    return (
        con.execute(pick, ["ddp_2rank"]).fetchall()[0][0],
        con.execute(pick, ["recompiles"]).fetchall()[0][0],
    )


def test_a_scope_plans_with_fewer_optimizers_over_its_runs_tables(sample_wh, runs):
    """Inside: the optimizers of SCOPE_NO_OPTIMIZERS off besides the connection's own, and ``_live``, ``_run_source``,
    ``_run_roots`` hold the scope's runs only; the summary answers as over the views; after: all as before."""
    rid, _ = runs
    con = pt2logs.connect(sample_wh)
    con.execute(
        "SET disabled_optimizers = 'join_filter_pushdown'"
    )  # (a keep's connection sets one)
    every = {t: _runs_in(con, t) for t in scope_plan.NARROWED}
    assert all(len(v) > 1 for v in every.values())
    want = _plain(summary(con, rid).as_dict())
    with run_scope.scoped(con, [rid], answers=False, queries=page_queries("summary")):
        off = set(_setting(con).split(","))
        assert {"join_filter_pushdown", "join_order", "statistics_propagation"} <= off
        for t in scope_plan.NARROWED:
            assert _runs_in(con, t) == [rid], t
        assert _plain(summary(con, rid).as_dict()) == want
    assert _setting(con) == "join_filter_pushdown"
    assert {t: _runs_in(con, t) for t in scope_plan.NARROWED} == every
    assert not con.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchall()[0][0]


def test_a_scope_leaves_a_connections_own_narrowed_live_alone(sample_wh, runs):
    """A keep narrows ``_live`` itself (pt2logs.query.kept_cache): a scope on its connection neither replaces nor
    drops it."""
    rid, other = runs
    con = pt2logs.connect(sample_wh)
    con.execute(
        f"CREATE TEMP TABLE _live AS SELECT * FROM _live WHERE run_id IN ('{rid}', '{other}')"
    )
    with run_scope.scoped(con, [rid], answers=False, queries=DIFF_QUERIES):
        assert _runs_in(con, "_live") == sorted([rid, other])
        assert _runs_in(con, "_run_source") == [rid]
    assert _runs_in(con, "_live") == sorted([rid, other])
    assert _setting(con) == ""


def test_a_scope_puts_back_only_the_texts_its_questions_name(sample_wh, runs):
    """A diff's questions name no stored text: its scope reads neither the store's keys nor its texts, and answers
    as over the views; a compile page's name the events' payloads (its graphs): put back, as the views give them."""
    from pt2logs.query.queries import run_named
    from pt2logs.serve.pages_run import COMPILE_QUERIES

    assert run_scope.texts_for(DIFF_QUERIES) == frozenset()
    assert run_scope.texts_for(COMPILE_QUERIES) == {"payload"}
    assert run_scope.texts_for(page_queries("summary")) == {"payload"}
    rid, other = runs
    con = pt2logs.connect(sample_wh)
    want = _plain(diff(con, other, rid).as_dict())
    arts = run_named(con, "bug_report_artifacts", {"run_id": rid}).to_pylist()
    assert any(a["payload"] for a in arts)
    with run_scope.scoped(con, [other, rid], answers=False, queries=DIFF_QUERIES):
        assert con.execute("SELECT count(*) FROM _scope_payloads").fetchall()[0][0] == 0
        assert _plain(diff(con, other, rid).as_dict()) == want
    with run_scope.scoped(con, [rid], answers=False, queries=COMPILE_QUERIES):
        assert con.execute("SELECT count(*) FROM _scope_payloads").fetchall()[0][0] > 0
        assert run_named(con, "bug_report_artifacts", {"run_id": rid}).to_pylist() == arts


def test_a_scope_that_fails_leaves_the_connection_as_it_was(sample_wh, runs, monkeypatch):
    """A scope whose narrowing or copy fails (here: a statement DuckDB rejects) is undone: no temporary table left,
    the connection's optimizers as they were, ``_live`` every run's again."""
    rid, _ = runs
    con = pt2logs.connect(sample_wh)
    every = _runs_in(con, "_live")

    def check() -> None:
        assert _setting(con) == ""
        assert not con.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchall()[
            0
        ][0]
        assert _runs_in(con, "_live") == every

    with monkeypatch.context() as m:
        m.setattr(scope_plan, "NARROWED", ("_live", "no_such_table"))
        with pytest.raises(Exception, match="no_such_table"):
            run_scope.enter(con, [rid], ("events", "runs"))
    check()
    monkeypatch.setattr(
        run_scope, "table_statements", lambda *a, **k: ["SELECT * FROM no_such_table"]
    )
    with pytest.raises(Exception, match="no_such_table"):
        run_scope.enter(con, [rid], ("events", "runs"))
    check()


def test_a_snapshot_taken_inside_a_scope_keeps_every_runs_best_source(
    sample_wh, runs, tmp_path, monkeypatch
):
    """A query inside a scope may take a new snapshot (its files may be deleted by a compaction: views._retried),
    which makes that snapshot's catalog, kept for every later connection: its best sources were read through the
    scope's narrowed ``_live`` (its runs only), and every later reader of the snapshot got the other runs' rows of
    both sources, each twice (a reader beside compactions: tests/test_crash_safety.py)."""
    import shutil

    from tests.conftest import SAMPLES

    from pt2logs.query.views import create_views
    from pt2logs.store.warehouse import Warehouse

    monkeypatch.setenv("PT2LOGS_VIEWS_CACHE", str(tmp_path / "catalogs"))
    wh = str(tmp_path / "wh")
    shutil.copytree(sample_wh, wh)
    count = "SELECT count(*) FROM recompiles"
    con = pt2logs.connect(wh)
    before = con.execute(count).fetchall()[0][0]
    best = con.execute("SELECT count(*) FROM _run_source").fetchall()[0][0]
    with run_scope.scoped(con, [runs[1]]):
        pt2logs.ingest(
            [str(SAMPLES / "recompiles")], wh, force=True
        )  # a new commit: a new snapshot
        create_views(con, Warehouse(wh))  # taken inside the scope, its catalog kept in the folder
    con.close()
    later = pt2logs.connect(wh)  # the same snapshot: its kept catalog
    assert later.execute("SELECT count(*) FROM _run_source").fetchall()[0][0] == best
    assert later.execute(count).fetchall()[0][0] == before
    later.close()
