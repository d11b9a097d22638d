"""Rows that several readers make are built in one place each (readers/compile_rows.py for graph_breaks and
kernels / extern_calls, kit.error_row for ingest_errors): a new column is filled once for every reader. The
rows themselves are checked against each other by tests/test_sources_agree.py (trace vs TORCH_LOGS vs
tlparse vs TORCH_COMPILE_DEBUG)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

from pt2logs.analysis.graph_breaks import parse_graph_break
from pt2logs.readers.compile_rows import break_site, graph_break_row

PACKAGE = ROOT / "src" / "pt2logs"
#: what builds a row of a kind: (a keyword of a call or a key of a dict literal, the one module allowed)
BUILDERS = {
    "occurrences": "readers/compile_rows.py",
    "kernel_name": "readers/compile_rows.py",
    "severity": "readers/kit.py",
}
#: where rows are made (the query side's dicts, e.g. serve's per-run tallies, are results, not rows)
WRITERS = ("readers/", "ingestion/")
#: rows of other shapes that share a column name: Spyre's kernels, launches and FFDC reports; kernel provenance
OTHER_SHAPES = (
    "readers/spyre/",
    "readers/trace/events/codegen.py",  # kernel_provenance rows name their kernel (kernels rows: compile_rows)
)


def row_builders(path: Path) -> set[str]:
    """The BUILDERS names ``path`` spells as a call's keyword or a dict literal's key."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            found |= {k.arg for k in node.keywords if k.arg in BUILDERS}
        elif isinstance(node, ast.Dict):
            found |= {
                k.value for k in node.keys if isinstance(k, ast.Constant) and k.value in BUILDERS
            }
    return found


def test_each_row_kind_has_one_builder():
    where: dict[str, set[str]] = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        rel = str(p.relative_to(PACKAGE))
        if not rel.startswith(WRITERS) or rel.startswith(OTHER_SHAPES):
            continue
        for name in row_builders(p):
            where.setdefault(name, set()).add(rel)
    assert where == {name: {module} for name, module in BUILDERS.items()}


def test_a_graph_break_row_and_its_site():
    text = (
        "Graph break in user code at /w/train.py:12\nGraph Break Reason: Unsupported Tensor.item() call\n"
        'User code traceback:\n  File "/w/train.py", line 12, in step\n    y = x.item()\n'
    )
    gb = parse_graph_break(text)
    row = graph_break_row({"source": "torch_logs", "line_no": 3}, gb, "log_line")
    assert (row["source"], row["line_no"], row["origin"], row["occurrences"]) == (
        "torch_logs",
        3,
        "log_line",
        1,
    )
    assert (row["user_filename"], row["user_lineno"]) == ("/w/train.py", 12)
    assert break_site(gb) == (gb.get("gb_id") or gb.get("gb_type"), "/w/train.py", 12)
