"""The bug report's Spyre section: the TORCH_SPYRE_DEBUG excerpt, the launched kernel's sdsc spec, and
this run beside the run of the other backend (sendnn vs spyre).
"""

from __future__ import annotations

import json
from typing import Any

from pt2logs.bugreport.context import Ctx, slug
from pt2logs.reports import markdown as md


def spyre(ctx: Ctx) -> str | None:
    f = ctx.facts
    if not f.is_spyre:
        return None
    out = ["## Spyre\n"]
    if f.spyre_log:
        text = "\n".join(r["text"] for r in f.spyre_log)
        first, last = f.spyre_log[0], f.spyre_log[-1]
        out.append(
            ctx.excerpt(
                "spyre_debug_log.txt",
                f"TORCH_SPYRE_DEBUG log: the last copies and launches "
                f"({ctx.r(first['file'])}:{first['line_no']}-{last['line_no']})",
                text,
                "text",
                80,
                8000,
                tail=True,
            )
        )
    else:
        out.append(
            "No TORCH_SPYRE_DEBUG transfer lines in this run's logs (run with `TORCH_SPYRE_DEBUG=1`).\n"
        )
    specs = [s for s in f.spyre_specs if s.get("launched")] or f.spyre_specs
    for s in specs[:2]:
        label = f"sdsc kernel spec {s['file']} ({s.get('kernels') or '?'})" + (
            f", launched as {s['launched']}" if s.get("launched") else ""
        )
        if s.get("text"):
            out.append(
                ctx.excerpt(f"spyre_{slug(s['file'])}", ctx.r(label), s["text"], "json", 80, 6000)
            )
        else:
            out.append(
                f"The kernel spec {md.inline_code(ctx.r(s['file']))} is no longer at {md.inline_code(ctx.r(str(s['path'])))}.\n"
            )
    if f.compare:
        out.append(_comparison(ctx))
    return "\n".join(out)


def _by_direction(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        d = out.setdefault(
            r.get("direction") or "unknown", {"copies": 0, "device_mb": 0.0, "padding_mb": 0.0}
        )
        d["copies"] += int(r.get("transfers") or 0)
        d["device_mb"] += float(r.get("device_bytes") or 0) / 1e6
        d["padding_mb"] += float(r.get("padding_bytes") or 0) / 1e6
    return out


def _comparison(ctx: Ctx) -> str:
    """This run beside the run of the other backend (sendnn vs spyre): the headline figures and the copies."""
    f = ctx.facts
    other = f.compare or {}
    a, b = f.overview, other.get("overview") or {}
    rows = [
        {"figure": k, "this run": a.get(k), "other run": b.get(k)}
        for k in ["compiles", "compile_s", "recompiles", "graph_breaks", "kernels", "failures"]
    ]
    ta, tb = _by_direction(other.get("mine") or []), _by_direction(other.get("transfers") or [])
    for d in sorted(set(ta) | set(tb)):
        for k, label in (
            ("copies", "copies"),
            ("device_mb", "device MB"),
            ("padding_mb", "padding MB"),
        ):
            va, vb = ta.get(d, {}).get(k), tb.get(d, {}).get(k)
            rows.append(
                {
                    "figure": f"{label} {d}",
                    "this run": None if va is None else round(va, 3),
                    "other run": None if vb is None else round(vb, 3),
                }
            )
    mine = _tag(f.run.get("tags"), "backend") or "this run"
    theirs = _tag(other["run"].get("tags"), "backend") or "other run"
    return "\n".join(
        [
            f"### `sendnn` vs `spyre`: this run ({md.inline_code(mine)}) and {md.inline_code(ctx.r(other['run']['run']))} ({md.inline_code(theirs)})\n",
            md.table(
                [{k: (str(v) if v is not None else None) for k, v in r.items()} for r in rows],
                ["figure", "this run", "other run"],
            ),
        ]
    )


def _tag(tags: Any, key: str) -> str | None:
    try:
        t = json.loads(tags) if isinstance(tags, str) else tags
    except ValueError:
        return None
    return str(t[key]) if isinstance(t, dict) and t.get(key) is not None else None
