"""The columns a run scope's copies read: those its questions can read, the others NULL.

A scope told its questions (:func:`pt2logs.query.run_scope.scoped` with ``queries``) copies each table it needs
with only the columns whose names are words of those questions and of the macros they call
(:func:`pt2logs.query.run_scope.columns_for`), plus the ones the copy's own statement reads
(:func:`needed`: the run and transaction, the source choice, a path's kind, a compile id's integers, a stored
text's key); every other column keeps its name and type and is NULL, its Parquet never decoded. At 10,000 runs a
run's rows are a few of a row group of tens of thousands (bench/fleet.py's transaction): a scope of two runs filters
them after the scan (DuckDB pushes an ``IN`` of two values to the Parquet reader for its statistics only) and
decoded every column of that row group, ``compilation_metrics``' 111 for 22 read by a diff (bench/RESULTS.md).

A word is a superset of a reference (a column named anywhere is kept), but not of ``*``: a question whose answer
carries a column it never names (``SELECT *``, ``t.*``, ``COLUMNS(...)``) would read NULL there.
tests/test_scope_columns.py derives the columns each scoped question reads from DuckDB's own plan over the views and
checks every one is kept, and asks every question over the narrowed copies and the full ones; a question asked
inside a narrowed scope that it was not told of widens the copies it reads first (:mod:`pt2logs.query.run_scope`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pt2logs.store.parts import PARTITION, STORED
from pt2logs.tables import TABLES
from pt2logs.tables.compile import FRAME_ID_TABLES

#: columns every copy reads whatever its questions: the run filter, the live transaction, the partition
_ALWAYS = ("run_id", "txn", PARTITION)


def needed(table: str, words: frozenset[str], texts: Iterable[str] | None = None) -> frozenset[str]:
    """The stored columns of ``table`` a copy for questions of these ``words`` reads (its files' other columns are
    not read: NULL in the copy); ``texts``: the stored texts put back (:func:`pt2logs.query.run_scope.texts_for`,
    None: every one named)."""
    t = TABLES[table]
    cols = {c for c in t.names if c in words} | set(_ALWAYS)
    # the one source a run: its rank, and the facts another source may add
    if "source" in t.names:
        cols |= {"source", *t.same_fact}
    cols |= {kind for col, kind in t.run_relative if kind and col in cols}
    # a compile id's integers: stored, else the rule's from the compile id
    if table in FRAME_ID_TABLES:
        cols |= {"frame_id", "frame_compile_id", "compile_id"}
    wanted = None if texts is None else set(texts)
    keys = {
        key
        for text, key in STORED.get(table, ())
        if text in cols and (wanted is None or text in wanted)
    }
    return frozenset(cols & set(t.names)) | keys | {PARTITION}


def widening(
    told: frozenset[str],
    copied: Iterable[str],
    reads: Callable[[Iterable[str]], frozenset[str]],
    remake: Callable[[list[str]], None],
) -> Callable[[str, dict[str, Any]], None]:
    """The hook (:data:`pt2logs.query.queries.ANSWERS`) of a scope whose copies hold only the columns of the
    questions it was ``told``: another question asked inside first has the ``copied`` tables it ``reads`` made again
    by ``remake`` with every column and stored text (slower, never wrong: a caller's list of its questions that
    misses one)."""
    copied, widened = tuple(t for t in copied if t != "runs"), set()  # (``runs`` is copied whole)

    def hook(name: str, bound: dict[str, Any]) -> None:
        if name not in told and name not in widened:
            widened.add(name)
            if need := [t for t in copied if t in reads([name])]:
                remake(need)
        return None

    return hook
