"""How a run scope (:mod:`pt2logs.query.run_scope`) plans: what its statements cost is DuckDB planning them, not their
rows (a few hundred; bench/RESULTS.md "A run page's first visit, profiled"), so inside a scope

- the snapshot's per-run tables its copies join (``_live``, ``_run_source``, ``_run_roots``: every run's rows) are
  temporary tables of its runs' rows, as ``runs`` is (what a scope's questions read of them is about its runs only);
- DuckDB's costlier optimizers are off (:data:`SCOPE_NO_OPTIMIZERS`; filter pushdown and row group pruning stay: the
  run filter still reaches every Parquet scan);

and :func:`restore` gives the statement that puts the connection's own setting back when it leaves. (One thread inside
a scope of small runs was tried: no less CPU in fresh processes, more wall on a loaded machine; bench/RESULTS.md.)
"""

from __future__ import annotations

import weakref

import duckdb

from pt2logs.query.sql_text import ident as _ident
from pt2logs.query.sql_text import literal as _lit

#: the snapshot's tables of every run that the copies' statements join (live transactions, best sources, user roots),
#: narrowed in a scope to its runs as temporary tables of their names (made first; each copy joined 10,000 rows of
#: each at 10,000 runs, ~2 ms a statement): what a scope's queries read of them is about its runs only, as ``runs``
NARROWED = ("_live", "_run_source", "_run_roots")
#: DuckDB optimizers off inside a scope: its statements read a few hundred rows, and planning them was most of what
#: a question cost (join order, statistics, ... of 28 questions and 14 copies: ~15 % of a run page's CPU at 10,000
#: runs, bench/RESULTS.md); the run filter still reaches every Parquet scan (filter pushdown, row group pruning stay)
SCOPE_NO_OPTIMIZERS = (
    "join_order",
    "statistics_propagation",
    "compressed_materialization",
    "common_subexpressions",
    "common_aggregate",
    "column_lifetime",
    "build_side_probe_side",
    "join_filter_pushdown",
    "late_materialization",
    "common_subplan",
    "duplicate_groups",
    "reorder_filter",
    "in_clause",
    "deliminator",
)
#: per connection inside a scope: the connection's own disabled optimizers (set again when it leaves) and the
#: :data:`NARROWED` tables the scope made
_INSIDE: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, tuple[str, list[str]]] = (
    weakref.WeakKeyDictionary()
)


def narrow(con: duckdb.DuckDBPyConnection, where: str) -> None:
    """Once per scope (:func:`pt2logs.query.run_scope.enter` may be called again for a question its kept answers lack): the optimizers of
    :data:`SCOPE_NO_OPTIMIZERS` off, the :data:`NARROWED` tables of the scope's runs (those the connection does not
    already shadow: a keep's connection narrows ``_live`` itself)."""
    if con in _INSIDE:
        return
    before = con.execute("SELECT current_setting('disabled_optimizers')").fetchall()[0][0]
    there = temp_tables(con)
    made = [n for n in NARROWED if n not in there]
    off = [o for o in (before or "").split(",") if o.strip()]
    off += [o for o in SCOPE_NO_OPTIMIZERS if o not in off and o in _optimizers(con)]
    stmts = [f"SET disabled_optimizers = {_lit(','.join(off))}"] + [
        f"CREATE OR REPLACE TEMP TABLE {_ident(n)} AS SELECT * FROM {_ident(n)} WHERE {where}"
        for n in made
    ]
    _INSIDE[con] = (
        before or "",
        made,
    )  # (first: a statement that fails is undone by the scope's leave)
    con.execute(";\n".join(stmts))


_KNOWN: list[frozenset[str]] = []


def _optimizers(con: duckdb.DuckDBPyConnection) -> frozenset[str]:
    """The optimizers this DuckDB has (an older one lacks some of :data:`SCOPE_NO_OPTIMIZERS`), asked once."""
    if not _KNOWN:
        _KNOWN.append(
            frozenset(r[0] for r in con.execute("SELECT name FROM duckdb_optimizers()").fetchall())
        )
    return _KNOWN[0]


def temp_tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {
        r[0]
        for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()
    }


def restore(con: duckdb.DuckDBPyConnection) -> tuple[list[str], list[str]]:
    """(the statement that sets the connection's optimizers back as they were before the scope, the :data:`NARROWED`
    tables it made); nothing when :func:`narrow` did not run."""
    before, made = _INSIDE.pop(con, (None, []))
    return ([] if before is None else [f"SET disabled_optimizers = {_lit(before)}"]), made
