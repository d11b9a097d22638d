"""The least work a lossless ingest of a trace does in this stack: a lower bound for pt2logs.

    python -m bench.bound FILE

Times, in one process, only the native (C-level) steps that any reader keeping every
record must take, each with the thinnest Python around it (one list comprehension):

1. read the file and hash it (change detection on re-ingest),
2. find the header lines (one regex pass) and slice the payloads out,
3. strip the payload lines' TABs (the md5 is over the TAB-free text, and the text is stored),
4. check each payload's md5,
5. parse each envelope with orjson,
6. write envelopes + payloads as Arrow binary columns to zstd Parquet.

No tables besides that, no state, no handlers. Its sum divided by the cores is what a
perfectly parallel, Python-free pt2logs would still need; compare it with the floor
scan's wall time to see whether "at least as fast as the floor" is reachable at all.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import sys
import time

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

HEADER = re.compile(rb"\n([VIWEC])(\d{4}) (\d\d:\d\d:\d\d)\.(\d{6}) +(\d+) ([^\n]*?):(\d+)\] ([^\n]*)")
BLOCK = 16 << 20


def bound(path: str) -> dict:
    steps = dict.fromkeys(("read + sha1", "find headers + slice payloads", "strip payload TABs", "payload md5",
                           "orjson envelopes", "Arrow + zstd Parquet"), 0.0)
    size = records = 0
    sha1 = hashlib.sha1()
    with open(path, "rb") as f:
        carry = b"\n"
        while True:
            t = time.perf_counter()
            data = f.read(BLOCK)
            sha1.update(data)
            steps["read + sha1"] += time.perf_counter() - t
            size += len(data)
            buf = carry + data
            if not data:
                end = len(buf)
            else:  # cut before the last header: its payload may go on in the next block
                heads = list(HEADER.finditer(buf, max(0, len(buf) - (1 << 20)))) or list(HEADER.finditer(buf))
                end = heads[-1].start() + 1 if len(heads) > 0 and heads[-1].start() > 0 else len(buf)
            t = time.perf_counter()
            ms = list(HEADER.finditer(buf, 0, end))
            records += len(ms)
            bounds = [m.start() for m in ms[1:]] + [end - 1]
            envs = [m.group(8) for m in ms]
            raws = [buf[m.end() + 2 : b] for m, b in zip(ms, bounds)]
            steps["find headers + slice payloads"] += time.perf_counter() - t
            t = time.perf_counter()
            payloads = [r.replace(b"\n\t", b"\n") for r in raws]
            steps["strip payload TABs"] += time.perf_counter() - t
            t = time.perf_counter()
            [hashlib.md5(p).hexdigest() for p in payloads if p]
            steps["payload md5"] += time.perf_counter() - t
            t = time.perf_counter()
            [orjson.loads(e) for e in envs]
            steps["orjson envelopes"] += time.perf_counter() - t
            t = time.perf_counter()
            table = pa.table({"envelope": pa.array(envs, pa.binary()).cast(pa.string()),
                              "payload": pa.array(payloads, pa.binary()).cast(pa.string())})
            pq.write_table(table, io.BytesIO(), compression="zstd", compression_level=1)
            steps["Arrow + zstd Parquet"] += time.perf_counter() - t
            carry = buf[end - 1 :]
            if not data:
                break
    total = sum(steps.values())
    return {"size_mb": size / 1e6, "records": records, "steps": steps, "total_s": total}


if __name__ == "__main__":
    r = bound(sys.argv[1])
    print(json.dumps(r, default=lambda x: round(x, 3)))
