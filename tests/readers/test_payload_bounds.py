"""A record whose payload never ends (a header and hundreds of MB of empty lines) stays within memory.

Empty lines inside a payload are payload lines that lost their TAB; each used to cost a list entry,
and the payload had no bound: 500 MB of them ended in MemoryError. Now a payload keeps its first
``MAX_PAYLOAD`` bytes, the rest is counted (the next record's line number is right) and reported.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from pt2logs.readers.kit import FileContext
from pt2logs.readers.trace.records import MAX_PAYLOAD
from pt2logs.readers.trace.torch_trace import read_trace

HEAD = b'V1206 15:18:15.925000 1500233 torch/_dynamo/utils.py:1288] {"artifact": {"name": "x", "encoding": "string"}, "has_payload": "00"}\n'
NEXT = b'V1206 15:18:16.925000 1500233 torch/_dynamo/utils.py:1288] {"dynamo_start": {}, "frame_id": 1, "frame_compile_id": 0}\n'


def test_empty_lines_beyond_the_bound_are_counted_and_reported() -> None:
    n = MAX_PAYLOAD + 1000
    chunks = [HEAD] + [b"\n" * (1 << 20)] * (n >> 20) + [b"\n" * (n % (1 << 20)), NEXT]
    ctx = FileContext(file="bomb.log")
    out: dict[str, list] = {}
    for table, batch in read_trace(iter(chunks), ctx):
        out.setdefault(table, []).extend(batch.to_pylist())
    ev = out["events"]
    assert [e["line_no"] for e in ev] == [1, n + 2]
    assert ev[0]["payload_bytes"] == MAX_PAYLOAD - 1  # the kept lines, less the last newline
    kinds = {e["kind"]: e["line_no"] for e in out["ingest_errors"]}
    assert kinds["payload_too_large"] == 1 and ctx.stats.errors == 0


def test_a_newline_bomb_ingests_in_bounded_memory(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.log"
    with bomb.open("wb") as f:
        f.write(HEAD)
        for _ in range(200):
            f.write(b"\n" * (1 << 20))
        f.write(NEXT)
    # VmHWM, not ru_maxrss: the latter carries the parent's peak over fork + exec (a big pytest process)
    code = textwrap.dedent(f"""
        import re, pt2logs
        r = pt2logs.ingest([{str(bomb)!r}], {str(tmp_path / "wh")!r})
        hwm = int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1))
        print(r.events, r.warnings, hwm // 1024)
    """)
    events, warnings, rss_mb = map(
        int,
        subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=300
        ).stdout.split(),
    )
    assert (events, warnings) == (2, 2)  # payload_too_large + its md5 cannot match
    assert rss_mb <= 300, f"peak RSS {rss_mb} MB"
