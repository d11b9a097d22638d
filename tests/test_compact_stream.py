"""`compact` streams a partition a row group at a time (issue 31, item 7): its memory does not grow with the
partition, every live row is kept, and the compacted files hold each run's rows together, runs in
``run_id`` order (a row group's ``run_id`` statistics prune the reads of one run)."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from bench.measure import run
from tests.conftest import SAMPLES, tables_rows

import pt2logs
from pt2logs.tables import TABLES

ROOT = Path(__file__).resolve().parents[1]
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
}
DROP = ("txn", "ingest_date", "ingested_at", "committed_at")


def _trace(folder: Path, blobs: int, size: int = 32 << 10) -> Path:
    """A TORCH_TRACE of ``blobs`` artifacts, each a distinct payload of ``size`` bytes (the payload store
    of the warehouse grows with it)."""
    folder.mkdir(parents=True)
    with open(folder / "dedicated_log_torch_trace_blobs.log", "w") as f:
        for i in range(blobs):
            lines = [f"blob {i} line {j} " + "x" * 60 for j in range(size // 72)]
            md5 = hashlib.md5("\n".join(lines).encode()).hexdigest()
            f.write(
                "V1122 10:47:39.801000 10578 torch/_dynamo/convert_frame.py:2134] "
                '{"artifact": {"name": "blob", "encoding": "string"}, "frame_id": 0, '
                f'"frame_compile_id": 0, "attempt": 0, "has_payload": "{md5}"}}\n'
            )
            f.write("".join(f"\t{line}\n" for line in lines))
    return folder


def _peak_mb(tmp: Path, blobs: int) -> float:
    wh = tmp / f"wh{blobs}"
    src = _trace(tmp / f"in{blobs}", blobs)
    pt2logs.ingest([str(src)], str(wh))
    pt2logs.ingest([str(src)], str(wh), force=True)  # dead rows and a second file: compact rewrites
    m = run([sys.executable, "-m", "pt2logs", "compact", "-w", str(wh)], env=ENV)
    assert m.rc == 0, m.out[-2000:]
    con = pt2logs.connect(str(wh))
    assert con.execute("SELECT count(*), count(payload) FROM events").fetchone() == (blobs, blobs)
    return m.peak_rss_mb


def test_compact_memory_does_not_grow_with_the_partition(tmp_path):
    """16 MB then 64 MB of distinct payloads in one partition: DuckDB's copy grew by 255 MB (254 → 509 MB:
    the store's rows grouped by key in memory); the row-group copy by the largest row group it reads."""
    small, large = _peak_mb(tmp_path, 500), _peak_mb(tmp_path, 2000)
    print(f"compact peak RSS {small:.0f} MB → {large:.0f} MB")
    assert large - small < 100, (small, large)


@pytest.fixture(scope="module")
def compactable(tmp_path_factory) -> tuple[Path, dict]:
    """The sample traces ingested, then one run ingested again (dead rows): (warehouse, rows before)."""
    wh = tmp_path_factory.mktemp("stream") / "wh"
    pt2logs.ingest([str(SAMPLES)], str(wh))
    pt2logs.ingest([str(SAMPLES / "recompiles")], str(wh), force=True)
    return wh, tables_rows(str(wh), dict.fromkeys(sorted(TABLES), DROP))


@pytest.mark.parametrize("spill", [False, True])
def test_compact_keeps_every_row_and_orders_files_by_run(tmp_path, monkeypatch, compactable, spill):
    """In memory, and spilled in chunks of 64 KiB merged two at a time (merge rounds): the same rows."""
    from pt2logs.store import compact_copy
    from pt2logs.store.compact import compact

    src, before = compactable
    wh = tmp_path / "wh"
    shutil.copytree(src, wh)
    if spill:
        monkeypatch.setattr(compact_copy, "CHUNK_BYTES", 64 << 10)
        monkeypatch.setattr(compact_copy, "MERGE_BATCH_BYTES", 8 << 10)
        monkeypatch.setattr(compact_copy, "FAN_IN", 2)
        monkeypatch.setattr(compact_copy, "READ_BYTES", 32 << 10)
        monkeypatch.setattr(compact_copy, "OUT_BYTES", 16 << 10)
    res = compact(str(wh), grace_s=0)
    assert res.partitions and res.rows_dropped > 0
    assert tables_rows(str(wh), dict.fromkeys(sorted(TABLES), DROP)) == before
    runs_seen = 0
    for f in wh.glob("*/ingest_date=*/*.parquet"):
        if f.parent.parent.name == "payloads":
            continue
        ids = pq.read_table(f, columns=["run_id"]).column(0).to_pylist()
        assert ids == sorted(ids), f  # ordered by run: each run's rows together
        runs_seen = max(runs_seen, len(set(ids)))
        md = pq.ParquetFile(f).metadata
        for i in range(md.num_row_groups):
            col = md.row_group(i).column(md.schema.names.index("run_id"))
            assert col.statistics is not None and col.statistics.has_min_max, f
    assert runs_seen > 1
