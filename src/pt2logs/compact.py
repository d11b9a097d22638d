"""``pt2logs compact``: few large files per partition, and no dead rows.

For each ``ingest_date`` partition that has more than one file per table, or rows
that are no longer live (runs ingested again later, transactions killed before
their commit), the live rows of every table are rewritten into one file per
table as a new transaction, whose ``runs`` rows are written last (the commit
point, as for an ingest); then the old files are deleted. At every moment the
views see each run exactly once. Files of transactions still open (a running
ingest) are left alone, and ingests wait for a compaction's commit (the
warehouse lock), so their newer commit wins.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field

import pyarrow as pa

from pt2logs.schema import TABLES
from pt2logs.warehouse import PARTITION, PartWriter, TxnInfo, Warehouse, txn_of


@dataclass
class CompactResult:
    partitions: list[str] = field(default_factory=list)
    files_before: int = 0
    files_after: int = 0
    rows_dropped: int = 0
    rows_kept: int = 0


def _partition_of(path: str) -> str | None:
    for part in path.split("/"):
        if part.startswith(PARTITION + "="):
            return part.split("=", 1)[1]
    return None


def compact(warehouse: str | Warehouse, partitions: list[str] | None = None, min_files: int = 2) -> CompactResult:
    import duckdb

    from pt2logs.views import arrow_table, attach_filesystem, connect

    wh = warehouse if isinstance(warehouse, Warehouse) else Warehouse(warehouse)
    res = CompactResult()
    with wh.lock():
        wh.recover()
        con = connect(wh)
        committed = {t for (t,) in con.execute("SELECT DISTINCT txn FROM _runs_all").fetchall()}
        live = arrow_table(con, "SELECT run_id, txn FROM _live")
        files: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for table in TABLES:
            for f in wh.table_files(table):
                p = _partition_of(f)
                if p is not None and txn_of(f) in committed and (partitions is None or p in partitions):
                    files[p][table].append(f)
        dcon = duckdb.connect()
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
    return res


def _src(wh: Warehouse, paths: list[str]) -> str:
    urls = ", ".join("'" + wh.fs.unstrip_protocol(p).replace("'", "''") + "'" if wh.remote else "'" + p.replace("'", "''") + "'" for p in paths)
    return f"read_parquet([{urls}], union_by_name=true)"


def _dead_rows(con, wh: Warehouse, by_table: dict[str, list[str]]) -> int:
    dead = 0
    for _table, paths in by_table.items():
        dead += con.execute(f"SELECT count(*) FROM {_src(wh, paths)} t ANTI JOIN live USING (run_id, txn)").fetchone()[0]
    return dead


def _rewrite(con, wh: Warehouse, part: str, by_table: dict[str, list[str]], res: CompactResult) -> None:
    from pt2logs.schema import stamp
    from pt2logs.views import arrow_batches

    txn = wh.begin()
    info = TxnInfo(wh.location, txn.id, part)
    try:
        writer = PartWriter(info, "compact")
        runs_batches = []
        for table, paths in sorted(by_table.items()):
            t = TABLES[table]
            cols = con.execute(f"SELECT * FROM {_src(wh, paths)} LIMIT 0").description
            present = {c[0] for c in cols}
            sel = ", ".join(f'"{c.name}"' for c in t.columns if c.name in present and c.name != "txn")
            reader = arrow_batches(con, f"SELECT {sel} FROM {_src(wh, paths)} t SEMI JOIN live USING (run_id, txn)")
            for batch in reader:
                values = {"txn": txn.id}
                if table == "runs":
                    values["committed_at"] = None
                out = stamp(_as_declared(batch, t), t, values)
                res.rows_kept += out.num_rows
                if table == "runs":
                    runs_batches.append(out)
                else:
                    writer.write(table, out)
        res.files_after += len(writer.close())
        runs = pa.Table.from_batches(runs_batches, schema=TABLES["runs"].schema) if runs_batches else None
        if runs is not None and runs.num_rows:
            now = dt.datetime.now(dt.timezone.utc)
            runs = runs.set_column(runs.schema.get_field_index("committed_at"), "committed_at",
                                   pa.array([now] * runs.num_rows, type=TABLES["runs"].column("committed_at").type))
            w = PartWriter(info, "compact-runs")
            w.write_table("runs", runs)  # the commit point
            res.files_after += len(w.close())
        for paths in by_table.values():
            for p in paths:
                wh.fs.rm(p)
        txn._release(delete=True)
    except BaseException:
        txn.abort()
        raise


def _as_declared(batch: pa.RecordBatch, t) -> pa.RecordBatch:
    """Columns in declared types (older files may have fewer columns or other widths)."""
    arrays, names = [], []
    for c in t.columns:
        if c.name in batch.schema.names and c.name != "txn":
            a = batch.column(c.name)
            arrays.append(a if a.type == c.type else a.cast(c.type))
            names.append(c.name)
    return pa.RecordBatch.from_arrays(arrays, names=names)
