"""Bombs of the readers' side (issue 31): documents and lines built to blow up, and blank lines.

    python -m bench --only bombs                                  # these, and the compression bombs
    python -m bench --only bombs --bomb-before /work/main/src     # also each bomb against other code

Each bomb is generated under ``bench/out/hostile/`` (kept between runs) and ingested by a child
process (in-process engine, like ``--jobs 1``) that reports its own peak RSS (VmHWM) and CPU seconds;
a watchdog kills it past a ceiling or a time limit (then the peak is the largest RSS it saw). With
``--bomb-before SRC`` the same bombs also run with ``PYTHONPATH=SRC`` (the code before a change),
at the smaller ``before_mb`` sizes where the old code needs minutes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path

from bench import bombs

ROOT = Path(__file__).resolve().parents[1]

_CHILD = """
import json, re, sys, time, pt2logs
from pt2logs.ingestion.engines import Engine
t = time.process_time()
r = pt2logs.ingest([sys.argv[1]], sys.argv[2], engine=Engine(), fmt=sys.argv[3] or None)
cpu = time.process_time() - t
peak = int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1))
print(json.dumps({"events": r.events, "errors": r.errors, "warnings": r.warnings, "peak_kb": peak, "cpu_s": cpu}))
"""

_DEBUG_DIR = (
    "torch_compile_debug/run_2024_01_01_00_00_00_000000-pid_1/torchinductor/model__0_inference_0.0"
)
GLOG = b"I1122 09:44:21.382000 14352 torch/_dynamo/convert_frame.py:1] [0/0] %s\n"
MB = 1 << 20


def _counters(path: Path, mb: int) -> None:
    """``{"counters": {"stats": {"k<i>": i, ...}}}``: ``mb`` MB of tiny counters (the shape that expands most)."""
    block = b"".join(b'"k@_%d":%d,' % (j, j) for j in range(60_000))
    with open(path, "wb") as f:
        f.write(b'{"counters": {"graph_break": {"a reason": 1}, "stats": {')
        b = 0
        while f.tell() < mb * MB:
            f.write(block.replace(b"@", b"%d" % b))
            b += 1
        f.write(b'"last": 0}}}')


def _huge_keys_gz(path: Path, mb: int) -> None:
    """A counters dump of graph_break reasons of 200 KB each, ``mb`` MB of JSON in a few hundred KB of gzip."""
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        f.write(c.compress(b'{"counters": {"stats": {"calls_captured": 3}, "graph_break": {'))
        for i in range(mb * 5):
            f.write(
                c.compress(b'%s"reason %d: %s": 1' % (b"," if i else b"", i, b"x" * (200 << 10)))
            )
        f.write(c.compress(b"}}}") + c.flush())


def _timing(path: Path, mb: int) -> None:
    """A TORCH_SPYRE_TIMING record (``rec.<pid>.json``) of ``mb`` MB of events."""
    ev = (
        b'{"name":"kernel:fwd:@","ordinal":@,"parent_ordinal":0,"t_start_ns":1700000000000,"t_end_ns":1700000000900,'
        b'"inclusive_ns":900,"self_ns":800,"open":false,"meta":{"kernel":"sdsc_7"}},'
    )
    block = ev * 5000
    with open(path, "wb") as f:
        f.write(
            b'{"meta": {"recorder_version": 1, "pid": 4242, "torch_spyre_version": "0.1"}, "events": ['
        )
        b = 0
        while f.tell() < mb * MB:
            f.write(block.replace(b"@", b"%d" % b))
            b += 1
        f.write(b'{"name":"kernel:fwd:end","ordinal":0}]}')


def _one_line(path: Path, mb: int, gz: bool) -> None:
    """A TORCH_LOGS capture with one line of ``mb`` MB in the middle (plain or gzip)."""
    c = zlib.compressobj(1, zlib.DEFLATED, 31) if gz else None
    block = b"y" * MB
    with open(path, "wb") as f:
        put = (lambda b: f.write(c.compress(b))) if c else f.write
        put(GLOG % b"before" + b"progress: ")
        for _ in range(mb):
            put(block)
        put(b"\n" + GLOG.replace(b"convert_frame.py:1", b"guards.py:7") % b"after")
        if c:
            f.write(c.flush())


def _newlines_gz(path: Path, mb: int) -> None:
    """A TORCH_LOGS capture with ``mb`` MB of newlines (blank lines) between two log lines, gzipped."""
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        f.write(c.compress(GLOG % b"before"))
        for _ in range(mb):
            f.write(c.compress(b"\n" * MB))
        f.write(
            c.compress(GLOG.replace(b"convert_frame.py:1", b"guards.py:7") % b"after") + c.flush()
        )


def _one_message(path: Path, mb: int) -> None:
    """``mb`` MB of lines of one TORCH_LOGS prefix: one message, as far as the reader lets it grow."""
    line = GLOG % (b"z" * 100)
    block = line * (MB // len(line))
    with open(path, "wb") as f:
        for _ in range(mb):
            f.write(block)


def _output_code(path: Path, mb: int) -> None:
    """A TORCH_COMPILE_DEBUG ``output_code.py`` of ``mb`` MB whose lines carry a character outside the BMP
    (then Python holds its text at 4 bytes a character)."""
    line = "    buf%d = empty_strided((1024, 1024), (1024, 1), device='cuda')  # \U0001f600\n"
    block = "".join(line % j for j in range(10_000)).encode()
    with open(path, "wb") as f:
        f.write(b"# AOT ID: ['0_inference']\nfrom ctypes import c_void_p\n")
        while f.tell() < mb * MB:
            f.write(block)


#: name -> (what it is, file name, generator, format forced (None: sniffed), MB after, MB before)
BOMBS: dict[str, tuple[str, str, Callable[[Path, int], None], str | None, int, int]] = {
    "counters_json": (
        "counters.json of tiny counters",
        "counters.json",
        _counters,
        "counters_json",
        179,
        60,
    ),
    "counters_json_cap": (
        "counters.json just under the 8 MiB cap",
        "counters.json",
        _counters,
        "counters_json",
        6,
        6,
    ),
    "counters_huge_keys_gz": (
        "counters.json.gz, 200 KB keys",
        "counters.json.gz",
        _huge_keys_gz,
        "counters_json",
        200,
        200,
    ),
    "spyre_timing": ("Spyre timing record", "rec.4242.json", _timing, "spyre_timing", 249, 100),
    "spyre_timing_cap": (
        "Spyre timing record just under the cap",
        "rec.4242.json",
        _timing,
        "spyre_timing",
        6,
        6,
    ),
    "output_code": (
        "TORCH_COMPILE_DEBUG output_code.py, non-BMP text",
        _DEBUG_DIR + "/output_code.py",
        _output_code,
        "compile_debug",
        31,
        31,
    ),
    "one_line": (
        "capture with one long line",
        "stderr.txt",
        lambda p, mb: _one_line(p, mb, False),
        "torch_logs",
        1000,
        1000,
    ),
    "one_line_gz": (
        ".gz capture of one long line",
        "stderr.txt.gz",
        lambda p, mb: _one_line(p, mb, True),
        "torch_logs",
        5000,
        1000,
    ),
    "newlines_gz": (
        ".gz capture of blank lines",
        "stderr.txt.gz",
        _newlines_gz,
        "torch_logs",
        100,
        20,
    ),
    "one_message": (
        "one TORCH_LOGS message of many lines",
        "stderr.txt",
        _one_message,
        "torch_logs",
        300,
        300,
    ),
}


def make(dest: Path, name: str, mb: int) -> Path:
    """The bomb's folder (generated once)."""
    _, fname, gen, _, _, _ = BOMBS[name]
    folder = dest / f"{name}_{mb}mb"
    path = folder / fname
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name("tmp." + path.name)
        gen(tmp, mb)
        tmp.replace(path)
    return folder


def measure(
    folder: Path, wh: Path, fmt: str | None, src: Path, ceiling_mb: int, timeout_s: float
) -> dict:
    import shutil

    import psutil

    shutil.rmtree(wh, ignore_errors=True)
    env = {
        **os.environ,
        "PYTHONPATH": str(src),
        "PYTHONDONTWRITEBYTECODE": "1",
    }  # (other code is only read)
    t = time.perf_counter()
    proc = psutil.Popen(
        [sys.executable, "-c", _CHILD, str(folder), str(wh), fmt or ""],
        env=env,
        cwd=str(ROOT),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    seen, killed = bombs.watch(proc, t, ceiling_mb, timeout_s)
    out, err = (b.decode(errors="replace") for b in proc.communicate())
    wall = time.perf_counter() - t
    m = re.search(r"^\{.*\}$", out, re.M)
    got = json.loads(m.group(0)) if m else {}
    return {
        "peak_rss_mb": got["peak_kb"] / 1024 if got else seen / 2**20,
        "wall_s": wall,
        "cpu_s": got.get("cpu_s"),
        "rc": proc.returncode,
        "killed": killed,
        "errors": got.get("errors"),
        "warnings": got.get("warnings"),
        "error_tail": None if got else (err.strip().splitlines() or [""])[-1][:300],
    }


def run_all(
    out: Path,
    before: Path | None = None,
    ceiling_mb: int = 4096,
    timeout_s: float = 240,
    scale: float = 1.0,
) -> list[dict]:
    """Every bomb with this tree's code (and with ``before``'s, when given); ``scale`` shrinks every size."""
    rows = []
    for name, (what, _, _, fmt, mb, before_mb) in BOMBS.items():
        for code, src, size in (("before", before, before_mb), ("after", ROOT / "src", mb)):
            if src is None:
                continue
            size = max(1, round(size * scale))
            folder = make(out / "hostile", name, size)
            stored = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
            row = {
                "bomb": name,
                "what": what,
                "code": code,
                "content_mb": size,
                "stored_mb": stored / 1e6,
                **measure(
                    folder, out / f"wh_hostile_{name}", fmt, Path(src), ceiling_mb, timeout_s
                ),
            }
            print(json.dumps(row, default=lambda x: round(x, 3)), flush=True)
            rows.append(row)
    return rows
