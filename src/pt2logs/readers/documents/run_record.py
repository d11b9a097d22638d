"""``pt2logs run``'s own record of a command: ``pt2logs_run.json`` beside the capture.

``pt2logs run`` writes it when the command starts (command, start: a ``pt2logs run`` killed before the
command ends leaves a record of exit status unknown), and again when the command ends, whatever
happened: the command (as typed, quoting kept), its exit code or the signal that ended it, wall time, start and end (epoch seconds, UTC), and
its stderr file, the torch installed where it ran (the run's torch version when no log names one). Read as an auxiliary file of the capture, it gives the run something to stand on
when the command failed before torch logged anything, and one ``outcome_evidence`` row (kind
``exit_status``, rank NULL: the whole job), and the run's ``runs`` fields (command, exit code, wall
time, host, start, cwd): a later ``ingest`` of the capture folder gives the run they describe. When no format recognises the stderr (a command that died
before torch was imported: ``not a recognised log format``), the record says so (``stderr_read_by``:
``run_record``) and its reader reads that stderr too: every line a ``log_lines`` row, evidence
lines to ``outcome_evidence``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from pt2logs.readers.format import DOCUMENT, Format
from pt2logs.readers.kit import (
    MAX_JSON_DOC,
    Batch,
    FileContext,
    ReadStats,
    RowSink,
    read_document,
)
from pt2logs.readers.lines.outcome_patterns import exit_means, signal_name
from pt2logs.readers.lines.torch_logs import read_capture

NAME = "pt2logs_run.json"
_SNIFF = re.compile(rb'^\s*\{\s*"pt2logs_run"\s*:\s*1\b')


def _us(seconds: Any) -> Any:
    """Epoch seconds → µs; a number no timestamp holds (1e303) stays as it is: the column stores NULL and
    reports it (bad_value), where int() of an infinite product would stop the reader."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return None
    us = seconds * 1e6
    return int(us) if abs(us) < 2**63 else seconds


def record_text(rec: dict[str, Any]) -> str:
    """The record as one line of evidence: ``exit code 3`` / ``ended by SIGKILL (exit code -9)``."""
    code, sig = rec.get("exit_code"), rec.get("signal")
    if (
        code is None and not sig and rec.get("ended_at") is None
    ):  # written at the start, never completed
        return f"pt2logs run: exit status unknown (pt2logs run ended before the command did: killed?): {rec.get('command') or ''}"
    what = f"ended by {sig} (exit code {code})" if sig else f"exit code {code}"
    return f"pt2logs run: {what} after {rec.get('wall_s')} s: {rec.get('command') or ''}"


def _run_fields(rec: dict[str, Any], code: int | None, sig: str | None) -> dict[str, Any]:
    """The ``runs`` fields the record gives: a later ``ingest`` of the capture folder keeps them."""

    def typed(k: str, *types: type) -> Any:
        v = rec.get(k)
        return v if isinstance(v, types) and not isinstance(v, bool) else None

    started = typed("started_at", int, float)
    return {
        "command": typed("command", str),
        "exit_code": code,
        "exit_signal": sig,
        "wall_s": typed("wall_s", int, float),
        "host": typed("host", str),
        "name": typed("name", str),
        "cwd": typed("cwd", str),
        "started_at": int(started * 1e6) if started is not None else None,
    }


def read_run_record(chunks: Iterable[bytes], ctx: FileContext) -> Iterator[Batch]:
    sink = RowSink(ctx)
    data = read_document(chunks, sink, NAME, MAX_JSON_DOC)
    rec: Any = None
    if data is not None:
        try:
            rec = orjson.loads(data)
        except orjson.JSONDecodeError as e:
            sink.error("bad_json", 1, f"{NAME} is not valid JSON ({e})", data)
    if isinstance(rec, dict):
        code = rec.get("exit_code") if type(rec.get("exit_code")) is int else None
        sig = (
            rec.get("signal")
            if isinstance(rec.get("signal"), str)
            else (signal_name(code) if code is not None and code < 0 else None)
        )
        ctx.stats.events += 1
        ctx.stats.run_fields = _run_fields(rec, code, sig)
        if isinstance(rec.get("torch"), str):
            ctx.stats.note_torch(rec["torch"], "pt2logs_run")
        sink.add(
            "outcome_evidence",
            {
                "line_no": 1,
                "n_lines": ctx.stats.lines,
                "kind": "exit_status",
                "means": exit_means(code, sig),
                "secondary": False,
                "rank_from": "run",
                "exit_code": code,
                "signal": sig,
                "text": record_text(rec)[:1024],
                "ts": _us(rec.get("ended_at")),
                "detail": orjson.dumps(
                    {k: rec.get(k) for k in ("command", "wall_s", "started_at", "ended_at", "name")}
                ).decode(),
            },
        )
    elif data is not None and rec is not None:
        sink.error("not_an_object", 1, f"{NAME} is not a JSON object", data)
    yield from sink.flush()
    stderr = (
        rec.get("stderr")
        if isinstance(rec, dict) and rec.get("stderr_read_by") == "run_record"
        else None
    )
    if (
        isinstance(stderr, str)
        and ctx.open_sibling is not None
        and "/" not in stderr
        and stderr not in (".", "..")
    ):
        sub = FileContext(
            file=posixpath.join(posixpath.dirname(ctx.file), stderr),
            path=posixpath.join(posixpath.dirname(ctx.path), stderr),
            rank=ctx.rank,
            mtime=ctx.mtime,
            batch_rows=ctx.batch_rows,
            batch_bytes=ctx.batch_bytes,
            stats=ReadStats(),
        )
        try:
            yield from read_capture(ctx.open_sibling(stderr), sub)
        except OSError as e:
            sink.error("unreadable", None, f"the command's stderr {stderr} could not be read: {e}")
            yield from sink.flush()
        lines = ctx.stats.lines
        ctx.stats.merge(sub.stats)
        ctx.stats.lines = lines


def sniff_run_record(head: bytes, name: str) -> bool:
    return _SNIFF.match(head) is not None


FORMAT = Format(
    "run_record",
    "pt2logs run's record of a command (pt2logs_run.json): exit status, wall time, stderr",
    sniff_run_record,
    read_run_record,
    role=DOCUMENT,
    auxiliary=True,
)
