"""A question about one run reads that run's files only (pt2logs.query.run_scope): the commands about one run
(summary, ranks, advise, diff) answer the same with and without the scope, on runs that span several commits
(a run ingested again, ranks ingested apart) and after a compaction; and the scope never opens another
transaction's files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.conftest import SAMPLES

import pt2logs
from pt2logs.query import run_scope
from pt2logs.query.views import snapshot_of
from pt2logs.reports.compose import advise, ranks, summary
from pt2logs.reports.diff import diff
from pt2logs.store.compact import compact
from pt2logs.store.parts import txn_of


def _plain(x):
    return json.loads(json.dumps(x, default=str, sort_keys=True))


def _answers(con, rid: str, other: str | None) -> dict:
    got = {
        "summary": _plain(summary(con, rid).as_dict()),
        "ranks": _plain(ranks(con, rid).as_dict()),
        "advise": _plain(advise(con, rid, 50)[1]),
    }
    if other is not None:
        got["diff"] = _plain(diff(con, other, rid).as_dict())
    return got


#: the runs of many_commits that were ingested more than once
SPANNING = ("ddp_2rank", "again")


@pytest.fixture(scope="module")
def many_commits(tmp_path_factory) -> str:
    """Sample runs over several commits: ddp_2rank's rank 0 ingested, then its rank 1 beside it (the run
    ingested again, whole); recompiles ingested, then its trace replaced by graph_breaks' (the run ingested
    again with other rows); the other samples in a commit of their own."""
    base = tmp_path_factory.mktemp("runscope")
    wh = str(base / "wh")
    ddp = base / "in" / "ddp_2rank"
    shutil.copytree(SAMPLES / "ddp_2rank", ddp)
    rank1 = sorted((ddp / "trace").glob("*rank_1*"))[0]
    held = base / rank1.name
    rank1.rename(held)
    pt2logs.ingest([str(ddp)], wh)
    held.rename(rank1)
    pt2logs.ingest([str(ddp)], wh)
    again = base / "in" / "again"
    shutil.copytree(SAMPLES / "recompiles", again)
    pt2logs.ingest([str(again)], wh)
    (trace,) = (again / "trace").glob("*.log.gz")
    (gb,) = (SAMPLES / "graph_breaks" / "trace").glob("*.log.gz")
    shutil.copyfile(gb, trace)
    pt2logs.ingest([str(again)], wh)
    pt2logs.ingest(
        [str(SAMPLES / n) for n in ("graph_breaks", "train_step", "compile_failure")], wh
    )
    return wh


def _check(wh: str, names: tuple[str, ...] | None = None) -> None:
    """Every run's answers (``names``: those runs') the same in a scope of it and the run before it; a diff
    of the two for the runs that span several commits: over the copies, then over the answers kept (as a
    command's background process keeps them: pt2logs.query.answer_keeper) where they apply."""
    from pt2logs.query.answer_keeper import keep_answers
    from pt2logs.store.warehouse import Warehouse

    keep_answers(Warehouse(wh))
    con = pt2logs.connect(wh)
    runs = con.execute("SELECT run_id, name FROM runs ORDER BY run_id").fetchall()
    assert len(runs) >= 5 and set(SPANNING) <= {n for _, n in runs}
    for i, (rid, name) in enumerate(runs):
        if names is not None and name not in names:
            continue
        other = runs[i - 1][0] if name in SPANNING else None
        want = _answers(con, rid, other)
        # (the outcome rules run once over the copies, as the commands about one run do)
        scope = [runs[i - 1][0], rid]
        with run_scope.scoped(con, scope, materialized=run_scope.MATERIALIZED, answers=False):
            assert con.execute("SELECT count(DISTINCT run_id) FROM events").fetchall()[0][0] <= 2
            assert _answers(con, rid, other) == want, name
        # the answers kept (pt2logs.query.kept_answers) where they apply, the copies for the rest
        with run_scope.scoped(con, scope, materialized=run_scope.MATERIALIZED):
            assert _answers(con, rid, other) == want, name


def test_runs_over_several_commits(many_commits):
    con = pt2logs.connect(many_commits)
    assert con.execute("SELECT count(DISTINCT txn) FROM _runs_all").fetchall()[0][0] >= 5
    (ranks2,) = con.execute("SELECT n_ranks FROM runs WHERE name = 'ddp_2rank'").fetchall()[0]
    assert ranks2 == 2
    _check(many_commits)


def test_after_compaction(many_commits, tmp_path):
    wh = str(tmp_path / "wh")
    shutil.copytree(many_commits, wh)
    assert compact(wh, grace_s=0).partitions
    _check(wh, (*SPANNING, "train_step"))
    # every run in the compaction's one transaction: the scope reads that transaction's files
    con = pt2logs.connect(wh)
    assert con.execute("SELECT count(DISTINCT txn) FROM runs").fetchall()[0][0] == 1


def test_scope_reads_only_its_commits_files(many_commits, tmp_path):
    """Another transaction's files are never opened: damaged after the snapshot, a scope about a run of
    another commit still answers (the views of the whole warehouse cannot)."""
    wh = str(tmp_path / "wh")
    shutil.copytree(many_commits, wh)
    con = pt2logs.connect(wh)
    live = dict(con.execute("SELECT r.name, r.txn FROM runs r").fetchall())
    mine, theirs = live["train_step"], live["ddp_2rank"]
    assert mine != theirs
    files = snapshot_of(con).files
    want = _plain(summary(con, "train_step").as_dict())
    for table in ("events", "compilation_metrics", "compile_phases"):
        for rel in files[table]:
            if txn_of(rel) == theirs:
                path = Path(wh, rel)
                path.write_bytes(b"\0" * path.stat().st_size)
    with pytest.raises(Exception, match="(?i)parquet|magic|invalid"):
        con.execute("SELECT count(*) FROM events").fetchall()
    rid = con.execute("SELECT run_id FROM runs WHERE name = 'train_step'").fetchall()[0][0]
    with run_scope.scoped(con, [rid]):
        assert _plain(summary(con, rid).as_dict()) == want


def test_cli_commands_answer_as_unscoped(sample_wh, monkeypatch):
    """The commands themselves (each in a run scope now) print what they print over the views."""
    from click.testing import CliRunner

    from pt2logs.cli import main

    con = pt2logs.connect(sample_wh)
    rid = con.execute("SELECT run_id FROM runs WHERE name = 'ddp_2rank'").fetchall()[0][0]
    other = con.execute("SELECT run_id FROM runs WHERE name = 'recompiles'").fetchall()[0][0]
    runner = CliRunner()
    commands = [
        ["summary", rid, "--format", "json"],
        ["summary", "ddp_2rank"],
        ["ranks", rid, "--format", "json"],
        ["advise", rid, "--format", "json"],
        ["advise", "recompiles", "--format", "markdown"],
        ["diff", other, rid, "--format", "json"],
        ["diff", "recompiles", "ddp_2rank"],
    ]

    def outputs():
        got = []
        for args in commands:
            r = runner.invoke(main, [*args, "--warehouse", sample_wh])
            assert r.exit_code == 0, r.output
            got.append(r.output)
        return got

    scoped = outputs()
    monkeypatch.setattr(
        run_scope, "enter", lambda *a, **k: None
    )  # the same commands over the views
    assert scoped == outputs()


def test_commands_copy_only_the_tables_their_queries_read(sample_wh, monkeypatch):
    """summary, ranks and diff copy only the tables their named queries read (issue 36: every run table copied
    cost a summary of a small warehouse ~0.05 s more); the lists they declare hold every query they run, so
    none reads a view of the whole warehouse (slower, never wrong: test_cli_commands_answer_as_unscoped)."""
    from pt2logs.query import queries
    from pt2logs.reports import compose
    from pt2logs.reports import diff as diff_report

    ran: list[str] = []
    get = queries.get_query
    monkeypatch.setattr(queries, "get_query", lambda name: ran.append(name) or get(name))
    con = pt2logs.connect(sample_wh)
    for run in ("ddp_2rank", "recompiles"):
        for page, build in (("summary", summary), ("ranks", ranks)):
            ran.clear()
            build(con, run)
            assert set(ran) <= set(compose.page_queries(page)), page
    ran.clear()
    diff(con, "recompiles", "ddp_2rank")
    assert set(ran) <= set(diff_report.QUERIES)
    # the outcome rules run once in the scope of a page that calls them (run_outcomes, rank_outcomes), never for diff
    assert run_scope.materialized_for(compose.page_queries("summary")) == ("rank_outcomes",)
    assert run_scope.materialized_for(diff_report.QUERIES) == ()
    rid = con.execute("SELECT run_id FROM runs WHERE name = 'ddp_2rank'").fetchall()[0][0]
    want = _plain(ranks(con, rid).as_dict())
    with run_scope.scoped(con, [rid], materialized=("rank_outcomes",), answers=False):
        held = con.execute("SELECT count(*) FROM _scope_rank_outcomes").fetchall()[0][0]
        assert held == 2  # its two ranks, decided once
        assert _plain(ranks(con, rid).as_dict()) == want
    with pytest.raises(ValueError, match="not macros a run scope keeps"):
        run_scope.enter(con, [rid], (), ("advice_items",))
    # fewer tables than every run table: the Spyre and vLLM tables, the cache keys' components are not read
    for names in (compose.page_queries("summary"), diff_report.QUERIES):
        copied = run_scope.tables_for(names)
        assert "runs" in copied and "spyre_layouts" not in copied
        assert len(copied) < len(run_scope.SCOPED)


def test_a_compacted_file_prunes_the_row_groups_of_other_runs(many_commits, tmp_path, monkeypatch):
    """A compaction writes each table's live rows in run order: each row group's run_id min/max is a range of runs
    no other row group overlaps, and a scope's scan of one run (its run filter on the Parquet scan) reads only the
    row groups whose range holds it (DuckDB's EXPLAIN ANALYZE: "Row Groups Scanned"). Row groups made small here
    (the copy's batches and the writer's row-group bytes) so that the fleet's case, many runs a file, shows."""
    import re

    import pyarrow.parquet as pq

    from pt2logs.query.sql_text import literal
    from pt2logs.query.views import warehouse_of
    from pt2logs.store import compact_copy, parts

    wh = str(tmp_path / "wh")
    shutil.copytree(many_commits, wh)
    monkeypatch.setattr(compact_copy, "OUT_BYTES", 16 << 10)
    monkeypatch.setattr(parts, "ROW_GROUP_BYTES", 32 << 10)
    monkeypatch.setattr(parts, "COMPACT_ROW_GROUP_BYTES", 32 << 10)
    assert compact(wh, grace_s=0).partitions
    con = pt2logs.connect(wh)
    runs = [r for (r,) in con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]
    snap = snapshot_of(con)
    for table in (
        "events",
        "compile_phases",
        "cache_key_components",
    ):  # (tables of many rows a run)
        (rel,) = snap.files[table]
        meta = pq.ParquetFile(Path(wh, rel)).metadata
        col = meta.schema.to_arrow_schema().get_field_index("run_id")
        ranges = [
            (
                meta.row_group(i).column(col).statistics.min,
                meta.row_group(i).column(col).statistics.max,
            )
            for i in range(meta.num_row_groups)
        ]
        assert len(ranges) > len(runs), (table, len(ranges))  # (several row groups a run)
        assert all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:], strict=False)), table
        for rid in runs:
            where = f"run_id IN ({literal(rid)})"
            src = run_scope._RunFiles(con, warehouse_of(con), snap, where)
            plan = con.execute(f"EXPLAIN ANALYZE SELECT count(*) FROM {src.sql(table)}").fetchall()[
                0
            ][1]
            scanned = [
                (int(a), int(b))
                for a, b in re.findall(r"Row Groups Scanned: *(\d+) */ *(\d+)", plan)
            ]
            holding = sum(lo <= rid <= hi for lo, hi in ranges)
            assert scanned == [(holding, len(ranges))], (table, rid, scanned)
            assert holding < len(ranges) // 2, (table, rid)
    _check(wh, ("train_step",))


def test_a_scope_reads_only_the_store_row_groups_of_its_payloads(tmp_path, monkeypatch):
    """A scope's stored texts (``_scope_payloads``) are the view's texts of the keys its rows name, read in two
    steps: the store's keys, then only the row groups holding the first copy of each (a filter on row numbers);
    the store's other row groups' texts are never read (they were, for every scope: the whole store)."""
    import re

    from pt2logs.query.sql_text import literal
    from pt2logs.query.views import warehouse_of
    from pt2logs.store import parts

    monkeypatch.setattr(parts, "ROW_GROUP_BYTES", 64 << 10)  # (a store of many row groups)
    wh = str(tmp_path / "wh")
    for name in ("recompiles", "graph_breaks", "train_step"):
        pt2logs.ingest([str(SAMPLES / name)], wh)
    con = pt2logs.connect(wh)
    snap = snapshot_of(con)
    groups = sum(
        pq_groups(Path(wh, rel)) for rel in snap.files["payloads"]
    )  # (every file of the store)
    assert groups > len(snap.files["payloads"])

    class Spy:  # the statements the scope runs, run
        def __init__(self, c):
            self.c, self.sql = c, []

        def execute(self, sql, *a):
            self.sql.append(sql)
            return self.c.execute(sql, *a)

    read = []
    for (rid,) in con.execute("SELECT run_id FROM runs").fetchall():
        where = f"run_id IN ({literal(rid)})"
        txns = {t for (t,) in con.execute(f"SELECT txn FROM _live WHERE {where}").fetchall()}
        src = run_scope._RunFiles(con, warehouse_of(con), snap.of_txns(txns), where)
        spy = Spy(con)
        run_scope._payloads(spy, src, ("events", "compile_phases"))
        got = dict(con.execute("SELECT payload_key, payload FROM _scope_payloads").fetchall())
        want = dict(
            con.execute(
                "SELECT payload_key, payload FROM _payloads WHERE payload_key IN "
                f"(SELECT payload_key FROM {src.sql('events')} UNION SELECT args_key FROM {src.sql('compile_phases')})"
            ).fetchall()
        )
        assert got == want and len(got) > 0, rid
        plan = con.execute("EXPLAIN ANALYZE " + spy.sql[-1].split(" AS ", 1)[1]).fetchall()[0][1]
        scanned = re.findall(r"Row Groups Scanned: *(\d+) */ *(\d+)", plan)
        read.append(sum(int(a) for a, _ in scanned))
    # (every run reads fewer than the store's row groups; one of them a file's only)
    assert max(read) < groups and min(read) <= groups / 3, (read, groups)


def pq_groups(path: Path) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_row_groups


def test_a_question_asked_twice_in_a_scope_is_run_once(sample_wh, asked_of_duckdb):
    """A run page's summary asks ``first_divergence`` twice (its section and the run's outcome), ~35 ms each at
    10,000 runs: inside a scope (its copies stay as they are) the second is the first's answer; outside, every
    question is run."""
    from pt2logs.query import queries
    from pt2logs.reports.compose import page_queries

    con = pt2logs.connect(sample_wh)
    rid = con.execute("SELECT run_id FROM runs WHERE name = 'ddp_2rank'").fetchall()[0][0]
    want = _plain(summary(con, rid).as_dict())
    ran, asked = asked_of_duckdb, "first_divergence"
    ran.clear()
    summary(con, rid)
    assert ran.count(asked) == 2  # (the question is asked twice)
    ran.clear()
    with run_scope.scoped(con, [rid], answers=False, queries=page_queries("summary")):
        assert _plain(summary(con, rid).as_dict()) == want
        assert ran.count(asked) == 1
    assert not queries.ASKED.get(con)  # (forgotten with the scope)
