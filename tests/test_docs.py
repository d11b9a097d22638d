"""Docs are tested: the tables reference is generated from the code, commands are documented."""

from __future__ import annotations

from pt2logs.docgen import tables_markdown
from tests.conftest import ROOT


def test_tables_doc_matches_the_declarations():
    assert (ROOT / "docs" / "tables.md").read_text() == tables_markdown(), "run: python -m pt2logs.docgen"


def test_readme_has_the_two_commands_and_ci_runs_the_test_one():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    cmds = [ln.strip() for ln in readme.splitlines() if ln.startswith("    python3 -m venv")]
    assert len(cmds) == 2
    assert "sample_traces" in cmds[0] and "pytest" in cmds[1]
    assert cmds[1] in ci
