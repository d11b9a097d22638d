"""Warehouse bytes ÷ input bytes: 100 runs of one model (the same real trace as 100 runs) and a mixed
corpus (every source trace in turn), each ingested into a fresh warehouse.

    python -m bench.storage [N_RUNS]
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from bench import corpus


def _bytes(p: Path) -> int:
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())


def ratio(runs: list[bytes], tmp: Path, name: str) -> dict:
    import pt2logs

    root = tmp / name
    for i, data in enumerate(runs):
        d = root / f"job{i:05d}"
        d.mkdir(parents=True)
        (d / "dedicated_log_torch_trace_bench.log").write_bytes(corpus.distinct(data, i))
    wh = tmp / f"wh_{name}"
    pt2logs.ingest([str(root)], str(wh))
    parquet = sum(f.stat().st_size for f in wh.rglob("*.parquet"))
    inp, out = _bytes(root), _bytes(wh)
    return {"runs": len(runs), "input_mb": inp / 1e6, "warehouse_mb": out / 1e6, "parquet_mb": parquet / 1e6,
            "ratio_pct": 100 * out / inp, "parquet_ratio_pct": 100 * parquet / inp}


def storage(n: int = 100) -> dict:
    srcs = corpus.source_traces()
    one = max(srcs, key=len)  # the biggest real trace: one model's run, repeated
    tmp = Path(tempfile.mkdtemp())
    try:
        return {"one_model": ratio([one] * n, tmp, "one"), "mixed": ratio([srcs[i % len(srcs)] for i in range(n)], tmp, "mixed")}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    print(json.dumps(storage(int(sys.argv[1]) if len(sys.argv) > 1 else 100), default=lambda x: round(x, 2)))
