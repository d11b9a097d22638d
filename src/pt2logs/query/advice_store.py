"""Advice items kept per transaction: the rows ``advice_items()`` matched for a run, read instead of matched again.

The advice rules read every recompile, graph break, failure, cache lookup and CUDA-graph skip of the runs
asked about, and the compiles of their frames: the weekly dashboard's advice card matched them for every run
of the week (at 10,000 runs most of its time and memory). Like a run's outcome
(:mod:`pt2logs.query.outcome_store`), a run's items read only the rows of its live transaction (a run is
ingested whole), so once that transaction is committed they cannot change, except by new rules:

- ``_advice/<key>/<txn>.pq`` holds the ``advice_items()`` rows of transaction ``txn``'s runs, and one row
  per run with ``id`` NULL (a run that matched nothing is kept too: that it has no items is an answer),
  written after the commit with the outcomes (:func:`pt2logs.query.advice_cache.keep`, called by
  :func:`pt2logs.query.outcome_cache.keep`: by ``ingest``, by ``compact``). ``<key>`` hashes the filled
  ``advice_items`` macro and every macro it calls (advice.toml's rules are filled into it), the kept columns'
  declaration (``tables/outcomes.py`` ``KEPT_ADVICE_ITEMS``, ``KEPT_ADVICE_VERSION``) and pt2logs' version:
  other rules read another folder, empty until filled, so a kept item is never a stale one.
- ``_advice_items_kept`` reads the files of the snapshot's live transactions, semi-joined to each run's live
  transaction; ``advice_items()`` returns the kept rows of the selected runs that have them and matches the
  others, so the answers are the same either way (tests/test_advice_store.py). ``PT2LOGS_OUTCOME_CACHE=0``
  neither reads nor writes them.
"""

from __future__ import annotations

import functools
import hashlib
import re

from pt2logs.query import outcome_store
from pt2logs.query.sql_text import literal
from pt2logs.store.parts import Layout, txn_of
from pt2logs.tables import TABLES
from pt2logs.tables.outcomes import KEPT_ADVICE_ITEMS, KEPT_ADVICE_VERSION
from pt2logs.version import __version__

#: the folder (under the warehouse root) of the kept items
KEPT_DIR = "_advice"
SUFFIX = outcome_store.SUFFIX
#: the macro whose rows are kept
MACRO = "advice_items"

_DUCK = {
    "str": "VARCHAR",
    "i32": "INTEGER",
    "i64": "BIGINT",
    "f64": "DOUBLE",
    "bool": "BOOLEAN",
    "ts": "TIMESTAMPTZ",
    "list<str>": "VARCHAR[]",
    "list<i32>": "INTEGER[]",
}


@functools.cache
def called() -> tuple[frozenset[str], frozenset[str]]:
    """The macros ``advice_items()`` calls, itself included, and the tables they read."""
    from pt2logs.query.macros import calls, load_macros

    names = load_macros()
    todo, seen = [MACRO], set()
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += calls(names[m], set(names))
    text = " ".join(names[m].sql for m in seen)
    tables = {t for t in TABLES if re.search(rf"\b{t}\b", text)} | {"runs", "files"}
    return frozenset(seen), frozenset(tables)


@functools.cache
def key() -> str:
    """The rules' hash: the folder the kept items of these rules live in."""
    from pt2logs.query.macros import macro_sql

    h = hashlib.sha256()
    for part in (
        *(macro_sql(m) for m in sorted(called()[0])),
        repr([(c.name, c.kind) for c in KEPT_ADVICE_ITEMS]),
        str(KEPT_ADVICE_VERSION),
        __version__,
    ):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def file_path(lay: Layout, txn: str) -> str:
    return lay.path(KEPT_DIR, key(), txn + SUFFIX)


def kept_txns(lay: Layout) -> set[str]:
    """The transactions whose items are kept under the current rules (one listing of the folder)."""
    try:
        names = lay.fs.ls(lay.path(KEPT_DIR, key()), detail=False)
    except (FileNotFoundError, NotADirectoryError):
        return set()
    out = set()
    for n in names:
        base = n.rstrip("/").rsplit("/", 1)[-1]
        if base.endswith(SUFFIX) and txn_of("part-" + base[: -len(SUFFIX)] + "-x-0"):
            out.add(base[: -len(SUFFIX)])
    return out


def live_kept(lay: Layout, runs_files: list[str] | None) -> list[str]:
    """The snapshot's live commits (``runs_files``) whose items are kept and read (none when kept rows are off)."""
    if runs_files is None or not outcome_store.enabled():
        return []
    return sorted(outcome_store.live_commit_txns(runs_files) & kept_txns(lay))


def view_sql(lay: Layout, runs_files: list[str] | None) -> str:
    """``_advice_items_kept``: the kept rows of the snapshot's live runs (``runs_files`` None: none read)."""
    cols = ", ".join(f"CAST({c.name} AS {_DUCK[c.kind]}) AS {c.name}" for c in KEPT_ADVICE_ITEMS)
    txns = live_kept(lay, runs_files)
    if not txns:
        nulls = ", ".join(f"CAST(NULL AS {_DUCK[c.kind]}) AS {c.name}" for c in KEPT_ADVICE_ITEMS)
        return f"CREATE OR REPLACE VIEW _advice_items_kept AS SELECT {nulls} WHERE false"
    urls = ", ".join(literal(lay.url(KEPT_DIR, key(), t + SUFFIX)) for t in txns)
    return (
        f"CREATE OR REPLACE VIEW _advice_items_kept AS SELECT {cols} FROM read_parquet([{urls}]) k "
        "SEMI JOIN _live l USING (run_id, txn)"
    )
