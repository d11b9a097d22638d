"""``pt2logs advise``'s own outputs: each advice item as a terminal block, or a Markdown document to
paste into an issue or a PR (log text in it by :mod:`pt2logs.reports.markdown`'s rule). Its other
formats write the rows of the ``advice`` query (:func:`pt2logs.cli.options.write_rows`).
"""

from __future__ import annotations

from typing import Any

from pt2logs.reports import markdown as md


def _cost(r: dict[str, Any]) -> str:
    parts = [f"{r['compile_s']:.2f} s of compile time"]
    for k, word in (
        ("recompiles", "recompile"),
        ("breaks", "graph break"),
        ("failures", "failed compile"),
    ):
        if r.get(k):
            parts.append(f"{r[k]} {word}{'s' if r[k] != 1 else ''}")
    return ", ".join(parts)


def advice_markdown(run: Any, rows: list[dict[str, Any]]) -> str:
    """``pt2logs advise --format markdown``: one section per item, to paste into an issue or a PR."""
    out = [f"# Advice for {md.text(run.name)} (run {md.text(run.run_id)})", ""]
    if not rows:
        out.append("Nothing in the advice table (docs/advice.md) matched this run.")
    for i, r in enumerate(rows, 1):
        frames = "; ".join(md.inline_code(f) for f in (r["frames"] or "?").split("; "))
        out += [
            f"## {i}. {md.prose(r['finding'])}",
            "",
            f"- **Evidence:** {md.prose(r['evidence'])}",
            f"- **Frames:** {frames}",
            f"- **At stake:** {_cost(r)}",
            f"- **What to do:** {r['advice']}",
            "",
        ]
    return "\n".join(out).rstrip() + "\n"


def print_advice(run: Any, rows: list[dict[str, Any]]) -> None:
    """``pt2logs advise``: each item as a block, most costly first."""
    from rich.console import Console
    from rich.text import Text

    from pt2logs.cli.layout import terminal_width

    c = Console(width=terminal_width(), highlight=False, emoji=False)
    c.print(
        Text(
            f"{run.name} ({run.run_id}): {len(rows)} advice item{'s' if len(rows) != 1 else ''}",
            style="bold",
        )
    )
    if not rows:
        c.print("nothing in the advice table (docs/advice.md) matched this run")
    for i, r in enumerate(rows, 1):
        c.print()
        c.print(Text(f"{i}. {r['finding']}  [{r['id']}]", style="bold"))
        for label, value in (
            ("evidence", r["evidence"]),
            ("frames", r["frames"] or "?"),
            ("at stake", _cost(r)),
            ("do", r["advice"]),
        ):
            line = Text(f"  {label:<9} ")
            line.append(value)
            c.print(line)
