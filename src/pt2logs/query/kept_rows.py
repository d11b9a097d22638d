"""Rows kept per committed transaction: what a table macro answered for a run, read instead of asked again.

Two macros read the biggest tables of the warehouse for every run they are asked about: ``rank_outcomes()``
(each rank's largest gap between two ``events`` or ``log_lines``, its compiles, those left open) and
``advice_items()`` (every recompile, graph break, failure, cache lookup and CUDA-graph skip, the compiles of
their frames). Yet every fact they read belongs to the run's live transaction (a run is ingested whole:
:mod:`pt2logs.query.views` keeps per run the rows of its newest transaction), so once that transaction is
committed their rows for the run cannot change any more, except by a change of the rules. The same holds for
``run_facts()``, what the fleet's weekly cards total per run (compile time, recompiles, breaks, break sites). So,
for each :class:`Kind` (:data:`OUTCOMES`, :data:`ADVICE`, :data:`FACTS`):

- ``<folder>/<key>/<txn>.pq`` holds the macro's rows of transaction ``txn``'s runs (advice items: and one row
  per run with ``id`` NULL, as a run that matched nothing is an answer too), written after the commit
  (:mod:`pt2logs.query.kept_cache`: by ``ingest`` for its transactions, by ``compact`` for every live
  transaction that has none). ``<key>`` hashes the rules (the macro and every macro it calls, as filled: the
  advice table is filled into advice_items()), the kept columns' declaration and its version
  (``tables/outcomes.py``) and pt2logs' version: other rules read another folder, empty until filled, so a
  kept row is never a stale one.
- The kind's view (``_rank_outcomes_kept``, ``_advice_items_kept``, ``_run_facts_kept``) reads the files of the snapshot's live
  transactions, semi-joined to each run's live transaction: a run ingested again has a new transaction, whose
  rows are made anew; until they are kept the macro asks its rules, as for every run of a warehouse written
  before this (no folder). The macro returns the kept rows of the selected runs and asks the rules for the
  rest; when every live commit is kept it reads the kept rows alone (:func:`macro_statements`). Same answers
  either way (tests/test_outcome_store.py, tests/test_advice_store.py). ``PT2LOGS_OUTCOME_CACHE=0``: nothing
  read from or written to either folder.

A kept file is written whole (a rename; one object on an object store). One that is damaged (empty, cut short,
overwritten: no Parquet magic at either end, or a footer longer than the file) or that cannot be read is not
read: its runs are asked of the rules at query time, as if nothing were kept, and the connection warns naming
the file (:func:`damaged_live`); the next ``ingest`` or ``compact`` writes it anew. The check reads each listed
file's first 4 and last 8 bytes once per process (one ranged read a file on an object store, all at once);
damage inside a file whose ends are whole is found when a query fails on it (:func:`recheck` reads the files
whole; tests/test_outcome_store_damage.py).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from dataclasses import dataclass

from pt2logs.query.sql_text import literal
from pt2logs.store.parts import Layout, txn_of
from pt2logs.tables import TABLES
from pt2logs.tables.outcomes import (
    KEPT_ADVICE_ITEMS,
    KEPT_ADVICE_VERSION,
    KEPT_FACTS_VERSION,
    KEPT_RANK_OUTCOMES,
    KEPT_RUN_FACTS,
    KEPT_VERSION,
)
from pt2logs.tables.schema import Column
from pt2logs.version import __version__

#: a kept file's suffix: Parquet, but not ``.parquet``, which names the tables' own files (a glob over the
#: warehouse for ``*.parquet`` finds tables only)
SUFFIX = ".pq"
#: PT2LOGS_OUTCOME_CACHE=0: every row asked of the rules at query time (nothing read from or written to a folder)
ENV = "PT2LOGS_OUTCOME_CACHE"


@dataclass(frozen=True, eq=False)
class Kind:
    """A table macro whose rows are kept per committed transaction."""

    #: what the rows are, in words (warnings, notes)
    what: str
    #: the folder under the warehouse root
    folder: str
    #: the table macro (``p_run, p_since, p_until, p_tag``) whose rows are kept
    macro: str
    #: the view of the snapshot's live kept rows
    view: str
    #: the kept columns (``txn`` last), declared in tables/outcomes.py, and their version
    columns: tuple[Column, ...]
    version: int
    #: the kept rows that are the macro's answers (the others say a run was asked)
    answers: str = "true"
    #: a row per run with the macro's columns NULL but ``run_id``, ``run`` and ``txn`` (a run without rows)
    per_run: bool = False
    #: runs asked together by the keep (each chunk scans the transaction's files once; memory follows it)
    chunk_runs: int = 250


OUTCOMES = Kind(
    "outcomes", "_outcomes", "rank_outcomes", "_rank_outcomes_kept",
    tuple(KEPT_RANK_OUTCOMES), KEPT_VERSION,
)  # fmt: skip
ADVICE = Kind(
    "advice items", "_advice", "advice_items", "_advice_items_kept",
    tuple(KEPT_ADVICE_ITEMS), KEPT_ADVICE_VERSION, answers="id IS NOT NULL", per_run=True, chunk_runs=500,
)  # fmt: skip
#: what the weekly cards total per run (compile time, recompiles, breaks, break sites): the fleet's pages sum
#: 10,000 runs' rows, not the tables' (bench/RESULTS.md)
FACTS = Kind(
    "per-run facts", "_run_facts", "run_facts", "_run_facts_kept",
    tuple(KEPT_RUN_FACTS), KEPT_FACTS_VERSION, chunk_runs=1000,
)  # fmt: skip
KINDS = (OUTCOMES, ADVICE, FACTS)


def enabled() -> bool:
    return os.environ.get(ENV, "1") != "0"


@functools.cache
def called(kind: Kind) -> tuple[frozenset[str], frozenset[str]]:
    """The macros ``kind``'s macro calls, itself included, and the tables they read."""
    from pt2logs.query.macros import (
        calls,
        load_macros,
    )  # (not at import: a cached catalog needs no macros)

    names = load_macros()
    todo, seen = [kind.macro], set()
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += calls(names[m], set(names))
    text = " ".join(names[m].sql for m in seen)
    tables = {t for t in TABLES if re.search(rf"\b{t}\b", text)} | {"runs", "files"}
    return frozenset(seen), frozenset(tables)


@functools.cache
def key(kind: Kind) -> str:
    """The rules' hash: the folder the kept rows of these rules live in. Made once per code
    (:func:`pt2logs.query.kept_files.kept_texts`: every connection asks it, and the macros it hashes took ~30 ms
    to read and fill)."""
    from pt2logs.query.kept_files import kept_texts

    return kept_texts(f"rules-key{kind.folder}", lambda: {"key": _rules_key(kind)})["key"]


def _rules_key(kind: Kind) -> str:
    from pt2logs.query.macros import macro_sql

    h = hashlib.sha256()
    for part in (
        *(macro_sql(m) for m in sorted(called(kind)[0])),
        repr([(c.name, c.kind) for c in kind.columns]),
        str(kind.version),
        __version__,
    ):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def folder(kind: Kind, lay: Layout) -> str:
    return lay.path(kind.folder, key(kind))


def file_path(kind: Kind, lay: Layout, txn: str) -> str:
    return lay.path(kind.folder, key(kind), txn + SUFFIX)


def file_url(kind: Kind, lay: Layout, txn: str) -> str:
    return lay.url(kind.folder, key(kind), txn + SUFFIX)


def _listed(kind: Kind, lay: Layout) -> dict[str, tuple[str, int, str]]:
    """The kept files under the current rules: txn -> (path, size, what changes when it is rewritten)."""
    try:
        entries = lay.fs.ls(folder(kind, lay), detail=True)
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
#: the kept files :func:`recheck` read whole (not read again by the next failed query)
_READ: set[tuple[str, int, str]] = set()
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


def _ends(lay: Layout, todo: list[tuple[str, int, str]]) -> list[tuple[bytes, bytes] | str]:
    """Each file's first 4 and last 8 bytes, or why they could not be read; an object store's in one batch of
    ranged reads."""
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
        return ends
    for path, n, _ in todo:
        try:
            with open(path, "rb") as fh:
                head = fh.read(4)
                fh.seek(max(n - 8, 0))
                ends.append((head, fh.read(8)))
        except OSError as e:
            ends.append(f"unreadable ({e.strerror or e})")
    return ends


def _check(
    lay: Layout, files: list[tuple[str, int, str]]
) -> dict[tuple[str, int, str], str | None]:
    """Why each of ``files`` is not read (None: it is whole). A verdict on the bytes is kept in
    :data:`_CHECKED`; a failed read is asked again next time."""
    todo = [f for f in files if f not in _CHECKED]
    failed = {}
    for f, got in zip(todo, _ends(lay, todo)):
        if isinstance(got, str):
            failed[f] = got
        else:
            _CHECKED[f] = _why(*got, f[1])
    return {f: failed[f] if f in failed else _CHECKED[f] for f in files}


def kept_txns(kind: Kind, lay: Layout, damaged: dict[str, str] | None = None) -> set[str]:
    """The transactions whose rows of ``kind`` are kept under the current rules and readable (one listing of its
    folder); ``damaged`` gets the others: txn -> why."""
    listed = _listed(kind, lay)
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
    """Read every kept file (of every kind) whose ends looked whole (a query failed: the bytes inside one may be
    damaged); those that do not read are not read from now on. True when one was found (the caller makes its
    views again)."""
    import pyarrow.parquet as pq

    found = False
    for kind in KINDS:
        for f in _listed(kind, lay).values():
            if _CHECKED.get(f) is None and f not in _READ:  # (unchecked, or whole at its ends)
                try:
                    with lay.fs.open(f[0], "rb") as fh:
                        pq.read_table(fh)  # (small: a transaction's runs)
                    _READ.add(f)
                except (
                    Exception
                ) as e:  # (any parse failure: pyarrow raises OSError, ArrowInvalid, ...)
                    _CHECKED[f] = (
                        f"unreadable ({type(e).__name__}: {' '.join(str(e).split())[:200]})"
                    )
                    found = True
    return found


def live_commit_txns(runs_files: list[str]) -> set[str]:
    """The transactions of a snapshot's ``runs`` files (its commits)."""
    return {t for t in (txn_of(r) for r in runs_files) if t}


def damaged_live(lay: Layout, runs_files: list[str] | None) -> list[str]:
    """Warnings for the kept files (of every kind) of the snapshot's live commits that are not read (their runs
    are asked of the rules at query time)."""
    if not runs_files or not enabled():
        return []
    out = []
    live = live_commit_txns(runs_files)
    for kind in KINDS:
        bad: dict[str, str] = {}
        kept_txns(kind, lay, bad)
        out += [
            f"{file_url(kind, lay, t)} (kept {kind.what}) is {bad[t]}: not read, its runs' {kind.what} are "
            "decided at query time; the next `pt2logs ingest` or `pt2logs compact` writes it anew"
            for t in sorted(live & set(bad))
        ]
    return out


def live_kept(kind: Kind, lay: Layout, runs_files: list[str] | None) -> list[str]:
    """The transactions among the snapshot's live commits (``runs_files``) whose rows of ``kind`` are kept and
    read (none with PT2LOGS_OUTCOME_CACHE=0): what the kind's view reads, and part of a snapshot's catalog key
    (pt2logs.query.catalog), as rows are kept after their commit."""
    if runs_files is None or not enabled():
        return []
    return sorted(live_commit_txns(runs_files) & kept_txns(kind, lay))


def view_sql(kind: Kind, lay: Layout, runs_files: list[str] | None) -> str:
    """The kind's view: the kept rows of the snapshot's live runs (``runs_files``: its commits; None: none read,
    e.g. the views file for the DuckDB CLI, or with PT2LOGS_OUTCOME_CACHE=0)."""
    txns = live_kept(kind, lay, runs_files)
    if not txns:
        nulls = ", ".join(f"CAST(NULL AS {c.duck}) AS {c.name}" for c in kind.columns)
        return f"CREATE OR REPLACE VIEW {kind.view} AS SELECT {nulls} WHERE false"
    cols = ", ".join(f"CAST({c.name} AS {c.duck}) AS {c.name}" for c in kind.columns)
    urls = ", ".join(literal(file_url(kind, lay, t)) for t in txns)
    return (
        f"CREATE OR REPLACE VIEW {kind.view} AS SELECT {cols} FROM read_parquet([{urls}]) k "
        "SEMI JOIN _live l USING (run_id, txn)"
    )


def view_statements(lay: Layout, runs_files: list[str] | None, table: list[str]) -> list[str]:
    """Every kind's view, then the table macros' statements ``table``; when every live commit of the snapshot
    has its rows of a kind kept, that kind's macro made to read them alone. Its rules are then no part of the
    queries that call it: DuckDB binds and optimizes a table macro's whole body at every call, 100-170 ms for
    these two at any size of warehouse, for a branch that would match no run. Same answer, same columns
    (tests/test_outcome_store.py, tests/test_advice_store.py)."""
    out = [view_sql(kind, lay, runs_files) for kind in KINDS]
    if runs_files is None:
        return out + list(table)
    live = live_commit_txns(runs_files)
    alone = {k.macro: k for k in KINDS if live <= set(live_kept(k, lay, runs_files))}
    for stmt in table:
        kind = alone.get(stmt.split("(", 1)[0].rsplit(" ", 1)[-1])
        if kind is not None:
            stmt = (
                f"CREATE OR REPLACE MACRO {kind.macro}(p_run, p_since, p_until, p_tag) AS TABLE "
                f"SELECT * EXCLUDE (txn) FROM {kind.view} WHERE {kind.answers} "
                "AND run_id IN (SELECT run_id FROM selected_runs(p_run, p_since, p_until, p_tag))"
            )
        out.append(stmt)
    return out


def rows_sql(kind: Kind, txn: str) -> str:
    """The rows kept of the runs in ``_live`` (the keep narrows it to a chunk of one transaction's runs)."""
    cols = ", ".join(c.name for c in kind.columns if c.name != "txn")
    sql = f"SELECT {cols}, {literal(txn)} AS txn FROM {kind.macro}(NULL, NULL, NULL, NULL)"
    if kind.per_run:
        sql += f" UNION ALL BY NAME SELECT run_id, name AS run, {literal(txn)} AS txn FROM runs"
    return sql
