"""tlparse's ``chromium_events.json`` read back (for :mod:`pt2logs.readers.documents.tlparse_dir`): its
elements streamed one at a time (tlparse pretty-prints the array, one element per block; any other layout is
loaded whole up to MAX_DOC), a compile id's context fields, and the rows of those records pointed back
at the file (their line numbers are offset by :data:`CHROMIUM_BASE` while they go through the trace loop).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from pt2logs.readers.kit import EXCERPT, MAX_DOC, MAX_LINE, iter_lines
from pt2logs.readers.trace.state import TraceState

#: line numbers of chromium records start here (told apart from raw.jsonl's, then put back by :func:`retag`)
CHROMIUM_BASE = 1 << 40
CHROMIUM_FILE = "chromium_events.json"

_CID = re.compile(r"^(?:!(\d+)(?:/|$))?(?:(\d+)/(\d+))?(?:_(\d+))?$")


def compile_ctx(cid: str) -> dict[str, int]:
    """The envelope's context fields (compiled autograd id, frame id, frame compile id) of a compile id's text."""
    m = _CID.match(cid.strip())
    if m is None:
        return {}
    ca, fid, fcid, _ = m.groups()
    out = {}
    if ca is not None:
        out["compiled_autograd_id"] = int(ca)
    if fid is not None:
        out["frame_id"], out["frame_compile_id"] = int(fid), int(fcid)
    return out


def chromium_elements(chunks: Iterable[bytes], st: TraceState | None) -> Iterator[tuple[int, Any]]:
    """(1-based line, element) of tlparse's array, streamed: tlparse pretty-prints it with one element
    per ``  {`` ... ``  }`` block; any other layout is loaded whole (at most MAX_DOC bytes)."""

    def report(kind: str, line_no: int, message: str, excerpt: bytes) -> None:
        if st is not None:
            st.error(kind, CHROMIUM_BASE + line_no, message, excerpt)

    lines = iter_lines(chunks, lambda *a: None, MAX_LINE)
    head: list[bytes] = []
    for _, line in lines:
        head.append(line)
        if len(head) == 2:
            break
    if len(head) == 2 and head[0].strip() == b"[" and head[1].rstrip() == b"  {":
        start, body = 2, [head[1]]
        for line_no, line in lines:
            s = line.rstrip()
            if s == b"  {":
                start, body = line_no, [line]
            elif s in (b"  }", b"  },"):
                try:
                    yield start, orjson.loads(b"\n".join(body) + b"\n}")
                except orjson.JSONDecodeError as e:
                    report(
                        "bad_chromium_event",
                        start,
                        f"element of {CHROMIUM_FILE} is not JSON ({e})",
                        b"\n".join(body)[:EXCERPT],
                    )
                body = []
            elif body:
                body.append(line)
                if len(body) > 100_000:
                    report(
                        "bad_chromium_event",
                        start,
                        f"element of {CHROMIUM_FILE} too long; skipped",
                        body[0],
                    )
                    body = []
        return
    rest = [b"\n".join(head)]
    size = len(rest[0])
    for _, line in lines:
        size += len(line) + 1
        if size > MAX_DOC:
            report(
                "too_large",
                1,
                f"{CHROMIUM_FILE} is not in tlparse's layout and larger than {MAX_DOC >> 20} MiB; no compile phases",
                b"",
            )
            return
        rest.append(line)
    data = b"\n".join(rest)
    try:
        arr = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        report(
            "bad_json",
            1,
            f"{CHROMIUM_FILE} is not valid JSON ({e}); no compile phases",
            data[:EXCERPT],
        )
        return
    for ev in arr if isinstance(arr, list) else []:
        yield 1, ev


def retag(
    batch: pa.RecordBatch, source: str, chromium_file: str, chromium_path: str
) -> pa.RecordBatch:
    """``source`` in a batch's ``source`` column; its chromium records' rows pointed at ``chromium_file``
    (``file``, ``path``, ``line_no`` without :data:`CHROMIUM_BASE`)."""
    names = batch.schema.names
    cols = {n: batch.column(i) for i, n in enumerate(names)}
    if "source" in cols:
        cols["source"] = pa.array([source] * batch.num_rows, type=pa.string())
    if "line_no" in cols and batch.num_rows:
        ln = cols["line_no"]
        mask = pc.fill_null(pc.greater_equal(ln, CHROMIUM_BASE), False)
        if pc.any(mask).as_py():
            cols["line_no"] = pc.if_else(mask, pc.subtract(ln, CHROMIUM_BASE), ln)
            if "file" in cols:
                cols["file"] = pc.if_else(mask, pa.scalar(chromium_file), cols["file"])
            if "path" in cols:
                cols["path"] = pc.if_else(mask, pa.scalar(chromium_path), cols["path"])
    return pa.RecordBatch.from_arrays([cols[n] for n in names], schema=batch.schema)
