"""Which run a command means: a run id, an id prefix or a name (the newest run when none is given),
and the mistakes a selection can make (a run or tag that matches nothing), said with the closest names.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import duckdb

from pt2logs.query import run_scope
from pt2logs.query.queries import QueryError, named_rows, run_sql, sql_rows


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
    rows = run_sql(
        con, "SELECT run_id, name FROM runs ORDER BY started_at DESC NULLS LAST, name, run_id"
    ).to_pylist()
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


def check_selection(
    con: duckdb.DuckDBPyConnection, run: str | None = None, tag: str | None = None
) -> None:
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
    return (
        f"closest: {', '.join(near)}" if near else f"the runs' tags: {', '.join(sorted(seen)[:8])}"
    )


def resolve_run(con: duckdb.DuckDBPyConnection, ref: str | None) -> Run:
    """A run from an id, an id prefix or a name; the newest run when ``ref`` is None: the run the queries
    about one run answer for without a selection (the ``selected_runs_or_newest`` macro, pt2logs.query.views)."""
    # (DuckDB's own values: a command that answers from kept rows imports no pyarrow, pt2logs.query.answer_rows)
    if ref is None:
        newest = [
            r["run_id"]
            for r in sql_rows(
                con, "SELECT run_id FROM selected_runs_or_newest(NULL, NULL, NULL, NULL)"
            )
        ]
        if not newest:
            raise QueryError(NO_RUNS)
        rows = named_rows(con, "runs", {"run_id": newest[0]})
        return _run(next(r for r in rows if r["run_id"] == newest[0]))
    rows = named_rows(con, "runs", {"run_id": ref})
    if not rows:
        raise NoMatch(no_run_message(con, ref))
    exact = [r for r in rows if r["run_id"] == ref or r["name"] == ref]
    if len(rows) > 1 and len(exact) != 1:
        names = ", ".join(f"{r['name']} ({r['run_id']})" for r in rows[:6])
        raise QueryError(
            f"{ref!r} matches {len(rows)} runs: {names}{' ...' if len(rows) > 6 else ''}; give a longer id"
        )
    return _run(exact[0] if exact else rows[0])


def _run(r: dict[str, Any]) -> Run:
    return Run(r["run_id"], r["name"], r["torch_version"], max(1, r["n_ranks"] or 1))


def scoped_to(
    con: duckdb.DuckDBPyConnection, *refs: str | None, queries: tuple[str, ...] | None = None
) -> contextlib.AbstractContextManager[None]:
    """A run scope (:mod:`pt2logs.query.run_scope`) over the runs ``refs`` name (:func:`resolve_run`, over the
    whole warehouse: a mistake is told as without it): inside, the queries about those runs read their rows
    only. For the commands about one run (or two): summary, ranks, advise, diff. ``queries``: the named
    queries the command runs, when few: only the tables they read are copied (the others stay views), and the
    outcome rules, when they call them, are run once (run_scope.MATERIALIZED)."""
    ids = [resolve_run(con, r).run_id for r in refs]
    return run_scope.scoped(con, ids, queries=queries)
