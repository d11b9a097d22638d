"""A page about one run (or two) reads only their rows: each table's rows of those runs copied, before the
page's queries, into a temporary table of the table's name, which the named queries then read instead of
the view (DuckDB looks a name up in the temporary schema first).

Why: a warehouse view does a lot for every query that names it (the files of the snapshot, the live
transactions, a run's best source, user paths made relative, the payload store's texts), and the named
queries name each view several times through their macros. A run page runs some 25 queries; over the
views each paid for the whole fleet (seconds at 10,000 runs) though it asked about one run. Copying one
run's rows is a filter on ``run_id`` each view pushes down to its scan (a few ms a table), after which
the queries read a few hundred rows. Only queries whose answer about a run depends on that run's rows
alone are run scoped: the run, compile and diff pages' (tests/test_serve_scope.py compares every sample
run's pages with the unscoped answers).
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterable, Iterator

import duckdb

from pt2logs.query.macros import fill, load_macros
from pt2logs.query.queries import get_query
from pt2logs.query.sql_text import ident as _ident
from pt2logs.query.sql_text import literal as _lit
from pt2logs.tables import TABLES

#: the tables a scope copies: every table with a run_id column (the others, if any, stay views)
SCOPED = tuple(name for name, t in TABLES.items() if "run_id" in t.names)


@functools.cache
def _macro_words() -> dict[str, frozenset[str]]:
    return {n: frozenset(re.findall(r"\w+", fill(m))) for n, m in load_macros().items()}


def tables_for(queries: Iterable[str]) -> frozenset[str]:
    """The run tables the named ``queries`` read, through the macros they call: a page that runs only these
    needs only their copies (a table left out is read through its view: slower, never wrong)."""
    macros = _macro_words()
    words: set[str] = set()
    todo = [frozenset(re.findall(r"\w+", get_query(q).sql)) for q in queries]
    seen: set[str] = set()
    while todo:
        w = todo.pop()
        words |= w
        for n in (w & macros.keys()) - seen:
            seen.add(n)
            todo.append(macros[n])
    return frozenset(t for t in SCOPED if t in words)


def holding(con: duckdb.DuckDBPyConnection) -> tuple[str, ...]:
    """The run tables that hold a row in the views just made (the others need no copy: empty for any run);
    asked once per snapshot."""
    return tuple(
        name
        for name in SCOPED
        if con.execute(f"SELECT EXISTS (SELECT 1 FROM main.{_ident(name)})").fetchall()[0][0]
    )


def enter(
    con: duckdb.DuckDBPyConnection, run_ids: Iterable[str], tables: Iterable[str] = SCOPED
) -> None:
    """Shadow the run tables ``tables`` of ``con`` by temporary copies of the rows of ``run_ids``."""
    ids = sorted(set(run_ids))
    where = f"run_id IN ({', '.join(map(_lit, ids))})" if ids else "false"
    for name in tables:
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE {_ident(name)} AS SELECT * FROM main.{_ident(name)} WHERE {where}"
        )


def leave(con: duckdb.DuckDBPyConnection) -> None:
    """The views again: every temporary copy dropped."""
    for name in SCOPED:
        con.execute(f"DROP TABLE IF EXISTS temp.{_ident(name)}")


@contextlib.contextmanager
def scoped(
    con: duckdb.DuckDBPyConnection, run_ids: Iterable[str], tables: Iterable[str] = SCOPED
) -> Iterator[None]:
    enter(con, run_ids, tables)
    try:
        yield
    finally:
        leave(con)
