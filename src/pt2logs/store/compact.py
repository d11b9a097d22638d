"""``pt2logs compact``: few large files per partition, and no dead rows.

For each ``ingest_date`` partition that has more than one file per table, or rows
that are no longer live (runs ingested again later, transactions killed before
their commit), the live rows of every table are rewritten into one file per
table as a new transaction. Steps (each a named kill point, see :mod:`pt2logs.store.faults`):

1. ``compact.data``: the new data files (invisible: no ``runs`` row points at them yet);
2. ``compact.commit``: the new ``runs`` file, the commit point. Each run keeps the
   ``committed_at`` of the row it copies plus one microsecond: the copy wins over the
   original, and a later ingest of the same run (newer ``committed_at``) still wins over the
   copy, whichever of the two commits last;
3. ``compact.tombstone``: ``_gc/<txn>.json`` lists the replaced files; readers skip them from
   now on;
4. ``compact.release``: the transaction's marker is removed.

The replaced files are deleted by a later writer (or by this one, with ``grace_s=0``) once the
record is older than the grace period, so queries that listed them before step 3 can finish
(:mod:`pt2logs.store.recovery`). Killed after step 2, the compaction is committed and recovery keeps it;
before, recovery deletes its files. Everything runs under the warehouse lock: ingests commit
after it, and two compactions never overlap.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field

import pyarrow as pa

from pt2logs.store import faults, manifest, recovery
from pt2logs.store.parts import PAYLOAD_KEY, PAYLOADS, STORED, file_schema, stored_tables
from pt2logs.store.warehouse import PARTITION, PartWriter, TxnInfo, Warehouse
from pt2logs.tables import TABLES


@dataclass
class CompactResult:
    partitions: list[str] = field(default_factory=list)
    files_before: int = 0
    files_after: int = 0
    rows_dropped: int = 0
    rows_kept: int = 0
    files_deleted: int = 0
    #: (partition, why): partitions not rewritten because a member is missing or damaged
    skipped: list[tuple[str, str]] = field(default_factory=list)


def _partition_of(path: str) -> str | None:
    for part in path.replace(os.sep, "/").split("/"):
        if part.startswith(PARTITION + "="):
            return part.split("=", 1)[1]
    return None


def compact(
    warehouse: str | Warehouse,
    partitions: list[str] | None = None,
    min_files: int = 2,
    grace_s: float | None = None,
) -> CompactResult:
    """Rewrite partitions; ``grace_s`` (default ``PT2LOGS_GC_GRACE_S``, 900 s) before replaced files go."""
    import duckdb

    from pt2logs.query.views import arrow_table, attach_filesystem, connect, snapshot_of

    wh = warehouse if isinstance(warehouse, Warehouse) else Warehouse(warehouse)
    grace = recovery.gc_grace_s() if grace_s is None else grace_s
    res = CompactResult()
    with wh.lock():
        res.files_deleted += len(wh.recover(grace))
        con = connect(wh)
        # the files the commits list (the snapshot's: committed = has a runs file, rows or not: a compaction
        # whose partition has no live run still commits the payloads it copied, with a runs file of no rows)
        snap = snapshot_of(con)
        live = arrow_table(con, "SELECT run_id, txn FROM _live")
        files: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for table in stored_tables():
            for rel in snap.files.get(table, ()):
                p = _partition_of(rel)
                if p is not None and (partitions is None or p in partitions):
                    files[p][table].append(wh.path(*rel.split("/")))
        # never rewrite a partition with a missing or damaged member: the copy would make the loss permanent
        # (one that `pt2logs repair` quarantined is a recorded loss: its partition may be rewritten)
        for d in snap.damaged:
            p = _partition_of(d.path)
            if not d.quarantined and p in files:
                del files[p]
                res.skipped.append(
                    (p, f"{d.path} is {d.why}; run `pt2logs check`, then `pt2logs repair`")
                )
        dcon = duckdb.connect()
        _bound_memory(dcon)
        attach_filesystem(dcon, wh)
        dcon.register("live", live)
        for part in sorted(files):
            by_table = files[part]
            n_files = sum(len(v) for v in by_table.values())
            dead = _dead_rows(dcon, wh, by_table)
            if dead == 0 and all(len(v) < min_files for v in by_table.values()):
                continue
            _rewrite(dcon, wh, part, by_table, res)
            res.partitions.append(part)
            res.files_before += n_files
            res.rows_dropped += dead
        if grace <= 0:
            res.files_deleted += len(recovery.collect(wh, 0, wh.check_lock))
    return res


#: rows per batch of the copy, at most: a batch of long texts (log lines, payloads) stays megabytes, not
#: gigabytes (250,000 rows of them passed DuckDB's 2 GiB string buffer at 10,000 runs)
COPY_ROWS = 8192
#: bytes per batch of the copy: a table of wide rows gets fewer rows a batch (a compilation_metrics row holds
#: its configs, ~30 KiB once decoded: 8,192 of them took 580 MB, a 2,000-run compaction's peak)
COPY_BYTES = 16 << 20
#: rows the batch size is estimated from (the first rows of the partition's files)
PROBE_ROWS = 256


def batch_rows(con, select: str) -> int:
    """Rows per batch for ``select``: :data:`COPY_BYTES` over the size of its first rows, within 64 and
    :data:`COPY_ROWS`."""
    from pt2logs.query.views import arrow_table

    probe = arrow_table(con, f"{select} LIMIT {PROBE_ROWS}")
    if probe.num_rows == 0:
        return COPY_ROWS
    per_row = max(1, probe.nbytes // probe.num_rows)
    return max(64, min(COPY_ROWS, COPY_BYTES // per_row))


def _bound_memory(con) -> None:
    """The copy's memory bounded by its batches, not the partition: DuckDB streams without keeping row
    order, and spills what does not fit ``PT2LOGS_COMPACT_MEMORY`` (default 1GB) to a temp folder."""
    import tempfile

    con.execute("SET preserve_insertion_order = false")
    con.execute(f"SET memory_limit = '{os.environ.get('PT2LOGS_COMPACT_MEMORY', '1GB')}'")
    con.execute(
        f"SET temp_directory = '{os.path.join(tempfile.gettempdir(), f'pt2logs-compact-{os.getpid()}')}'"
    )


def _src(wh: Warehouse, paths: list[str]) -> str:
    urls = ", ".join(
        "'" + wh.fs.unstrip_protocol(p).replace("'", "''") + "'"
        if wh.remote
        else "'" + p.replace("'", "''") + "'"
        for p in paths
    )
    return f"read_parquet([{urls}], union_by_name=true)"


def _dead_rows(con, wh: Warehouse, by_table: dict[str, list[str]]) -> int:
    dead = 0
    for table, paths in by_table.items():
        if table == PAYLOADS:
            continue  # store rows are never dead: any run, of any partition, may name them
        dead += con.execute(
            f"SELECT count(*) FROM {_src(wh, paths)} t ANTI JOIN live USING (run_id, txn)"
        ).fetchall()[0][0]
    return dead


def _rewrite(
    con, wh: Warehouse, part: str, by_table: dict[str, list[str]], res: CompactResult
) -> None:
    from pt2logs.query.views import arrow_batches
    from pt2logs.tables.rows import stamp

    txn = wh.begin()
    info = TxnInfo(wh.location, txn.id, part)
    try:
        writer = PartWriter(info, "compact")
        runs_batches = []
        for table, paths in sorted(by_table.items()):
            if table == PAYLOADS:
                _copy_payloads(con, wh, paths, writer, txn.id, res)
                continue
            t = TABLES[table]
            cols = con.execute(f"SELECT * FROM {_src(wh, paths)} LIMIT 0").description
            present = {c[0] for c in cols}
            sel = ", ".join(
                _col(c.name) for c in t.columns if c.name in present and c.name != "txn"
            )
            # the row's long texts in the store: keep their keys
            keys = [k for _, k in STORED.get(table, ()) if k in present]
            sel += "".join(f', "{k}"' for k in keys)
            select = f"SELECT {sel} FROM {_src(wh, paths)} t"
            reader = arrow_batches(
                con, f"{select} SEMI JOIN live USING (run_id, txn)", batch_rows(con, select)
            )
            for batch in reader:
                out = stamp(_as_declared(batch, t), t, {"txn": txn.id})
                for k in keys:
                    out = out.append_column(
                        k, batch.column(k).cast(file_schema(table).field(k).type)
                    )
                res.rows_kept += out.num_rows
                if table == "runs":
                    runs_batches.append(out)
                else:
                    writer.write(table, out)
        res.files_after += len(writer.close())
        faults.step("compact.data")
        runs = (
            pa.Table.from_batches(runs_batches, schema=TABLES["runs"].schema)
            if runs_batches
            else None
        )
        wh.check_lock("compact")
        if (runs is not None and runs.num_rows) or writer.written:
            w = PartWriter(info, "compact-runs")
            w.set_metadata("runs", {manifest.KEY: manifest.make_record(wh, txn.id, part)})
            w.touch(
                "runs"
            )  # with no live run, an empty runs file still commits the payloads copied
            if runs is not None:
                w.write_table("runs", runs)  # the commit point
            res.files_after += len(w.close())
        faults.step("compact.commit")
        recovery.tombstone(wh, txn.id, [p for paths in by_table.values() for p in paths])
        faults.step("compact.tombstone")
        txn._release(delete=True)
        faults.step("compact.release")
    except BaseException:
        txn.abort()
        raise


def _copy_payloads(
    con, wh: Warehouse, paths: list[str], writer: PartWriter, txn: str, res: CompactResult
) -> None:
    """Every key of the replaced payload files, once: never fewer (runs of any partition, and ingests
    running now that saw these files committed, may name any of them)."""
    from pt2logs.query.views import arrow_batches

    reader = arrow_batches(
        con,
        f'SELECT "{PAYLOAD_KEY}", any_value(payload) AS payload, {_sql_str(txn)} AS txn '
        f'FROM {_src(wh, paths)} GROUP BY "{PAYLOAD_KEY}"',
        batch_rows(con, f'SELECT "{PAYLOAD_KEY}", payload FROM {_src(wh, paths)}'),
    )
    schema = file_schema(PAYLOADS)
    for batch in reader:
        res.rows_kept += batch.num_rows
        writer.write(
            PAYLOADS,
            pa.RecordBatch.from_arrays(
                [batch.column(i).cast(schema.field(i).type) for i in range(3)], schema=schema
            ),
        )


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _col(name: str) -> str:
    if name == "committed_at":  # the copy wins over its original, and loses to any later commit
        return '"committed_at" + INTERVAL 1 MICROSECOND AS "committed_at"'
    return f'"{name}"'


def _as_declared(batch: pa.RecordBatch, t) -> pa.RecordBatch:
    """Columns in declared types (older files may have fewer columns or other widths)."""
    arrays, names = [], []
    for c in t.columns:
        if c.name in batch.schema.names and c.name != "txn":
            a = batch.column(c.name)
            arrays.append(a if a.type == c.type else a.cast(c.type))
            names.append(c.name)
    return pa.RecordBatch.from_arrays(arrays, names=names)
