"""Pages as HTML (Jinja templates, every value autoescaped), JSON or CSV.

Every page answers ``?format=json`` (its data) and ``?format=csv`` (its main table); a ``/query/NAME``
page's JSON and CSV are written by the same writers as ``pt2logs query NAME -f json`` / ``-f csv``
(the CLI hands them in: the core never imports the CLI). Log text reaches a page only through
autoescaping (names, paths, reasons and tags are attacker text); chart specs are embedded as JSON
with ``<``, ``>`` and ``&`` escaped (:func:`pt2logs.dashboard.html.script_json`), in elements the
browser never runs (``type="application/json"``).
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import quote, urlencode

import jinja2
import orjson
import pyarrow as pa
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from pt2logs.dashboard.html import finite, script_json
from pt2logs.version import __version__

Writer = Callable[[pa.Table, BinaryIO], None]
TEMPLATES = Path(__file__).parent / "templates"
#: what a page may load: its own scripts and styles only (vega needs eval for its expressions)
CSP = (
    "default-src 'none'; script-src 'self' 'unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def seg(v: Any) -> str:
    """A value as one URL path segment (``/`` escaped too)."""
    return quote("" if v is None else str(v), safe="")


def run_url(run: Any) -> str:
    return f"/runs/{seg(run)}"


def compile_url(run: Any, compile_id: Any, rank: Any = None) -> str:
    """``/runs/RUN/compiles/0/1`` (``!0/1/2`` for compiled autograd), ``?rank=N`` for one rank's."""
    cid = quote(str(compile_id), safe="/!")
    return f"{run_url(run)}/compiles/{cid}" + (f"?rank={rank}" if rank is not None else "")


def site_url(site: Any) -> str:
    return f"/sites/{seg(site)}"


def query_url(name: str, params: Mapping[str, Any] | None = None) -> str:
    p = {k: v for k, v in (params or {}).items() if v is not None and v != ""}
    return f"/query/{seg(name)}" + (f"?{urlencode(p)}" if p else "")


def link_for(row: Mapping[str, Any], col: str) -> str | None:
    """Where a table cell links: a run to its page, a compile id to its compile, a site key to its site."""
    v = row.get(col)
    run = row.get("run_id") or row.get("run")
    if v is None or v == "":
        return None
    if col in ("run", "run_id") and run:
        return run_url(run)
    if col in ("compile_id", "after") and run:
        return compile_url(run, v, row.get("rank"))
    if col in ("break_key", "failure_key"):
        return site_url(v)
    return None


def cell(v: Any) -> str:
    """A value as short text for a table cell (the escaping is the template's)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return str(v)
        return f"{v:,.3f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, dt.datetime):
        return v.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(v, (list, tuple)):
        return ", ".join(cell(x) for x in v)
    return str(v)


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        cell=cell, seg=seg, spec_json=lambda s: jinja2.utils.markupsafe.Markup(script_json(s))
    )
    env.globals.update(
        link_for=link_for,
        run_url=run_url,
        compile_url=compile_url,
        site_url=site_url,
        query_url=query_url,
        version=__version__,
    )
    return env


def rows_of(t: Any) -> list[dict[str, Any]]:
    return t.to_pylist() if isinstance(t, pa.Table) else list(t or [])


def to_json(data: Any) -> bytes:
    """A page's data as JSON (tables as lists of rows; times ISO; inf and NaN null)."""

    def default(v: Any) -> Any:
        if isinstance(v, pa.Table):
            return finite(v.to_pylist())
        if hasattr(v, "as_dict"):
            return v.as_dict()
        return str(v)

    return (
        orjson.dumps(
            finite(data), default=default, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
        )
        + b"\n"
    )


class Renderer:
    """Templates, and the writers of ``pt2logs query -f json`` / ``-f csv``."""

    def __init__(self, writers: Mapping[str, Writer]):
        self.env = _env()
        self.writers = dict(writers)

    def page(
        self,
        request: Request,
        template: str,
        ctx: dict[str, Any],
        *,
        data: Any = None,
        table: pa.Table | None = None,
        status: int = 200,
    ) -> Response:
        """The page as HTML, or its ``data`` (``?format=json``) or ``table`` (``?format=csv``)."""
        fmt = request.query_params.get("format", "html")
        if fmt == "json":
            body = (
                self.rows(table, "json")
                if data is None and table is not None
                else to_json(data if data is not None else {})
            )
            return Response(body, status, media_type="application/json", headers=HEADERS)
        if fmt == "csv":
            if table is None:
                return self.error(
                    request, 400, "This page has no table to give as CSV; try ?format=json."
                )
            return Response(
                self.rows(table, "csv"),
                status,
                media_type="text/csv; charset=utf-8",
                headers=HEADERS,
            )
        if fmt != "html":
            return self.error(request, 400, f"Unknown format {fmt!r}: html, json or csv.")
        return self.html(request, template, ctx, status)

    def rows(self, table: pa.Table, fmt: str) -> bytes:
        buf = io.BytesIO()
        self.writers[fmt](table, buf)
        return buf.getvalue()

    def html(
        self, request: Request, template: str, ctx: dict[str, Any], status: int = 200
    ) -> Response:
        body = self.env.get_template(template).render(request=request, path=request.url.path, **ctx)
        return HTMLResponse(body, status, headers=HEADERS)

    def error(self, request: Request, status: int, message: str) -> Response:
        """An error as a page (JSON with ``?format=json``): what went wrong, never a traceback."""
        if request.query_params.get("format") == "json":
            return Response(
                to_json({"error": message, "status": status}),
                status,
                media_type="application/json",
                headers=HEADERS,
            )
        return self.html(
            request,
            "error.html",
            {"title": f"{status}", "status": status, "message": message},
            status,
        )
