"""A run scope told its questions copies only the columns they read (pt2logs.query.scope_columns): for every set of
questions a scope is told (the commands', serve's pages'), the columns DuckDB's own plan reads of each copy are kept
(derived from the plan, not by hand: a changed SQL file that reads another column fails here), and every question
answers over the narrowed copies as over the full ones; a question the scope was not told of widens the copies first;
the pages ask no question they did not tell."""

from __future__ import annotations

import json
import re

import pytest
from tests import serve_site

import pt2logs
from pt2logs.query import empty_answers, run_scope, scope_columns
from pt2logs.query.queries import bind, get_query, run_named
from pt2logs.reports.compose import page_queries
from pt2logs.reports.diff import QUERIES as DIFF_QUERIES
from pt2logs.serve.pages_run import COMPILE_QUERIES, run_queries
from pt2logs.tables import TABLES

#: every set of questions a scope is told (pt2logs.cli.read, pt2logs.serve.pages_*, serve's /runs)
SETS = {
    "summary": page_queries("summary"),
    "ranks": page_queries("ranks"),
    "advise": ("advice",),
    "diff": DIFF_QUERIES,
    "run page": run_queries(),
    "compile page": COMPILE_QUERIES,
    "graph diff": ("bug_report_artifacts",),
    "runs page": ("run_outcomes",),
}


def _plain(x):
    return json.loads(json.dumps(x, default=str, sort_keys=True))


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> str:
    return serve_site.warehouse(tmp_path_factory)


@pytest.fixture(scope="module")
def con(wh):
    return pt2logs.connect(wh)


@pytest.fixture(scope="module")
def picks(con) -> list[tuple[str, str, str | None]]:
    """(run, another run, one of its compiles) for every run of the warehouse."""
    runs = [r[0] for r in con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]
    out = []
    for i, rid in enumerate(runs):
        cid = con.execute(
            "SELECT max(compile_id) FROM compilation_metrics WHERE run_id = ?", [rid]
        ).fetchall()[0][0]
        out.append((rid, runs[i - 1], cid))
    return out


def _params(q: str, rid: str, other: str, cid: str | None, every: bool) -> dict:
    """The parameters a page passes (``every``: each declared one given a value, so no branch of the SQL is folded
    away as a NULL parameter's)."""
    declared = {p.name for p in get_query(q).params}
    given = {"run_id": rid, "base": other, "compile_id": cid}
    if every:
        given |= {"since": "2000-01-01", "until": "2100-01-01", "tag": "model=x", "limit": 5}
        given |= {"rank": 0, "full": True, "outcome": "failed"}
    return {k: v for k, v in given.items() if k in declared and v is not None}


def _read(con, sql: str, params: dict) -> dict[str, set[str]]:
    """DuckDB's plan of ``sql``: per scope copy (a temporary table, ``<t>_all_sources`` as ``<t>``), the columns its
    scans project or filter on."""
    plan = json.loads(con.execute("EXPLAIN (FORMAT JSON) " + sql, params or None).fetchall()[0][1])
    out: dict[str, set[str]] = {}

    def walk(node):
        info = node.get("extra_info", {})
        table = str(info.get("Table", "")).replace('"', "")
        if table.startswith("temp."):
            name = table.rsplit(".", 1)[-1].removesuffix("_all_sources")
            if name in TABLES:
                shown = json.dumps([info.get("Projections"), info.get("Filters")])
                words = set(re.findall(r"\w+", shown))
                out.setdefault(name, set()).update(words & set(TABLES[name].names))
        for c in node.get("children", []):
            walk(c)

    for n in plan:
        walk(n)
    return out


@pytest.mark.parametrize("which", list(SETS))
def test_every_column_duckdb_reads_of_a_copy_is_kept(con, picks, which):
    """Over full copies (told nothing), each question's plan (and the empty-answer conditions asked for them):
    every column of a copy it reads is one the narrowed copy keeps. Fails on a ``needed`` that leaves one out."""
    qs = SETS[which]
    words, texts = run_scope.columns_for(qs), run_scope.texts_for(qs)
    rid, other, cid = next(p for p in picks if p[2] is not None)
    seen: dict[str, set[str]] = {}
    with run_scope.scoped(con, [rid, other], run_scope.tables_for(qs), answers=False):
        for q in qs:
            nq = get_query(q)
            for every in (False, True):
                p = bind(nq, nq.sql, _params(q, rid, other, cid, every))
                for t, cols in _read(con, nq.sql, p).items():
                    seen.setdefault(t, set()).update(cols)
        for q in set(qs) & empty_answers.RANKED.keys():
            for t, cols in _read(con, "SELECT " + empty_answers.RANKED[q][1], {}).items():
                seen.setdefault(t, set()).update(cols)
    assert seen  # (the plan was read)
    for t, cols in seen.items():
        missing = cols - scope_columns.needed(t, words, texts)
        assert not missing, (which, t, sorted(missing))


@pytest.mark.parametrize("which", list(SETS))
def test_every_question_answers_over_the_narrowed_copies_as_over_the_full(con, picks, which):
    qs = SETS[which]
    for rid, other, cid in picks:
        ids = [other, rid]
        calls = [(q, _params(q, rid, other, cid, False)) for q in qs]
        with run_scope.scoped(con, ids, run_scope.tables_for(qs), answers=False):
            want = [_plain(run_named(con, q, p).to_pylist()) for q, p in calls]
        with run_scope.scoped(con, ids, answers=False, queries=qs):
            got = [_plain(run_named(con, q, p).to_pylist()) for q, p in calls]
        for (q, _), w, g in zip(calls, want, got, strict=True):
            assert g == w, (which, q, rid)


@pytest.mark.parametrize("which", ["diff", "run page", "compile page"])
def test_a_narrowed_copy_holds_the_full_copys_rows_in_the_columns_it_keeps(con, picks, which):
    """Every row of every copy, in every column kept (the copy's own statement reads some the questions do not
    name: a path's kind, the source, a stored text's key), as the full copy holds it; the others NULL."""
    qs = SETS[which]
    words, texts = run_scope.columns_for(qs), run_scope.texts_for(qs)
    tables = sorted(run_scope.tables_for(qs) - {"runs"})

    def rows(t: str, cols: list[str]) -> list:
        sel = ", ".join(f'"{c}"' for c in cols)
        return _plain(con.execute(f"SELECT {sel} FROM {t} ORDER BY ALL").fetchall())

    for rid, other, _ in picks:
        kept = {
            t: sorted(scope_columns.needed(t, words, texts) & set(TABLES[t].names)) for t in tables
        }
        with run_scope.scoped(con, [other, rid], answers=False):
            want = {t: rows(t, kept[t]) for t in tables}
        with run_scope.scoped(con, [other, rid], answers=False, queries=qs):
            for t in tables:
                assert rows(t, kept[t]) == want[t], (which, t, rid)
                rest = sorted(set(TABLES[t].names) - set(kept[t]))
                if rest and want[t]:
                    nulls = " AND ".join(f'"{c}" IS NULL' for c in rest)
                    assert con.execute(f"SELECT bool_and({nulls}) FROM {t}").fetchall()[0][0] in (
                        True,
                        None,
                    )


def test_a_column_left_out_changes_an_answer(con, picks, monkeypatch):
    """The comparison above sees a narrowing that leaves out a column a question reads (here the compile time
    the diff's overview sums)."""
    real = scope_columns.needed

    def wrong(table, words, texts=None):
        cols = real(table, words, texts)
        return cols - {"entire_frame_compile_time_s"} if table == "compilation_metrics" else cols

    monkeypatch.setattr(scope_columns, "needed", wrong)
    differ = 0
    for rid, _, _ in picks:
        p = {"run_id": rid}
        with run_scope.scoped(con, [rid], answers=False):
            want = _plain(run_named(con, "run_overview", p).to_pylist())
        with run_scope.scoped(con, [rid], answers=False, queries=DIFF_QUERIES):
            differ += _plain(run_named(con, "run_overview", p).to_pylist()) != want
    assert differ


def test_a_question_the_scope_was_not_told_widens_its_copies(con, picks, monkeypatch):
    """Told the overview only, a scope's ``compilation_metrics`` lacks the stack a compile's metrics show: asked
    inside, that question has the copies made again whole first and answers as over the views (with the widening
    off, it would read NULL stacks)."""
    rid = next(r for r, _, _ in picks if _has_stack(con, r))
    p = {"run_id": rid}
    want = _plain(run_named(con, "compile_metrics", p).to_pylist())
    with run_scope.scoped(con, [rid], answers=False, queries=("run_overview",)):
        assert _plain(run_named(con, "compile_metrics", p).to_pylist()) == want
    monkeypatch.setattr(scope_columns, "widening", lambda *a: lambda name, bound: None)
    with run_scope.scoped(con, [rid], answers=False, queries=("run_overview",)):
        assert _plain(run_named(con, "compile_metrics", p).to_pylist()) != want


def _has_stack(con, rid: str) -> bool:
    sql = "SELECT count(*) FROM compilation_metrics WHERE run_id = ? AND len(stack_trace) > 0"
    return con.execute(sql, [rid]).fetchall()[0][0] > 0


def test_the_pages_ask_only_what_they_tell(wh, picks, monkeypatch):
    """Serve's run, compile and diff pages over runs whose answers are not kept: no question asked that widens the
    copies (each a whole copy made again)."""
    import urllib.error
    import urllib.request

    from pt2logs.serve.render import compile_url, run_url, seg
    from pt2logs.serve.server import Background

    widened: list[str] = []
    told_sets: list[frozenset[str]] = []
    real = scope_columns.widening

    def spy(told, copied, reads, remake):
        hook = real(told, copied, reads, remake)
        told_sets.append(told)

        def h(name, bound):
            if name not in told:
                widened.append(name)
            return hook(name, bound)

        return h

    monkeypatch.setattr(scope_columns, "widening", spy)
    monkeypatch.setenv("PT2LOGS_OUTCOME_CACHE", "0")
    app = serve_site.app(wh)
    app.state.store._keep = lambda wanted: None  # (never kept: every page makes its copies)
    with Background(app) as url:
        for rid, other, cid in picks[:4]:
            paths = [run_url(rid), f"/diff/{seg(other)}/{seg(rid)}"]
            if cid is not None:
                paths += [compile_url(rid, cid, None)]
                paths += [f"/diff/{seg(rid)}/{seg(rid)}?compile_a={cid}&compile_b={cid}"]
            for path in paths:
                try:
                    with urllib.request.urlopen(url.rstrip("/") + path, timeout=120) as r:
                        assert r.status == 200, path
                except urllib.error.HTTPError as e:
                    assert e.code == 404, path
    assert {frozenset(SETS[k]) for k in ("run page", "diff", "compile page", "graph diff")} <= set(
        told_sets
    )
    assert widened == []
