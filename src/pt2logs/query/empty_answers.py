"""Questions a run scope answers without asking DuckDB: those whose answer is provably empty over its runs' rows.

A run page asks every run the multi-rank analyses (``rank_divergence``, ``first_divergence``,
``rank_collective_checks``: ~55 CPU ms of planning at 10,000 runs) and questions about tables most fleets never fill
(vLLM, Spyre, AOT, kernel provenance, CUDA graph skips, ingest errors: ~35 ms together); over a scope of single-rank
runs without those rows each answer is its columns and no row. Each such question is declared with what its rows hang
on, read off its SQL (through inner joins and filters): a table with rows of the scope's runs (:data:`WITHOUT`: known
without DuckDB, from the snapshot's files of the scope's transactions, which hold every row of its runs), or a
condition over the scope's rows (:data:`RANKED`: a run of more than one rank). tests/test_empty_answers.py asks every
gated question over scopes where it is found empty and checks DuckDB's answer equals the one given in its place, so an
SQL change that would give rows there fails it.

What is found empty is found when the scope begins (:func:`pt2logs.query.run_scope.scoped`; the conditions in one
statement, ~2 ms); a question found empty is answered by
:func:`pt2logs.query.queries.run_named` with an empty table of the columns and types its own answer had the first time
DuckDB answered it on this connection with parameters of the same types (until then, DuckDB answers it).
"""

from __future__ import annotations

from collections.abc import Iterable

import duckdb

from pt2logs.query import answer_schemas
from pt2logs.query.queries import EMPTY

_RANK = r"coalesce(TRY_CAST(regexp_extract(file, 'rank_(\d+)', 1) AS INTEGER), rank)"

#: named query -> run tables: its answer has no row where none of them holds a row of the scope's runs (each a
#: filtered, grouped or inner-joined read of them, its runs those ``selected_runs`` gives: the scope's or fewer)
WITHOUT: dict[str, tuple[str, ...]] = {
    "cudagraph_skips": ("cudagraph_skips",),
    "aot_compiles": ("aot_compiles",),
    "kernel_provenance": ("kernel_provenance",),
    "spyre_failure_reports": ("spyre_failure_reports",),
    "vllm_compile_ranges": ("vllm_log_events",),
    "ingest_errors_summary": ("ingest_errors",),
    # vllm_cold_starts: a run's row needs one of its vLLM log events or vLLM compiles
    "vllm_cold_start": ("vllm_log_events", "vllm_compiles"),
}
#: named query -> (run tables that hold no row of the scope's runs, a condition over the scope's rows): where both
#: hold, false, its answer has no row (the multi-rank analyses: every row hangs, through inner joins, on a run of
#: more than one rank as the query counts them)
RANKED: dict[str, tuple[tuple[str, ...], str]] = {
    # its runs are those of n_ranks > 1 (``sel``)
    "rank_divergence": ((), "EXISTS (SELECT 1 FROM runs WHERE n_ranks > 1)"),
    # every row comes from the grid of runs with more than one log file of compiles (``multi``)
    "first_divergence": (
        (),
        "EXISTS (SELECT 1 FROM (SELECT DISTINCT run_id, file FROM compilation_metrics"
        " WHERE kind = 'compilation_metrics') GROUP BY run_id HAVING count(*) > 1)",
    ),
    # every check is of runs with more than one rank in compiles or collective schedules (``multi``); with no
    # collective schedule, of compiles only
    "rank_collective_checks": (
        ("collective_schedule",),
        f"EXISTS (SELECT 1 FROM (SELECT DISTINCT run_id, {_RANK} AS rank FROM compilation_metrics"
        " WHERE kind = 'compilation_metrics') WHERE rank IS NOT NULL GROUP BY run_id HAVING count(*) > 1)",
    ),
}
GATED = frozenset(WITHOUT) | frozenset(RANKED)


def gate(
    con: duckdb.DuckDBPyConnection, queries: Iterable[str], filed: frozenset[str] | None
) -> None:
    """Inside a run scope: note the ``queries`` of :data:`GATED` whose answer is empty over its rows; ``filed``: the
    run tables with a file of the scope's transactions (None: not known, only the conditions are asked)."""
    asked = {q for q in queries if q in GATED}
    known = filed is not None
    empty = {q for q in asked & WITHOUT.keys() if known and not set(WITHOUT[q]) & filed}
    ranked = sorted(
        q
        for q in asked & RANKED.keys()
        if not RANKED[q][0] or (known and not set(RANKED[q][0]) & filed)
    )
    if ranked:
        row = con.execute("SELECT " + ", ".join(f"({RANKED[q][1]})" for q in ranked)).fetchall()[0]
        empty |= {q for q, needed in zip(ranked, row, strict=True) if not needed}
    if empty:
        EMPTY[con] = frozenset(empty)


def ungate(con: duckdb.DuckDBPyConnection) -> None:
    EMPTY.pop(con, None)
    answer_schemas.forget(con)
