"""The CLI package's shape: no import cycles, small modules, and the core never imports the CLI.

Imports are read from the source (every ``import``, including those inside functions), so an
import moved into a function to dodge a cycle still counts as one.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PKG = ROOT / "src" / "pt2logs"


def _module(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The pt2logs modules that ``path`` imports anywhere in its body."""
    me = _module(path)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        out |= {n for n in names if n in modules}
    return out - {me}


def _graph() -> dict[str, set[str]]:
    files = {_module(p): p for p in PKG.rglob("*.py")}
    return {m: _imports(p, set(files)) for m, p in files.items()}


def test_cli_modules_import_no_cycle():
    graph = _graph()
    cli = {m for m in graph if m == "pt2logs.cli" or m.startswith("pt2logs.cli.")}
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph[m] & cli):
            assert state.get(n) != 1, "import cycle: " + " -> ".join([*path, m, n])
            if n not in state:
                visit(n, [*path, m])
        state[m] = 2

    for m in sorted(cli):
        if m not in state:
            visit(m, [])


def test_the_core_never_imports_the_cli():
    for m, deps in _graph().items():
        if m == "pt2logs.cli" or m.startswith("pt2logs.cli.") or m == "pt2logs.__main__":
            continue
        assert not {d for d in deps if d == "pt2logs.cli" or d.startswith("pt2logs.cli.")}, m


def test_cli_modules_are_small():
    for p in (PKG / "cli").glob("*.py"):
        assert len(p.read_text().splitlines()) <= 400, p.name
