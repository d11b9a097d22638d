"""The SQL macros (queries/macros/*.sql, pt2logs.query.macros) are tested like the named queries: every
file parses and has its header, its columns are the ones DuckDB gives, every macro is used, every fill is
declared and known, they are read once per process and found in an installed wheel's layout."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pt2logs
from pt2logs.query import macros as M
from pt2logs.query.queries import load_queries

ROOT = Path(__file__).resolve().parents[1]
#: macros no named query, macro or view uses: for users' own SQL (docs/caches.md says so)
FOR_OWN_SQL = {"cache_component_diffs"}


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory):
    """A connection to an empty warehouse: every view (of its declared types) and every macro."""
    return pt2logs.connect(str(tmp_path_factory.mktemp("empty") / "wh"))


def test_every_macro_file_parses_with_its_header() -> None:
    ms = M.load_macros(reload=True)
    assert sorted(p.stem for p in (ROOT / "queries" / "macros").glob("*.sql")) == sorted(ms)
    assert {
        "selected_runs",
        "rank_outcomes",
        "run_outcome_rows",
        "advice_items",
        "cache_pairs",
        "vllm_cold_starts",
        "graph_break_sites",
        "source_rank",
        "run_relative",
    } <= set(ms)
    for m in ms.values():
        assert m.title and m.what and (m.columns if m.table else m.returns), m.path
        assert m.sql.startswith(f"CREATE OR REPLACE MACRO {m.signature} AS"), m.path
    # no macro left in a .py file
    no_sql_in_py = [
        p.name for p in (ROOT / "src").rglob("*.py") if re.search(r"MACRO \w+\(", p.read_text())
    ]
    assert no_sql_in_py == []


def _columns(con, name: str, ms: dict[str, M.Macro]) -> list[str]:
    """A table macro's (or a view's) columns as DuckDB makes them."""
    if name in ms:
        args = ", ".join(["NULL"] * len(ms[name].params))
        return [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {name}({args})").fetchall()]
    return [r[0] for r in con.execute(f"DESCRIBE {name}").fetchall()]


def test_every_table_macros_columns_are_its_headers(con) -> None:
    ms = M.load_macros()
    for m in ms.values():
        if not m.table:
            continue
        said: list[str] = []
        for c in m.columns:  # NAME.* / NAME().*: every column of that view or macro
            said += (
                _columns(con, c.name.removesuffix(".*").removesuffix("()"), ms)
                if c.name.endswith(".*")
                else [c.name]
            )
        assert said == _columns(con, m.name, ms), m.path


def test_every_macro_is_used() -> None:
    ms = M.load_macros()
    texts = [q.sql for q in load_queries().values()] + [m.sql for m in ms.values()]
    texts.append((ROOT / "src" / "pt2logs" / "query" / "view_sql.py").read_text())
    unused = {
        n for n in ms if not any(re.search(rf"\b{n}\s*\(", t.replace(ms[n].sql, "")) for t in texts)
    }
    assert unused == FOR_OWN_SQL


def test_fills_are_one_list_each_declared_and_used() -> None:
    ms = M.load_macros()
    assert {f for m in ms.values() for f in m.fills} == set(M.FILLS)
    for m in ms.values():
        assert "{{" not in M.fill(m), m.path
    # the facts the fills come from are the Python ones, read when the macro is made
    rank = M.macro_sql("rank_outcomes")
    assert "format IN ('torch_logs', 'job_stderr', 'spyre_log')" in rank or "format IN (" in rank
    from pt2logs.query import outcome_rules

    assert all(
        f"'{f}'" in rank for f in outcome_rules.stderr_formats() + outcome_rules.trace_formats()
    )
    src = M.macro_sql("source_rank")
    from pt2logs.readers import source_ranks

    assert all(f"WHEN '{s}' THEN {r}" in src for s, (_, r) in source_ranks().items())
    # another value for a fill (another advice table, say) goes through the same rule
    assert "WHEN 'x' THEN 7" in M.fill(ms["source_rank"], {"source_ranks": "WHEN 'x' THEN 7"})


def test_a_macro_file_that_breaks_the_rules_is_refused(tmp_path: Path) -> None:
    def bad(name: str, text: str, match: str) -> None:
        p = tmp_path / f"{name}.sql"
        p.write_text(text)
        with pytest.raises(M.MacroError, match=match):
            M.parse_macro_file(p)

    head = "-- title: t\n-- what: w\n"
    bad(
        "m",
        head + "-- params: a\n-- returns: INTEGER\nCREATE OR REPLACE MACRO other(a) AS a;\n",
        "needs one",
    )
    bad(
        "m",
        "-- title: t\n-- params: a\n-- returns: INTEGER\nCREATE OR REPLACE MACRO m(a) AS a;\n",
        "needs what",
    )
    bad(
        "m",
        head + "-- params: a\nCREATE OR REPLACE MACRO m(a) AS TABLE SELECT a;\n",
        "needs columns",
    )
    bad(
        "m",
        head + "-- params: a, b\n-- returns: INTEGER\nCREATE OR REPLACE MACRO m(a) AS a;\n",
        "params",
    )
    bad(
        "m",
        head
        + "-- params: a\n-- returns: INTEGER\nCREATE OR REPLACE MACRO m(a) AS a + {{source_ranks}};\n",
        "fills",
    )
    bad(
        "m",
        head
        + "-- params: a\n-- fills: nope\n-- returns: INTEGER\nCREATE OR REPLACE MACRO m(a) AS {{nope}};\n",
        "fills",
    )
    ok = tmp_path / "ok.sql"
    ok.write_text(
        head
        + "-- params: a (doc, with a comma (nested))\n-- returns: INTEGER\nCREATE OR REPLACE MACRO ok(a) AS a;\n"
    )
    assert [p.name for p in M.parse_macro_file(ok).params] == ["a"]


def test_macros_are_made_after_what_they_call() -> None:
    ms = M.load_macros()
    order = [m.name for m in M.ordered(ms)]
    for m in ms.values():
        assert all(order.index(d) < order.index(m.name) for d in M.calls(m, set(ms))), m.name
    scalar, table = M.statements()
    assert len(scalar) == sum(not m.table for m in ms.values()) and len(table) == sum(
        m.table for m in ms.values()
    )


def test_the_macros_are_read_once_per_process(monkeypatch) -> None:
    M.load_macros(reload=True)
    reads = []
    monkeypatch.setattr(M, "parse_macro_file", lambda p: reads.append(p) or M.parse_macro_file(p))
    for _ in range(3):
        assert "selected_runs" in M.load_macros() and M.macro_sql("selected_runs")
    assert reads == []


def test_found_in_an_installed_wheel(tmp_path: Path) -> None:
    """The wheel's layout (pyproject force-include: queries -> pt2logs/_data/queries, macros/ with it)."""
    site = tmp_path / "site"
    shutil.copytree(
        ROOT / "src" / "pt2logs", site / "pt2logs", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(ROOT / "queries", site / "pt2logs" / "_data" / "queries")
    code = (
        "from pt2logs.query.macros import macro_dirs, statements; "
        "print(macro_dirs(), sum(len(s) for s in statements()))"
    )
    res = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(site)},
    )
    data = site.resolve() / "pt2logs" / "_data" / "queries" / "macros"
    assert res.stdout.strip() == f"{[data]} {len(M.load_macros())}"
