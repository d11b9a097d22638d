"""A question about one run (or two) costs what those runs cost, not what the warehouse costs.

A run scope shadows each run table of a connection by a temporary table of the table's name holding the
rows of the scope's runs only; the named queries then read those (DuckDB looks a name up in the temporary
schema first), a few hundred rows instead of the fleet's. The copies are made by the views' own statements
(:func:`pt2logs.query.view_sql.table_statements`: the declared columns, live rows only, one source per run,
user paths relative to the run's root, stored texts put back), over a narrower source:

- **the files of the runs' commits only.** A run's rows are those of its live transaction (``_live``), and
  every data file carries the transaction that committed it in its name (``part-<txn>-…``: an ingest's, a
  compaction's, a re-ingest's), so the scope reads only the snapshot's files of those transactions
  (:mod:`pt2logs.store.snapshot`), never the others' footers or rows;
- **the row groups of those runs only**: the scope's ``run_id`` filter reaches the Parquet scan, which skips
  every row group whose ``run_id`` min/max cannot hold them: where a file holds many runs with their rows in
  run order (bench/fleet.py's), a run is a row group or two of it (a compaction writes rows in no order yet:
  sorting there held 1.1 GB where its batches bound it to 450 MB, tests/test_compact_memory.py);
- **the stored texts those rows name only** (``_scope_payloads``, the payload store's rows of their keys: the
  view ``_payloads`` groups every key of the store), read in two steps: the store's keys, then only the row
  groups holding each key's first copy (a filter on the file's row numbers); for a scope told its queries, only
  the texts of the columns they name (:func:`texts_for`: a diff's questions read no graph);
- **the columns its questions name only**, for a scope told its queries (:mod:`pt2logs.query.scope_columns`: the
  others NULL, their Parquet not decoded; another question asked inside widens the copies it reads first).

Inside, its runs' ``_live``, ``_run_source`` and ``_run_roots`` rows are temporary tables too, DuckDB's costlier
optimizers are off (:mod:`pt2logs.query.scope_plan`): planning, not rows, is what a scope's statements cost.

Only queries whose answer about a run depends on that run's rows alone may be asked inside a scope: the
commands about one run (``summary``, ``ranks``, ``advise``, ``diff``) and serve's run, compile and diff pages
(tests/test_run_scope.py: every answer equal with and without the scope, on sample runs, a re-ingested run,
ranks ingested apart and a compacted warehouse).
"""

from __future__ import annotations

import contextlib
import functools
import re
import weakref
from collections.abc import Iterable, Iterator

import duckdb

from pt2logs.query import empty_answers, kept_answers, scope_columns
from pt2logs.query.queries import ANSWERS, ASKED, get_query
from pt2logs.query.scope_plan import narrow, restore, temp_tables
from pt2logs.query.sql_text import ident as _ident
from pt2logs.query.sql_text import literal as _lit
from pt2logs.query.view_sources import Listed, files_sql
from pt2logs.query.view_sql import table_statements
from pt2logs.query.views import snapshot_of, warehouse_of
from pt2logs.store.parts import PAYLOAD_KEY, PAYLOADS, STORED
from pt2logs.store.snapshot import Snapshot
from pt2logs.tables import TABLES

#: the tables a scope copies: every table with a run_id column (the others, if any, stay views)
SCOPED = tuple(name for name, t in TABLES.items() if "run_id" in t.names)
#: the temporary tables a scope makes besides the tables' own names
_EXTRA = tuple(f"{n}_all_sources" for n in SCOPED if "source" in TABLES[n].names) + (
    "_scope_payloads",
)
#: table macros of (run, since, until, tag) whose rows about a run depend on that run's rows alone, each planned and
#: run once in a scope whose queries call it (``_scope_<name>``, read by a temporary macro of its name): the outcome
#: rules are some 170 lines of SQL that summary and ranks called two or three times, ~30 ms of planning each
MATERIALIZED = ("rank_outcomes",)


@functools.cache
def _macro_words() -> dict[str, frozenset[str]]:
    from pt2logs.query.macros import (
        fill,
        load_macros,
    )  # (asked only when a scope is made: not at import)

    return {n: frozenset(re.findall(r"\w+", fill(m))) for n, m in load_macros().items()}


def tables_for(queries: Iterable[str]) -> frozenset[str]:
    """The run tables the named ``queries`` read, through the macros they call: a scope for only these
    needs only their copies (a table left out is read through its view: slower, never wrong)."""
    words = _words(frozenset(queries))
    return frozenset(t for t in SCOPED if t in words)


def texts_for(queries: Iterable[str]) -> frozenset[str]:
    """The stored text columns (:data:`pt2logs.store.parts.STORED`: ``payload``, ``args``) the named ``queries`` name,
    through the macros they call: a scope for only these puts back only these texts (the others are NULL in its
    copies: the store's keys and texts not read)."""
    words = _words(frozenset(queries))
    return frozenset(text for pairs in STORED.values() for text, _ in pairs if text in words)


def columns_for(queries: Iterable[str]) -> frozenset[str]:
    """The words the named ``queries`` and the macros they call are made of, and those of the conditions
    :mod:`pt2logs.query.empty_answers` asks for them: a scope for only these copies only the columns named among
    them (:mod:`pt2logs.query.scope_columns`)."""
    qs = frozenset(queries)
    asked = " ".join(empty_answers.RANKED[q][1] for q in sorted(qs & empty_answers.RANKED.keys()))
    return _words(qs) | frozenset(re.findall(r"\w+", asked))


def materialized_for(queries: Iterable[str]) -> tuple[str, ...]:
    """The :data:`MATERIALIZED` macros the named ``queries`` call (directly or through other macros)."""
    words = _words(frozenset(queries))
    return tuple(m for m in MATERIALIZED if m in words)


@functools.lru_cache(maxsize=256)
def _words(queries: frozenset[str]) -> frozenset[str]:
    """Every word of the named ``queries`` and of the macros they call, transitively (once per set of queries:
    a page asks the same ones at every request)."""
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
    return frozenset(words)


def holding(con: duckdb.DuckDBPyConnection) -> tuple[str, ...]:
    """The run tables that hold a row in the views just made (the others need no copy: empty for any run);
    asked once per snapshot (serve), and kept for the scopes over that snapshot (:data:`FILED`)."""
    names = tuple(
        name
        for name in SCOPED
        if con.execute(f"SELECT EXISTS (SELECT 1 FROM main.{_ident(name)})").fetchall()[0][0]
    )
    if warehouse_of(con) is not None:
        _HOLDING[con] = (snapshot_of(con), frozenset(names))
    return names


#: per connection: the snapshot its views read when :func:`holding` was asked, and its answer
_HOLDING: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, tuple[Snapshot, frozenset[str]]] = (
    weakref.WeakKeyDictionary()
)


class _RunFiles(Listed):
    """The snapshot's files of the scope's transactions, each scan filtered to the scope's runs."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        wh,
        snap: Snapshot,
        where: str,
        columns: frozenset[str] | None = None,
        texts: Iterable[str] | None = None,
    ):
        super().__init__(con, wh, snap)
        self.where, self.columns, self.texts = where, columns, texts

    def sql(self, table: str, row_ids: bool = False) -> str:
        return f"(SELECT * FROM {super().sql(table, row_ids)} WHERE {self.where})"

    def present(self, table: str) -> set[str] | None:
        """The files' columns, asked once per connection and set of files (a table whose files lack a record
        of the current schema is described from its files: a server's pages ask the same files again)."""
        key = (table, tuple(self.snap.files.get(table, ())))
        seen = _PRESENT.setdefault(self.con, {})
        if key not in seen:
            seen[key] = super().present(table)
        if self.columns is None or seen[key] is None:
            return seen[key]
        # (told its questions' words: the columns they can read, the others NULL in the copy, never decoded)
        return seen[key] & scope_columns.needed(table, self.columns, self.texts)


#: per connection: the run tables that may hold rows of the scope just entered (:mod:`pt2logs.query.empty_answers`):
#: those with a file of its transactions, and with a row at all where :func:`holding` was asked of the same snapshot
FILED: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, frozenset[str]] = (
    weakref.WeakKeyDictionary()
)
#: per connection: (table, files) -> the columns they hold (_RunFiles.present)
_PRESENT: weakref.WeakKeyDictionary[
    duckdb.DuckDBPyConnection, dict[tuple[str, tuple[str, ...]], set[str] | None]
] = weakref.WeakKeyDictionary()


def _payloads(
    con: duckdb.DuckDBPyConnection,
    src: _RunFiles,
    tables: Iterable[str],
    texts: Iterable[str] | None = None,
) -> None:
    """``_scope_payloads``: the store's text of each key the scope's rows name, the first copy by place (as
    the view ``_payloads`` chooses it; every copy of a key is the same text). Two reads: where each key's first
    copy is (the store's keys only), then those rows' texts (a filter on each file's row numbers: only the row
    groups holding them are read). One read of the keys and texts together read every text of the store, at
    every scope: a store of gigabytes decompressed for one run's few hundred payloads. ``texts``: only the keys of
    these text columns (None: all)."""
    key = _ident(PAYLOAD_KEY)
    wanted = None if texts is None else set(texts)
    named = [
        f"SELECT {_ident(k)} AS k FROM {src.sql(t)}"
        for t in tables
        for text, k in STORED.get(t, ())
        if (wanted is None or text in wanted) and (cols := src.present(t)) is not None and k in cols
    ]
    store = Listed(src.con, src.wh, src.snap)
    reads = []
    if named and store.present(PAYLOADS) is not None:
        at = con.execute(
            "SELECT pos.f, list(pos.r ORDER BY pos.r) FROM ("
            f"SELECT min({{'f': filename, 'r': file_row_number}}) AS pos FROM {store.sql(PAYLOADS, row_ids=True)} "
            f"WHERE {key} IN (SELECT k FROM ({' UNION '.join(named)}) WHERE k IS NOT NULL) GROUP BY {key}"
            ") GROUP BY pos.f ORDER BY pos.f"
        ).fetchall()
        reads = [
            f"SELECT {key}, payload FROM {files_sql([f], row_ids=True)} "
            f"WHERE file_row_number IN ({', '.join(map(str, rows))})"
            for f, rows in at
        ]
    none = f"SELECT NULL::BLOB AS {key}, NULL::VARCHAR AS payload WHERE false"
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _scope_payloads AS " + (" UNION ALL ".join(reads) or none)
    )


def enter(
    con: duckdb.DuckDBPyConnection,
    run_ids: Iterable[str],
    tables: Iterable[str] = SCOPED,
    materialized: Iterable[str] = (),
    texts: Iterable[str] | None = None,
    columns: frozenset[str] | None = None,
) -> None:
    """Shadow the run tables ``tables`` of ``con`` by temporary tables of the rows of ``run_ids``, and the
    ``materialized`` macros (of :data:`MATERIALIZED`) by their rows over those copies; ``texts``: the stored text
    columns put back in the copies (None: every one; the others NULL, :func:`texts_for`); ``columns``: the words of the
    questions to be asked, the copies read only the columns they name (:mod:`pt2logs.query.scope_columns`; None: all)."""
    materialized = tuple(materialized)
    if set(materialized) - set(MATERIALIZED):
        raise ValueError(
            f"{materialized} are not macros a run scope keeps ({', '.join(MATERIALIZED)})"
        )
    FILED.pop(con, None)
    ids = sorted(set(run_ids))
    where = f"run_id IN ({', '.join(map(_lit, ids))})" if ids else "false"
    tables = [t for t in tables if t in SCOPED]
    wh, snap = warehouse_of(con), snapshot_of(con)
    if wh is None or snap is None:  # views made without a snapshot: their rows of the runs, copied
        for name in tables:
            con.execute(
                f"CREATE OR REPLACE TEMP TABLE {_ident(name)} AS SELECT * FROM main.{_ident(name)} WHERE {where}"
            )
        _materialize(con, materialized)
        return
    try:
        narrow(con, where)
        txns = {
            r[0] for r in con.execute(f"SELECT DISTINCT txn FROM _live WHERE {where}").fetchall()
        }
        src = _RunFiles(con, wh, snap.of_txns(txns), where, columns, texts)
        held = _HOLDING.get(con)
        FILED[con] = frozenset(
            t
            for t in SCOPED
            if src.snap.files.get(t) and (held is None or held[0] is not snap or t in held[1])
        )
        _payloads(con, src, tables, texts)
        stmts = []
        for name in tables:
            # (the runs view reads a temporary table made at connect: a filter is enough)
            if name == "runs":
                stmts.append(
                    f"CREATE OR REPLACE TEMP TABLE runs AS SELECT * FROM main.runs WHERE {where}"
                )
            else:
                # (told its questions, which never read <name>_all_sources: one statement a table)
                fused = columns is not None and f"{name}_all_sources" not in columns
                stmts += table_statements(name, src, "TEMP TABLE", "_scope_payloads", fused)
        con.execute(";\n".join(stmts))  # one call: the copies are small, a call's own cost is not
        _materialize(con, materialized)
    except BaseException:
        # (the views again, and the connection's optimizers: a failed scope leaves nothing)
        leave(con)
        raise


def _materialize(con: duckdb.DuckDBPyConnection, names: Iterable[str]) -> None:
    """Each macro's rows for every run of the scope (the copies hold those runs only), once; a temporary macro of
    its name, looked up before the catalog's, reads them for the runs a query selects."""
    for name in names:
        materialize(con, name, "_scope_" + name)


def materialize(con: duckdb.DuckDBPyConnection, name: str, table: str) -> None:
    """The rows of the table macro ``name`` (all runs: its parameters NULL) in the temporary table ``table``, and a
    temporary macro ``name`` of the same parameters that reads them for the runs it selects: looked up before the
    catalog's, it answers every query of this connection from those rows (a run scope's copies; serve's facts)."""
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {_ident(table)} AS SELECT * FROM {_ident(name)}(NULL, NULL, NULL, NULL);\n"
        f"CREATE OR REPLACE TEMP MACRO {_ident(name)}(p_run, p_since, p_until, p_tag) AS TABLE "
        f"SELECT * FROM {_ident(table)} "
        "WHERE run_id IN (SELECT run_id FROM selected_runs(p_run, p_since, p_until, p_tag))"
    )


def leave(con: duckdb.DuckDBPyConnection) -> None:
    """The views again: every temporary copy dropped (those there are, in one call, as they were made), the
    connection's optimizers as they were."""
    there = temp_tables(con)
    settings, made = restore(con)
    names = [n for n in SCOPED + _EXTRA + tuple(made) if n in there]
    drops = [f"DROP TABLE IF EXISTS temp.{_ident(n)}" for n in names] + settings
    for m in MATERIALIZED:
        if "_scope_" + m in there:
            drops += [
                f"DROP MACRO TABLE IF EXISTS temp.{_ident(m)}",
                f"DROP TABLE IF EXISTS temp.{_ident('_scope_' + m)}",
            ]
    if drops:
        con.execute(";\n".join(drops))


@contextlib.contextmanager
def scoped(
    con: duckdb.DuckDBPyConnection,
    run_ids: Iterable[str],
    tables: Iterable[str] = SCOPED,
    materialized: Iterable[str] = (),
    answers: bool = True,
    queries: Iterable[str] | None = None,
) -> Iterator[None]:
    """Inside: the tables ``tables`` hold the rows of ``run_ids`` only (and the ``materialized`` macros answer from
    their rows over them, :func:`enter`); with ``queries`` (the named queries to be asked), only the tables those
    read and the macros of :data:`MATERIALIZED` they call. Where the runs' answers are kept
    (:mod:`pt2logs.query.kept_answers`; ``answers=False``: not read; read for a scope of one run or two), the named
    queries they hold are answered from them and another query's tables are copied when it is asked."""
    ids, tables, materialized = list(run_ids), tuple(tables), tuple(materialized)
    # (a scope of more runs, serve's /runs page's, asks its own questions: not the ones kept about a run)
    kept = kept_answers.load(con, ids) if answers and len(set(ids)) <= 2 else {}
    if not kept:
        texts = columns = None
        if queries is not None:
            queries = tuple(queries)
            need = tables_for(queries)
            tables, materialized = tuple(t for t in tables if t in need), materialized_for(queries)
            texts, columns = texts_for(queries), columns_for(queries)
        enter(con, ids, tables, materialized, texts, columns)
        ASKED[con] = {}  # (a question asked twice inside is run once: the copies stay as they are)
        try:
            if queries is not None:
                empty_answers.gate(con, queries, FILED.pop(con, None))
                ANSWERS[con] = scope_columns.widening(
                    frozenset(queries), tables, tables_for, lambda need: enter(con, ids, need)
                )
            yield
        finally:
            ANSWERS.pop(con, None)
            empty_answers.ungate(con)
            ASKED.pop(con, None)
            leave(con)
        return
    done: set[str] = set()

    def miss(name: str) -> None:
        need = [t for t in tables if t in tables_for([name]) and t not in done]
        mat = [
            m
            for m in materialized_for([name])
            if (queries is not None or m in materialized) and m not in done
        ]
        if need or mat:
            enter(con, ids, need, mat)
            done.update(need, mat)

    stop = kept_answers.answering(con, kept, miss)
    try:
        yield
    finally:
        stop()
        if done:
            leave(con)
