"""A fleet-sized warehouse, synthesized from real runs, for timing queries and the dashboard.

Real runs (the sample traces) are ingested once; then every table is replicated with DuckDB
into N runs: new run ids, start times spread over 8 weeks, a few tags (model, cluster). The
copies keep the warehouse layout and the commit rule (each copy's rows share its runs row's
txn), so pt2logs reads them like ingested runs. The copies' events keep their payloads as ingest
stores them: short ones in the row, the others as keys of the payload store, which is copied once
(every copy of a run names the same payloads, as runs of one model do). Each table is one file, its rows
sorted by run (a run's rows are together in a file pt2logs writes; sorted, a row group's run_id min/max skip it
for other runs) in row groups of 122,880 rows (before 2026-11-27: 1M-row row groups, rows in no order).
"""

from __future__ import annotations

import datetime as dt
import shutil
import time
from pathlib import Path

import duckdb

import pt2logs
from pt2logs.store.warehouse import PAYLOADS, STORED, Warehouse, new_txn_id
from pt2logs.tables.schema import TABLES

ROOT = Path(__file__).resolve().parents[1]
#: rows per row group of the copies (DuckDB's own default; pt2logs' writer cuts an events row group at 8 MB in
#: memory, pt2logs.store.parts), the rows sorted by run: a run is a row group or two of a file that holds 10,000
ROW_GROUP_ROWS = 122_880
MODELS = ["llama", "gpt", "bert", "vit"]


def synthesize(dest: Path, n_runs: int, weeks: int = 8) -> Path:
    wh = dest / f"fleet_store_{n_runs}"
    marker = wh / ".fleet_complete"
    if marker.exists():
        return wh
    shutil.rmtree(wh, ignore_errors=True)
    base = dest / "fleet_base_store"
    if not (base / "_meta.json").exists():
        pt2logs.ingest([str(ROOT / "sample_traces")], str(base))
    con = pt2logs.connect(str(base))
    # the sort by run spills to disk rather than holding every copy (~15 GB at 10,000 runs without a limit);
    # at 2 GB the sort of compilation_metrics' 92,000 wide rows (5 KB configs, stacks) ran out of memory at
    # 10,000 runs ("failed to pin block"): 6 GB holds it (5.6 GB peak)
    con.execute(f"SET temp_directory = '{dest}/.sort_tmp'")
    con.execute("SET memory_limit = '6GB'")
    base_runs = con.execute("SELECT count(*) FROM runs").fetchone()[0]
    reps = -(-n_runs // base_runs)
    Warehouse(str(wh)).init()
    days = weeks * 7
    con.execute(f"CREATE TEMP TABLE rep AS SELECT range AS r FROM range({reps})")
    con.execute(f"""CREATE TEMP TABLE runmap AS
        SELECT b.run_id AS base_id, rep.r, b.run_id || '-' || lpad(rep.r::VARCHAR, 5, '0') AS new_id,
               INTERVAL (rep.r % {days}) DAY - INTERVAL ({days}) DAY AS shift,
               rep.r * {base_runs} + row_number() OVER (PARTITION BY rep.r ORDER BY b.run_id) AS k
        FROM runs b CROSS JOIN rep""")
    con.execute(f"DELETE FROM runmap WHERE k > {n_runs}")
    # each copy's place in run id order (the files are written in it: an integer sorts faster than the id)
    con.execute(
        "CREATE OR REPLACE TEMP TABLE runmap AS SELECT *, row_number() OVER (ORDER BY new_id) AS ord FROM runmap"
    )
    now = con.execute("SELECT max(started_at) FROM runs").fetchone()[0]
    # one transaction for every copy: its id in the rows and in the file names (part-<txn>-bench-1.parquet,
    # where pt2logs reads a transaction's files from: a runs file without a commit record, as before records)
    txn = new_txn_id()
    for name, t in TABLES.items():
        cols = []
        for c in t.columns:
            q = f'"{c.name}"'
            if c.name == "txn":
                cols.append(f"'{txn}' AS txn")
            elif c.name == "run_id":
                cols.append("m.new_id AS run_id")
            elif c.name == "name" and name == "runs":
                cols.append("x.name || ' #' || m.r AS name")
            elif c.name == "tags" and name == "runs":
                cols.append(f"""json_object('model', ['{"','".join(MODELS)}'][1 + (m.r % {len(MODELS)})],
                                'cluster', CASE WHEN m.r % 3 = 0 THEN 'a' ELSE 'b' END) AS tags""")
            elif c.kind == "ts" and c.name not in ("ingested_at", "committed_at"):
                cols.append(f"x.{q} + m.shift + (now()::TIMESTAMPTZ - TIMESTAMPTZ '{now}') AS {q}")
            elif c.name == "start_us" and name == "compile_phases":
                cols.append(f"x.{q} + epoch_us(m.shift) AS {q}")
            else:
                cols.append(f"x.{q}")
        # the invariant pruning relies on: a run is ingested after it started (ingest_date >= start date)
        out = wh / name / f"ingest_date={dt.datetime.now(dt.timezone.utc):%Y-%m-%d}"
        out.mkdir(parents=True, exist_ok=True)
        src = f'"{name}"'
        if name in STORED:  # the stored rows: long texts as keys of the store (copied once, below)
            cols += [f'x."{key}"' for _, key in STORED[name]]
            src = (
                f"(SELECT * FROM read_parquet('{base}/{name}/**/*.parquet', union_by_name=true, hive_partitioning=true) "
                "SEMI JOIN _live USING (run_id, txn))"
            )
        con.execute(
            f"""COPY (SELECT {", ".join(cols)} FROM {name}_all_sources x JOIN runmap m ON m.base_id = x.run_id ORDER BY m.ord)
                        TO '{out}/part-{txn}-bench-1.parquet' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {ROW_GROUP_ROWS})"""
            if "source" in t.names and name != "runs" and name not in STORED
            else f"""COPY (SELECT {", ".join(cols)} FROM {src} x JOIN runmap m ON m.base_id = x.run_id ORDER BY m.ord)
                        TO '{out}/part-{txn}-bench-1.parquet' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {ROW_GROUP_ROWS})"""
        )
    out = wh / PAYLOADS / f"ingest_date={dt.datetime.now(dt.timezone.utc):%Y-%m-%d}"
    out.mkdir(parents=True, exist_ok=True)
    con.execute(f"""COPY (SELECT * REPLACE ('{txn}' AS txn) FROM read_parquet('{base}/{PAYLOADS}/**/*.parquet'))
                    TO '{out}/part-{txn}-bench-1.parquet' (FORMAT parquet, COMPRESSION zstd)""")
    from pt2logs.ingestion.views_file import ViewsFile

    ViewsFile(Warehouse(str(wh))).write()
    # what an ingest does after its commit: the runs' outcomes decided once and kept (absent from older pt2logs)
    try:
        from pt2logs.query.kept_cache import keep
    except ImportError:
        pass
    else:
        keep(str(wh))
    marker.write_text("ok")
    return wh


def time_queries(wh: Path) -> list[tuple[str, float, int]]:
    from pt2logs.query.queries import load_queries, run_named

    t = time.perf_counter()
    con = pt2logs.connect(str(wh))
    out = [("(connect: create views)", time.perf_counter() - t, 0)]
    for name in sorted(load_queries()):
        t = time.perf_counter()
        table = run_named(con, name, {})
        out.append((name, time.perf_counter() - t, table.num_rows))
        del (
            table
        )  # freed here, not inside the next query's time (a big result took seconds to free)
    return out


def run_count(wh: Path) -> int:
    return (
        duckdb.connect()
        .execute(f"SELECT count(DISTINCT run_id) FROM read_parquet('{wh}/runs/**/*.parquet')")
        .fetchone()[0]
    )
