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

A cache file is written whole (a rename; one object on an object store). A kept file that is damaged (empty,
cut short, overwritten: no Parquet magic at either end, or a footer longer than the file) or that cannot be
read is not read: its runs are decided at query time, as if nothing were kept, and the connection warns
naming the file (:func:`damaged_live`); the next ``ingest`` or ``compact`` writes it anew. The check reads
each listed file's first 4 and last 8 bytes once per process (one ranged read a file on an object store,
all at once); damage inside a file whose ends are whole is DuckDB's to find when it reads it.
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


def _listed(lay: Layout) -> dict[str, tuple[str, int, str]]:
    """The kept files under the current rules: txn -> (path, size, what changes when it is rewritten)."""
    try:
        entries = lay.fs.ls(folder(lay), detail=True)
    except (FileNotFoundError, NotADirectoryError):
        return {}
    out = {}
    for e in entries:
        base = e["name"].rstrip("/").rsplit("/", 1)[-1]
        txn = base[: -len(SUFFIX)]
        if e.get("type") == "file" and base.endswith(SUFFIX) and txn_of(f"part-{txn}-x-0"):
            stamp = e.get("mtime") or e.get("ETag") or e.get("LastModified") or ""
            out[txn] = (e["name"], int(e.get("size") or 0), str(stamp))
    return out


#: (path, size, stamp) -> why the kept file is not read (None: it is whole), checked once per process
_CHECKED: dict[tuple[str, int, str], str | None] = {}
_MAGIC = b"PAR1"


def _why(head: bytes, tail: bytes, size: int) -> str | None:
    """Why a Parquet file of ``size`` bytes with these first 4 / last 8 bytes cannot be read (None: it can)."""
    if size < 12:
        return f"{size} bytes long, too short for a Parquet file"
    if head != _MAGIC or tail[4:] != _MAGIC:
        return "not a whole Parquet file (no magic bytes at its start or end)"
    if int.from_bytes(tail[:4], "little") + 12 > size:
        return "cut short (its footer says it is longer)"
    return None


def _check(
    lay: Layout, files: list[tuple[str, int, str]]
) -> dict[tuple[str, int, str], str | None]:
    """Why each of ``files`` is not read (None: it is whole); an object store's ends read in one batch of
    ranged reads. A verdict on the bytes is kept in :data:`_CHECKED`; a failed read is asked again next time."""
    todo = [f for f in files if f not in _CHECKED]
    ends: list[tuple[bytes, bytes] | str] = []
    if lay.remote:
        whole = [f for f in todo if f[1] >= 12]
        try:
            got = lay.fs.cat_ranges(
                [p for p, *_ in whole for _ in (0, 1)],
                [s for _, n, _ in whole for s in (0, n - 8)],
                [e for _, n, _ in whole for e in (4, n)],
                on_error="return",
            )
        except Exception as e:  # the store refused the batch: each file left to query time
            got = [e] * (2 * len(whole))
        parts = iter(got)
        for _, n, _ in todo:
            if n >= 12:
                h, t = next(parts), next(parts)
                bad = next((x for x in (h, t) if isinstance(x, BaseException)), None)
                ends.append(f"unreadable ({bad})" if bad is not None else (h, t))
            else:
                ends.append((b"", b""))
    else:
        for path, n, _ in todo:
            try:
                with open(path, "rb") as fh:
                    head = fh.read(4)
                    fh.seek(max(n - 8, 0))
                    ends.append((head, fh.read(8)))
            except OSError as e:
                ends.append(f"unreadable ({e.strerror or e})")
    failed = {}
    for f, got_ends in zip(todo, ends):
        if isinstance(got_ends, str):
            failed[f] = got_ends
        else:
            _CHECKED[f] = _why(*got_ends, f[1])
    return {f: failed[f] if f in failed else _CHECKED[f] for f in files}


def kept_txns(lay: Layout, damaged: dict[str, str] | None = None) -> set[str]:
    """The transactions whose rows are kept under the current rules and readable (one listing of the folder);
    ``damaged`` gets the others: txn -> why."""
    listed = _listed(lay)
    verdicts = _check(lay, list(listed.values()))
    out = set()
    for txn, f in listed.items():
        why = verdicts[f]
        if why is None:
            out.add(txn)
        elif damaged is not None:
            damaged[txn] = why
    return out


def recheck(lay: Layout) -> bool:
    """Read every kept file whose ends looked whole (a query failed: the bytes inside one may be damaged); those
    that do not read are not read from now on. True when one was found (the caller makes its views again)."""
    import pyarrow.parquet as pq

    found = False
    for f in _listed(lay).values():
        if _CHECKED.get(f) is None and f not in _READ:  # (unchecked, or whole at its ends)
            try:
                with lay.fs.open(f[0], "rb") as fh:
                    pq.read_table(fh)  # (small: a transaction's ranks)
                _READ.add(f)
            except Exception as e:  # (any parse failure: pyarrow raises OSError, ArrowInvalid, ...)
                _CHECKED[f] = f"unreadable ({type(e).__name__}: {' '.join(str(e).split())[:200]})"
                found = True
    return found


#: the kept files :func:`recheck` read whole (not read again by the next failed query)
_READ: set[tuple[str, int, str]] = set()


def damaged_live(lay: Layout, runs_files: list[str] | None) -> list[str]:
    """Warnings for the kept files of the snapshot's live commits that are not read (their runs are decided at
    query time)."""
    if not runs_files or not enabled():
        return []
    bad: dict[str, str] = {}
    kept_txns(lay, bad)
    return [
        f"{file_path_url(lay, t)} (kept outcomes) is {bad[t]}: not read, its runs' outcomes are decided "
        "at query time; the next `pt2logs ingest` or `pt2logs compact` writes it anew"
        for t in sorted(live_commit_txns(runs_files) & set(bad))
    ]


def file_path_url(lay: Layout, txn: str) -> str:
    return lay.url(KEPT_DIR, key(), txn + SUFFIX)


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
    urls = ", ".join(literal(file_path_url(lay, t)) for t in txns)
    return (
        f"CREATE OR REPLACE VIEW _rank_outcomes_kept AS SELECT {cols} FROM read_parquet([{urls}]) k "
        "SEMI JOIN _live l USING (run_id, txn)"
    )


def columns() -> list[Any]:
    return list(KEPT_RANK_OUTCOMES)
