"""A worker's PartWriter holds a table's small batches as a few buffers, not thousands (issue 31, item 7:
a worker's RSS grew with the files it parsed while its Arrow pool stayed flat: each file's few rows of each
table stayed as small buffers until the table's row group filled, pinning allocator pages)."""

from __future__ import annotations

import pyarrow.parquet as pq

import pt2logs  # noqa: F401
from pt2logs.store.parts import COALESCE_BATCHES, PartWriter, TxnInfo
from pt2logs.store.warehouse import Warehouse
from pt2logs.tables import TABLES


def test_small_batches_are_coalesced_and_every_row_written(tmp_path):
    wh = tmp_path / "wh"
    Warehouse(str(wh)).init()
    w = PartWriter(TxnInfo(str(wh), "20261127T000000000000-1-abcdef", "2026-11-27"), "t")
    t = TABLES["compile_times"]
    rows = []
    for i in range(1000):  # a file's few rows each, as a worker parsing a fleet writes them
        row = {c.name: None for c in t.columns} | {"run_id": f"run{i:04d}", "rank": i % 8}
        rows.append(row)
        w.write(
            "compile_times",
            t.schema.empty_table().from_pylist([row], schema=t.schema).to_batches()[0],
        )
        assert len(w._buf["compile_times"]) <= COALESCE_BATCHES
    [path] = w.close()
    got = pq.read_table(path, columns=["run_id", "rank"]).to_pylist()
    assert got == [{"run_id": r["run_id"], "rank": r["rank"]} for r in rows]
