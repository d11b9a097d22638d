"""The floor: a bare single-process scan that only matches each header's glog prefix and
parses its JSON with orjson, skipping payloads and keeping nothing.

    python -m bench.floor FILE
"""

from __future__ import annotations

import re
import sys
import time

import orjson

PREFIX = re.compile(rb"^([VIWEC])(\d{4}) (\d\d:\d\d:\d\d\.\d{6}) +(\d+) ([^:]+):(\d+)\] (.*)$")


def scan(path: str) -> tuple[int, int]:
    headers = 0
    size = 0
    loads = orjson.loads
    match = PREFIX.match
    with open(path, "rb") as f:
        for line in f:
            size += len(line)
            if line[:1] == b"\t":
                continue
            m = match(line)
            if m:
                loads(m.group(7))
                headers += 1
    return headers, size


if __name__ == "__main__":
    t = time.perf_counter()
    n, size = scan(sys.argv[1])
    dt = time.perf_counter() - t
    print(f"{n} headers, {size / 1e6:.1f} MB in {dt:.3f} s: {size / 1e6 / dt:.0f} MB/s")
