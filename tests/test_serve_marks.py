"""Every mark of the fleet overview (``/``) links to what it counts: the served Vega-Lite specs give every
mark an ``href`` encoding and every row of their data an ``href`` that answers; a trend's mark leads to
exactly the runs it counts, a site's bar to the site's page."""

from __future__ import annotations

import json
import re
import urllib.parse

import pytest
from markupsafe import escape
from tests import serve_site
from tests.test_serve import get

from pt2logs.serve.server import Background

SPEC = re.compile(r'<script type="application/json" class="vl-spec"[^>]*>(.*?)</script>', re.S)


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    with Background(serve_site.app(serve_site.warehouse(tmp_path_factory))) as u:
        yield u.rstrip("/")


def _marks(spec):
    for layer in spec.get("layer") or [spec]:
        if "layer" in layer:
            yield from _marks(layer)
        elif "mark" in layer:
            yield layer


@pytest.mark.parametrize("page", ["/?since=2000-01-01", "/?since=2000-01-01&by=model"])
def test_every_mark_links_to_what_it_counts(url, page):
    status, _, body = get(url, page)
    assert status == 200
    specs = [json.loads(s) for s in SPEC.findall(body.decode())]
    assert len(specs) >= 5
    hrefs: dict[str, dict] = {}
    for spec in specs:
        marks = list(_marks(spec))
        assert marks and all(
            m["encoding"]["href"] == {"field": "href", "type": "nominal"} for m in marks
        )
        rows = [r for rows in spec["datasets"].values() for r in rows]
        assert rows and all(r["href"].startswith("/") for r in rows)
        for r in rows:
            hrefs.setdefault(r["href"], r)
    kinds = {urllib.parse.urlsplit(h).path.split("/")[1] for h in hrefs}
    assert {"runs", "sites", "query"} <= kinds
    for h, row in hrefs.items():
        status, _, body = get(url, h)
        assert status == 200, (h, body[:300])
        u = urllib.parse.urlsplit(h)
        if u.path.startswith("/sites/"):
            key = urllib.parse.unquote(u.path.split("/", 2)[2])
            assert str(escape(key)) in body.decode()
        elif u.path == "/runs" and "period" in row and "s_per_run" in row:
            # a compile-time trend's mark: the runs of its period (and tag), as many as it counts
            runs = json.loads(get(url, h + "&format=json")[2])
            assert len(runs) == row["runs"], h
            assert all(row["period"] <= r["started_at"][:10] < row["period_end"] for r in runs)
