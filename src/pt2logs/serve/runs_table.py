"""The rows of ``/runs``, paged in SQL.

Each run's overview figures (the named query ``run_overview``, with the run's tags) are computed once per
snapshot, fleet-wide, into the temporary table ``_serve_runs`` (:func:`prepare`, called when the views are
made): about a second at 10,000 runs, after which sorting, searching and paging are one small query.
How a run ended (``run_outcomes``) costs much more fleet-wide (its rules read every rank's last events):
the server computes every run's in the background once per snapshot (``_serve_outcomes``,
:class:`pt2logs.serve.connection.Connection`); until it is there, a page computes it for the runs it shows
only (their rows scoped, :mod:`pt2logs.query.run_scope`), and filtering or sorting by outcome, or the JSON / CSV
of every row, compute every run's then.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import duckdb
import pyarrow as pa

from pt2logs.query.queries import run_named
from pt2logs.query.run_scope import scoped, tables_for

#: the columns of a /runs row, from _serve_runs (o) or the outcomes (x)
FROM_OVERVIEW = (
    "run_id",
    "run",
    "started_at",
    "torch",
    "ranks",
    "compiles",
    "compile_s",
    "recompiles",
    "graph_breaks",
    "failures",
    "tags",
)
#: the columns a search (``?q=``) looks in
SEARCHED = ("run", "run_id", "tags", "torch")


def prepare(con: duckdb.DuckDBPyConnection) -> None:
    """Every run's overview and tags, into ``_serve_runs``, for the views just made; outcomes forgotten."""
    con.register("_serve_over", run_named(con, "run_overview", {}))
    con.register("_serve_tags", run_named(con, "runs", {}).select(["run_id", "tags"]))
    try:
        con.execute(
            "CREATE OR REPLACE TEMP TABLE _serve_runs AS SELECT o.*, t.tags FROM _serve_over o "
            "LEFT JOIN _serve_tags t USING (run_id)"
        )
    finally:
        con.unregister("_serve_over")
        con.unregister("_serve_tags")
    con.execute("DROP TABLE IF EXISTS _serve_outcomes")


def has_outcomes(con: duckdb.DuckDBPyConnection) -> bool:
    return bool(
        con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE temporary AND table_name = '_serve_outcomes'"
        ).fetchall()[0][0]
    )


def outcomes(con: duckdb.DuckDBPyConnection) -> pa.Table:
    """Every run's outcome (run_id, outcome, why): seconds at 10,000 runs."""
    return run_named(con, "run_outcomes", {}).select(["run_id", "outcome", "why"])


def keep_outcomes(con: duckdb.DuckDBPyConnection, table: pa.Table) -> None:
    """``table`` (:func:`outcomes`, maybe made on another connection over the same snapshot) as ``_serve_outcomes``."""
    con.register("_serve_out", table)
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE _serve_outcomes AS SELECT * FROM _serve_out")
    finally:
        con.unregister("_serve_out")


def _outcomes(con: duckdb.DuckDBPyConnection) -> None:
    """Every run's outcome, into ``_serve_outcomes`` (once per snapshot)."""
    if not has_outcomes(con):
        keep_outcomes(con, outcomes(con))


def page(
    con: duckdb.DuckDBPyConnection,
    *,
    text: str,
    outcome: str | None,
    sort: str,
    since: Any = None,
    until: Any = None,
    tag: str | None = None,
    untagged: str | None = None,
    scope: Callable[..., contextlib.AbstractContextManager[None]] | None = None,
    desc: bool,
    offset: int | None,
    limit: int | None,
) -> tuple[list[dict[str, Any]], int]:
    """The rows of one page (every matching row when ``limit`` is None) and how many rows match."""
    every = outcome is not None or sort == "outcome" or limit is None or has_outcomes(con)
    if every:
        _outcomes(con)
    cols = ", ".join(f"o.{c}" for c in FROM_OVERVIEW)
    where, params = ["true"], {}
    if text:
        where.append(
            "("
            + " OR ".join(f"contains(lower(coalesce(o.{c}::VARCHAR, '')), $q)" for c in SEARCHED)
            + ")"
        )
        params["q"] = text.lower()
    if since is not None:
        where.append("o.started_at >= $since")
        params["since"] = since
    if until is not None:
        where.append("o.started_at < $until")
        params["until"] = until
    if tag is not None:
        where.append("tag_match(o.tags, $tag)")
        params["tag"] = tag
    if untagged is not None:  # the runs without this tag key
        where.append("tag_value(o.tags, $untagged) IS NULL")
        params["untagged"] = untagged
    if outcome is not None:
        where.append("x.outcome = $outcome")
        params["outcome"] = outcome
    key = f"x.{sort}" if sort == "outcome" else f"o.{sort}"
    if sort in ("run", "torch", "tags", "outcome"):
        key = f"lower({key})"
    order = f"{key} {'DESC' if desc else 'ASC'} NULLS LAST, o.run, o.run_id"
    join = " LEFT JOIN _serve_outcomes x USING (run_id)" if every else ""
    more = ", x.outcome, x.why" if every else ""
    body = f"FROM _serve_runs o{join} WHERE {' AND '.join(where)}"
    total = con.execute(f"SELECT count(*) {body}", params).fetchall()[0][0]
    window = f" LIMIT {int(limit)} OFFSET {int(offset or 0)}" if limit is not None else ""
    rel = con.execute(f"SELECT {cols}{more} {body} ORDER BY {order}{window}", params)
    names = [d[0] for d in rel.description]
    rows = [dict(zip(names, r, strict=True)) for r in rel.fetchall()]
    if not every and rows:
        ids = [r["run_id"] for r in rows]
        with (
            scope(ids, ("run_outcomes",))
            if scope is not None
            else scoped(con, ids, tables_for(("run_outcomes",)))
        ):
            got = {r["run_id"]: r for r in run_named(con, "run_outcomes", {}).to_pylist()}
        for r in rows:
            o = got.get(r["run_id"], {})
            r["outcome"], r["why"] = o.get("outcome"), o.get("why")
    return rows, total
