"""Outcomes kept per transaction: the rows ``rank_outcomes()`` decided for a run, read instead of decided again.

A run's outcome reads the biggest tables of the warehouse (each rank's largest gap between two ``events`` or
two ``log_lines``, its compiles, the compiles left open): deciding it for a fleet costs a scan and a sort of
all of them, every time a page asks. Yet every fact it reads belongs to the run's live transaction (a run is
ingested whole: :mod:`pt2logs.query.views` keeps per run the rows of its newest transaction), so once that
transaction is committed the run's outcome cannot change any more, except by a change of the rules. So:

- ``_outcomes/<key>/<txn>.pq`` holds the ``rank_outcomes()`` rows of transaction ``txn``'s runs, written
  after the commit (:mod:`pt2logs.query.outcome_cache`: by ``ingest`` for its transactions, by ``compact``
  for every live transaction that has none). ``<key>`` is a hash of the rules (the ``rank_outcomes``
  macro as filled, the kept columns' declaration and its version, pt2logs' version): rules that change
  read another folder, which is empty until filled, so a kept verdict is never a stale one.
- The ``_rank_outcomes_kept`` view reads the files of the snapshot's live transactions, semi-joined to
  each run's live transaction: a run ingested again (another rank's file came later, a stderr capture
  after its trace) has a new transaction, whose rows are decided anew; until they are kept, the macro
  decides them at query time, as it does for every run of a warehouse written before this (no folder).
- The ``rank_outcomes()`` macro returns the kept rows of the selected runs and decides the rest: the
  answers are the same either way (tests/test_outcome_store.py compares them on real runs).

A cache file is written whole (a rename; one object on an object store); a damaged one makes a query fail
naming it (delete the folder: the outcomes are then decided at query time, and ``compact`` keeps them anew).
"""

from __future__ import annotations

import functools
import hashlib
import os
from typing import Any

from pt2logs.query.sql_text import literal
from pt2logs.store.parts import Layout, txn_of
from pt2logs.tables.outcomes import KEPT_RANK_OUTCOMES, KEPT_VERSION
from pt2logs.version import __version__

#: the folder (under the warehouse root) of the kept outcomes
KEPT_DIR = "_outcomes"
#: a kept file's suffix: Parquet, but not ``.parquet``, which names the tables' own files (a glob over the
#: warehouse for ``*.parquet`` finds tables only)
SUFFIX = ".pq"
#: PT2LOGS_OUTCOME_CACHE=0: every outcome decided at query time (nothing read from or written to the folder)
ENV = "PT2LOGS_OUTCOME_CACHE"

_DUCK = {
    "str": "VARCHAR",
    "i32": "INTEGER",
    "i64": "BIGINT",
    "f64": "DOUBLE",
    "bool": "BOOLEAN",
    "ts": "TIMESTAMPTZ",
}


def enabled() -> bool:
    return os.environ.get(ENV, "1") != "0"


@functools.cache
def key() -> str:
    """The rules' hash: the folder the kept rows of these rules live in."""
    from pt2logs.query.macros import macro_sql  # (not at import: a cached catalog needs no macros)

    h = hashlib.sha256()
    for part in (
        macro_sql("rank_outcomes"),
        repr([(c.name, c.kind) for c in KEPT_RANK_OUTCOMES]),
        str(KEPT_VERSION),
        __version__,
    ):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def folder(lay: Layout) -> str:
    return lay.path(KEPT_DIR, key())


def file_path(lay: Layout, txn: str) -> str:
    return lay.path(KEPT_DIR, key(), txn + SUFFIX)


def kept_txns(lay: Layout) -> set[str]:
    """The transactions whose rows are kept under the current rules (one listing of the folder)."""
    try:
        names = lay.fs.ls(folder(lay), detail=False)
    except (FileNotFoundError, NotADirectoryError):
        return set()
    out = set()
    for n in names:
        base = n.rstrip("/").rsplit("/", 1)[-1]
        if base.endswith(SUFFIX) and txn_of("part-" + base[: -len(SUFFIX)] + "-x-0"):
            out.add(base[: -len(SUFFIX)])
    return out


def live_commit_txns(runs_files: list[str]) -> set[str]:
    """The transactions of a snapshot's ``runs`` files (its commits)."""
    return {t for t in (txn_of(r) for r in runs_files) if t}


def live_kept(lay: Layout, runs_files: list[str] | None) -> list[str]:
    """The transactions among the snapshot's live commits (``runs_files``) whose outcomes are kept and read
    (none with PT2LOGS_OUTCOME_CACHE=0): what ``_rank_outcomes_kept`` reads, and part of a snapshot's
    catalog key (pt2logs.query.catalog), as outcomes are kept after their commit."""
    if runs_files is None or not enabled():
        return []
    return sorted(live_commit_txns(runs_files) & kept_txns(lay))


def view_sql(lay: Layout, runs_files: list[str] | None) -> str:
    """``_rank_outcomes_kept``: the kept rows of the snapshot's live runs (``runs_files``: its commits; None:
    none read, e.g. the views file for the DuckDB CLI, or with PT2LOGS_OUTCOME_CACHE=0)."""
    cols = ", ".join(f"CAST({c.name} AS {_DUCK[c.kind]}) AS {c.name}" for c in KEPT_RANK_OUTCOMES)
    txns = live_kept(lay, runs_files)
    if not txns:
        nulls = ", ".join(f"CAST(NULL AS {_DUCK[c.kind]}) AS {c.name}" for c in KEPT_RANK_OUTCOMES)
        return f"CREATE OR REPLACE VIEW _rank_outcomes_kept AS SELECT {nulls} WHERE false"
    urls = ", ".join(literal(lay.url(KEPT_DIR, key(), t + SUFFIX)) for t in txns)
    return (
        f"CREATE OR REPLACE VIEW _rank_outcomes_kept AS SELECT {cols} FROM read_parquet([{urls}]) k "
        "SEMI JOIN _live l USING (run_id, txn)"
    )


def columns() -> list[Any]:
    return list(KEPT_RANK_OUTCOMES)
