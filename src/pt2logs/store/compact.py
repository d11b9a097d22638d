"""``pt2logs compact``: few large files per partition, and no dead rows.

For each ``ingest_date`` partition that has more than one file per table, rows
that are no longer live (runs ingested again later, transactions killed before
their commit), or a file written before ``frame_id`` / ``frame_compile_id`` (filled by the
one rule as rows are copied: :mod:`pt2logs.store.frame_upgrade`), the live rows of every
table are rewritten into one file per table as a new transaction. Steps (each a named kill point, see :mod:`pt2logs.store.faults`):

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
import pyarrow.compute as pc

from pt2logs.store import compact_copy as copy
from pt2logs.store import faults, frame_upgrade, manifest, recovery
from pt2logs.store.parts import PAYLOADS, file_schema, stored_tables
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
    #: files written before frame_id / frame_compile_id that the rewrite replaced (store.frame_upgrade)
    frames_upgraded: int = 0


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
    from pt2logs.query.views import arrow_table, connect, snapshot_of

    wh = warehouse if isinstance(warehouse, Warehouse) else Warehouse(warehouse)
    grace = recovery.gc_grace_s() if grace_s is None else grace_s
    res = CompactResult()
    with wh.lock():
        res.files_deleted += len(wh.recover(grace))
        con = connect(wh)
        # the files the commits list (the snapshot's: committed = has a runs file, rows or not: a compaction
        # whose partition has no live run still commits the payloads it copied, with a runs file of no rows)
        snap = snapshot_of(con)
        live = copy.live_runs(arrow_table(con, "SELECT run_id, txn FROM _live"))
        con.close()  # the copy reads the files with pyarrow, a row group at a time
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
        # files written before the frame ids: their partitions are rewritten with them (store.frame_upgrade)
        lacking = [_partition_of(rel) for rel in frame_upgrade.lacking(wh, snap)]
        upgrade = set(lacking)
        for part in sorted(files):
            by_table = files[part]
            n_files = sum(len(v) for v in by_table.values())
            dead = sum(
                copy.dead_rows(wh.fs, paths, wh.remote, live)
                for table, paths in by_table.items()
                if table
                != PAYLOADS  # store rows are never dead: any run, of any partition, may name them
            )
            if (
                dead == 0
                and all(len(v) < min_files for v in by_table.values())
                and part not in upgrade
            ):
                continue
            _rewrite(wh, part, by_table, live, res)
            res.partitions.append(part)
            res.frames_upgraded += lacking.count(part)
            res.files_before += n_files
            res.rows_dropped += dead
        if grace <= 0:
            res.files_deleted += len(recovery.collect(wh, 0, wh.check_lock))
    return res


def _rewrite(
    wh: Warehouse,
    part: str,
    by_table: dict[str, list[str]],
    live: copy.Live,
    res: CompactResult,
) -> None:
    txn = wh.begin()
    info = TxnInfo(wh.location, txn.id, part)
    try:
        # (row groups of more rows than an ingest's: parts.COMPACT_ROW_GROUP_ROWS)
        writer = PartWriter(info, "compact", wide=True)
        runs_batches = []
        for table, paths in sorted(by_table.items()):
            if table == PAYLOADS:
                batches = copy.copy_payloads(wh.fs, paths, wh.remote, txn.id)
            else:
                schema = file_schema(table)

                def convert(rows: pa.Table, schema=schema, table=table) -> pa.Table:
                    return frame_upgrade.filled(table, _converted(rows, schema, txn.id))

                batches = copy.copy_table(wh.fs, paths, wh.remote, live, schema, convert)
            for out in batches:
                res.rows_kept += out.num_rows
                if table == "runs":
                    runs_batches.append(out)
                else:
                    writer.write(table, out)
            writer.flush(table)  # (its last rows: not held while the next tables are copied)
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


def _converted(rows: pa.Table, schema: pa.Schema, txn: str) -> pa.Table:
    """A row group's live rows as the compacted file holds them (declared columns and types, the store's
    keys after), stamped with the compaction's ``txn``; a run's ``committed_at`` one microsecond later (the
    copy wins over its original, and loses to any later commit)."""
    out = copy.to_flight(rows, schema, {"txn": txn})
    if "committed_at" in out.column_names:
        i = out.schema.get_field_index("committed_at")
        out = out.set_column(i, schema.field(i), pc.add(out.column(i), _MICROSECOND))
    return out


_MICROSECOND = pa.scalar(1, pa.duration("us"))
