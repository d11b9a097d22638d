"""Named queries rewritten for speed at fleet scale give the rows they gave before (tests/query_oracles):
on the sample runs (real torch 2.13 traces) and on a fleet synthesized from them as the bench does
(bench/fleet.py: tags, runs started at the same moment, many cold runs of each program). The shared
fixtures are compared too, in tests/test_advice.py and tests/test_cache_misses.py. And the two queries
about one run (trace_events, bug_report_artifacts) answer for the newest run when nothing is selected.
"""

from __future__ import annotations

import shutil
from collections import Counter

import pytest
from tests.query_oracles import (
    add_advice_oracle,
    add_cache_oracle,
    canonical,
    named_sql,
    oracle_sql,
    rows,
)

import pt2logs
from pt2logs.query.queries import run_named

#: the bench's fleet rule repeats start times every 56 days (runs 280 apart start together)
FLEET_RUNS = 300


@pytest.fixture(scope="module")
def fleet_wh(sample_wh: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    from bench import fleet

    dest = tmp_path_factory.mktemp("fleet")
    shutil.copytree(
        sample_wh, dest / "fleet_base_store"
    )  # the base the bench ingests, already ingested
    return str(fleet.synthesize(dest, FLEET_RUNS))


def _selections(con) -> list[dict]:
    names = [n for (n,) in con.sql("SELECT name FROM runs ORDER BY name").fetchall()]
    return [
        {},
        {"tag": "model=gpt"},
        {"run_id": names[0]},
        {"run_id": names[0].split(" ")[0]},
        {"since": "2000-01-01"},
        {"until": "2999-01-01", "tag": "cluster=a"},
    ]


@pytest.mark.parametrize("where", ["samples", "fleet"])
def test_cache_cold_warm_pairs_the_runs_it_paired(
    where: str, sample_wh: str, fleet_wh: str
) -> None:
    con = pt2logs.connect(sample_wh if where == "samples" else fleet_wh)
    for params in _selections(con):
        new, old = (
            rows(con, named_sql("cache_cold_warm"), params),
            rows(con, oracle_sql("cache_cold_warm"), params),
        )
        assert new == old, params
    every = rows(con, named_sql("cache_cold_warm"), {})
    assert any(r["cold_run"] for r in every) and any(r["state"] == "cold" for r in every)
    if (
        where == "fleet"
    ):  # the cases the rewrite must get right: ties in time, several cold runs of a program
        started = Counter((r["started"], r["state"]) for r in every)
        assert max(n for (_, state), n in started.items() if state == "cold") > 1
        assert len({r["cold_run"] for r in every if r["cold_run"]}) > 10
        assert any(
            r["state"] == "cold" and r["cold_run"] is None for r in every
        )  # the first of its program


@pytest.mark.parametrize("where", ["samples", "fleet"])
def test_advice_items_are_the_items_they_were(where: str, sample_wh: str, fleet_wh: str) -> None:
    con = pt2logs.connect(sample_wh if where == "samples" else fleet_wh)
    add_advice_oracle(con)
    for params in _selections(con):
        new = rows(con, "SELECT * FROM advice_items($run_id, $since, $until, $tag)", params)
        old = rows(con, "SELECT * FROM advice_items_oracle($run_id, $since, $until, $tag)", params)
        assert canonical(new) == canonical(old), params
    assert rows(con, "SELECT * FROM advice_items(NULL, NULL, NULL, NULL)", {})
    for name in ("advice", "dash_advice"):
        sql = named_sql(name)
        params = {"limit": 100000} if name == "advice" else {}  # dash_advice: the last 7 days
        new, old = (
            rows(con, sql, params),
            rows(con, sql.replace("advice_items(", "advice_items_oracle("), params),
        )
        assert new and canonical(new) == canonical(old), name


def _untied(con, rs: list[dict]) -> list[str]:
    """Rows with their base run given by its start time: of runs started at the same moment, which one
    the as-of join pairs with (cache_pairs) is not defined, before or after the rewrite."""
    started = dict(con.sql("SELECT name, started_at FROM runs").fetchall())
    out = []
    for r in rs:
        r = dict(r)
        if r.get("base_run"):
            r["why"] = r["why"].replace(r["base_run"], "<base>") if r.get("why") else r.get("why")
            r["base_run"] = started[r["base_run"]]
        out.append(repr(sorted(r.items())))
    return sorted(out)


@pytest.mark.parametrize("where", ["samples", "fleet"])
def test_cache_misses_explained_as_before(where: str, sample_wh: str, fleet_wh: str) -> None:
    con = pt2logs.connect(sample_wh if where == "samples" else fleet_wh)
    add_cache_oracle(con)
    names = [n for (n,) in con.sql("SELECT name FROM runs ORDER BY name").fetchall()]
    for params in _selections(con) + [{"run_id": names[-1], "base": names[0]}]:
        for name in ("cache_misses", "cache_key_diff"):
            p = {**params, "limit": 100000} if name == "cache_key_diff" else params
            new, old = rows(con, named_sql(name), p), rows(con, oracle_sql(name), p)
            assert (
                (new == old) if where == "samples" else (_untied(con, new) == _untied(con, old))
            ), (name, params)
    assert rows(con, named_sql("cache_misses"), {})


def _newest(con) -> tuple[str, str]:
    runs = sorted(
        con.sql("SELECT run_id, name, started_at FROM runs").fetchall(), key=lambda r: (r[1], r[0])
    )
    run_id, name, _ = max(
        runs, key=lambda r: r[2]
    )  # the newest; of several, the first by name, then by id
    return run_id, name


@pytest.mark.parametrize("name", ["trace_events", "bug_report_artifacts"])
def test_queries_about_one_run_answer_for_the_newest_without_a_selection(
    name: str, sample_wh: str
) -> None:
    con = pt2logs.connect(sample_wh)
    run_id, run = _newest(con)
    default = run_named(con, name, {}).to_pylist()
    assert default and {r["run"] for r in default} == {run}
    assert default == run_named(con, name, {"run_id": run_id}).to_pylist()
    # any selection (a time, a tag) still selects every run it matches
    every = {r["run"] for r in run_named(con, name, {"since": "2000-01-01"}).to_pylist()}
    assert every == {n for (n,) in con.sql("SELECT name FROM runs").fetchall()} and len(every) > 1


@pytest.mark.parametrize("name", ["trace_events", "bug_report_artifacts"])
def test_a_selection_gives_the_rows_it_gave(name: str, sample_wh: str, fleet_wh: str) -> None:
    sql = named_sql(name)
    before = sql.replace("selected_runs_or_newest(", "selected_runs(")  # all the query had before
    assert before != sql
    for wh in (sample_wh, fleet_wh):
        con = pt2logs.connect(wh)
        ids = [
            {"run_id": r}
            for (r,) in con.sql("SELECT run_id FROM runs ORDER BY run_id LIMIT 6").fetchall()
        ]
        for params in (
            _selections(con)[1:] if wh == sample_wh else [{"tag": "model=gpt", "until": "30d"}]
        ) + ids:
            assert rows(con, sql, params) == rows(con, before, params), params


@pytest.mark.parametrize("where", ["samples", "fleet"])
def test_commands_given_no_run_take_the_run_the_queries_take(
    where: str, sample_wh: str, fleet_wh: str
) -> None:
    """ "The newest run" is one rule (selected_runs_or_newest): summary, advise, a bug report given no run
    (report.resolve_run) take the run trace_events and bug_report_artifacts answer for."""
    from pt2logs.reports.runs import resolve_run

    con = pt2logs.connect(sample_wh if where == "samples" else fleet_wh)
    run_id, name = _newest(con)
    got = resolve_run(con, None)
    assert (got.run_id, got.name) == (run_id, name)
    assert {r["run"] for r in run_named(con, "trace_events", {}).to_pylist()} == {name}


def test_of_runs_started_at_one_moment_the_newest_is_the_first_by_name_then_by_id() -> None:
    import duckdb

    from pt2logs.query.macros import statements

    wanted = (
        "MACRO tag_value(",
        "MACRO tag_match(",
        "MACRO selected_runs(",
        "MACRO selected_runs_or_newest(",
    )
    rows = [
        ("c3", "x", "2026-01-02"),
        ("b2", "x", "2026-01-02"),
        ("a1", "y", "2026-01-02"),
        ("a0", "a", "2026-01-01"),
    ]
    for order in (rows, rows[::-1]):  # whatever order the rows come in
        con = duckdb.connect()
        con.execute(
            "CREATE TABLE runs (run_id VARCHAR, name VARCHAR, started_at TIMESTAMPTZ, tags VARCHAR)"
        )
        con.executemany("INSERT INTO runs VALUES (?, ?, ?, '{}')", order)
        for m in [s for part in statements() for s in part]:
            if any(w in m for w in wanted):
                con.execute(m)
        assert con.execute(
            "SELECT * FROM selected_runs_or_newest(NULL, NULL, NULL, NULL)"
        ).fetchall() == [("b2",)]
