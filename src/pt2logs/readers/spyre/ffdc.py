"""Torch-Spyre FFDC failure reports (``TORCH_SPYRE_FFDC=1``) → ``spyre_failure_reports``.

The writer is ``collect()`` in torch_spyre/profiler/_ffdc.py (torch-spyre/torch-spyre 03c46a9, 4b73e4c;
dmholtz/torch-spyre 36b4533): one JSON object per failure, ``json.dump(report, indent=2, default=str)``
(later through torch_spyre._json, orjson with OPT_INDENT_2), into
``<inductor cache>/torch-spyre/ffdc_reports/ffdc_<category>_<YYYYMMDDTHHMMSS>_<µs>_<pid>.json`` (else
``<tmp>/torch-spyre-ffdc/``). Sections, in this order: ``metadata`` (timestamp, host, pid, python_version,
torch_version, torch_spyre_version, platform), ``failure`` (category, exception_type, message, traceback;
file and lineno since the compile_frontend/compile_backend split), ``environment`` (the TORCH_SPYRE_* /
SPYRE_* / TORCH_LOGS variables), ``artifacts`` (searched, found_count, paths; or searched + error),
``runtime`` (kernel_name, code_dir), ``hardware_state`` (spyre_available, note or error), ``collector``
(capture_latency_ms, missing_fields, collector_errors, success, completeness_pct). ``_report_path`` is
added to the returned dict after the write, so a file has it only when a user saved that dict. Every
field is optional here: a section a version lacks, or a value of an unexpected type, is NULL; sections
no version wrote are kept in ``other``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from typing import Any

import orjson

from pt2logs.analysis.failures import failure_columns, traceback_parts
from pt2logs.analysis.identity import classify_path
from pt2logs.readers.kit import MAX_JSON_DOC, Batch, FileContext, RowSink, read_document
from pt2logs.readers.spyre.dtypes import int64, loads

_KNOWN = (
    "metadata",
    "failure",
    "environment",
    "artifacts",
    "runtime",
    "hardware_state",
    "collector",
    "_report_path",
)
_SNIFF_FIRST = re.compile(rb'^\s*\{\s*"metadata"\s*:')
_SNIFF_FAILURE = re.compile(rb'"failure"\s*:\s*\{\s*"category"\s*:')


def sniff_ffdc(head: bytes, name: str) -> bool:
    """An FFDC report: a JSON object whose first key is ``metadata`` and whose ``failure`` section
    starts with its ``category`` (the order collect() builds them in)."""
    h = head[: 64 << 10]
    return bool(_SNIFF_FIRST.match(h)) and bool(_SNIFF_FAILURE.search(h))


def _section(doc: dict, key: str) -> dict:
    v = doc.get(key)
    return v if isinstance(v, dict) else {}


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _strs(v: Any) -> list[str] | None:
    return (
        [x if isinstance(x, str) else orjson.dumps(x, default=str).decode() for x in v]
        if isinstance(v, list)
        else None
    )


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _ts(v: Any) -> int | None:
    """metadata.timestamp (``datetime.now(timezone.utc).isoformat()``) → epoch µs."""
    if not isinstance(v, str):
        return None
    try:
        t = datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        return None
    t = t if t.tzinfo else t.replace(tzinfo=timezone.utc)
    return int(t.timestamp() * 1_000_000)


def report_row(doc: dict[str, Any]) -> dict[str, Any]:
    """One ``spyre_failure_reports`` row from a parsed report (identity columns by the failures rule)."""
    meta, fail, art = (
        _section(doc, "metadata"),
        _section(doc, "failure"),
        _section(doc, "artifacts"),
    )
    run, hw, col = (
        _section(doc, "runtime"),
        _section(doc, "hardware_state"),
        _section(doc, "collector"),
    )
    tb = _str(fail.get("traceback"))
    frames, tb_type, _ = traceback_parts(tb) if tb else ([], None, None)
    exc_type, message = _str(fail.get("exception_type")) or tb_type, _str(fail.get("message"))
    ident = failure_columns(exc_type, message, frames, [])
    py = _str(meta.get("python_version"))
    avail = hw.get("spyre_available")
    other = {k: v for k, v in doc.items() if k not in _KNOWN}
    raised = classify_path(f) if (f := _str(fail.get("file"))) else None
    return {
        "source": "spyre",
        "line_no": 1,
        "ts": _ts(meta.get("timestamp")),
        "category": _str(fail.get("category")),
        **ident,
        "raise_file": raised.key if raised else None,
        "raise_kind": raised.kind if raised else None,
        "raise_line": int64(fail.get("lineno")),
        "traceback": tb,
        "kernel_name": _str(run.get("kernel_name")),
        "code_dir": _str(run.get("code_dir")),
        "host": _str(meta.get("host")),
        "pid": int64(meta.get("pid")),
        "python_version": py.split()[0] if py and py.split() else py,
        "torch_version": _str(meta.get("torch_version")),
        "torch_spyre_version": _str(meta.get("torch_spyre_version")),
        "platform": _str(meta.get("platform")),
        "spyre_available": avail if isinstance(avail, bool) else None,
        "hardware_note": _str(hw.get("note")) or _str(hw.get("error")),
        "hardware_state": hw or None,
        "environment": _section(doc, "environment") or None,
        "artifacts_searched": art.get("searched")
        if isinstance(art.get("searched"), bool)
        else None,
        "artifact_count": int64(art.get("found_count")),
        "artifact_paths": _strs(art.get("paths")),
        "artifacts_error": _str(art.get("error")),
        "completeness_pct": _num(col.get("completeness_pct")),
        "missing_fields": _strs(col.get("missing_fields")),
        "collector_errors": _strs(col.get("collector_errors")),
        "capture_ok": col.get("success") if isinstance(col.get("success"), bool) else None,
        "capture_ms": _num(col.get("capture_latency_ms")),
        "report_path": _str(doc.get("_report_path")),
        "other": other or None,
    }


def read_ffdc(chunks: Iterable[bytes], ctx: FileContext) -> Iterator[Batch]:
    """One FFDC report → one ``spyre_failure_reports`` row (a report that is not a JSON object: an error)."""
    out = RowSink(ctx, batch_rows=min(ctx.batch_rows, 4096))
    data = read_document(chunks, out, "FFDC report", MAX_JSON_DOC)
    if data is not None:
        doc = loads(data)
        if isinstance(doc, Exception):
            out.error("bad_json", None, f"FFDC report is not valid JSON ({doc})", data)
        elif not isinstance(doc, dict):
            out.error(
                "not_an_object",
                None,
                f"FFDC report is JSON {type(doc).__name__}, not an object",
                data,
            )
        else:
            row = report_row(doc)
            if row["category"] is None:
                out.warn(
                    "no_category", 1, "FFDC report without a failure.category string; kept", data
                )
            out.add("spyre_failure_reports", row)
            ctx.stats.events += 1
    yield from out.flush()


#: the folders collect() writes into (the default and its fallback)
REPORT_FOLDERS = ("ffdc_reports", "torch-spyre-ffdc")


def ffdc_anchor(folder: str, root: str) -> str | None:
    """The folder an FFDC report describes: the one holding its ``ffdc_reports`` folder, or its
    ``torch-spyre-ffdc`` folder, or the inductor cache (``torch-spyre/ffdc_reports`` in a
    ``torchinductor_<user>`` folder) copied into it; only inside the input root, else None."""
    parts = folder.rstrip("/").split("/")
    if not parts or parts[-1] not in REPORT_FOLDERS:
        return None
    up = parts[:-1]
    if parts[-1] == "ffdc_reports" and up and up[-1] == "torch-spyre":
        up = up[:-1]  # the inductor cache root: torchinductor_<user> by default
    if up and up[-1].startswith("torchinductor_"):
        up = up[:-1]
    anchor, r = "/".join(up), root.rstrip("/")
    return anchor if anchor and (anchor == r or anchor.startswith(r + "/")) else None
