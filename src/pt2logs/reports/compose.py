"""Summary, diff and rank reports: named queries assembled into sections.

Every number here comes from a named query in ``queries/`` (so it matches
``pt2logs query NAME``); this module only picks runs, calls queries and
compares results. It returns data (dicts of pyarrow Tables / plain rows);
:mod:`pt2logs.cli.render` prints it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from pt2logs.query.queries import QueryError, run_named, run_sql
from pt2logs.reports.outcomes import RunOutcome, run_outcome


@dataclass
class Run:
    run_id: str
    name: str
    torch: str | None = None  # runs.torch_version, where the logs said
    ranks: int = 1  # runs.n_ranks: figures combined over a run add up this many ranks


NO_RUNS = "the warehouse has no runs yet: run `pt2logs ingest PATH` first"


def require_runs(con: duckdb.DuckDBPyConnection) -> None:
    """QueryError (:data:`NO_RUNS`) when the warehouse has no run: what a command that lets a query pick
    the newest run says instead of finding nothing."""
    if not run_sql(con, "SELECT run_id FROM runs LIMIT 1").num_rows:
        raise QueryError(NO_RUNS)


class NoMatch(QueryError):
    """A run selection (a run id, prefix or name, a tag) that matches no run in the warehouse: a mistake
    to name, with the closest runs or tags, never an empty answer (the CLI makes it a usage error)."""


def _closest(ref: str, choices: list[str], n: int = 3) -> list[str]:
    import difflib

    low = {c.lower(): c for c in choices}
    near = difflib.get_close_matches(ref.lower(), list(low), n=n, cutoff=0.5)
    return [low[c] for c in near] or [c for c in choices if ref.lower() in c.lower()][:n]


def no_run_message(con: duckdb.DuckDBPyConnection, ref: str) -> str:
    """What to say when ``ref`` names no run: the closest run names and ids (difflib), else the newest runs."""
    rows = run_sql(con, "SELECT run_id, name FROM runs ORDER BY started_at DESC NULLS LAST, name, run_id").to_pylist()
    if not rows:
        return f"no run matches {ref!r}: {NO_RUNS}"
    by_key: dict[str, dict[str, Any]] = {}
    for r in rows:
        by_key.setdefault(r["run_id"], r)
        by_key.setdefault(r["name"] or r["run_id"], r)
    near = list({by_key[k]["run_id"]: by_key[k] for k in _closest(ref, list(by_key))}.values())
    what = "closest runs" if near else "newest runs"
    names = ", ".join(f"{r['name']} ({r['run_id']})" for r in (near or rows[:3]))
    return f"no run matches {ref!r}; {what}: {names}; list runs with `pt2logs query runs`"


def check_selection(con: duckdb.DuckDBPyConnection, run: str | None = None, tag: str | None = None) -> None:
    """:class:`NoMatch` when ``run`` (an id, id prefix or name: the ``selected_runs`` rule) or ``tag``
    (``KEY=VALUE``) matches no run of the warehouse, or the two together match none. A time window
    (--since/--until) is never checked: a week with no runs is an answer, not a mistake."""
    one = "SELECT count(*) AS n FROM selected_runs($run, NULL, NULL, $tag)"
    if run is not None and not run_sql(con, one, {"run": run, "tag": None})["n"][0].as_py():
        raise NoMatch(no_run_message(con, run))
    if tag is None or run_sql(con, one, {"run": run, "tag": tag})["n"][0].as_py():
        return
    if run is not None and run_sql(con, one, {"run": None, "tag": tag})["n"][0].as_py():
        raise NoMatch(f"no run matching {run!r} has the tag {tag}; drop --tag or --run")
    raise NoMatch(f"no run has the tag {tag}; {_tag_hint(con, tag)}")


def _tag_hint(con: duckdb.DuckDBPyConnection, tag: str) -> str:
    """The closest tags (KEY=VALUE) the runs have, for a --tag that matched none."""
    import json

    seen: set[str] = set()
    for r in run_sql(con, "SELECT DISTINCT tags FROM runs WHERE tags IS NOT NULL").to_pylist():
        try:
            d = json.loads(r["tags"])
        except (TypeError, ValueError):
            continue
        if isinstance(d, dict):
            seen.update(f"{k}={v}" for k, v in d.items())
    if not seen:
        return "no run has any tag (`pt2logs ingest --tag KEY=VALUE` sets them)"
    near = _closest(tag, sorted(seen))
    return f"closest: {', '.join(near)}" if near else f"the runs' tags: {', '.join(sorted(seen)[:8])}"


def resolve_run(con: duckdb.DuckDBPyConnection, ref: str | None) -> Run:
    """A run from an id, an id prefix or a name; the newest run when ``ref`` is None: the run the queries
    about one run answer for without a selection (the ``selected_runs_or_newest`` macro, pt2logs.query.views)."""
    if ref is None:
        newest = run_sql(con, "SELECT run_id FROM selected_runs_or_newest(NULL, NULL, NULL, NULL)").column("run_id").to_pylist()
        if not newest:
            raise QueryError(NO_RUNS)
        rows = run_named(con, "runs", {"run_id": newest[0]}).to_pylist()
        return _run(next(r for r in rows if r["run_id"] == newest[0]))
    rows = run_named(con, "runs", {"run_id": ref}).to_pylist()
    if not rows:
        raise NoMatch(no_run_message(con, ref))
    exact = [r for r in rows if r["run_id"] == ref or r["name"] == ref]
    if len(rows) > 1 and len(exact) != 1:
        names = ", ".join(f"{r['name']} ({r['run_id']})" for r in rows[:6])
        raise QueryError(f"{ref!r} matches {len(rows)} runs: {names}{' ...' if len(rows) > 6 else ''}; give a longer id")
    return _run(exact[0] if exact else rows[0])


def _run(r: dict[str, Any]) -> Run:
    return Run(r["run_id"], r["name"], r["torch_version"], max(1, r["n_ranks"] or 1))


SUMMARY_SECTIONS = [
    # (key, title, query, extra params)
    ("advice", "Advice, most costly first", "advice", {"limit": 5}),
    ("phases", "Compile time by phase", "compile_time_by_phase", {}),
    ("functions", "Compile time by function", "compile_time_by_function", {"limit": 10}),
    ("recompiles", "Recompiles", "recompile_list", {}),
    ("graph_breaks", "Graph breaks", "graph_break_hotspots", {"limit": 15}),
    ("kernels", "Kernels", "kernel_counts", {}),
    ("caches", "Caches", "cache_hit_rate", {}),
    ("failures", "Failures and restarts", "failures_and_restarts", {}),
    ("spyre_failures", "Spyre failure reports (FFDC)", "spyre_failure_reports", {}),
    ("ranks", "Rank divergence", "rank_divergence", {}),
    ("outcomes", "Outcome per rank", "rank_outcomes", {}),
    ("divergence", "First divergence between ranks", "first_divergence", {}),
    ("vllm", "vLLM cold start", "vllm_cold_start", {}),
    ("vllm_ranges", "vLLM compiles per compile range", "vllm_compile_ranges", {"limit": 20}),
    ("errors", "Ingest errors and warnings", "ingest_errors_summary", {}),
]
#: sections shown only for the runs they apply to (Spyre failure reports, vLLM runs): left out when empty
ONLY_WHEN_ROWS = frozenset({"spyre_failures", "vllm", "vllm_ranges"})


@dataclass
class Summary:
    run: Run
    overview: dict[str, Any]
    sections: list[tuple[str, str, pa.Table]] = field(default_factory=list)
    #: how the run ended (pt2logs.reports.outcomes)
    outcome: RunOutcome | None = None

    def as_dict(self) -> dict[str, Any]:
        d = {"run": self.overview, **{key: t.to_pylist() for key, _, t in self.sections}}
        if self.outcome is not None:
            d["outcome"] = self.outcome.run
        return d


def summary(con: duckdb.DuckDBPyConnection, ref: str | None = None) -> Summary:
    run = resolve_run(con, ref)
    p = {"run_id": run.run_id}
    overview = run_named(con, "run_overview", p).to_pylist()[0]
    s = Summary(run, overview, outcome=run_outcome(con, run.run_id))
    for key, title, q, extra in SUMMARY_SECTIONS:
        if key in ("ranks", "outcomes", "divergence") and (overview.get("ranks") or 0) < 2:
            continue
        t = run_named(con, q, {**p, **extra})
        if key in ONLY_WHEN_ROWS and t.num_rows == 0:
            continue
        s.sections.append((key, title, t))
    return s


def advise(con: duckdb.DuckDBPyConnection, ref: str | None = None, limit: int = 50) -> tuple[Run, list[dict[str, Any]]]:
    """The advice items of one run (the named query ``advice``), most costly first."""
    run = resolve_run(con, ref)
    return run, run_named(con, "advice", {"run_id": run.run_id, "limit": limit}).to_pylist()


# ---------------------------------------------------------------------------- diff


@dataclass
class Diff:
    a: Run
    b: Run
    headline: list[dict[str, Any]]
    sections: list[tuple[str, str, list[dict[str, Any]]]]
    new_break_sites: list[dict[str, Any]]
    compile_time_change_pct: float | None
    #: torch and Python of each run ({"a": {"torch", "python"}, "b": {...}}) and what differs between them
    versions: dict[str, Any] = field(default_factory=dict)
    #: B's cache lookups that missed where A made the same lookup, and why (query cache_misses, base A)
    cache_misses: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"a": self.a.__dict__, "b": self.b.__dict__, "versions": self.versions, "headline": self.headline,
                "compile_time_change_pct": self.compile_time_change_pct,
                "new_break_sites": self.new_break_sites, **{k: rows for k, _, rows in self.sections},
                "cache_misses": self.cache_misses}


HEADLINE = ["compile_s", "compiles", "frames", "recompiles", "limit_hits", "graph_breaks", "break_sites",
            "kernels", "failures", "cache_hits", "bwd_compile_s"]


def change_pct(a: float | None, b: float | None) -> float | None:
    """``b`` against ``a`` in % of ``a``, to one decimal: ``inf`` for growth from 0, None when
    either is unknown or both are 0."""
    if a is None or b is None:
        return None
    if a == 0:
        return None if b == 0 else float("inf")
    return round(100.0 * (b - a) / a, 1)


def regressed(change: float | None, pct: float) -> bool:
    """The regression rule, one for ``pt2logs diff --fail-on-regression`` and the dashboard's
    headline: a figure grew more than ``pct`` % (``change`` from :func:`change_pct`, so any growth
    from 0 counts)."""
    return change is not None and change > pct


def improved(change: float | None, pct: float) -> bool:
    """The rule's mirror: a figure fell more than ``pct`` %."""
    return change is not None and change < -pct


def _compare(a_rows: list[dict], b_rows: list[dict], key: tuple[str, ...], value: str,
             show: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Rows of both runs matched on ``key`` (identity columns), ``value`` compared; ``show``: columns
    shown beside the key, taken from the first row of the key (B's when it has one)."""
    shown: dict[tuple, dict[str, Any]] = {}

    def idx(rows: list[dict]) -> dict[tuple, Any]:
        out: dict[tuple, Any] = {}
        for r in rows:
            k = tuple(r.get(x) for x in key)
            out[k] = (out.get(k) or 0) + (r.get(value) or 0)
            shown.setdefault(k, {c: r.get(c) for c in show})
        return out

    ib, ia = idx(b_rows), idx(a_rows)
    rows = []
    for k in sorted(set(ia) | set(ib), key=lambda k: tuple("" if v is None else str(v) for v in k)):
        va, vb = ia.get(k), ib.get(k)
        status = "new" if va is None else "gone" if vb is None else "changed" if va != vb else "same"
        d = {**shown.get(k, {}), **dict(zip(key, k))}
        d.update({"a": va, "b": vb, "delta": (vb or 0) - (va or 0), "pct": change_pct(va, vb), "status": status})
        rows.append(d)
    rows.sort(key=lambda r: (r["status"] == "same", -abs(r["delta"] or 0)))
    return rows


def diff(con: duckdb.DuckDBPyConnection, ref_a: str, ref_b: str) -> Diff:
    a, b = resolve_run(con, ref_a), resolve_run(con, ref_b)

    def q(name: str, run: Run, **extra: Any) -> list[dict[str, Any]]:
        return run_named(con, name, {"run_id": run.run_id, **extra}).to_pylist()

    oa, ob = q("run_overview", a)[0], q("run_overview", b)[0]
    versions = {"a": {"torch": oa.get("torch"), "torch_from": oa.get("torch_from"), "python": oa.get("python")},
                "b": {"torch": ob.get("torch"), "torch_from": ob.get("torch_from"), "python": ob.get("python")},
                "differ": [v for v in ("torch", "python") if oa.get(v) != ob.get(v)]}
    headline = [{"metric": m, "a": oa.get(m), "b": ob.get(m), "delta": round((ob.get(m) or 0) - (oa.get(m) or 0), 3),
                 "pct": change_pct(oa.get(m), ob.get(m))} for m in HEADLINE]
    gb_a, gb_b = q("graph_break_hotspots", a, limit=100000), q("graph_break_hotspots", b, limit=100000)
    # every section is matched on identities (docs/architecture.md, "Identities"): the same site or
    # function under another install, Python or torch is the same row, not one gone and one new
    breaks = _compare(gb_a, gb_b, ("break_key", "location", "library_frame"), "occurrences", show=("gb_type",))
    fails = [[r for r in q("failures_and_restarts", run) if r["what"] == "failure"] for run in (a, b)]
    sections = [
        ("functions", "Compile time by function (s)",
         _compare(q("compile_time_by_function", a, limit=100000), q("compile_time_by_function", b, limit=100000),
                  ("function", "file", "line"), "compile_s")),
        ("phases", "Compile time by phase (s)", _compare(q("compile_time_by_phase", a), q("compile_time_by_phase", b), ("phase",), "seconds")),
        ("recompile_causes", "Recompiles by cause", _compare(q("top_recompile_causes", a), q("top_recompile_causes", b), ("cause",), "recompiles")),
        ("graph_breaks", "Graph breaks by site", breaks),
        ("kernels", "Kernels by backend and kind", _compare(q("kernel_counts", a), q("kernel_counts", b), ("backend", "kind"), "kernels")),
        ("caches", "Cache hits by cache", _compare(q("cache_hit_rate", a), q("cache_hit_rate", b), ("cache",), "hits")),
        ("failures", "Failed compiles by failure", _compare(*fails, ("failure_key",), "count")),
    ]
    for _, _, rows in sections:
        for r in rows:
            for k in ("a", "b", "delta"):
                if isinstance(r[k], float):
                    r[k] = round(r[k], 3)
    new_sites = [r for r in breaks if r["status"] == "new"]
    misses = [r for r in q("cache_misses", b, base=a.run_id) if r["base_run"] is not None]
    return Diff(a, b, headline, sections, new_sites, change_pct(oa.get("compile_s"), ob.get("compile_s")), versions,
                misses)


def regression(d: Diff, pct: float) -> list[str]:
    """Why a CI gate should fail: compile time grew more than ``pct`` %, or new graph-break sites."""
    why = []
    if regressed(d.compile_time_change_pct, pct):
        why.append(f"total compile time grew {d.compile_time_change_pct:+.1f}% (limit {pct:g}%)")
    if d.new_break_sites:
        why.append(f"{len(d.new_break_sites)} new graph-break site(s)")
    return why
