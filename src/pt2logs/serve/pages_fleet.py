"""The fleet's pages: the overview (the weekly dashboard's cards, live), the runs, the named queries."""

from __future__ import annotations

import shlex
from typing import Any

import pyarrow as pa
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from pt2logs.dashboard import build
from pt2logs.query.queries import bind, get_query, load_queries, parse_since, run_sql
from pt2logs.reports.runs import check_selection
from pt2logs.serve import runs_table
from pt2logs.serve.marks import link_marks

#: the runs table: (column, heading); sortable by any of them
RUN_COLUMNS = [
    ("run", "run"),
    ("started_at", "started"),
    ("outcome", "outcome"),
    ("torch", "torch"),
    ("ranks", "ranks"),
    ("compiles", "compiles"),
    ("compile_s", "compile s"),
    ("recompiles", "recompiles"),
    ("graph_breaks", "breaks"),
    ("failures", "failures"),
    ("tags", "tags"),
]
PER_PAGE, MOST_PER_PAGE = 50, 500
#: the keys of a row of /runs as JSON and CSV, in order
ROW_KEYS = (
    "run_id",
    "run",
    "started_at",
    "outcome",
    "why",
    "torch",
    "ranks",
    "compiles",
    "compile_s",
)
ROW_KEYS += ("recompiles", "graph_breaks", "failures", "tags")
#: rows a query page lays out (JSON and CSV give them all)
SHOWN_ROWS = 1000
FLAGS = {"--since": "since", "--until": "until", "--tag": "tag", "--run": "run_id"}


def _param(request: Request, name: str) -> str | None:
    v = request.query_params.get(name)
    return v if v not in (None, "") else None


def command_params(command: str) -> tuple[str, dict[str, str]]:
    """``pt2logs query NAME --since X -p limit 15`` → (NAME, {"since": X, "limit": "15"}): a card's
    command as the /query link that gives the same rows."""
    parts = shlex.split(command)
    name, rest, out = parts[2], parts[3:], {}
    i = 0
    while i + 1 < len(rest):
        if rest[i] == "-p" and i + 2 < len(rest):
            out[rest[i + 1]] = rest[i + 2]
            i += 3
        else:
            out[FLAGS.get(rest[i], rest[i].lstrip("-"))] = rest[i + 1]
            i += 2
    return name, out


def home(request: Request) -> Response:
    st = request.app.state
    sel = {k: _param(request, k) for k in ("since", "until", "tag", "by")}
    sel["since"] = sel["since"] or "4w"
    with st.store.read() as con:
        pg = build(
            con,
            since=sel["since"],
            until=sel["until"],
            tag=sel["tag"],
            by=sel["by"],
            warehouse=st.warehouse,
        )
    cards = []
    for c in pg.cards:
        name, params = command_params(c.command)
        link = _query_link(name, params)
        if c.spec is not None:
            link_marks(c.key, c.spec, sel, link)
        cards.append({"card": c, "query": name, "link": link})
    data = {
        "title": pg.title,
        "scope": pg.scope,
        "filters": dict(pg.filters),
        "headline": [m.__dict__ for m in pg.headline.metrics],
        "flags": pg.headline.flags,
        "cards": {c.key: c.data for c in pg.cards},
    }
    return st.renderer.page(
        request, "home.html", {"title": pg.title, "pg": pg, "cards": cards, "sel": sel}, data=data
    )


def _query_link(name: str, params: dict[str, str]) -> str:
    from pt2logs.serve.render import query_url

    return query_url(name, params)


def runs(request: Request) -> Response:
    st = request.app.state
    text, outcome = (_param(request, "q") or "").lower(), _param(request, "outcome")
    sort = _param(request, "sort") or "started_at"
    if sort not in dict(RUN_COLUMNS):
        raise HTTPException(400, f"cannot sort by {sort!r}: one of {', '.join(dict(RUN_COLUMNS))}")
    desc = (
        _param(request, "desc") != "0"
        if _param(request, "desc") is not None
        else sort
        in ("started_at", "compile_s", "recompiles", "graph_breaks", "failures", "compiles")
    )
    try:
        pageno = max(1, int(_param(request, "page") or 1))
        per = min(MOST_PER_PAGE, max(1, int(_param(request, "per") or PER_PAGE)))
    except ValueError:
        raise HTTPException(400, "page and per are whole numbers") from None
    every = request.query_params.get("format") in ("json", "csv")  # every matching row
    with st.store.read() as con:
        rows, total = runs_table.page(
            con,
            text=text,
            outcome=outcome,
            since=parse_since(_param(request, "since")),
            until=parse_since(_param(request, "until")),
            tag=_param(request, "tag"),
            untagged=_param(request, "untagged"),
            scope=st.store.scope,
            sort=sort,
            desc=desc,
            offset=None if every else (pageno - 1) * per,
            limit=None if every else per,
        )
    pages = max(1, -(-total // per))
    shown = rows
    table = (
        pa.Table.from_pylist([{c: r.get(c) for c in ROW_KEYS} for r in rows])
        if rows
        else pa.table({c: pa.array([], pa.string()) for c, _ in RUN_COLUMNS})
    )
    state = {
        "q": _param(request, "q") or "",
        "outcome": outcome or "",
        "since": _param(request, "since") or "",
        "until": _param(request, "until") or "",
        "tag": _param(request, "tag") or "",
        "untagged": _param(request, "untagged") or "",
        "sort": sort,
        "desc": "1" if desc else "0",
        "per": per,
    }
    return st.renderer.page(
        request,
        "runs.html",
        {
            "title": "Runs",
            "rows": shown,
            "total": total,
            "page": pageno,
            "pages": pages,
            "columns": RUN_COLUMNS,
            "state": state,
        },
        table=table,
    )


def query(request: Request) -> Response:
    """A named query with the page's parameters: the rows of ``pt2logs query NAME -p ...``."""
    st = request.app.state
    name = request.path_params["name"]
    if name not in load_queries():
        raise HTTPException(404, f"No named query {name!r}: the list is at /queries.")
    q = get_query(name)
    given: dict[str, Any] = {
        k: v for k, v in request.query_params.items() if k != "format" and v != ""
    }
    if "run" in given:  # --run
        given["run_id"] = given.pop("run")
    with st.store.read() as con:
        if any(p.name == "run_id" for p in q.params):
            check_selection(con, given.get("run_id"), given.get("tag"))
        table = run_sql(con, q.sql, bind(q, q.sql, given))
    cmd = ["pt2logs", "query", name]
    for k, v in given.items():
        cmd += [
            next((f for f, p in FLAGS.items() if p == k), "-p"),
            *(() if k in FLAGS.values() else (k,)),
            str(v),
        ]
    return st.renderer.page(
        request,
        "query.html",
        {
            "title": q.title,
            "q": q,
            "given": given,
            "rows": table.slice(0, SHOWN_ROWS).to_pylist(),
            "columns": table.column_names,
            "total": table.num_rows,
            "shown": min(SHOWN_ROWS, table.num_rows),
            "command": shlex.join(cmd),
        },
        table=table,
    )


def queries(request: Request) -> Response:
    qs = sorted(load_queries().values(), key=lambda q: q.name)
    data = [
        {
            "name": q.name,
            "title": q.title,
            "question": q.question,
            "params": [p.name for p in q.params],
        }
        for q in qs
    ]
    return request.app.state.renderer.page(
        request,
        "queries.html",
        {"title": "Named queries", "qs": qs},
        data=data,
        table=pa.Table.from_pylist(data),
    )
