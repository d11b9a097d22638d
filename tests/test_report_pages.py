"""The report pages (reports/*.toml: `summary`, `ranks`): every section's query exists and takes its
parameters, every column it shows is one its query returns, every field a section file sets changes
what the command shows, bad files are refused with the reason, and the installed wheel finds them.
The pages' outputs themselves are pinned by tests/cli/test_golden.py."""

from __future__ import annotations

import dataclasses
import io
import os
import shutil
import subprocess
import sys

import pytest
from tests.conftest import ROOT

import pt2logs
from pt2logs.query.queries import load_queries, run_named
from pt2logs.reports import pages as P
from pt2logs.reports.outcomes import run_outcome
from pt2logs.reports.runs import resolve_run


def test_the_pages_are_the_summary_and_ranks():
    assert sorted(P.load_pages()) == ["ranks", "summary"]
    assert [s.key for s in P.get_page("summary").sections][:3] == ["advice", "phases", "functions"]
    with pytest.raises(P.PageError, match="no report page 'nope'; there are: ranks, summary"):
        P.get_page("nope")


def test_every_section_query_exists_and_takes_its_params():
    queries = load_queries()
    for page in P.load_pages().values():
        for s in page.sections:
            assert s.query in queries, (page.name, s.key, s.query)
            declared = {p.name for p in queries[s.query].params}
            assert "run_id" in declared and set(s.params) <= declared, (page.name, s.key, s.params)


def test_every_column_shown_is_a_column_of_its_query(sample_wh):
    con = pt2logs.connect(sample_wh)
    for page in P.load_pages().values():
        for s in page.sections:
            cols = run_named(con, s.query, {"run_id": "\x00no run", **s.params}).column_names
            assert set(s.columns) <= set(cols), (page.name, s.key, set(s.columns) - set(cols))


# every field a section file can set, and how the tests change it
MUTATIONS = {
    "query": lambda s: "rank_last_events" if s.query == "rank_outcomes" else "rank_outcomes",
    "title": lambda s: s.title + " (changed)",
    "params": lambda s: {k: 1 for k in s.params},
    "columns": lambda s: s.columns[1:],
    "empty": lambda s: s.empty + " (changed)",
    "when": lambda s: None,
    "hint": lambda s: s.hint + " (changed)",
    "added_up": lambda s: not s.added_up,
    "outcomes": lambda s: not s.outcomes,
}
SHOWN = {
    "title",
    "columns",
    "empty",
    "hint",
    "added_up",
}  # how the rows are drawn; the others pick them


def _drawn(page: P.Page, s: P.Section, table, capsys) -> str:
    """What the CLI draws of section ``s`` holding ``table`` for a run of two ranks: the summary's table
    (at most 5 rows), the ranks page in the table and json formats."""
    from rich.console import Console

    from pt2logs.cli.render import _Tables, print_ranks, print_section
    from pt2logs.reports.compose import Report
    from pt2logs.reports.runs import Run

    page = dataclasses.replace(
        page, sections=tuple(s if x.key == s.key else x for x in page.sections)
    )
    report = Report(
        Run("3f2a", "evil[/bold]run", None, 2), page, None, None, [(s.key, s.title, table)]
    )
    if page.name == "ranks":
        capsys.readouterr()
        print_ranks(report, "table", None, False)
        print_ranks(report, "json", None, False)
        return capsys.readouterr().out
    c = _Tables(False, "--wide")
    buf = io.StringIO()
    c.console = Console(file=buf, width=300, highlight=False, soft_wrap=False, emoji=False)
    print_section(c, report, s, table, 5, False, 2)
    return buf.getvalue()


def _tables(con, s: P.Section) -> list:
    """The section's query's columns: no rows, and 7 rows (ranks 0 and 1 where it has a rank)."""
    import pyarrow as pa

    cols = run_named(con, s.query, {"run_id": "\x00no run", **s.params}).column_names
    if s.outcomes:
        cols = [*cols, "outcome", "why"]
    rows = [{c: (i % 2 if c == "rank" else f"{c} {i}") for c in cols} for i in range(7)]
    return [
        pa.Table.from_pylist([], pa.schema([(c, pa.string()) for c in cols])),
        pa.Table.from_pylist(rows),
    ]


@pytest.mark.parametrize("page_name", ["summary", "ranks"])
def test_every_field_a_section_file_sets_is_used(sample_wh, page_name, capsys):
    """A field nobody reads would pass every golden test unnoticed: each field set in a section file,
    changed, changes what the CLI shows (drawing fields: on rows and on no rows; the fields that pick
    the rows: on the samples' ddp run of two ranks or recompiles run of one)."""
    from pt2logs.reports.compose import section_rows

    page = P.get_page(page_name)
    raw = P.tomllib.loads(page.path.read_text())["sections"]
    con = pt2logs.connect(sample_wh)
    runs = [(resolve_run(con, name), ranks) for name, ranks in (("ddp", 2), ("recompiles", 1))]
    outcomes = {r.run_id: run_outcome(con, r.run_id) for r, _ in runs}

    def rows(s: P.Section, field: str) -> list:
        """when: on the run of one rank; params (a limit): on both; query, outcomes: on the run of two."""
        out = []
        for r, ranks in {"when": runs[1:], "params": runs}.get(field, runs[:1]):
            t = section_rows(con, s, r.run_id, ranks, outcomes[r.run_id])
            out.append(None if t is None else (t.column_names, t.num_rows))
        return out

    unused, base = [], {}
    for s, given in zip(page.sections, raw):
        assert set(given) <= set(MUTATIONS) | {"key"}, set(given) - set(MUTATIONS)
        tables = _tables(con, s)
        for name in sorted(set(given) - {"key"}):
            changed = dataclasses.replace(s, **{name: MUTATIONS[name](s)})
            if name == "query":
                changed = dataclasses.replace(changed, params={})
            if name == "when" and not changed.empty:
                changed = dataclasses.replace(changed, empty="nothing here")
            if name in SHOWN:
                same = all(
                    _drawn(page, s, t, capsys) == _drawn(page, changed, t, capsys) for t in tables
                )
            else:
                runs_of = {"when": "when", "params": "params"}.get(name, "other")
                if (s.key, runs_of) not in base:
                    base[s.key, runs_of] = rows(s, name)
                same = base[s.key, runs_of] == rows(changed, name)
            if same:
                unused.append((s.key, name))
    # the vLLM compile ranges: no sample run is a vLLM run (its limit: tests/test_vllm_report.py)
    assert unused == ([("vllm_ranges", "params")] if page_name == "summary" else [])


def test_the_ranks_page_shows_its_empty_note_for_one_rank(sample_wh, capsys):
    from pt2logs.cli.render import print_ranks
    from pt2logs.reports.compose import ranks

    con = pt2logs.connect(sample_wh)
    print_ranks(ranks(con, "recompiles"), "table", None, False)
    r = resolve_run(con, "recompiles")
    assert (
        capsys.readouterr().out == f"{r.name} ({r.run_id}) has a single rank: nothing to compare\n"
    )


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('[[sections]]\nkey = "a"\nquery = "runs"\ncolour = 1\nempty = "x"\n', "unknown key"),
        ('[[sections]]\nkey = "a"\nempty = "x"\n', "needs a 'query'"),
        ('[[sections]]\nkey = "A b"\nquery = "runs"\nempty = "x"\n', "must be lowercase"),
        ('[[sections]]\nkey = "a"\nquery = "runs"\n', "needs an empty note"),
        (
            '[[sections]]\nkey = "a"\nquery = "runs"\nwhen = "rows"\nempty = "x"\n',
            "takes no empty note",
        ),
        ('[[sections]]\nkey = "a"\nquery = "runs"\nwhen = "always"\nempty = "x"\n', "when must be"),
        (
            '[[sections]]\nkey = "a"\nquery = "runs"\nempty = "{runs}"\n',
            "fills only {run} and {run_id}",
        ),
        (
            '[[sections]]\nkey = "a"\nquery = "runs"\nempty = "x"\n[[sections]]\nkey = "a"\nquery = "runs"\nempty = "y"\n',
            "section keys repeat",
        ),
        ('title = "x"\n', "unknown key"),
        ("[[sections]\n", "summary.toml"),
    ],
)
def test_a_bad_page_file_is_refused_with_the_reason(tmp_path, text, error):
    bad = tmp_path / "summary.toml"
    bad.write_text(text)
    with pytest.raises(P.PageError, match=error):
        P.parse_page(bad)


def test_the_pages_are_found_in_a_checkout_and_in_an_installed_wheel(tmp_path):
    assert P.page_dirs() == [ROOT / "reports"]
    # the wheel's layout (pyproject force-include): pt2logs/_data/{reports,queries}, no checkout around it
    site = tmp_path / "site"
    shutil.copytree(
        ROOT / "src" / "pt2logs",
        site / "pt2logs",
        ignore=shutil.ignore_patterns("__pycache__", "*.so"),
    )
    for d in ("reports", "queries"):
        shutil.copytree(ROOT / d, site / "pt2logs" / "_data" / d)
    code = "from pt2logs.reports.pages import page_dirs, load_pages; print(page_dirs(), sorted(load_pages()))"
    res = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(site)},
    )
    assert (
        res.stdout.strip()
        == f"{[site.resolve() / 'pt2logs' / '_data' / 'reports']} ['ranks', 'summary']"
    )
    assert '"reports" = "pt2logs/_data/reports"' in (ROOT / "pyproject.toml").read_text()
