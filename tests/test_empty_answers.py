"""Questions a run scope answers without DuckDB (pt2logs.query.empty_answers): each gated question, over every sample
run's scope where its gate is false, has DuckDB's own answer empty and equal (columns, types) to the one given in its
place; the multi-rank analyses are asked of a run of two ranks."""

from __future__ import annotations

import pytest

import pt2logs
from pt2logs.query import queries, run_scope
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
