"""Benchmark corpora built from real traces (sample_traces/ and ../shared/fixtures/gpu).

* one big single log of a given size (traces concatenated, as one long-running process would write);
* a many-file corpus: copies of real traces, each made a distinct run (its first line's thread id
  is rewritten, so its content-derived run id differs).
"""

from __future__ import annotations

import gzip
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("PT2LOGS_FIXTURES", ROOT.parent / "shared" / "fixtures"))


def source_traces() -> list[bytes]:
    out = []
    for p in sorted((ROOT / "sample_traces").glob("*/trace/*.log*")):
        data = p.read_bytes()
        out.append(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    for p in sorted((FIXTURES / "gpu").glob("*/trace/*.log")):
        out.append(p.read_bytes())
    return out


_FRAME = re.compile(rb'"frame_id": (\d+)')


def big_log(dest: Path, mb: int) -> Path:
    """A single log of about ``mb`` MB, as one long job would write it: the real traces one after
    the other, each copy with its own frame ids (so compile ids do not repeat: a tool that works
    per compile, like tlparse, does the work of a real log that size)."""
    path = dest / f"single_{mb}mb" / "dedicated_log_torch_trace_bench.log"
    if path.exists() and abs(path.stat().st_size - mb * 1e6) < 20e6:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    block = b"".join(t if t.endswith(b"\n") else t + b"\n" for t in source_traces())
    with open(path, "wb") as f:
        n, k = 0, 0
        while n < mb * 1e6:
            shift = k * 1000
            f.write(_FRAME.sub(lambda m, s=shift: b'"frame_id": %d' % (int(m.group(1)) + s), block))
            n += len(block)
            k += 1
    return path


def distinct(data: bytes, i: int) -> bytes:
    """The same trace as a different run: rewrite the thread id on its first line."""
    first, rest = data.split(b"\n", 1)
    parts = first.split(b" ")
    parts[2] = str(1_000_000 + i).encode()
    return b" ".join(parts) + b"\n" + rest


def many_runs(dest: Path, n_runs: int, small: bool = False) -> Path:
    """``n_runs`` run folders, each a distinct copy of a real trace."""
    root = dest / f"runs_{n_runs}{'_small' if small else ''}"
    marker = root / ".complete"
    if marker.exists():
        return root
    srcs = source_traces()
    if small:  # the smallest real traces, for a many-run corpus that is quick to build
        srcs = sorted(srcs, key=len)[:2]
    for i in range(n_runs):
        d = root / f"job{i:05d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "dedicated_log_torch_trace_bench.log").write_bytes(distinct(srcs[i % len(srcs)], i))
    marker.write_text("ok")
    return root


def size_mb(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 1e6
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def warm(path: Path) -> None:
    """Read every file under ``path`` once, so that each contender finds it in the page cache
    (the first one to run would otherwise also pay for the disk)."""
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    for p in files:
        with open(p, "rb", buffering=0) as f:
            while f.read(16 << 20):
                pass
