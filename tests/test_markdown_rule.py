"""The one rule for log text in Markdown (pt2logs.reports.markdown), checked as GitHub would render it:
hostile strings (emphasis, links, HTML, entities, pipes, backticks, backslashes, line breaks) come out
as the same characters, never as markup, in running text, in table cells and in code spans. Parsed with
markdown-it-py: CommonMark (GitHub's base) with GFM tables and strikethrough."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from pt2logs.reports.markdown import cell, code, inline_code, prose, text

GFM = MarkdownIt("commonmark").enable(["table", "strikethrough"])

HOSTILE = [
    "*em* _em_ __strong__ **strong** ~~gone~~ ~gone~",
    "[a link](http://x.org) ![an image](http://y.org/i.png) [ref][r] <https://z.org>",
    "<b>html</b> <img src=x onerror=alert(1)> &amp; &lt; &#60;",
    "a | b || c \\| d",
    "`code` ``two`` ` lone",
    "\\*not\\* \\\\ \\",
    "line one\nline two\r\nline three",
    "[rank0]: W1122 hello [/bold] File [/home/x.py]",
    "___stack0 == 2 # in torch_dynamo_resume_at_156",
    "x_ _y and a__b__c",
    "# not a heading > not a quote - not a list 1. item",
    "[x]: http://evil.example",
]


def _inline(md: str) -> list:
    """The inline children of the last inline token (a paragraph's, or a table row's last cell)."""
    return [t for t in GFM.parse(md) if t.type == "inline"][-1].children


def _plain(children: list) -> str:
    assert [c.type for c in children if c.type not in ("text", "softbreak")] == [], [
        c.type for c in children
    ]
    return "".join(c.content for c in children)


def _one_line(s: str) -> str:
    return s.replace("\r", " ").replace("\n", " ")


@pytest.mark.parametrize("s", HOSTILE)
def test_text_in_running_text_is_the_same_characters(s):
    assert _plain(_inline(f"Before {text(s)} after.\n")) == f"Before {_one_line(s)} after."
    assert _plain(_inline(f"## {text(s)} after\n")) == f"{_one_line(s)} after".strip()


@pytest.mark.parametrize("s", HOSTILE)
def test_text_in_a_table_cell_is_the_same_characters(s):
    row = _inline(f"| a | b |\n|---|---|\n| x | {cell(s)} |\n")
    assert _plain(row) == _one_line(s).strip()


def test_a_cell_keeps_identifiers_and_log_prefixes_readable():
    """What `query -f markdown` pins (tests/golden/query_top_recompile_causes.md): escapes only where
    CommonMark would read markup."""
    assert cell("dtype_mismatch") == "dtype_mismatch"
    assert (
        cell("___stack0 == 2 in torch_dynamo_resume_at_156")
        == "___stack0 == 2 in torch_dynamo_resume_at_156"
    )
    assert cell("tensor 'args[0]' size") == "tensor 'args[0]' size"
    assert cell("_a_ b") == "\\_a\\_ b" and cell("[a](b)") == "[a]\\(b)"


@pytest.mark.parametrize("s", HOSTILE)
def test_a_code_span_holds_the_characters(s):
    """In a table cell (code) and in running text (inline_code: a bug report's title, a frame of
    `advise -f markdown`), where a `|` escaped for a cell would show its backslash."""
    (c,) = [ch for ch in _inline(f"| a |\n|---|\n| {code(s)} |\n") if ch.type == "code_inline"]
    assert c.content == " ".join(s.split())
    (c,) = [ch for ch in _inline(f"Run {inline_code(s)} failed.\n") if ch.type == "code_inline"]
    assert c.content == " ".join(s.split())


def test_prose_keeps_its_own_code_spans_and_escapes_the_rest():
    children = _inline(prose("`x dim 0`: 4, 8 *not em* in `f (a_b.py:1)` <b>\n") + "\n")
    assert [(c.type, c.content) for c in children if c.type == "code_inline"] == [
        ("code_inline", "x dim 0"),
        ("code_inline", "f (a_b.py:1)"),
    ]
    assert [c.type for c in children if c.type not in ("text", "code_inline")] == []
