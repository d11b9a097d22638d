"""Torch-Spyre documents: kernel specs (``sdsc_*.json``) → ``kernels``; TORCH_SPYRE_TIMING records
(``rec.<pid>.json``) → ``spyre_timing``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from pt2logs.readers.kit import MAX_JSON_DOC, Batch, FileContext, RowSink, read_document
from pt2logs.readers.spyre.dtypes import int64, loads


def _document(chunks: Iterable[bytes], out: RowSink, what: str) -> tuple[Any, bytes]:
    """A whole JSON document (bounded in size): (parsed, or None when it cannot be read; its bytes)."""
    data = read_document(chunks, out, what, MAX_JSON_DOC)
    if data is None:
        return None, b""
    if isinstance(doc := loads(data), Exception):
        out.error("bad_json", None, f"{what} is not valid JSON ({doc})", data)
        return None, data
    return doc, data


def read_kernel_spec(chunks: Iterable[bytes], ctx: FileContext) -> Iterator[Batch]:
    """``sdsc_<N>.json`` / ``sdsc.json`` (top key ``<idx>_<opfunc>``) → one ``kernels`` row per compute op."""
    out = RowSink(ctx, batch_rows=min(ctx.batch_rows, 4096))
    doc, data = _document(chunks, out, "kernel spec")
    if doc is not None and not isinstance(doc, dict):
        out.error(
            "not_an_object", None, f"kernel spec is JSON {type(doc).__name__}, not an object", data
        )
        doc = None
    for key, spec in (doc or {}).items():
        if not isinstance(spec, dict):
            out.error("bad_spec", None, f"kernel spec entry {key!r} is not an object", str(spec))
            continue
        ops: list[
            tuple[dict, Any, Any]
        ] = []  # (compute op, cores, data format of its first labeled tensor)
        for dsc in spec.get("dscs_") if isinstance(spec.get("dscs_"), list) else []:
            for opname, body in dsc.items() if isinstance(dsc, dict) else ():
                if isinstance(body, dict):
                    lds = body.get("labeledDs_") if isinstance(body.get("labeledDs_"), list) else []
                    fmt = next((d.get("dataFormat_") for d in lds if isinstance(d, dict)), None)
                    cops = (
                        body.get("computeOp_") if isinstance(body.get("computeOp_"), list) else []
                    )
                    ops += [
                        (op, body.get("numCoresUsed_", spec.get("numCoresUsed_")), fmt)
                        for op in cops or [{"opFuncName": opname}]
                        if isinstance(op, dict)
                    ]
        ops = ops or [({"opFuncName": key.split("_", 1)[-1]}, spec.get("numCoresUsed_"), None)]
        at = data.find(orjson.dumps(key))
        names = [op["opFuncName"] for op, _, _ in ops if isinstance(op.get("opFuncName"), str)]
        for op, cores, fmt in ops:
            attrs = op.get("attributes_") if isinstance(op.get("attributes_"), dict) else {}
            fmt = attrs.get("dataFormat_") or fmt
            out.add(
                "kernels",
                {
                    "source": "spyre",
                    "line_no": data.count(b"\n", 0, at) + 1 if at >= 0 else None,
                    "kernel_name": str(op.get("opFuncName") or key),
                    "backend": "spyre",
                    "kind": op.get("exUnit"),
                    "fused_ops": names,
                    "num_cores": int64(cores),
                    "data_format": fmt if isinstance(fmt, str) else None,
                },
            )
            ctx.stats.events += 1
        if out.full():
            yield from out.flush()
    yield from out.flush()


def read_timing(chunks: Iterable[bytes], ctx: FileContext) -> Iterator[Batch]:
    """TORCH_SPYRE_TIMING ``rec.<pid>.json`` → one ``spyre_timing`` row per event."""
    out = RowSink(ctx, batch_rows=min(ctx.batch_rows, 4096))
    doc, data = _document(chunks, out, "timing record")
    events = doc.get("events") if isinstance(doc, dict) else None
    if doc is not None and not isinstance(events, list):
        out.error("not_a_timing_record", None, "no events list in the timing record", data)
    meta = doc["meta"] if isinstance(doc, dict) and isinstance(doc.get("meta"), dict) else {}
    names: dict[Any, str] = {}
    depth: dict[Any, int] = {}
    for i, ev in enumerate(events if isinstance(events, list) else []):
        if not isinstance(ev, dict) or not isinstance(ev.get("name"), str):
            out.error("bad_event", 1, f"timing event #{i} is not an object with a name", str(ev))
            continue
        name, ordinal, parent = (
            ev["name"],
            int64(ev.get("ordinal")),
            int64(ev.get("parent_ordinal")),
        )
        kind, _, rest = name.partition(":")
        scope, _, step = rest.partition(":")
        names[ordinal] = name
        depth[ordinal] = depth.get(parent, -1) + 1 if parent is not None else 0
        m = ev.get("meta") if isinstance(ev.get("meta"), dict) else None
        err = ev.get("error")
        out.add(
            "spyre_timing",
            {
                "source": "spyre",
                "line_no": 1,
                "pid": int64(meta.get("pid")),
                "name": name,
                "kind": kind if rest else None,
                "scope": scope or None,
                "step": step or None,
                "ordinal": ordinal,
                "parent_ordinal": parent,
                "parent_name": names.get(parent) if parent is not None else None,
                "depth": depth[ordinal],
                **{
                    k: int64(ev.get(k))
                    for k in ("t_start_ns", "t_end_ns", "inclusive_ns", "self_ns")
                },
                "kernel_name": m.get("kernel") if m and isinstance(m.get("kernel"), str) else None,
                "counters": m,
                "open": ev.get("open") if isinstance(ev.get("open"), bool) else None,
                "error": err
                if err is None or isinstance(err, str)
                else orjson.dumps(err, default=str).decode(),
                "torch_spyre_version": meta.get("torch_spyre_version"),
                "git_sha": meta.get("git_sha"),
            },
        )
        ctx.stats.events += 1
        if out.full():
            yield from out.flush()
    yield from out.flush()
