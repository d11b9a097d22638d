"""The least work pt2logs' native design does on a trace: a lower bound for its ingest.

    python -m bench.bound FILE

Times, in one process, the steps every ingest of a TORCH_TRACE file takes before any handler
derives a table, each as pt2logs runs it (the C pass of ``pt2logs._native._records``):

1. read the file and hash it (XXH3-128: change detection on re-ingest),
2. the native split: record boundaries, glog prefix, envelope, payload TAB stripping and md5,
3. the native events rows: each envelope read, its row written as Arrow buffers (no handler runs),
4. Arrow arrays from those buffers, UTF-8 checked, and the ``events`` table written as zstd Parquet.

No derived tables, no handlers. Its sum divided by the cores is what pt2logs would need if every
handler were free; compare it with the floor scan's wall time to see what the handlers leave of the
"at least as fast as the floor" target.
"""

from __future__ import annotations

import io
import json
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq

STEPS = (
    "read + xxh3",
    "native split + TAB strip + md5",
    "native events rows",
    "Arrow + zstd Parquet",
)
BLOCK = 4 << 20


def bound(path: str) -> dict:
    import xxhash

    from pt2logs.readers.kit import EXCERPT
    from pt2logs.readers.trace import records
    from pt2logs.readers.trace.fast import _arrays
    from pt2logs.readers.trace.native import _ext
    from pt2logs.readers.trace.records import Record, WholeLines

    if _ext is None:
        raise SystemExit(
            "the native extension is not built (pip install -e . or python hatch_build.py)"
        )
    steps = dict.fromkeys(STEPS, 0.0)
    size = n_records = 0
    digest = xxhash.xxh3_128()
    sc = _ext.Scanner(Record, records.MAX_PAYLOAD, EXCERPT)
    sink = io.BytesIO()
    writer = None

    def chunks():
        nonlocal size
        with open(path, "rb") as f:
            while True:
                t = time.perf_counter()
                data = f.read(BLOCK)
                digest.update(data)
                steps["read + xxh3"] += time.perf_counter() - t
                if not data:
                    return
                size += len(data)
                yield data

    def groups():
        lines = WholeLines(chunks(), lambda *a: None)
        for buf, last_nl in lines:
            items, lines.line_at, _ = sc.feed(buf, last_nl + 1, bool(lines.crlf), lines.line_at)
            yield items
        yield sc.finish()

    it = groups()
    while True:
        t = time.perf_counter()
        items = next(it, None)
        if items is None:
            break
        recs = [r for r in items if type(r) is Record]
        t2 = time.perf_counter()
        steps["native split + TAB strip + md5"] += t2 - t
        i = 0
        while i < len(recs):
            stop, n, cols, *_ = _ext.event_columns(
                recs, i, {}, {}, None, None, 0, 0, 1 << 40, 1 << 62
            )
            t3 = time.perf_counter()
            steps["native events rows"] += t3 - t2
            if n:
                arrays, _, _ = _arrays(cols, n, "x.log")
                arrays = {
                    k: (v.cast(pa.string()) if v.type == pa.binary() else v)
                    for k, v in arrays.items()
                }
                table = pa.table(arrays)
                if writer is None:
                    writer = pq.ParquetWriter(
                        sink, table.schema, compression="zstd", compression_level=1
                    )
                writer.write_table(table)
            i = stop + (
                0 if n else 1
            )  # a record the native pass leaves: skipped here (the bound is a bound)
            n_records += n
            t2 = time.perf_counter()
            steps["Arrow + zstd Parquet"] += t2 - t3
    if writer is not None:
        t = time.perf_counter()
        writer.close()
        steps["Arrow + zstd Parquet"] += time.perf_counter() - t
    total = sum(steps.values())
    return {
        "size_mb": size / 1e6,
        "records": n_records,
        "steps": steps,
        "total_s": total,
        "parquet_mb": sink.tell() / 1e6,
    }


if __name__ == "__main__":
    r = bound(sys.argv[1])
    print(json.dumps(r, default=lambda x: round(x, 3)))
