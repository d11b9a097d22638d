"""Two runs compared (the ``diff`` report), two compiles' FX graphs compared, and one site across the fleet."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from pt2logs.query.queries import run_named
from pt2logs.reports.diff import QUERIES as DIFF_QUERIES
from pt2logs.reports.diff import diff as run_diff
from pt2logs.reports.runs import resolve_run
from pt2logs.serve.graphdiff import diff_graphs

#: the graphs two compiles can be compared on (?graph=), the Dynamo graph by default
GRAPHS = [
    "dynamo_output_graph",
    "aot_forward_graph",
    "aot_backward_graph",
    "aot_inference_graph",
    "aot_joint_graph",
    "inductor_post_grad_graph",
]


#: the occurrences a site page lists, newest first (its header counts them all: the query's `total`)
SHOWN = 1000


def graph_text(con: Any, run_id: str, cid: str, what: str, rank: int | None) -> str | None:
    """The text of one of a compile's graphs (the last logged, a restarted compile logs again), None if not logged."""
    rows = [
        a
        for a in run_named(
            con, "bug_report_artifacts", {"run_id": run_id, "compile_id": cid}
        ).to_pylist()
        if a["what"] == what
        and a["compile_id"] == cid
        and a["payload"]
        and (rank is None or a["rank"] == rank)
    ]
    return rows[-1]["payload"] if rows else None


def _int(request: Request, name: str) -> int | None:
    v = request.query_params.get(name)
    try:
        return None if v in (None, "") else int(v)
    except ValueError:
        raise HTTPException(400, f"{name} is a whole number") from None


def diff(request: Request) -> Response:
    st = request.app.state
    ca, cb = request.query_params.get("compile_a"), request.query_params.get("compile_b")
    with st.store.read() as con:
        a, b = (
            resolve_run(con, request.path_params["a"]),
            resolve_run(con, request.path_params["b"]),
        )
        if ca or cb:  # two graphs: the copies of the artifacts' tables only
            what, g = _graph_diff(request, con, a, b, ca, cb)
        else:
            with st.store.scope(
                [a.run_id, b.run_id], DIFF_QUERIES
            ):  # the page's queries read these runs' rows only
                d = run_diff(con, a.run_id, b.run_id)
            what, g = None, None
    if g is None:
        return st.renderer.page(
            request,
            "diff.html",
            {"title": f"{a.name} → {b.name}", "d": d},
            data=d.as_dict(),
            table=pa.Table.from_pylist(d.headline),
        )
    return st.renderer.page(
        request,
        "graphdiff.html",
        {
            "title": f"{what}: {a.name} {ca} → {b.name} {cb}",
            "a": a,
            "b": b,
            "ca": ca,
            "cb": cb,
            "what": what,
            "graphs": GRAPHS,
            "g": g,
        },
        data=g.as_dict(),
        table=pa.Table.from_pylist(g.ops) if g.ops else None,
    )


def _graph_diff(
    request: Request, con: Any, a: Any, b: Any, ca: str | None, cb: str | None
) -> tuple[str, Any]:
    """The graph compared and the FX graph diff of compile ``ca`` of run ``a`` and ``cb`` of ``b`` (``?graph=`` picks the graph)."""
    if not (ca and cb):
        raise HTTPException(
            400,
            "a graph diff needs both compile_a and compile_b (e.g. ?compile_a=0/0&compile_b=0/1)",
        )
    what = request.query_params.get("graph") or GRAPHS[0]
    if what not in GRAPHS:
        raise HTTPException(400, f"graph is one of {', '.join(GRAPHS)}")
    with request.app.state.store.scope(
        [a.run_id, b.run_id], ("bug_report_artifacts",), answers=False
    ):
        ta = graph_text(con, a.run_id, ca, what, _int(request, "rank_a"))
        tb = graph_text(con, b.run_id, cb, what, _int(request, "rank_b"))
    if ta is None or tb is None:
        missing = " and ".join(
            f"{r.name} compile {c}" for r, c, t in ((a, ca, ta), (b, cb, tb)) if t is None
        )
        raise HTTPException(404, f"No {what} logged for {missing}.")
    return what, diff_graphs(ta, tb, f"{a.name} {ca}", f"{b.name} {cb}")


def site(request: Request) -> Response:
    st = request.app.state
    key = request.path_params["site"]
    with st.store.read() as con:
        t = run_named(con, "site_occurrences", {"site": key, "limit": SHOWN})
    rows = t.to_pylist()
    if not rows:
        raise HTTPException(
            404, f"No graph-break site, failure or guard {key!r} in this warehouse."
        )
    runs: dict[str, dict[str, Any]] = {}
    for r in rows:
        x = runs.setdefault(
            r["run_id"],
            {
                "run_id": r["run_id"],
                "run": r["run"],
                "occurrences": 0,
                "compiles": set(),
                "first": r["ts"],
                "last": r["ts"],
            },
        )
        x["occurrences"] += r["occurrences"] or 1
        x["compiles"].add((r["rank"], r["compile_id"]))
        x["first"] = min((v for v in (x["first"], r["ts"]) if v is not None), default=None)
        x["last"] = max((v for v in (x["last"], r["ts"]) if v is not None), default=None)
    by_run = sorted(runs.values(), key=lambda x: -x["occurrences"])
    for x in by_run:
        x["compiles"] = len(x["compiles"])
    head = rows[0]
    return st.renderer.page(
        request,
        "site.html",
        {
            "title": f"Site {key}",
            "key": key,
            "rows": rows,
            "columns": t.column_names,
            "by_run": by_run,
            "head": head,
            "kinds": sorted({r["what"] for r in rows}),
        },
        table=t,
    )
