"""The chart library a page inlines: vega, vega-lite and vega-embed as one script, from vl-convert
(``vl_convert.javascript_bundle()``, the copy vl-convert-python ships: no network).

Building it takes a couple of seconds, so it is kept in memory for the rest of the process. The
core never writes it to disk: a caller that wants it cached across processes (the CLI does, see
:mod:`pt2logs.cli.dashboard`) keeps it under :func:`bundle_name`, checks it with
:func:`is_bundle`, and hands it to :func:`~pt2logs.dashboard.html.render_html`.
"""

from __future__ import annotations

import functools

import altair as alt


def vl_version() -> str | None:
    """The Vega-Lite version Altair writes specs for, when vl-convert has it (else its default)."""
    import vl_convert

    want = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    return want if want in vl_convert.get_vegalite_versions() else None


@functools.cache
def vega_bundle() -> str:
    """vega + vega-lite + vega-embed as one script, built once per process."""
    import vl_convert

    v = vl_version()
    return vl_convert.javascript_bundle(vl_version=v) if v else vl_convert.javascript_bundle()


def bundle_name() -> str:
    """A file name for a cached copy that changes whenever the bundle would."""
    import vl_convert

    return f"vega-bundle-{vl_convert.__version__}-vl{vl_version() or 'default'}.js"


def is_bundle(text: str) -> bool:
    """Whether ``text`` is a whole bundle (a cached copy cut short is not)."""
    return text.rstrip().endswith(";") and "window.vegaEmbed" in text[-2000:]
