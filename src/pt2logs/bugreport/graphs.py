"""The bug report's "Graphs and code" section: the compile's graphs and generated code from the trace
(Dynamo, AOT, post-grad graphs, fx_graph_runnable, output code), else the TORCH_COMPILE_DEBUG files.
"""

from __future__ import annotations

from pt2logs.bugreport.context import Ctx, cid, slug
from pt2logs.reports import markdown as md

_GRAPHS = [  # (what, title, fence info, lines, chars)
    ("dynamo_output_graph", "Dynamo graph (dynamo_output_graph)", "python", 80, 6000),
    ("aot_joint_graph", "AOT joint graph", "python", 60, 5000),
    ("aot_forward_graph", "AOT forward graph", "python", 60, 5000),
    ("aot_backward_graph", "AOT backward graph", "python", 60, 5000),
    ("aot_inference_graph", "AOT inference graph", "python", 60, 5000),
    ("inductor_post_grad_graph", "FX graph after inductor's post-grad passes", "python", 60, 5000),
    (
        "fx_graph_runnable",
        "fx_graph_runnable (a script that reproduces the FX graph)",
        "python",
        60,
        5000,
    ),
    ("inductor_output_code", "Output code (inductor_output_code)", "python", 120, 8000),
]


def graphs(ctx: Ctx) -> str | None:
    by = {}
    for a in ctx.facts.artifacts:
        if a.get("payload"):
            by[a["what"]] = a  # the last of each kind (a restarted compile logs again)
    parts = []
    for what, ttl, info, lines, chars in _GRAPHS:
        a = by.get(what)
        if a is not None:
            where = f"{a['file']}:{a['line_no']}"
            parts.append(
                ctx.excerpt(
                    f"{slug(cid(ctx))}_{what}.txt",
                    f"{ttl}, {ctx.r(where)}",
                    a["payload"],
                    info,
                    lines,
                    chars,
                )
            )
    if not parts and ctx.facts.debug_files:
        return _debug_graphs(ctx)
    if not parts:
        if ctx.facts.compile is None:
            return None
        return (
            "## Graphs and code\n\nThe logs of this run hold no graph or output code for this compile "
            "(run with `TORCH_TRACE=/tmp/trace` to log them).\n"
        )
    return "## Graphs and code\n\n" + "\n".join(parts)


_DEBUG_KINDS = ["fx_graph_readable", "fx_graph_transformed", "ir_post_fusion", "output_code"]


def _debug_graphs(ctx: Ctx) -> str:
    """The TORCH_COMPILE_DEBUG files of the run's first graph folder (they name no compile id)."""
    files = ctx.facts.debug_files
    first = files[0]["file"].rsplit("/", 1)[0] if "/" in files[0]["file"] else ""
    mine = {
        a["what"].split(":", 1)[1]: a
        for a in files
        if (a["file"].rsplit("/", 1)[0] if "/" in a["file"] else "") == first
    }
    parts = []
    for kind in _DEBUG_KINDS:
        a = mine.get(kind)
        if a is not None and a.get("payload"):
            parts.append(
                ctx.excerpt(
                    f"compile_debug_{slug(kind)}.txt",
                    ctx.r(a["file"]),
                    a["payload"],
                    "text" if kind.startswith("ir_") else "python",
                    120 if kind == "output_code" else 80,
                    8000,
                )
            )
    folders = len({a["file"].rsplit("/", 1)[0] if "/" in a["file"] else "" for a in files})
    note = (
        "From TORCH_COMPILE_DEBUG=1 (its files name no compile id)"
        + (
            f": the first of {folders} graph folders, {md.inline_code(ctx.r(first))}"
            if folders > 1
            else ""
        )
        + ".\n\n"
    )
    return "## Graphs and code\n\n" + note + "\n".join(parts)
