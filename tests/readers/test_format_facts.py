"""Every fact about a format is stated in its Format (readers/format.py) and read from the registry
(``pt2logs.readers.ORDER``): no other module spells a format's name, and what the consumers list (the
outcome rules' stderr captures and traces, the bug report's switches, the planner's splittable formats,
the contract test's documents) is what the Formats say."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

from pt2logs.bugreport.facts import FORMAT_SWITCHES
from pt2logs.query.outcome_rules import stderr_formats, trace_formats
from pt2logs.readers import CAPTURE, DOCUMENT, FORMATS, ORDER, TRACE
from pt2logs.readers.format import ROLES
from pt2logs.readers.lines.outcome_lines import OutcomeLines
from pt2logs.readers.lines.torch_logs import LogLines

PACKAGE = ROOT / "src" / "pt2logs"


def _declared_table_names(tree: ast.AST) -> set[int]:
    """ids of the name constants of ``table("name", ...)`` declarations (a table may share a format's name)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "table" and node.args:
            out.add(id(node.args[0]))
    return out


def format_literals(path: Path) -> list[tuple[int, str]]:
    """(line, name) of every string literal in ``path`` that is exactly a registered format's name."""
    tree = ast.parse(path.read_text(), str(path))
    tables = _declared_table_names(tree)
    return [
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and n.value in FORMATS
        and id(n) not in tables
    ]


def test_no_format_name_is_spelled_outside_the_readers():
    found = {
        str(p.relative_to(PACKAGE)): hits
        for p in sorted(PACKAGE.rglob("*.py"))
        if "readers" not in p.relative_to(PACKAGE).parts[:1] and (hits := format_literals(p))
    }
    assert found == {}, (
        "read the fact from the Format in pt2logs.readers (named(), switches(), FORMATS[...]) instead"
    )


def test_the_check_sees_a_spelled_name(tmp_path):
    p = tmp_path / "m.py"
    p.write_text(
        'X = ("torch_trace", "other")\nT = table("compile_times", version=1)\nif fmt == "vllm_log":\n    pass\n'
    )
    assert format_literals(p) == [(1, "torch_trace"), (3, "vllm_log")]


def test_every_format_states_its_role_and_captures_their_line_readers():
    for f in ORDER:
        assert f.role in ROLES, f.name
        assert callable(f.read), f.name
        if f.role == CAPTURE:
            assert f.lines[0] is OutcomeLines and f.lines[-1] is LogLines, (
                f.name
            )  # the one capture chain
        else:
            assert f.lines == (), f.name


def test_the_consumers_read_the_registry():
    assert set(stderr_formats()) == {"torch_logs", "job_stderr", "spyre_log", "vllm_log"}
    assert set(trace_formats()) == {"torch_trace", "tlparse_dir"}
    assert {f.name for f in ORDER if f.splits} == {"torch_trace"}
    assert set(FORMAT_SWITCHES) == {
        "torch_trace",
        "torch_logs",
        "tlparse_dir",
        "compile_debug",
        "spyre_log",
        "spyre_timing",
        "spyre_kernel_spec",
    }
    assert {f.name for f in ORDER if f.role == DOCUMENT} == {
        "spyre_kernel_spec",
        "spyre_timing",
        "spyre_ffdc",
        "counters_json",
        "compile_times",
        "compile_debug",
        "run_record",
    }
    assert {f.name for f in ORDER if f.role == TRACE} == set(trace_formats())
