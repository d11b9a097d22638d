"""Keeping the answers about one run (:mod:`pt2logs.query.kept_answers` says what and why), lazily: for the runs
someone reads (and, by ``pt2logs ingest``, those of a small commit: :func:`keep_answers` with ``most_runs``).

A tracked connection's run scope notes the runs it found without kept answers
(:func:`pt2logs.query.kept_answers.unkept`: only the runs read, each added to its transaction's file, or of a
transaction of more than kept_answers.MAX_RUNS runs written to a file of its own); once the command answered,
:func:`keep_later` (the CLI's ``summary``, ``ranks``, ``advise``, ``diff``, after their output is written and
flushed) forks a process of its own session,
with no output, that keeps them (:func:`keep_answers`) while the command's process exits without waiting; serve
calls :func:`keep_answers` in a thread after the page (pt2logs.serve.connection). The keep is best effort: a
failure (a read-only warehouse, a full disk, a concurrent compaction) is swallowed, the answers asked again the
next time. Each file is written whole (a ``.<pid>.tmp`` renamed, one object on a store), so two keeps of the same
transaction leave one whole file and a reader never reads a partial one (a damaged one is not read:
kept_answers.load); two keeps of two runs of one transaction at once may leave one run out (asked again when read).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from pt2logs._fork import detached, keeping
from pt2logs.query import kept_answers, kept_rows, run_scope
from pt2logs.query import views as _views
from pt2logs.query.kept_cache import write_file
from pt2logs.query.sql_text import literal
from pt2logs.store.snapshot import take
from pt2logs.store.warehouse import Warehouse


def writable(wh: Warehouse) -> bool:
    """Whether this process may write the kept answers (a local warehouse: the nearest folder on the way to them
    that exists is writable; an object store: tried)."""
    if wh.remote:
        return True
    p = Path(kept_answers.file_path(wh, "t")).parent
    while not p.exists() and p != p.parent:
        p = p.parent
    return os.access(p, os.W_OK)


def keep_later(
    wh: Warehouse,
    wanted: set[tuple[str, str]],
    pairs: set[tuple[str, str, str, str]] = frozenset(),  # type: ignore[assignment]
) -> bool:
    """Keep the answers of the ``wanted`` runs (transaction, run: kept_answers.unkept) in a process of its own
    (its own session: not ended with the command's process group; no output; any failure swallowed), not
    waiting for it: forked twice, so that nothing is left for this process to reap. Call it after the output is
    flushed and the command's DuckDB connections are closed (the forked process opens its own); then the paired
    answers of ``pairs`` (kept_answers.unkept_pairs: :func:`keep_pairs`). False when nothing was started."""
    if (
        not (wanted or pairs)
        or not kept_rows.enabled()
        or not hasattr(os, "fork")
        or not writable(wh)
        # (a keeper at work here already, most often the ingest's at its commit: the runs it keeps are read kept by
        # the next command; a second one would ask the same questions beside it)
        or (not wh.remote and keeping(wh.root))
    ):
        return False
    location = wh.location

    def work() -> None:
        # a Warehouse of its own: an object store's filesystem does not survive a fork
        own = Warehouse(location)
        if wanted:
            keep_answers(own, {t for t, _ in wanted}, runs={r for _, r in wanted})
        keep_pairs(own, pairs)

    # (a local warehouse: `_keeping.<the keeper's pid>.tmp` while it works)
    return detached(work, None if wh.remote else wh.root)


def _answers(con: duckdb.DuckDBPyConnection, runs: list[str], txn: str) -> Any:
    """The kept answers of ``runs`` of transaction ``txn`` (pt2logs.query.kept_answers), asked in one run scope
    over them all (``con``: a connection to the warehouse, as a command's)."""
    from pt2logs.query.queries import bind, get_query, run_named

    names = dict(
        con.execute(
            "SELECT run_id, name FROM main.runs WHERE list_contains($r, run_id) AND txn = $t",
            {"r": runs, "t": txn},
        ).fetchall()
    )
    ok = [r for r in kept_answers.alone({r: names.get(r) for r in runs}) if r in names]
    asked = kept_answers.asked()
    names_asked = [q for q, _ in asked]
    rows: list[tuple[Any, ...]] = []
    tables = run_scope.tables_for(names_asked)
    run_scope.enter(con, ok, tables, run_scope.materialized_for(names_asked))
    try:
        for r in ok:
            for q, p in asked:
                bound = bind(get_query(q), get_query(q).sql, {"run_id": r, **p})
                rows.append(
                    _row(r, q, kept_answers.params_key(bound), run_named(con, q, bound), txn)
                )
    finally:
        run_scope.leave(con)
    return _table(rows)


def _row(run: str, q: str, params: str, t: Any, txn: str) -> tuple[Any, ...]:
    """A kept answer's row: the table as its IPC stream, and its rows as text too (what the CLI reads without
    pyarrow, pt2logs.query.answer_rows)."""
    from pt2logs.query.answer_rows import encode

    return (run, q, params, kept_answers.ipc(t), txn, encode(t))


def _table(rows: list[tuple[Any, ...]]) -> Any:
    """The kept answers' rows (:func:`_row`) as the file's table."""
    import pyarrow as pa

    names = ("run_id", "query", "params", "answer", "txn", "rows")
    types = [pa.string(), pa.string(), pa.string(), pa.binary(), pa.string(), pa.string()]
    cols = list(zip(*rows)) if rows else [[] for _ in names]
    return pa.table(
        [pa.array(c, t) for c, t in zip(cols, types)], schema=pa.schema(list(zip(names, types)))
    )


def keep_pairs(wh: Warehouse, pairs: set[tuple[str, str, str, str]]) -> int:
    """Keep the answers of kept_answers.PAIRED of each (transaction, run, base, base's transaction) whose two runs are
    live in those transactions, asked in a run scope of the two, added to the run's transaction's file (written whole,
    as :func:`keep_answers` writes it). Returns the pairs kept."""
    import pyarrow as pa

    from pt2logs.query.queries import bind, get_query, run_named

    if not pairs or not kept_rows.enabled():
        return 0
    con = _views.connect(wh)
    try:
        ids = sorted({r for _, run, base, _ in pairs for r in (run, base)})
        live = dict(
            con.execute(
                "SELECT run_id, txn FROM main.runs WHERE list_contains($r, run_id)", {"r": ids}
            ).fetchall()
        )
        by_txn: dict[str, list[tuple[Any, ...]]] = {}
        asked = list(kept_answers.PAIRED)
        for txn, run, base, base_txn in sorted(pairs):
            if live.get(run) != txn or live.get(base) != base_txn:
                continue
            run_scope.enter(
                con, [base, run], run_scope.tables_for(asked), run_scope.materialized_for(asked)
            )
            try:
                for q in asked:
                    bound = bind(get_query(q), get_query(q).sql, {"run_id": run, "base": base})
                    params = kept_answers.pair_params(bound, base_txn)
                    t = run_named(con, q, bound)
                    by_txn.setdefault(txn, []).append(_row(run, q, params, t, txn))
            finally:
                run_scope.leave(con)
        for txn, rows in by_txn.items():
            new = _table(rows)
            old = _kept_but(wh, txn, set(), new.schema)
            write_file(wh, kept_answers.file_path(wh, txn), pa.concat_tables([old, new]))
        return sum(map(len, by_txn.values())) // len(asked)
    finally:
        con.close()


def _small_unkept(wh: Warehouse, have: set[str], txns: set[str] | None) -> bool:
    """Whether a live commit of ``txns`` (None: any) without kept answers has at most kept_answers.MAX_RUNS runs
    (counted in its ``runs`` files: a commit's runs)."""
    from pt2logs.store.parts import txn_of

    con = duckdb.connect(config=_views.database_config())
    try:
        _views.attach_filesystem(con, wh)
        snap = take(wh, read_records=lambda runs: _views.commit_records(con, wh, runs))
        files: dict[str, list[str]] = {}
        for rel in snap.files.get("runs", []):
            t = txn_of(rel)
            if t and t not in have and (txns is None or t in txns):
                files.setdefault(t, []).append(wh.url(*rel.split("/")))
        for urls in files.values():
            sql = f"SELECT count(DISTINCT run_id), min(bytes) FROM read_parquet([{', '.join(map(literal, urls))}])"
            runs, least = con.execute(sql).fetchall()[0]
            if runs <= kept_answers.MAX_RUNS and (least or 0) <= kept_answers.MAX_BYTES:
                return True
        return False
    finally:
        con.close()


def _chunks(runs: list[tuple[str, int | None]]) -> list[list[str]]:
    """The runs (id, bytes of logs) in scopes of at most kept_answers.MAX_BYTES of logs each (a scope holds its runs'
    stored texts: memory follows a chunk, not the transaction); a run of more is left out (asked when needed)."""
    out: list[list[str]] = []
    size = kept_answers.MAX_BYTES + 1
    for run, n in runs:
        n = n or 0
        if n > kept_answers.MAX_BYTES:
            continue
        if size + n > kept_answers.MAX_BYTES:
            out.append([])
            size = 0
        out[-1].append(run)
        size += n
    return out


def _decline(wh: Warehouse, txn: str) -> None:
    """Say that ``txn`` keeps no answers (kept_answers.NONE_SUFFIX: not noted again by the commands that read it)."""
    from pt2logs.store import recovery

    recovery.write_bytes(wh, kept_answers.none_path(wh, txn), b"")


def keep_answers(
    wh: Warehouse,
    txns: set[str] | None = None,
    connected: Callable[[duckdb.DuckDBPyConnection], None] | None = None,
    runs: set[str] | None = None,
    most_runs: int = kept_answers.MAX_RUNS,
) -> int:
    """Keep the answers of the runs of ``txns`` (None: every live committed transaction without them; ``runs``:
    only those runs of them, added to what their transaction's file holds; of a transaction of more than
    kept_answers.MAX_RUNS runs, a file per run) of at most kept_answers.MAX_RUNS runs (``most_runs``: fewer, a
    larger one left as it is: the ingest's keep, cli.ingest.AT_COMMIT_RUNS),
    over a connection to the whole warehouse as a command's (``connected(con)`` is called on it first: serve's
    thread limits and interrupts it), in scopes of at most kept_answers.MAX_BYTES of logs. A transaction asked for
    that keeps none is said so (kept_answers.NONE_SUFFIX). Returns the runs kept."""
    import pyarrow as pa

    if not kept_rows.enabled():
        return 0
    have = kept_answers.kept(wh)
    # (a fleet's one transaction asked whole: no connection for nothing; its runs read are kept one by one)
    if runs is None and not _small_unkept(wh, have, txns):
        for txn in (txns or set()) - have:
            _decline(wh, txn)
        return 0
    con = _views.connect(wh)
    try:
        if connected is not None:
            connected(con)
        live = con.execute(
            "SELECT txn, list((run_id, bytes) ORDER BY run_id) FROM runs GROUP BY txn"
        ).fetchall()
        n = 0
        for txn, txn_runs in sorted(live):
            if (runs is None and txn in have) or (txns is not None and txn not in txns):
                continue
            if len(txn_runs) > kept_answers.MAX_RUNS:
                if (
                    runs is not None and most_runs >= kept_answers.MAX_RUNS
                ):  # (the runs read: a file each)
                    n += _keep_per_run(con, wh, txn, [tuple(r) for r in txn_runs if r[0] in runs])
                elif txns is not None:
                    _decline(wh, txn)
                continue
            if (
                len(txn_runs) > most_runs
            ):  # (the ingest's keep: a larger commit's are kept when read)
                continue
            # ((run_id, bytes): an unnamed struct, a tuple)
            chunks = _chunks([tuple(r) for r in txn_runs if runs is None or r[0] in runs])
            if chunks:
                table = pa.concat_tables([_answers(con, c, txn) for c in chunks])
                done = set(table.column("run_id").to_pylist())
                if txn in have:  # (the runs kept before: kept still)
                    table = pa.concat_tables([_kept_but(wh, txn, done, table.schema), table])
                write_file(wh, kept_answers.file_path(wh, txn), table)
                n += len(done)
            elif runs is None and txns is not None:
                _decline(wh, txn)
        return n
    finally:
        con.close()


def _keep_per_run(
    con: duckdb.DuckDBPyConnection, wh: Warehouse, txn: str, runs: list[tuple[str, int | None]]
) -> int:
    """The answers of ``runs`` (id, bytes of logs) of a transaction of more than kept_answers.MAX_RUNS runs, a file
    per run (kept_answers.run_path): the file of a run read is written once, whatever the runs read before."""
    import pyarrow.compute as pc

    n = 0
    for chunk in _chunks(runs):
        table = _answers(con, chunk, txn)
        for run in sorted(set(table.column("run_id").to_pylist())):
            one = table.filter(pc.equal(table.column("run_id"), run))
            write_file(wh, kept_answers.run_path(wh, txn, run), one)
            n += 1
    return n


def _kept_but(wh: Warehouse, txn: str, runs: set[str], schema: Any) -> Any:
    """The answers kept of ``txn``'s runs other than ``runs`` (none when its file does not read: written anew)."""
    import pyarrow.parquet as pq

    try:
        with wh.fs.open(kept_answers.file_path(wh, txn), "rb") as f:
            t = pq.read_table(f).cast(schema)
    except Exception:  # noqa: BLE001 - damaged or gone: those runs are asked when read
        return schema.empty_table()
    keep = [r not in runs for r in t.column("run_id").to_pylist()]
    return t.filter(keep)
