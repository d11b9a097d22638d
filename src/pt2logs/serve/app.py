"""The ASGI app: routes, assets, errors as pages.

:func:`create_app` takes the warehouse and the row writers (``json``, ``csv``: the CLI's, so that
``/query/NAME?format=json`` is byte for byte ``pt2logs query NAME -f json``) and returns a Starlette
app; :mod:`pt2logs.cli.serve` runs it with uvicorn. Read-only: no route writes, and no part of a URL
reaches the file system: assets are read once from the package into memory and looked up by name.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pt2logs.query.queries import QueryError
from pt2logs.redaction.redact import redact
from pt2logs.reports.runs import NoMatch
from pt2logs.serve import pages_diff, pages_fleet, pages_run
from pt2logs.serve.connection import Connection
from pt2logs.serve.lru import Lru
from pt2logs.serve.render import HEADERS, Renderer, Writer

STATIC = Path(__file__).parent / "static"
Handler = Callable[[Request], Response]


class Assets:
    """The files the pages load, in memory: the package's static/ folder, the Pygments style and the Vega
    bundle (vega, vega-lite, vega-embed from vl-convert, :func:`pt2logs.dashboard.bundle.vega_bundle`,
    built in a thread at start: it takes a couple of seconds)."""

    TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}

    def __init__(self, bundle: str | None = None):
        from pygments.formatters import HtmlFormatter

        from pt2logs.dashboard.html import CSS

        self.files = {p.name: p.read_bytes() for p in STATIC.iterdir() if p.suffix in self.TYPES}
        self.files["serve.css"] = (
            CSS.encode() + self.files["serve.css"]
        )  # the dashboard's look, and the tables'
        self.files["pygments.css"] = HtmlFormatter(style="default").get_style_defs(".hl").encode()
        self._bundle = bundle.encode() if bundle is not None else None
        self._ready = threading.Event()
        if bundle is None:
            threading.Thread(target=self._build, daemon=True, name="pt2logs-vega-bundle").start()
        else:
            self._ready.set()

    def _build(self) -> None:
        from pt2logs.dashboard.bundle import vega_bundle

        try:
            self._bundle = vega_bundle().encode()
        finally:
            self._ready.set()

    def get(self, name: str) -> tuple[bytes, str] | None:
        if name == "vega.js":
            self._ready.wait(120)
            return (self._bundle, self.TYPES[".js"]) if self._bundle else None
        data = self.files.get(name)
        return (data, self.TYPES["." + name.rsplit(".", 1)[-1]]) if data is not None else None


class PageCache:
    """The last pages answered, by URL and views generation: the warehouse only changes by commits, and a
    commit makes a new generation (:meth:`Connection.current`), so a page is never served stale. At most
    ``entries`` pages, none over :data:`PAGE_BYTES`."""

    PAGE_BYTES = 4 << 20

    def __init__(self, entries: int):
        self.entries = entries
        #: key -> (body, status, headers)
        self.pages: Lru[tuple[bytes, int, dict[str, str]]] = Lru(entries)

    def get(self, key: tuple) -> Response | None:
        hit = self.pages.get(key)
        return Response(hit[0], hit[1], headers=hit[2]) if hit is not None else None

    def put(self, key: tuple, resp: Response) -> None:
        body = getattr(resp, "body", None)
        if resp.status_code != 200 or body is None or len(body) > self.PAGE_BYTES:
            return
        self.pages.put(key, (bytes(body), resp.status_code, dict(resp.headers)))


def page(fn: Callable[[Request], Response]) -> Callable[[Request], Response]:
    """A route whose failures are pages: a name that matches nothing is a 404, a bad parameter a 400,
    anything else a 500 that says what failed (secrets redacted), never a traceback. Answers come from
    the page cache when the same URL was answered over the same views."""

    @functools.wraps(fn)
    def wrapped(request: Request) -> Response:
        r: Renderer = request.app.state.renderer
        cache: PageCache = request.app.state.cache
        try:
            key = (request.app.state.store.current(), request.url.path, request.url.query)
            hit = cache.get(key)
            if hit is not None:
                return hit
            resp = fn(request)
            cache.put(key, resp)
            return resp
        except HTTPException as e:
            return r.error(request, e.status_code, str(e.detail))
        except NoMatch as e:
            return r.error(request, 404, str(e))
        except QueryError as e:
            return r.error(request, 400, str(e))
        except Exception as e:  # noqa: BLE001 - every failure is a page
            return r.error(request, 500, f"{type(e).__name__}: {redact(str(e)) or '(no message)'}")

    return wrapped


def static(request: Request) -> Response:
    got = request.app.state.assets.get(request.path_params["name"])
    if got is None:
        return request.app.state.renderer.error(request, 404, "No such asset.")
    return Response(got[0], media_type=got[1], headers={**HEADERS, "Cache-Control": "max-age=3600"})


def _not_found(request: Request, exc: Exception) -> Response:
    status = getattr(exc, "status_code", 500)
    msg = (
        "No page here."
        if status == 404
        else ("Method not allowed: this app is read-only." if status == 405 else "The page failed.")
    )
    return request.app.state.renderer.error(request, status, msg)


ROUTES = [
    ("/", pages_fleet.home),
    ("/runs", pages_fleet.runs),
    ("/runs/{run}", pages_run.run),
    ("/runs/{run}/compiles/{compile_id:path}", pages_run.compile_page),
    ("/sites/{site:path}", pages_diff.site),  # a key may hold a slash
    ("/diff/{a}/{b}", pages_diff.diff),
    ("/query/{name}", pages_fleet.query),
    ("/queries", pages_fleet.queries),
]


def create_app(
    warehouse: str,
    writers: Mapping[str, Writer],
    *,
    bundle: str | None = None,
    store: Connection | None = None,
    cache_pages: int = 256,
) -> Starlette:
    """The app over ``warehouse``; ``writers``: ``{"json": ..., "csv": ...}`` (the CLI's
    OUTPUT_FORMATS); ``bundle``: the Vega script (built in memory when None); ``cache_pages``: how many
    answered pages to keep (0: none)."""
    routes = [Route(path, page(fn), methods=["GET", "HEAD"]) for path, fn in ROUTES]
    routes.append(Route("/static/{name}", static, methods=["GET", "HEAD"]))
    app = Starlette(
        routes=routes, exception_handlers={HTTPException: _not_found, Exception: _not_found}
    )
    app.state.store = store or Connection(warehouse)
    app.state.renderer = Renderer(writers)
    app.state.cache = PageCache(cache_pages)
    app.state.assets = Assets(bundle)
    app.state.warehouse = warehouse
    return app


def state(request: Request) -> Any:
    return request.app.state
