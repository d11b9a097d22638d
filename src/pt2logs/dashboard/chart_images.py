"""The charts of a page as PNG or SVG files, drawn by vl-convert (no browser)."""

from __future__ import annotations

import json
from typing import Any

from pt2logs.dashboard.bundle import vl_version
from pt2logs.dashboard.model import DashboardError, Page


def images(page: Page, fmt: str = "png", scale: float = 2.0) -> list[tuple[str, bytes]]:
    """Each chart of the page as an image (``png`` or ``svg``): [(file name, bytes)]."""
    import vl_convert

    v = vl_version()
    out = []
    for c in page.cards:
        if c.spec is None:
            continue
        spec = json.loads(json.dumps(c.spec))
        spec["title"] = {"text": c.title, "anchor": "start", "fontSize": 14, "offset": 12}
        kw: dict[str, Any] = {"vl_version": v} if v else {}
        if fmt == "png":
            data = vl_convert.vegalite_to_png(spec, scale=scale, **kw)
        elif fmt == "svg":
            data = vl_convert.vegalite_to_svg(spec, **kw).encode()
        else:
            raise DashboardError(f"unknown image format {fmt!r}: png or svg")
        out.append((f"{page.dashboard}-{c.key}.{fmt}", data))
    return out
