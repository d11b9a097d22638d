"""``pt2logs diff``: two runs compared section by section, matched on identities; the one regression
rule (:func:`regressed`), used by ``diff --fail-on-regression`` and the dashboard's headline.

Every number comes from a named query (so it matches ``pt2logs query NAME``); this module returns
data, :mod:`pt2logs.cli.render` prints it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb

from pt2logs.query.queries import run_named
from pt2logs.reports.runs import Run, resolve_run

#: the named queries :func:`diff` runs (a run scope copies only the tables these read)
QUERIES = (
    "runs",
    "run_overview",
    "graph_break_hotspots",
    "failures_and_restarts",
    "compile_time_by_function",
    "compile_time_by_phase",
    "top_recompile_causes",
    "kernel_counts",
    "cache_hit_rate",
    "cache_misses",
)


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
        return {
            "a": self.a.__dict__,
            "b": self.b.__dict__,
            "versions": self.versions,
            "headline": self.headline,
            "compile_time_change_pct": self.compile_time_change_pct,
            "new_break_sites": self.new_break_sites,
            **{k: rows for k, _, rows in self.sections},
            "cache_misses": self.cache_misses,
        }


HEADLINE = [
    "compile_s",
    "compiles",
    "frames",
    "recompiles",
    "limit_hits",
    "graph_breaks",
    "break_sites",
    "kernels",
    "failures",
    "cache_hits",
    "bwd_compile_s",
]


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


def _compare(
    a_rows: list[dict],
    b_rows: list[dict],
    key: tuple[str, ...],
    value: str,
    show: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
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
        status = (
            "new" if va is None else "gone" if vb is None else "changed" if va != vb else "same"
        )
        d = {**shown.get(k, {}), **dict(zip(key, k))}
        d.update(
            {
                "a": va,
                "b": vb,
                "delta": (vb or 0) - (va or 0),
                "pct": change_pct(va, vb),
                "status": status,
            }
        )
        rows.append(d)
    rows.sort(key=lambda r: (r["status"] == "same", -abs(r["delta"] or 0)))
    return rows


def diff(con: duckdb.DuckDBPyConnection, ref_a: str, ref_b: str) -> Diff:
    a, b = resolve_run(con, ref_a), resolve_run(con, ref_b)

    def q(name: str, run: Run, **extra: Any) -> list[dict[str, Any]]:
        return run_named(con, name, {"run_id": run.run_id, **extra}).to_pylist()

    oa, ob = q("run_overview", a)[0], q("run_overview", b)[0]
    versions = {
        "a": {
            "torch": oa.get("torch"),
            "torch_from": oa.get("torch_from"),
            "python": oa.get("python"),
        },
        "b": {
            "torch": ob.get("torch"),
            "torch_from": ob.get("torch_from"),
            "python": ob.get("python"),
        },
        "differ": [v for v in ("torch", "python") if oa.get(v) != ob.get(v)],
    }
    headline = [
        {
            "metric": m,
            "a": oa.get(m),
            "b": ob.get(m),
            "delta": round((ob.get(m) or 0) - (oa.get(m) or 0), 3),
            "pct": change_pct(oa.get(m), ob.get(m)),
        }
        for m in HEADLINE
    ]
    gb_a, gb_b = (
        q("graph_break_hotspots", a, limit=100000),
        q("graph_break_hotspots", b, limit=100000),
    )
    # every section is matched on identities (docs/architecture.md, "Identities"): the same site or
    # function under another install, Python or torch is the same row, not one gone and one new
    breaks = _compare(
        gb_a, gb_b, ("break_key", "location", "library_frame"), "occurrences", show=("gb_type",)
    )
    fails = [
        [r for r in q("failures_and_restarts", run) if r["what"] == "failure"] for run in (a, b)
    ]
    sections = [
        (
            "functions",
            "Compile time by function (s)",
            _compare(
                q("compile_time_by_function", a, limit=100000),
                q("compile_time_by_function", b, limit=100000),
                ("function", "file", "line"),
                "compile_s",
            ),
        ),
        (
            "phases",
            "Compile time by phase (s)",
            _compare(
                q("compile_time_by_phase", a), q("compile_time_by_phase", b), ("phase",), "seconds"
            ),
        ),
        (
            "recompile_causes",
            "Recompiles by cause",
            _compare(
                q("top_recompile_causes", a), q("top_recompile_causes", b), ("cause",), "recompiles"
            ),
        ),
        ("graph_breaks", "Graph breaks by site", breaks),
        (
            "kernels",
            "Kernels by backend and kind",
            _compare(q("kernel_counts", a), q("kernel_counts", b), ("backend", "kind"), "kernels"),
        ),
        (
            "caches",
            "Cache hits by cache",
            _compare(q("cache_hit_rate", a), q("cache_hit_rate", b), ("cache",), "hits"),
        ),
        ("failures", "Failed compiles by failure", _compare(*fails, ("failure_key",), "count")),
    ]
    for _, _, rows in sections:
        for r in rows:
            for k in ("a", "b", "delta"):
                if isinstance(r[k], float):
                    r[k] = round(r[k], 3)
    new_sites = [r for r in breaks if r["status"] == "new"]
    misses = [r for r in q("cache_misses", b, base=a.run_id) if r["base_run"] is not None]
    return Diff(
        a,
        b,
        headline,
        sections,
        new_sites,
        change_pct(oa.get("compile_s"), ob.get("compile_s")),
        versions,
        misses,
    )


def regression(d: Diff, pct: float) -> list[str]:
    """Why a CI gate should fail: compile time grew more than ``pct`` %, or new graph-break sites."""
    why = []
    if regressed(d.compile_time_change_pct, pct):
        why.append(f"total compile time grew {d.compile_time_change_pct:+.1f}% (limit {pct:g}%)")
    if d.new_break_sites:
        why.append(f"{len(d.new_break_sites)} new graph-break site(s)")
    return why
