"""A compile page's graphs and code are highlighted once per distinct text (pt2logs.serve.highlight): the HTML kept
by the text's digest is the HTML Pygments makes, escaped; the cache holds at most its bytes, least recently used out."""

from __future__ import annotations

from pathlib import Path

from pt2logs.serve import highlight as hl
from pt2logs.serve.lru import Lru


def _code() -> str:
    """Real Python code (what output code is): a module of this package."""
    return Path(hl.__file__).with_name("graphdiff.py").read_text()


def test_a_text_is_highlighted_once_and_answers_the_same():
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    text = _code() + "\n# <script>alert(1)</script> & </pre>\n"
    html, cut = hl.highlight(text)
    assert cut == 0
    assert str(html) == highlight(text, PythonLexer(), HtmlFormatter(cssclass="hl"))
    assert "<script>" not in html and "&lt;script&gt;" in html  # escaped, kept escaped
    size = hl.CACHE.size
    again, _ = hl.highlight(text)
    assert str(again) == str(html) and hl.CACHE.size == size  # the kept HTML: nothing added
    assert hl.CACHE.get(next(reversed(hl.CACHE.items))) == str(html)


def test_large_texts_plain_and_cut_and_not_kept():
    big = "x = '<b>'\n" * ((hl.HIGHLIGHT_BYTES // 10) + 1)
    size = hl.CACHE.size
    html, cut = hl.highlight(big)
    assert cut == 0 and html.startswith("<pre>") and "&lt;b&gt;" in html and "<b>" not in html
    assert hl.CACHE.size == size
    huge = "y" * (hl.MOST_SHOWN + 7)
    assert hl.highlight(huge)[1] == 7


def test_the_cache_is_bounded_least_recently_used_out():
    c = Lru(100, len)  # (highlight's: weighed in characters)
    c.put(b"a", "A" * 40)
    c.put(b"b", "B" * 40)
    assert c.get(b"a") == "A" * 40  # a used last: b goes first
    c.put(b"c", "C" * 40)
    assert set(c.items) == {b"a", b"c"} and c.size == 80
    c.put(b"d", "D" * 101)  # larger than the whole cache: not kept
    assert b"d" not in c.items and c.size == 80
    pages = Lru(2)  # (the page cache's: a count of pages)
    for k in "xyz":
        pages.put(k, k.upper())
    assert list(pages.items) == ["y", "z"] and len(pages) == 2
    pages.clear()
    assert len(pages) == 0 and pages.size == 0
    off = Lru(0)  # (serve's page cache turned off)
    off.put("k", "v")
    assert len(off) == 0
