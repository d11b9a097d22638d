"""The answers about one run kept per committed transaction: a run's summary, ranks, advice and diff sections read
back instead of asked again.

The commands and pages about one run (``summary``, ``ranks``, ``advise``, ``diff``, serve's run and diff pages) ask
some 30 named queries of a run scope (:mod:`pt2logs.query.run_scope`), each 2-25 ms of DuckDB planning, after
copying the run's rows (~0.2 s). Every answer asked inside a scope depends on the run's own rows alone (that is
what a scope may be asked), and a run's rows are those of its live transaction: once it is committed, the answers
cannot change except by other code or SQL. So, once a run's answers were asked, ``_answers/<key>/<txn>.pq``
holds, for each run of transaction
``txn``, each :func:`asked` query's answer as the Arrow IPC stream of the table the query returned (schema and all:
read back, it is that table). ``<key>`` hashes the text of every named query and macro (as filled: the advice
table too), every module of ``pt2logs.query``, ``pt2logs.tables`` and ``pt2logs.store`` (they make the rows the
queries read), DuckDB's and pt2logs' versions: other code reads another folder, empty until kept again, so a kept
answer is never a stale one.

They are kept lazily, for the runs someone reads (a library ingest or a compaction asks none; ``pt2logs ingest``
keeps those of a commit of at most 4 runs once committed, in a detached process: pt2logs.cli.ingest): a
connection that :func:`track` was called on (the CLI's ``summary``, ``ranks``, ``advise``, ``diff``; serve's)
notes each run a scope of its finds without kept answers (:func:`unkept`), and the command keeps that run's
(added to its transaction's file) after it answered (:func:`pt2logs.query.kept_cache.keep_answers`: the CLI in a forked process of its own once its
output is written, serve in a thread after the page); a library connection keeps none unless asked.

A scope over runs that have kept answers (:func:`load`) answers those queries from them (the hook of
:func:`pt2logs.query.queries.run_named`) and copies the tables of any other query only when it is asked. A run
whose id is a prefix of another run's id or name in the same scope is not answered from them (``selected_runs``
would select both). A transaction of more than :data:`MAX_RUNS` runs (a bulk import, a compaction of a fleet) keeps
each run read in a file of its own, ``_answers/<key>/<txn>.runs/<digest of the run id>.pq`` (:func:`run_path`): added
to one file, every read of a new run would rewrite what the runs read before left, and asked whole, ~0.2 s of
queries a run of the fleet. A scope holds its runs' stored texts, so the keep asks scopes of at most
:data:`MAX_BYTES` of logs, and a run of more keeps none. Nothing kept is needed for a right answer;
``PT2LOGS_OUTCOME_CACHE=0`` neither reads nor writes them; a kept file that does not read is not read (its runs are
asked), nor are a run's answers when the snapshot lacks a file of it.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import duckdb

from pt2logs.query import kept_rows
from pt2logs.query.queries import ANSWERS, get_query
from pt2logs.query.sql_text import literal
from pt2logs.store.parts import Layout
from pt2logs.version import __version__

FOLDER = "_answers"
#: bump when what a kept file holds changes in a way the key cannot see
VERSION = 1
#: transactions of more runs than this keep a file per run read, not one file (see the module's doc)
MAX_RUNS = 64
#: the most bytes of logs of the runs of one scope of the keep (a run of more keeps none): a scope holds its runs'
#: stored texts (a run of 64 MB of distinct graphs took the keep's process from 250 to 520 MB)
MAX_BYTES = 8 << 20
#: the diff's questions about each run alone (pt2logs.reports.diff; its cache_misses compares two runs: not kept)
DIFF_ASKED = (
    ("run_overview", {}),
    ("graph_break_hotspots", {"limit": 100000}),
    ("failures_and_restarts", {}),
    ("compile_time_by_function", {"limit": 100000}),
    ("compile_time_by_phase", {}),
    ("top_recompile_causes", {}),
    ("kernel_counts", {}),
    ("cache_hit_rate", {}),
)
#: serve's run page besides the summary (pt2logs.serve.pages_run), and ``advise``'s default (its --limit)
OTHER_ASKED = (
    ("bug_report_compiles", {}),
    ("compile_stacks", {}),
    ("advice", {"limit": 20}),
)


#: the questions about a run compared with another (``base``: the diff's cache_misses), kept per pair of runs: under
#: the run's transaction, their parameters filed with the base's live transaction (:func:`pair_params`)
PAIRED = ("cache_misses",)


def pair_params(bound: dict[str, Any], base_txn: str) -> str:
    """A paired answer's parameters as filed: :func:`params_key` and the base run's live transaction (a base ingested
    again is another pair: its answer is asked again)."""
    return f"{params_key(bound)}@{base_txn}"


def asked() -> list[tuple[str, dict[str, Any]]]:
    """Every (named query, parameters besides ``run_id``) kept per run: the summary's and ranks' sections, the
    run's overview, resolution (``runs``) and outcome, the diff's, advise's, serve's run page's and the run
    dashboard's cards."""
    from pt2logs.reports.outcomes import QUERIES as OUTCOME_QUERIES
    from pt2logs.reports.pages import get_page

    out: list[tuple[str, dict[str, Any]]] = []
    for page in ("summary", "ranks"):
        out += [(s.query, dict(s.params)) for s in get_page(page).sections]
    out += [("run_overview", {}), ("runs", {}), *((q, {}) for q in OUTCOME_QUERIES)]
    out += [*DIFF_ASKED, *OTHER_ASKED, *_run_dashboard()]
    seen: dict[str, tuple[str, dict[str, Any]]] = {}
    for q, p in out:
        seen.setdefault(f"{q}|{params_key({'run_id': '', **p})}", (q, p))
    return list(seen.values())


def _run_dashboard() -> list[tuple[str, dict[str, Any]]]:
    """The cards of the run dashboard (dashboards/run.toml; serve's run page draws some as charts), read as a file:
    pt2logs.dashboard reads the run scope's package."""
    from pt2logs.query.sql_files import data_dirs
    from pt2logs.reports.pages import tomllib  # (the one that Python version has)

    for d in data_dirs("dashboards"):
        if (d / "run.toml").is_file():
            page = tomllib.loads((d / "run.toml").read_text())
            return [(s["query"], dict(s.get("params", {}))) for s in page.get("sections", [])]
    return []


def params_key(bound: dict[str, Any]) -> str:
    """A query's bound parameters as the text a kept answer is filed under (the run's id left out)."""
    return json.dumps(
        {k: v for k, v in bound.items() if k != "run_id"}, sort_keys=True, default=str
    )


def _make_key() -> dict[str, str]:
    from pt2logs.query.macros import fill_texts, load_macros, macro_sql

    h = hashlib.sha256()
    package = Path(__file__).resolve().parents[1]
    parts = [
        str(VERSION),
        __version__,
        duckdb.__version__,
        json.dumps(fill_texts(), sort_keys=True),
    ]
    parts += [f"{q}|{params_key(p)}|{get_query(q).sql}" for q, p in asked()]
    parts += [f"{q}|{get_query(q).sql}" for q in PAIRED]
    parts += [macro_sql(m) for m in sorted(load_macros())]
    for sub in ("query", "tables", "store"):
        parts += [p.read_text() for p in sorted((package / sub).glob("*.py"))]
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return {"key": h.hexdigest()[:16]}


@functools.cache
def key() -> str:
    """The code's hash: the folder the kept answers of this code live in (made once per code: kept_files)."""
    from pt2logs.query.kept_files import kept_texts

    return kept_texts("answers-key", _make_key)["key"]


def file_path(lay: Layout, txn: str) -> str:
    return lay.path(FOLDER, key(), txn + kept_rows.SUFFIX)


#: the suffix of the empty file that says a transaction keeps no answers (more than MAX_RUNS runs, or none of at
#: most MAX_BYTES of logs): a tracked scope does not note it again (a fleet's command would start a keep each time)
NONE_SUFFIX = ".none"


#: the suffix of the folder of a transaction of more than MAX_RUNS runs: a file per run read (:func:`run_path`)
RUNS_SUFFIX = ".runs"


def run_path(lay: Layout, txn: str, run: str) -> str:
    """Where the answers of ``run`` of a transaction of more than :data:`MAX_RUNS` runs are kept."""
    return lay.path(*_run_parts(txn, run))


def _run_parts(txn: str, run: str) -> tuple[str, ...]:
    """(The run id's digest: any text may be a run id.)"""
    name = hashlib.blake2b(run.encode(), digest_size=16).hexdigest()
    return (FOLDER, key(), txn + RUNS_SUFFIX, name + kept_rows.SUFFIX)


def kept(
    lay: Layout, declined: set[str] | None = None, per_run: set[str] | None = None
) -> set[str]:
    """The transactions whose answers are kept under this code's key (and, into ``declined``, those that keep
    none: :data:`NONE_SUFFIX`; into ``per_run``, those that keep a file per run: :data:`RUNS_SUFFIX`)."""
    try:
        names = lay.fs.ls(lay.path(FOLDER, key()), detail=False)
    except (FileNotFoundError, NotADirectoryError):
        return set()
    out: set[str] = set()
    for n in names:
        name = n.rstrip("/").rsplit("/", 1)[-1]
        if name.endswith(kept_rows.SUFFIX):
            out.add(name[: -len(kept_rows.SUFFIX)])
        elif declined is not None and name.endswith(NONE_SUFFIX):
            declined.add(name[: -len(NONE_SUFFIX)])
        elif per_run is not None and name.endswith(RUNS_SUFFIX):
            per_run.add(name[: -len(RUNS_SUFFIX)])
    return out


def none_path(lay: Layout, txn: str) -> str:
    return lay.path(FOLDER, key(), txn + NONE_SUFFIX)


def ipc(table: Any) -> bytes:
    import pyarrow as pa

    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue()


def alone(runs: dict[str, str | None]) -> list[str]:
    """The runs (id -> name) that ``selected_runs(id)`` selects alone among them."""
    return [
        r
        for r in runs
        if not any(o != r and (o.startswith(r) or (n or "").startswith(r)) for o, n in runs.items())
    ]


#: per tracked connection: the (transaction, run) its scopes found without kept answers (:func:`track`)
_UNKEPT: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, set[tuple[str, str]]] = (
    weakref.WeakKeyDictionary()
)


def track(con: duckdb.DuckDBPyConnection) -> None:
    """Note the runs whose answers a scope of ``con`` finds not kept (and that may be: runs of at most
    :data:`MAX_BYTES` of logs, whole, of a transaction not said to keep none), for :func:`unkept`."""
    _UNKEPT.setdefault(con, set())


#: per tracked connection: the (transaction, run, base, base's transaction) whose paired answers a scope of the two
#: runs found not kept (:func:`unkept_pairs`)
_PAIRS: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, set[tuple[str, str, str, str]]] = (
    weakref.WeakKeyDictionary()
)
#: per connection: the live transaction of each run its last scope may answer from kept answers (:func:`load`)
_LIVE: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, dict[str, str]] = (
    weakref.WeakKeyDictionary()
)


def unkept_pairs(con: duckdb.DuckDBPyConnection) -> set[tuple[str, str, str, str]]:
    """The pairs noted since the last call (a scope of two runs, the second compared with the first: the diff's),
    forgotten."""
    got = _PAIRS.pop(con, set())
    return set(got)


def unkept(con: duckdb.DuckDBPyConnection) -> set[tuple[str, str]]:
    """The (transaction, run) noted since the last call (:func:`track`), forgotten."""
    got = _UNKEPT.get(con)
    if not got:
        return set()
    out = set(got)
    got.clear()
    return out


def _wh(con: duckdb.DuckDBPyConnection) -> Any:
    from pt2logs.query.views import warehouse_of

    return warehouse_of(con)


def load(
    con: duckdb.DuckDBPyConnection, run_ids: Iterable[str]
) -> dict[tuple[str, str, str], tuple[bytes, str | None]]:
    """The kept answers of ``run_ids`` (those of their live transactions, of runs ``selected_runs`` selects alone
    among them, whose files the snapshot holds whole: a run with a damaged file is answered from the rows there
    are, with a warning): (run_id, query, params) -> the answer's IPC stream and its rows' text
    (:mod:`pt2logs.query.answer_rows`; None: read from the stream). Empty when none is kept."""
    from pt2logs.query.views import damaged_runs

    wh = _wh(con)
    order = list(dict.fromkeys(run_ids))
    ids = sorted(order)
    if wh is None or not ids or not kept_rows.enabled():
        return {}
    rows = con.execute(
        "SELECT run_id, name, txn, bytes FROM main.runs WHERE list_contains($r, run_id)",
        {"r": ids},
    ).fetchall()
    single = set(alone({r: n for r, n, _, _ in rows})) - damaged_runs(con)
    txns = sorted({t for r, _, t, _ in rows if r in single})
    declined: set[str] = set()
    per_run: set[str] = set()
    have = kept(wh, declined, per_run) if txns else set()
    urls = [wh.url(FOLDER, key(), t + kept_rows.SUFFIX) for t in txns if t in have]
    # (a big transaction's runs: the file of each run kept, where there is one; its own file holds only the
    # answers about two runs, kept_answers.PAIRED)
    for r, _, t, _ in rows:
        if r in single and t in per_run and wh.fs.exists(run_path(wh, t, r)):
            urls.append(wh.url(*_run_parts(t, r)))
    got: list[tuple[str, str, str, bytes, str | None]] = []
    if urls:
        want = [f"{r}|{t}" for r, _, t, _ in rows if r in single]
        try:
            got = con.execute(
                f"SELECT run_id, query, params, answer, rows FROM read_parquet([{', '.join(map(literal, urls))}]) "
                "WHERE list_contains($w, run_id || '|' || txn)",
                {"w": want},
            ).fetchall()
        except duckdb.Error:  # a kept file that does not read: its runs are asked
            got = []
    live = _LIVE[con] = {r: t for r, _, t, b in rows if r in single and (b or 0) <= MAX_BYTES}
    if con in _UNKEPT:  # (the runs read whose answers are not kept: kept after the command)
        answered = {r for r, q, *_ in got if q not in PAIRED}
        _UNKEPT[con].update(
            (t, r) for r, t in live.items() if r not in answered and t not in declined
        )
        if len(order) == 2 and set(order) <= live.keys() and live[order[1]] not in declined:
            _note_pair(con, order[0], order[1], live, {(r, q, p) for r, q, p, *_ in got})
    return {(r, q, p): (a, text) for r, q, p, a, text in got}


def _note_pair(
    con: duckdb.DuckDBPyConnection,
    base: str,
    run: str,
    live: dict[str, str],
    have: set[tuple[str, str, str]],
) -> None:
    """Note the pair (``run`` compared with ``base``) when its :data:`PAIRED` answers are not kept."""
    from pt2logs.query.queries import bind

    for q in PAIRED:
        bound = bind(get_query(q), get_query(q).sql, {"run_id": run, "base": base})
        if (run, q, pair_params(bound, live[base])) not in have:
            _PAIRS.setdefault(con, set()).add((live[run], run, base, live[base]))


#: the connections whose kept answers are given as answer_rows.Rows where they can be (:func:`as_rows`)
_AS_ROWS: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()


def as_rows(con: duckdb.DuckDBPyConnection) -> None:
    """Give ``con``'s kept answers as :class:`pt2logs.query.answer_rows.Rows` (the same rows, read without pyarrow;
    the CLI's commands about one run print from them) rather than pyarrow Tables (serve, the library)."""
    _AS_ROWS.add(con)


def _table(ipc_bytes: bytes) -> Any:
    import pyarrow as pa

    return pa.ipc.open_stream(ipc_bytes).read_all()


def answering(
    con: duckdb.DuckDBPyConnection,
    answers: dict[tuple[str, str, str], tuple[bytes, str | None]],
    miss: Callable[[str], None],
) -> Callable[[], None]:
    """Answer ``con``'s named queries about those runs from ``answers`` (pyarrow Tables; :func:`as_rows`: Rows);
    any other query first calls ``miss(name)`` (the scope copies what it reads). Returns what stops it."""
    rows, live = con in _AS_ROWS, _LIVE.get(con, {})

    def hook(name: str, bound: dict[str, Any]) -> Any:
        if (
            name in PAIRED
        ):  # (filed with the base's live transaction; a base not in the scope: asked)
            base = live.get(bound.get("base"))  # type: ignore[arg-type]
            params = pair_params(bound, base) if base is not None else None
        else:
            params = params_key(bound)
        got = answers.get((bound.get("run_id"), name, params))  # type: ignore[arg-type]
        if got is not None:
            stream, text = got
            if rows and text is not None:
                from pt2logs.query.answer_rows import decode

                try:
                    return decode(text, lambda: _table(stream))
                except (
                    ValueError,
                    KeyError,
                    TypeError,
                    IndexError,
                ):  # (damaged: read from the stream)
                    pass
            import pyarrow as pa

            try:
                return _table(stream)
            except (pa.ArrowException, OSError):  # (damaged inside a file that read: asked instead)
                pass
        miss(name)
        return None

    ANSWERS[con] = hook
    return lambda: ANSWERS.pop(con, None)
