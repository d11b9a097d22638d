"""A page about one run reads that run's rows only (pt2logs.query.run_scope): for every run of the serve
warehouse, its summary, a compile's facts and a diff made over the scoped copies equal the same made
over the views; /runs' outcomes computed for a page's runs equal the fleet-wide ones."""

from __future__ import annotations

import json

import pytest
from tests import serve_site

import pt2logs
from pt2logs.query.queries import run_named
from pt2logs.query.run_scope import scoped
from pt2logs.reports.compose import summary
from pt2logs.reports.diff import diff
from pt2logs.serve import runs_table
from pt2logs.serve.pages_run import compile_facts


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    c = pt2logs.connect(serve_site.warehouse(tmp_path_factory))
    runs_table.prepare(c)
    return c


def _plain(x):
    return json.loads(json.dumps(x, default=str, sort_keys=True))


def test_scoped_pages_equal_unscoped(con):
    from pt2logs.query.answer_keeper import keep_answers
    from pt2logs.query.views import warehouse_of

    keep_answers(warehouse_of(con))  # (what the server keeps after a run's page: its run's answers)
    runs = [r[0] for r in con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]
    assert len(runs) >= 5
    for i, rid in enumerate(runs):
        cid = con.execute(
            "SELECT compile_id FROM compilation_metrics WHERE run_id = ? ORDER BY compile_id LIMIT 1",
            [rid],
        ).fetchall()
        other = runs[i - 1]
        want = _plain(summary(con, rid).as_dict())
        want_c = _plain(compile_facts(con, rid, cid[0][0], None)) if cid else None
        want_d = _plain(diff(con, other, rid).as_dict()) if i < 2 else None
        # the copies; then the answers kept per transaction (pt2logs.query.kept_answers), the copies for the rest
        for answers in (False, True):
            with scoped(con, [rid], answers=answers):
                if not answers:
                    assert (
                        con.execute("SELECT count(DISTINCT run_id) FROM events").fetchall()[0][0]
                        <= 1
                    )
                assert _plain(summary(con, rid).as_dict()) == want, rid
                if cid:
                    assert _plain(compile_facts(con, rid, cid[0][0], None)) == want_c, rid
            if want_d is not None:
                with scoped(con, [other, rid], answers=answers):
                    assert _plain(diff(con, other, rid).as_dict()) == want_d, rid
    # the views again once a scope ends
    assert con.execute("SELECT count(DISTINCT run_id) FROM events").fetchall()[0][0] == len(
        {r for r in runs if con.execute("SELECT 1 FROM events WHERE run_id = ?", [r]).fetchall()}
    )


def test_runs_page_outcomes_equal_fleet_outcomes(con):
    fleet = {r["run_id"]: r for r in run_named(con, "run_outcomes", {}).to_pylist()}
    every, total = runs_table.page(
        con, text="", outcome=None, sort="run", desc=False, offset=None, limit=None
    )
    paged = []
    for off in range(0, total, 2):
        rows, n = runs_table.page(
            con, text="", outcome=None, sort="run", desc=False, offset=off, limit=2
        )
        assert n == total
        paged += rows
    assert [r["run_id"] for r in paged] == [r["run_id"] for r in every]
    assert total == len(fleet)
    for r in paged + every:
        assert (r["outcome"], r["why"]) == (
            fleet[r["run_id"]]["outcome"],
            fleet[r["run_id"]]["why"],
        )
    got, n = runs_table.page(
        con, text="", outcome="unknown", sort="compile_s", desc=True, offset=0, limit=50
    )
    assert n == sum(o["outcome"] == "unknown" for o in fleet.values()) == len(got)


def test_outcomes_kept_in_the_background(tmp_path_factory):
    """The server computes every run's outcome once per snapshot on its own connection; /runs then reads
    them from the kept table, the same as the fleet-wide query's."""
    from pt2logs.serve.connection import Connection

    store = Connection(serve_site.warehouse(tmp_path_factory))
    assert store.outcomes_ready.wait(120)
    with store.read() as con:
        assert runs_table.has_outcomes(con)
        fleet = {r["run_id"]: r for r in run_named(con, "run_outcomes", {}).to_pylist()}
        rows, n = runs_table.page(
            con, text="", outcome=None, sort="run", desc=False, offset=0, limit=3, scope=store.scope
        )
    assert n == len(fleet) and len(rows) == 3
    assert all(
        (r["outcome"], r["why"]) == (fleet[r["run_id"]]["outcome"], fleet[r["run_id"]]["why"])
        for r in rows
    )
    store.close()


@pytest.mark.kept_rows
def test_a_run_page_keeps_its_answers_after_it_and_the_next_reads_them(tmp_path, monkeypatch):
    """A run page whose answers are not kept is answered as without them, then a thread of the server keeps them
    (pt2logs.serve.connection); the same page made again (its cache emptied) asks DuckDB no named query and is the
    same bytes."""
    import time
    import urllib.request
    from pathlib import Path

    from tests.conftest import SAMPLES

    from pt2logs.query import kept_answers, kept_rows, queries
    from pt2logs.serve.server import Background

    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(SAMPLES / "recompiles")], wh)
    rid = pt2logs.connect(wh).execute("SELECT run_id FROM runs").fetchall()[0][0]
    folder = Path(wh, kept_answers.FOLDER, kept_answers.key())
    named = {q.sql: q.name for q in queries.load_queries().values()}
    asked: list[str] = []
    run_sql = queries.run_sql
    monkeypatch.setattr(
        queries,
        "run_sql",
        lambda c, sql, params=None: (
            (asked.append(named[sql]) if sql in named else None) or run_sql(c, sql, params)
        ),
    )
    app = serve_site.app(wh)
    with Background(app) as u:

        def page() -> bytes:
            with urllib.request.urlopen(f"{u.rstrip('/')}/runs/{rid}", timeout=60) as r:
                assert r.status == 200
                return r.read()

        first = page()
        assert len(set(asked)) > 10  # (asked of DuckDB: nothing was kept)
        deadline = time.monotonic() + 60
        while not list(folder.glob("*" + kept_rows.SUFFIX)):
            assert time.monotonic() < deadline, "no answers kept"
            time.sleep(0.05)
        app.state.store._keeper.join(30)
        app.state.cache.pages.clear()
        asked.clear()
        assert page() == first
        # (every named query of the scope answered from the kept answers; the run's name resolved before it, in
        # DuckDB's own rows: queries.named_rows, not run_sql)
        assert asked == []


@pytest.mark.kept_rows
def test_a_compile_page_copies_its_runs_tables_once(tmp_path, monkeypatch):
    """A compile page's questions are about one compile (never kept): with its run's answers kept, it still copies
    the run's tables in one go (it copied them once per query, six copies a page), and is the same page as without
    kept answers."""
    import shutil
    import urllib.request
    from pathlib import Path

    from tests.conftest import SAMPLES

    from pt2logs.query import answer_keeper, kept_answers, run_scope
    from pt2logs.serve.render import compile_url
    from pt2logs.serve.server import Background
    from pt2logs.store.warehouse import Warehouse

    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(SAMPLES / "recompiles")], wh)
    rid = pt2logs.connect(wh).execute("SELECT run_id FROM runs").fetchall()[0][0]
    assert answer_keeper.keep_answers(Warehouse(wh)) == 1
    entered: list[tuple[str, ...]] = []
    enter = run_scope.enter
    monkeypatch.setattr(
        run_scope,
        "enter",
        lambda c, ids, tables=(), *a: entered.append(tuple(tables)) or enter(c, ids, tables, *a),
    )
    app = serve_site.app(wh)
    with Background(app) as u:

        def page() -> bytes:
            with urllib.request.urlopen(
                u.rstrip("/") + compile_url(rid, "1/1", None), timeout=60
            ) as r:
                assert r.status == 200
                return r.read()

        kept = page()
        assert len(entered) == 1 and {"events", "compilation_metrics"} <= set(entered[0])
        shutil.rmtree(Path(wh, kept_answers.FOLDER))
        app.state.cache.pages.clear()
        assert page() == kept
