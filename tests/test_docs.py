"""Docs are tested: the tables reference is generated from the code, commands are documented."""

from __future__ import annotations

from tests.conftest import ROOT

from pt2logs.docgen import tables_markdown


def test_tables_doc_matches_the_declarations():
    assert (ROOT / "docs" / "tables.md").read_text() == tables_markdown(), (
        "run: python -m pt2logs.docgen"
    )


def test_readme_has_the_two_commands_and_ci_runs_the_test_one():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    cmds = [ln.strip() for ln in readme.splitlines() if ln.startswith("    python3 -m venv")]
    assert len(cmds) == 2
    assert "sample_traces" in cmds[0] and "pytest" in cmds[1]
    assert cmds[1] in ci


def test_every_command_is_documented_with_an_example():
    import click

    from pt2logs.cli import main

    readme = (ROOT / "README.md").read_text()
    ctx = click.Context(main)
    for name in main.list_commands(ctx):
        cmd = main.get_command(ctx, name)
        assert f"pt2logs {name}" in readme, f"README does not document `pt2logs {name}`"
        assert cmd.help and (
            "Example" in cmd.help or "Examples" in cmd.help or name in ("formats",)
        ), name


def test_queries_doc_matches_the_query_files():
    from pt2logs.docgen import queries_markdown

    assert (ROOT / "docs" / "queries.md").read_text() == queries_markdown(), (
        "run: python -m pt2logs.docgen"
    )


def test_docs_links_resolve():
    import re

    for md in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#:]+)\)", md.read_text()):
            assert (md.parent / target).exists(), f"{md.name}: broken link {target}"


def test_the_cli_has_every_command_the_issues_ask_for():
    import click

    from pt2logs.cli import main

    assert set(main.list_commands(click.Context(main))) == {
        "ingest",
        "run",
        "summary",
        "advise",
        "query",
        "queries",
        "diff",
        "ranks",
        "bundle",
        "dashboard",
        "serve",
        "export",
        "compact",
        "check",
        "repair",
        "tables",
        "formats",
    }


def test_recompile_causes_doc_matches_the_taxonomy():
    from pt2logs.analysis.guards import CAUSES, EXAMPLES, classify_guard
    from pt2logs.docgen import causes_markdown

    assert set(EXAMPLES) == set(CAUSES)
    assert all(classify_guard(EXAMPLES[c])[0] == c for c in CAUSES)
    assert (ROOT / "docs" / "recompile_causes.md").read_text() == causes_markdown(), (
        "run: python -m pt2logs.docgen"
    )


def test_advice_doc_matches_the_table():
    from pt2logs.docgen import advice_markdown

    assert (ROOT / "docs" / "advice.md").read_text() == advice_markdown(), (
        "run: python -m pt2logs.docgen"
    )
