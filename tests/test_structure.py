"""The package's shape: no module over 400 lines, no import cycles.

Both rules have an explicit allow-list of what is true today; whoever splits one of those modules
or breaks one of those cycles removes it from the list (the tests fail when an entry is stale, so
the lists only shrink).

The import graph counts every ``import`` statement, at module level or inside a function: a lazy
import that breaks a cycle at import time is still a cycle in the design. An edge goes to the module
named (``from pt2logs.x import y`` is an edge to ``pt2logs.x``, or to ``pt2logs.x.y`` when that is
a module); the implicit import of a parent package (``pt2logs.x`` loads ``pt2logs/__init__``
first) is not an edge.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import ROOT

SRC = ROOT / "src"
MAX_LINES = 400

#: modules over MAX_LINES (none today; an entry here must say why the module cannot be split)
LONG_MODULES: set[str] = set()

#: import cycles (none today; each would be a strongly connected set of modules)
KNOWN_CYCLES: list[set[str]] = []


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted((SRC / "pt2logs").rglob("*.py")):
        parts = list(p.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def import_graph() -> dict[str, set[str]]:
    """Module → the pt2logs modules it imports (anywhere in its body)."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base_name = ".".join(base + ([node.module] if node.module else []))
                else:
                    base_name = node.module or ""
                for a in node.names:
                    sub = f"{base_name}.{a.name}"
                    targets.append(sub if sub in mods else base_name)
            for t in targets:
                while t and t not in mods:  # `import pt2logs.x.y` of a non-module name: its module
                    t = t.rpartition(".")[0]
                if t and t != mod and t.split(".")[0] == "pt2logs":
                    graph[mod].add(t)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected sets of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_module_is_over_400_lines():
    lengths = {
        str(p.relative_to(SRC)): len(p.read_text().splitlines()) for p in _modules().values()
    }
    long = {name for name, n in lengths.items() if n > MAX_LINES}
    assert long - LONG_MODULES == set(), {n: lengths[n] for n in long - LONG_MODULES}
    assert LONG_MODULES - long == set(), "split already: remove from LONG_MODULES"


def test_no_import_cycles():
    found = cycles(import_graph())
    new = [c for c in found if c not in KNOWN_CYCLES]
    assert new == [], f"import cycles: {new}"
    gone = [c for c in KNOWN_CYCLES if c not in found]
    assert gone == [], f"broken already (or changed): remove from KNOWN_CYCLES: {gone}"


def test_the_dashboard_package_has_no_cycle_at_all():
    graph = import_graph()
    for c in cycles(graph):
        assert not any(m.startswith("pt2logs.dashboard") for m in c), c


def _cli(module: str) -> bool:
    return module == "pt2logs.cli" or module.startswith("pt2logs.cli.")


def test_the_cli_package_has_no_cycle_at_all():
    for c in cycles(import_graph()):
        assert not any(_cli(m) for m in c), c


def test_the_core_never_imports_the_cli():
    for mod, deps in import_graph().items():
        if not _cli(mod) and mod != "pt2logs.__main__":
            assert not any(_cli(d) for d in deps), (mod, sorted(d for d in deps if _cli(d)))


def test_the_cycle_finder_sees_function_level_imports():
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [{"a", "b"}]
    graph = import_graph()
    assert "pt2logs.query.views" in graph["pt2logs.query.queries"]  # imported inside run_sql()


def map_modules(text: str) -> set[str]:
    """The modules docs/architecture.md's map names: in its indented blocks a line whose first word ends
    with ``/`` opens that package (nested by indentation); every ``name.py`` on a line belongs to the
    innermost package open there."""
    named: set[str] = set()
    stack: list[tuple[int, str]] = []
    for line in text.splitlines():
        if not line.startswith("    ") or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        first = line.split()[0]
        if re.fullmatch(r"[\w]+/", first):
            stack.append((indent, (stack[-1][1] if stack else "") + first))
        where = stack[-1][1] if stack else ""
        named |= {where + m for m in re.findall(r"(?<![\w/.])(\w+\.py)\b", line)}
    return named


def test_the_map_names_every_module():
    """docs/architecture.md is the map the next engineer reads first: it names every module where it lives."""
    modules = {
        str(p.relative_to(SRC / "pt2logs"))
        for p in _modules().values()
        if p.name not in ("__init__.py", "__main__.py")
    }
    named = map_modules((ROOT / "docs" / "architecture.md").read_text())
    assert modules - named == set(), "modules the map does not name (docs/architecture.md)"


def test_table_declarations_are_imported_for_what_they_hold():
    """Code that looks a table up imports the registry of every declaration, ``pt2logs.tables.TABLES``; no
    module imports ``pt2logs.tables`` for its side effect, nor ``TABLES`` from ``tables.schema`` (filled only
    when something else happened to import the declarations)."""
    for mod, path in _modules().items():
        if mod == "pt2logs.tables" or mod.startswith("pt2logs.tables."):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("pt2logs.tables") for a in node.names), mod
            elif isinstance(node, ast.ImportFrom) and node.module == "pt2logs.tables.schema":
                assert "TABLES" not in {a.name for a in node.names}, mod


def test_the_code_is_formatted():
    """`ruff format` (pinned in the test extra) leaves the code base as it is: module sizes are counted on
    formatted code, so long lines hide nothing. Run `ruff format src tests bench` to fix."""
    import subprocess
    import sys

    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "format",
            "--check",
            "src",
            "tests",
            "bench",
            "hatch_build.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]


#: SQL that reads a compile id's parts from its text (a string function, a pattern match)
_PARSES_COMPILE_ID = re.compile(
    r"\b(?:regexp_\w+|split_part|string_split\w*|str_split\w*|string_to_array|split|substr\w*|"
    r"left|right|strpos|instr|position|starts_with|ends_with|prefix|suffix|contains|replace|"
    r"parse_\w+)\(\s*[\w.\"]*compile_id\b"
    r"|\bcompile_id\"?\s+(?:NOT\s+)?(?:I?LIKE|GLOB|SIMILAR\s+TO|~)",
    re.IGNORECASE,
)


def test_no_sql_parses_a_compile_id():
    """The integers of a compile id are stored (frame_id / frame_compile_id, readers.identity_cols.frame_ids:
    the one rule); rows stored without them are filled by that rule in Python (pt2logs.query.frame_fill,
    pt2logs.store.frame_upgrade). No SQL file, SQL string or page file reads the parts of the text."""
    files = [
        *(ROOT / "queries").rglob("*.sql"),
        *(ROOT / "reports").rglob("*.toml"),
        *(ROOT / "dashboards").rglob("*.toml"),
        *SRC.rglob("*.py"),
        *SRC.rglob("*.sql"),
        *SRC.rglob("*.toml"),
    ]
    found = [
        f"{p.relative_to(ROOT).as_posix()}: {m.group(0)}"
        for p in sorted(files)
        for m in _PARSES_COMPILE_ID.finditer(p.read_text())
    ]
    found += [
        p.relative_to(ROOT).as_posix()
        for p in sorted(files)
        if "compile_id_frames" in p.read_text()
    ]
    assert found == []
