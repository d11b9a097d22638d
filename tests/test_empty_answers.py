"""Questions a run scope answers without DuckDB (pt2logs.query.empty_answers): each gated question, over every sample
run's scope where its gate is false, has DuckDB's own answer empty and equal (columns, types) to the one given in its
place; the multi-rank analyses are asked of a run of two ranks."""

from __future__ import annotations

import pytest

import pt2logs
from pt2logs.query import answer_schemas, kept_files, queries, run_scope
from pt2logs.query.empty_answers import GATED
from pt2logs.query.queries import bind, get_query, run_named, run_sql
from pt2logs.serve.pages_run import run_queries

RANKS = ("rank_divergence", "first_divergence", "rank_collective_checks")


@pytest.fixture(scope="module")
def gated(sample_wh) -> dict[str, frozenset[str]]:
    """Per sample run (by name): the questions of GATED found empty in its scope."""
    con = pt2logs.connect(sample_wh)
    out = {}
    for rid, name in con.execute("SELECT run_id, name FROM runs ORDER BY name").fetchall():
        with run_scope.scoped(con, [rid], answers=False, queries=run_queries()):
            out[name] = queries.EMPTY.get(con, frozenset())
    return out


def test_every_gated_question_is_a_page_question_and_gated_off_somewhere(gated):
    assert set(GATED) <= set(run_queries())
    assert set(GATED) == set().union(*gated.values())  # (each one checked below at least once)


def test_a_gated_off_question_is_empty_as_duckdb_answers_it(sample_wh, gated):
    """DuckDB's own answer (asked beside the scope's bookkeeping) is empty and equals what run_named gives, once
    DuckDB answered it on this connection (the first scope) and again from its columns (the next)."""
    con = pt2logs.connect(sample_wh)
    ids = dict(con.execute("SELECT name, run_id FROM runs").fetchall())
    for name, empty in gated.items():
        for _ in range(2):
            with run_scope.scoped(con, [ids[name]], answers=False, queries=run_queries()):
                assert queries.EMPTY[con] == empty
                for q in sorted(empty):
                    nq = get_query(q)
                    own = run_sql(con, nq.sql, bind(nq, nq.sql, {"run_id": ids[name]}))
                    given = run_named(con, q, {"run_id": ids[name]})
                    assert own.num_rows == 0, (name, q)
                    assert given.schema == own.schema and given.equals(own), (name, q)
        assert not queries.EMPTY.get(con)  # (gone with the scope)


def test_single_rank_runs_skip_the_rank_analyses_a_run_of_two_ranks_asks_them(sample_wh, gated):
    """Fails on the code before empty_answers: every question asked of DuckDB."""
    assert set(RANKS) <= gated["recompiles"]
    assert not set(RANKS) & gated["ddp_2rank"]
    con = pt2logs.connect(sample_wh)
    rid = con.execute("SELECT run_id FROM runs WHERE name = 'ddp_2rank'").fetchall()[0][0]
    with run_scope.scoped(con, [rid], answers=False, queries=run_queries()):
        assert run_named(con, "rank_collective_checks", {"run_id": rid}).num_rows > 0


def _forget(monkeypatch) -> None:
    """This process as a new one: no schema known in memory (the cache folder's file is read again)."""
    monkeypatch.setattr(answer_schemas, "_KNOWN", {})
    monkeypatch.setattr(answer_schemas, "_read", set())


def test_a_schema_learned_once_serves_later_connections_and_processes(
    sample_wh, gated, tmp_path, monkeypatch
):
    """Asked once (a first connection, with the cache folder empty), a gated-off question's columns are kept: a new
    connection of the process (its cache file removed meanwhile: the process's memory answers), and a new process
    (its memory cleared: the cache file answers), answer it without DuckDB, and equal to DuckDB's own answer. Fails
    on the code before answer_schemas: each connection asked DuckDB again."""
    cache = tmp_path / "cache"
    monkeypatch.setenv(kept_files.ENV, str(cache))
    _forget(monkeypatch)
    real = queries.run_sql
    asked: list[str] = []

    def spy(con, sql, params=None):
        asked.append(sql)
        return real(con, sql, params)

    monkeypatch.setattr(queries, "run_sql", spy)
    one = next(n for n, e in gated.items() if "first_divergence" in e)
    texts = {get_query(q).sql for q in gated[one]}
    aside = tmp_path / "aside"
    for round_ in ("first", "same process", "new process"):
        if round_ == "same process":  # (the memory alone)
            (kept,) = cache.glob(f"{answer_schemas.KIND}-*.json")
            kept.rename(aside)
        if round_ == "new process":  # (the file alone)
            aside.rename(kept)
            _forget(monkeypatch)
        con = pt2logs.connect(sample_wh)
        rid = con.execute("SELECT run_id FROM runs WHERE name = $n", {"n": one}).fetchall()[0][0]
        asked.clear()
        with run_scope.scoped(con, [rid], answers=False, queries=run_queries()):
            given = {q: run_named(con, q, {"run_id": rid}) for q in sorted(gated[one])}
        if round_ == "first":
            assert texts <= set(asked)
        else:
            assert not texts & set(asked), round_
        for q, t in given.items():
            nq = get_query(q)
            own = real(con, nq.sql, bind(nq, nq.sql, {"run_id": rid}))
            assert own.num_rows == 0 and t.schema == own.schema and t.equals(own), (round_, q)
        con.close()
    assert len(list(cache.glob(f"{answer_schemas.KIND}-*.json"))) == 1


def test_a_schema_learned_on_one_warehouse_is_duckdbs_answer_on_another(
    sample_wh, gated, tmp_path, monkeypatch
):
    """The columns depend on the query and the declared views, not on the warehouse: learned over the samples,
    they equal DuckDB's own answer over a warehouse of other formats (a tlparse test log, a TORCH_LOGS capture and a
    Spyre log: tables the samples fill empty there, others filled), with another time zone asked for a new key."""
    from tests.conftest import FIXTURES

    inputs = [
        FIXTURES / "tlparse" / "comp_failure.log",
        FIXTURES / "torch_logs" / "recompiles.txt",
        FIXTURES / "spyre" / "issue_excerpts.txt",
    ]
    if not all(p.exists() for p in inputs):
        pytest.skip("shared fixtures not present")
    other = str(tmp_path / "wh")
    for p in inputs:
        pt2logs.ingest([str(p)], other)
    con = pt2logs.connect(other)
    checked = 0
    for (rid,) in con.execute("SELECT run_id FROM runs").fetchall():
        with run_scope.scoped(con, [rid], answers=False, queries=run_queries()):
            for q in sorted(queries.EMPTY.get(con, frozenset())):
                nq = get_query(q)
                given = run_named(con, q, {"run_id": rid})
                own = run_sql(con, nq.sql, bind(nq, nq.sql, {"run_id": rid}))
                assert own.num_rows == 0 and given.schema == own.schema, (rid, q)
                checked += 1
    assert checked >= 5
    # another zone: another key, TIMESTAMPTZ columns of that zone
    con.execute("SET TimeZone = 'Asia/Kolkata'")
    rid = con.execute("SELECT run_id FROM runs LIMIT 1").fetchall()[0][0]
    with run_scope.scoped(con, [rid], answers=False, queries=run_queries()):
        for q in sorted(queries.EMPTY.get(con, frozenset())):
            nq = get_query(q)
            given = run_named(con, q, {"run_id": rid})
            assert given.schema == run_sql(con, nq.sql, bind(nq, nq.sql, {"run_id": rid})).schema
