"""The chart library a page inlines: vega, vega-lite and vega-embed as one script, from vl-convert
(``vl_convert.javascript_bundle()``, the copy vl-convert-python ships: no network)."""

from __future__ import annotations

import os
from pathlib import Path

import altair as alt


def vl_version() -> str | None:
    """The Vega-Lite version Altair writes specs for, when vl-convert has it (else its default)."""
    import vl_convert

    want = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    return want if want in vl_convert.get_vegalite_versions() else None


def vega_bundle() -> str:
    """vega + vega-lite + vega-embed as one script (from vl-convert), cached under
    ``$PT2LOGS_CACHE`` (default ``~/.cache/pt2logs``): building it takes a few seconds."""
    import vl_convert

    v = vl_version()
    cache = Path(os.environ.get("PT2LOGS_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pt2logs")
    path = cache / f"vega-bundle-{vl_convert.__version__}-vl{v or 'default'}.js"
    try:
        text = path.read_text()
        if text.rstrip().endswith(";") and "window.vegaEmbed" in text[-2000:]:
            return text
    except OSError:
        pass
    text = vl_convert.javascript_bundle(vl_version=v) if v else vl_convert.javascript_bundle()
    try:
        cache.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.replace(path)
    except OSError:
        pass
    return text
