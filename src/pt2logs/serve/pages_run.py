"""One run's page (the ``summary`` sections, outcome, charts, every compile) and one compile's page
(as tlparse shows it, and more: recompile reason and guard diff, graph breaks with both frames,
graphs and output code, kernels, cache lookups, phases, metrics, failure)."""

from __future__ import annotations

import datetime as dt
import difflib
import re
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from pt2logs.analysis.identity import classify_path
from pt2logs.dashboard import Selection, build_card, get_dashboard
from pt2logs.query.queries import run_named
from pt2logs.reports.compose import page_queries, summary
from pt2logs.reports.outcomes import command_line, outcome_line, rank_lines, silence_line
from pt2logs.reports.runs import resolve_run
from pt2logs.serve.highlight import highlight
from pt2logs.serve.stack_trie import tries

#: the artifacts a compile page shows, in the order torch makes them: (what, title)
ARTIFACTS = [
    ("dynamo_output_graph", "Dynamo graph"),
    ("aot_joint_graph", "AOT joint graph"),
    ("aot_forward_graph", "AOT forward graph"),
    ("aot_backward_graph", "AOT backward graph"),
    ("aot_inference_graph", "AOT inference graph"),
    ("inductor_post_grad_graph", "Post-grad graph"),
    ("fx_graph_runnable", "fx_graph_runnable"),
    ("inductor_output_code", "Inductor output code"),
    ("dynamo_cpp_guards_str", "Guards"),
    ("dynamo_error", "Dynamo error (traceback)"),
]
#: the run dashboard's charts (dashboards/run.toml) a run page draws; its other cards are the summary's tables
RUN_CHARTS = ("waterfall", "rank_ends", "recompile_chain")
#: the compile's own queries: (key, title, named query)
COMPILE_SECTIONS = [
    ("graph_breaks", "Graph breaks", "compile_graph_breaks"),
    ("kernels", "Kernels", "compile_kernels"),
    ("cache_lookups", "Cache lookups", "compile_cache_lookups"),
    ("phases", "Phases", "compile_phase_spans"),
    ("metrics", "Metrics", "compile_metrics"),
]


def run_queries() -> tuple[str, ...]:
    """Every named query a run page runs: the summary's, the run dashboard's charts', the compiles and their stacks
    (its scope copies only the tables these read, and runs the outcome rules once for them all)."""
    charts = tuple(x.query for x in get_dashboard("run").sections if x.key in RUN_CHARTS)
    return (*page_queries("summary"), *charts, "bug_report_compiles", "compile_stacks")


#: every named query a compile page runs (its rows are copied for these only)
COMPILE_QUERIES = ("bug_report_compiles", "bug_report_artifacts", "recompile_list") + tuple(
    q for _, _, q in COMPILE_SECTIONS
)


_FRAME = re.compile(r"^Line: (?P<line>\d+), Name: (?P<func>.*), Filename: (?P<file>.*)$")


def split_stack(frames: list[str] | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A compile's stack (compilation_metrics.stack_trace, outermost first) as (user frames, library and
    standard-library frames), each in stack order; a frame's kind is the identity rule's
    (:func:`pt2logs.analysis.identity.classify_path`)."""
    user, lib = [], []
    for text in frames or []:
        m = _FRAME.match(text)
        f = (
            {"file": m.group("file"), "line": int(m.group("line")), "func": m.group("func")}
            if m
            else {"file": text, "line": None, "func": None}
        )
        (user if classify_path(f["file"]).kind == "user" else lib).append(f)
    return user, lib


def run(request: Request) -> Response:
    st = request.app.state
    with st.store.read() as con:
        rid = resolve_run(con, request.path_params["run"]).run_id
        with st.store.scope([rid], run_queries()):  # the page's queries read this run's rows only
            s = summary(con, rid)
            sel = Selection(
                None, None, None, None, rid, s.run.name, dt.datetime.now(dt.timezone.utc), 10.0
            )
            cards = [
                build_card(con, x, sel, 1)
                for x in get_dashboard("run").sections
                if x.key in RUN_CHARTS
            ]
            compiles = [
                c
                for c in run_named(con, "bug_report_compiles", {"run_id": rid}).to_pylist()
                if c["run_id"] == rid
            ]
            stacks = tries(run_named(con, "compile_stacks", {"run_id": rid}).to_pylist())
    o = s.outcome
    outcome = None
    if o is not None:
        outcome = {
            "outcome": o.outcome,
            "line": outcome_line(o),
            "evidence": o.run.get("evidence"),
            "more": [x for x in (silence_line(o), command_line(o)) if x],
            "ranks": rank_lines(o),
        }
    charts = [c for c in cards if c.spec is not None]
    data = {
        **s.as_dict(),
        "compiles": compiles,
        "stack_trie": [
            {"rank": k[0], "file": k[1], "roots": [n.as_dict() for n in v]}
            for k, v in stacks.items()
        ],
    }
    return st.renderer.page(
        request,
        "run.html",
        {
            "title": f"{s.run.name}",
            "body_run": rid,
            "s": s,
            "o": outcome,
            "charts": charts,
            "compiles": compiles,
            "stacks": stacks,
            "sections": [(k, t, tbl.to_pylist(), tbl.column_names) for k, t, tbl in s.sections],
        },
        data=data,
    )


def _of_rank(rows: list[dict[str, Any]], run_id: str, rank: int | None) -> list[dict[str, Any]]:
    return [
        r
        for r in rows
        if r.get("run_id", run_id) == run_id and (rank is None or r.get("rank") == rank)
    ]


def compile_facts(con: Any, run_id: str, cid: str, rank: int | None) -> dict[str, Any]:
    """Everything the warehouse holds about one compile of one run (and rank): named queries only."""
    p = {"run_id": run_id, "compile_id": cid}
    compiles = _of_rank(run_named(con, "bug_report_compiles", p).to_pylist(), run_id, rank)
    ranks = sorted({c["rank"] for c in compiles}, key=lambda r: (r is not None, r or 0))
    if rank is None and ranks:
        rank = ranks[0]  # a multi-rank run: the first rank's, the others linked
    arts = [
        a
        for a in run_named(con, "bug_report_artifacts", p).to_pylist()
        if a["compile_id"] == cid and (rank is None or a["rank"] == rank)
    ]
    rec = [
        r
        for r in run_named(con, "recompile_list", {"run_id": run_id}).to_pylist()
        if r["compile_id"] == cid and r["rank"] == rank
    ]
    out: dict[str, Any] = {
        "compile": next((c for c in compiles if c["rank"] == rank), None),
        "ranks": ranks,
        "rank": rank,
        "recompile": rec,
        "artifacts": arts,
    }
    qp = {**p, "rank": rank}
    for key, _, q in COMPILE_SECTIONS:
        out[key] = run_named(con, q, qp).to_pylist()
    prev = rec[0]["after"] if rec else None
    out["replaced"] = prev
    if prev:
        guards = {}
        for c in (prev, cid):
            g = [
                a["payload"]
                for a in run_named(
                    con, "bug_report_artifacts", {"run_id": run_id, "compile_id": c}
                ).to_pylist()
                if a["what"] == "dynamo_cpp_guards_str" and a["rank"] == rank and a["payload"]
            ]
            guards[c] = g[-1] if g else ""
        out["guard_diff"] = "\n".join(
            difflib.unified_diff(
                guards[prev].splitlines(),
                guards[cid].splitlines(),
                f"guards of {prev}",
                f"guards of {cid}",
                lineterm="",
            )
        )
    return out


def _rank(request: Request) -> int | None:
    v = request.query_params.get("rank")
    if v in (None, ""):
        return None
    try:
        return int(v)
    except ValueError:
        raise HTTPException(400, "rank is a whole number") from None


def compile_page(request: Request) -> Response:
    st = request.app.state
    cid = request.path_params["compile_id"]
    with st.store.read() as con:
        r = resolve_run(con, request.path_params["run"])
        with st.store.scope([r.run_id], COMPILE_QUERIES, answers=False):
            f = compile_facts(con, r.run_id, cid, _rank(request))
    if f["compile"] is None and not f["artifacts"] and not f["metrics"]:
        raise HTTPException(
            404,
            f"Run {r.name} ({r.run_id}) has no compile {cid!r}"
            + (f" on rank {f['rank']}" if f["rank"] is not None else "")
            + ".",
        )
    by = {}
    for a in f["artifacts"]:
        if a.get("payload"):
            by[a["what"]] = a  # the last of each kind (a restarted compile logs again)
    shown = []
    for what, title in ARTIFACTS:
        a = by.get(what)
        if a is not None:
            html, cut = highlight(a["payload"])
            shown.append(
                {
                    "what": what,
                    "title": title,
                    "html": html,
                    "cut": cut,
                    "a": a,
                    "lines": a["payload"].count("\n") + 1,
                }
            )
    data = {k: v for k, v in f.items()}
    stack = next((m["stack_trace"] for m in f["metrics"] if m.get("stack_trace")), None)
    return st.renderer.page(
        request,
        "compile.html",
        {
            "title": f"{r.name} · compile {cid}",
            "body_run": r.run_id,
            "r": r,
            "cid": cid,
            "f": f,
            "c": f["compile"] or {},
            "stack": split_stack(stack),
            "shown": shown,
            "sections": [(k, t, f[k]) for k, t, _ in COMPILE_SECTIONS],
        },
        data=data,
    )
