"""A graph or code text as HTML for the compile page: highlighted by Pygments, each distinct text once.

Pygments' Python lexer is the compile page's largest cost after its queries (~90 ms a page of a few graphs and
output code, at any warehouse size). The texts it highlights are the payloads the store keeps once per warehouse
(the same graph in every rank and every run of a model), so the HTML made of a text is kept by the text's digest
(BLAKE2b, 16 bytes) in a bounded least-recently-used cache: :data:`CACHE_BYTES` of HTML at most, never the payload
store. Pygments escapes every character it emits, so a kept page is the escaped one; a text over
:data:`HIGHLIGHT_BYTES` is shown escaped and plain (markupsafe), and cut beyond :data:`MOST_SHOWN`.
"""

from __future__ import annotations

import hashlib

from markupsafe import Markup, escape

from pt2logs.serve.lru import Lru

#: a graph or code text is highlighted up to this size, shown plain up to :data:`MOST_SHOWN`, cut beyond
HIGHLIGHT_BYTES, MOST_SHOWN = 512 << 10, 2 << 20
#: the highlighted HTML kept at most (bytes of its characters): some 50 to 200 graphs of a few KB to 100 KB
CACHE_BYTES = 16 << 20


#: digest of a text -> its highlighted HTML (weighed in characters)
CACHE: Lru[str] = Lru(CACHE_BYTES, len)


def highlight(text: str | None) -> tuple[Markup, int]:
    """A graph or code text as HTML: highlighted by Pygments (which escapes it), or escaped plain text when
    large; and the characters cut off beyond :data:`MOST_SHOWN`."""
    text = text or ""
    cut = max(0, len(text) - MOST_SHOWN)
    text = text[:MOST_SHOWN]
    if len(text) > HIGHLIGHT_BYTES:
        return Markup("<pre>") + escape(text) + Markup("</pre>"), cut
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    html = CACHE.get(key)
    if html is None:
        from pygments import highlight as pyg
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer

        html = pyg(text, PythonLexer(), HtmlFormatter(cssclass="hl"))
        CACHE.put(key, html)
    return Markup(html), cut
