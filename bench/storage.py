"""Warehouse bytes ÷ input bytes: 100 runs of one model (the same real trace as 100 runs) and a mixed
corpus (every source trace in turn), each ingested into a fresh warehouse, with the payload store
(each distinct payload once per warehouse) and without it (``PT2LOGS_PAYLOAD_STORE=0``: every payload
in its row), the ingest's CPU seconds, and where the bytes go (per table, and per column of ``events``).

    python -m bench.storage [N_RUNS]
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench import corpus


def _bytes(p: Path) -> int:
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())


def where(wh: Path) -> dict:
    """Parquet bytes per table, and per column of ``events`` (compressed, from the files' footers)."""
    import pyarrow.parquet as pq

    tables: collections.Counter = collections.Counter()
    events: collections.Counter = collections.Counter()
    for f in wh.rglob("*.parquet"):
        table = f.relative_to(wh).parts[0]
        tables[table] += f.stat().st_size
        if table == "events":
            md = pq.ParquetFile(f).metadata
            for g in range(md.num_row_groups):
                for c in range(md.num_columns):
                    col = md.row_group(g).column(c)
                    events[col.path_in_schema] += col.total_compressed_size
    return {
        "tables_mb": {k: v / 1e6 for k, v in tables.most_common()},
        "events_columns_mb": {k: v / 1e6 for k, v in events.most_common()},
    }


def ratio(runs: list[bytes], tmp: Path, name: str) -> dict:
    import pt2logs

    root = tmp / name
    for i, data in enumerate(runs):
        d = root / f"job{i:05d}"
        d.mkdir(parents=True)
        (d / "dedicated_log_torch_trace_bench.log").write_bytes(corpus.distinct(data, i))
    out: dict = {"runs": len(runs), "input_mb": _bytes(root) / 1e6}
    for store in (True, False):
        wh = tmp / f"wh_{name}_{store}"
        old = os.environ.get("PT2LOGS_PAYLOAD_STORE")
        os.environ["PT2LOGS_PAYLOAD_STORE"] = "1" if store else "0"
        cpu = time.process_time()
        try:
            pt2logs.ingest([str(root)], str(wh))  # in this process: its CPU time is the ingest's
        finally:
            cpu = time.process_time() - cpu
            if old is None:
                del os.environ["PT2LOGS_PAYLOAD_STORE"]
            else:
                os.environ["PT2LOGS_PAYLOAD_STORE"] = old
        parquet = sum(f.stat().st_size for f in wh.rglob("*.parquet"))
        sfx = "" if store else "_inline"
        out.update(
            {
                f"warehouse_mb{sfx}": _bytes(wh) / 1e6,
                f"parquet_mb{sfx}": parquet / 1e6,
                f"ratio_pct{sfx}": 100 * _bytes(wh) / (out["input_mb"] * 1e6),
                f"ingest_cpu_s{sfx}": cpu,
                f"where{sfx}": where(wh),
            }
        )
        shutil.rmtree(wh, ignore_errors=True)
    return out


def storage(n: int = 100) -> dict:
    srcs = corpus.source_traces()
    one = max(srcs, key=len)  # the biggest real trace: one model's run, repeated
    tmp = Path(tempfile.mkdtemp())
    try:
        return {
            "one_model": ratio([one] * n, tmp, "one"),
            "mixed": ratio([srcs[i % len(srcs)] for i in range(n)], tmp, "mixed"),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    print(
        json.dumps(
            storage(int(sys.argv[1]) if len(sys.argv) > 1 else 100), default=lambda x: round(x, 2)
        )
    )
