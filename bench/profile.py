"""Where one process spends its time on a big trace: cProfile over the read + write path, grouped.

python -m bench.profile FILE
"""

from __future__ import annotations

import cProfile
import pstats
import shutil
import sys
import tempfile
import time
from collections import Counter

BUCKETS = [
    ("split records (regex + slicing + tab strip)", ("records.py",)),
    (
        "split records natively (boundaries + tab strip in one C pass, md5s eight at a time)",
        ("records_native.py", "_records.Scanner"),
    ),
    (
        "native events pass (envelopes → events rows; chromium events → spans and compile_phases rows; Arrow buffers)",
        ("event_columns", "trace_fast.py:_arrays"),
    ),
    ("payload md5", ("openssl_md5",)),
    ("JSON parsing (orjson)", ("orjson.loads", "{orjson.loads}")),
    (
        "chromium events outside the native pass (first of a file, left ones: phases.py)",
        ("phases.py", "_records.chromium"),
    ),
    (
        "other event handlers (metrics, recompiles, kernels, caches)",
        (
            "compile_facts.py",
            "metrics.py",
            "basics.py",
            "caches.py",
            "vllm.py",
            "analysis/",
            "_records.split_components",
        ),
    ),
    (
        "Python lists → Arrow arrays",
        ("schema.py", "segment_rows.py", "_text_array", "_events_batch", "_ts_array"),
    ),
    ("payload store (XXH3-128 keys, each distinct payload once)", ("payloads.py",)),
    ("Parquet encode + zstd + write", ("ParquetWriter", "parquet/core.py", "warehouse.py")),
    (
        "read + hash (xxh3 / sha1) of the input",
        ("sources.py", "HASH.update", "xxh3", "BufferedReader.read"),
    ),
]


def profile(path: str) -> dict:
    import pt2logs.tables  # noqa: F401
    from pt2logs.ingestion.worker import FileTask, memory_pool, parse_file
    from pt2logs.store.warehouse import TxnInfo, Warehouse

    memory_pool()
    tmp = tempfile.mkdtemp()
    try:
        wh = Warehouse(tmp)
        wh.init()
        info = TxnInfo(tmp, "20000101T000000000000-0-bench", "2000-01-01")
        import os

        task = FileTask(
            "bench",
            os.path.abspath(path),
            "x.log",
            "torch_trace",
            None,
            None,
            os.path.getsize(path),
        )
        from pt2logs.ingestion.worker import new_writer

        # the writer ingest's workers use (with the payload store), each pass a fresh one
        t = time.perf_counter()
        w = new_writer(info, "plain")
        parse_file(info, task, w)
        w.close()
        plain = time.perf_counter() - t
        prof = cProfile.Profile()
        w = new_writer(info, "prof")
        prof.enable()
        parse_file(info, task, w)
        w.close()
        prof.disable()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    st = pstats.Stats(prof)
    total = sum(v[2] for v in st.stats.values())  # tottime
    got: Counter = Counter()
    for (file, _line, func), v in st.stats.items():
        where = f"{file}:{func}"
        for label, keys in BUCKETS:
            if any(k in where for k in keys):
                got[label] += v[2]
                break
        else:
            got["rest of the record loop (Python)"] += v[2]
    scale = plain / total if total else 1.0
    return {
        "wall_s": plain,
        "buckets": [(k, got[k] * scale) for k, _ in BUCKETS]
        + [("rest of the record loop (Python)", got["rest of the record loop (Python)"] * scale)],
    }


if __name__ == "__main__":
    r = profile(sys.argv[1])
    print(f"one process, {r['wall_s']:.2f} s")
    for k, v in r["buckets"]:
        print(f"  {v:6.2f} s  {k}")
