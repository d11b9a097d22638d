"""The answers about one run kept per committed transaction (pt2logs.query.kept_answers), kept lazily
(pt2logs.query.answer_keeper: never by an ingest, by the commands that read a run): each kept answer is the table
its named query returns over the run's rows (schema and all), so summary, ranks, advise and diff answer the same with
and without them, from them alone (no query asked of DuckDB but the diff's two-run cache_misses); answers kept under
another key (other SQL, macros or code), of another transaction, in a damaged file or with PT2LOGS_OUTCOME_CACHE=0
are never read. tests/cli/test_kept_answers_cli.py: the CLI keeps them after its output; tests/test_serve_scope.py:
serve after its page."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

import pt2logs
from pt2logs.query import answer_keeper, kept_answers, kept_cache, kept_rows, queries, run_scope
from pt2logs.reports.compose import advise, ranks, summary
from pt2logs.reports.diff import diff
from pt2logs.store.warehouse import Warehouse

#: the kept rows and answers are what these tests are about (tests/conftest.py: the suite keeps none elsewhere)
pytestmark = pytest.mark.kept_rows


def _plain(x):
    return json.loads(json.dumps(x, default=str, sort_keys=True))


def _pages(con, rid: str, other: str | None = None) -> dict:
    got = {
        "summary": _plain(summary(con, rid).as_dict()),
        "ranks": _plain(ranks(con, rid).as_dict()),
        "advise": _plain(advise(con, rid, 20)[1]),
    }
    if other is not None:
        got["diff"] = _plain(dataclasses.asdict(diff(con, other, rid)))
    return got


def _runs(con) -> list[str]:
    return [r for (r,) in con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]


def unread_copy(sample_wh: str, dest: Path) -> str:
    """A copy of the session's sample warehouse as its ingest left it: without the answers that a command or a
    serve test of this session may have kept in it by reading it (the CLI's commands and serve keep answers about
    what they read; the suite's order decides whether one ran before)."""
    shutil.copytree(sample_wh, dest, ignore=shutil.ignore_patterns(kept_answers.FOLDER))
    return str(dest)


@pytest.fixture(scope="module")
def kept_wh(sample_wh, tmp_path_factory) -> str:
    """The sample warehouse (its ingest kept no answers), its answers kept as a command's background process
    keeps them."""
    wh = unread_copy(sample_wh, tmp_path_factory.mktemp("kept") / "wh")
    assert answer_keeper.keep_answers(Warehouse(wh)) == 5
    return wh


def test_every_kept_answer_is_the_table_its_query_returns(kept_wh):
    con = pt2logs.connect(kept_wh)
    runs = _runs(con)
    assert len(runs) == 5
    got = kept_answers.load(con, runs)
    asked = kept_answers.asked()
    assert len(got) == len(runs) * len(asked)
    for rid in runs:
        with run_scope.scoped(con, [rid], answers=False):  # the copies, as before answers were kept
            for q, p in asked:
                bound = queries.bind(
                    queries.get_query(q), queries.get_query(q).sql, {"run_id": rid, **p}
                )
                want = queries.run_sql(con, queries.get_query(q).sql, bound)
                kept = kept_answers.answering(con, got, lambda name: None)
                try:
                    table = queries.run_named(con, q, {"run_id": rid, **p})
                finally:
                    kept()
                assert table.schema.equals(want.schema, check_metadata=True), (rid, q)
                assert table.equals(want), (rid, q)


def test_the_commands_answer_from_them_alone_and_the_same(kept_wh, asked_of_duckdb):
    con = pt2logs.connect(kept_wh)
    runs = _runs(con)
    for i, rid in enumerate(runs):
        other = runs[i - 1]
        with run_scope.scoped(con, [other, rid], answers=False):
            want = _pages(con, rid, other)
        asked_of_duckdb.clear()
        with run_scope.scoped(con, [other, rid]):
            assert _pages(con, rid, other) == want
        assert asked_of_duckdb == [
            "cache_misses"
        ]  # (it compares the two runs: not a run's own answer)


def test_a_run_id_that_prefixes_another_run_is_not_answered_alone():
    assert kept_answers.alone({"abc": "x", "abcd": "y"}) == ["abcd"]
    assert kept_answers.alone({"abc": "x", "f00": "abc run"}) == ["f00"]
    assert kept_answers.alone({"abc": "x", "def": "y"}) == ["abc", "def"]


@pytest.fixture
def copied(kept_wh, tmp_path) -> str:
    wh = str(tmp_path / "wh")
    shutil.copytree(kept_wh, wh)
    return wh


def _kept_file(wh: str) -> Path:
    (path,) = Path(wh, kept_answers.FOLDER, kept_answers.key()).glob("*" + kept_rows.SUFFIX)
    return path


def _doctor(wh: str) -> None:
    """Every kept run_overview answer made another run's: what a stale answer would look like."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = _kept_file(wh)
    t = pq.read_table(path)
    rows = t.to_pylist()
    overviews = [r["answer"] for r in rows if r["query"] == "run_overview"]
    for r in rows:
        if r["query"] == "run_overview":
            r["answer"] = overviews[(overviews.index(r["answer"]) + 1) % len(overviews)]
    pq.write_table(pa.Table.from_pylist(rows, schema=t.schema), path)


def _summaries(wh: str, scoped_answers: bool = True) -> dict:
    con = pt2logs.connect(wh)
    out = {}
    for rid in _runs(con):
        with run_scope.scoped(con, [rid], answers=scoped_answers):
            out[rid] = _plain(summary(con, rid).as_dict())
    return out


def test_answers_of_another_key_are_never_read(copied, monkeypatch):
    want = _summaries(copied, scoped_answers=False)
    _doctor(copied)
    # under this code's key the doctored file is read (what makes the rest of this test mean something)
    assert _summaries(copied) != want
    key = kept_answers.key()
    assert kept_answers._make_key()["key"] == key
    # another named query's text, another macro, another module of pt2logs.query: another key, another folder
    get = queries.get_query
    monkeypatch.setattr(
        kept_answers,
        "get_query",
        lambda n: (
            dataclasses.replace(get(n), sql=get(n).sql + " ") if n == "run_overview" else get(n)
        ),
    )
    other_sql = kept_answers._make_key()["key"]
    monkeypatch.undo()
    from pt2logs.query import macros

    sql = macros.macro_sql
    monkeypatch.setattr(
        macros, "macro_sql", lambda n: sql(n) + (" " if n == "selected_runs" else "")
    )
    other_macro = kept_answers._make_key()["key"]
    monkeypatch.undo()
    read = Path.read_text
    monkeypatch.setattr(
        Path,
        "read_text",
        lambda p, *a, **k: read(p, *a, **k) + ("#" if p.name == "view_sql.py" else ""),
    )
    other_code = kept_answers._make_key()["key"]
    monkeypatch.undo()
    assert len({key, other_sql, other_macro, other_code}) == 4
    monkeypatch.setattr(kept_answers, "key", lambda: other_sql)
    assert kept_answers.load(pt2logs.connect(copied), _runs(pt2logs.connect(copied))) == {}
    assert _summaries(copied) == want


def test_a_damaged_kept_file_is_not_read(copied):
    want = _summaries(copied, scoped_answers=False)
    _kept_file(copied).write_bytes(b"PAR1 not parquet at all PAR1")
    con = pt2logs.connect(copied)
    assert kept_answers.load(con, _runs(con)) == {}
    assert _summaries(copied) == want


def test_the_answers_of_a_run_ingested_again_are_its_new_transactions(tmp_path):
    """A run whose trace changed is ingested again: its answers are those of its new transaction."""
    from tests.conftest import SAMPLES

    src = tmp_path / "in" / "run"
    shutil.copytree(SAMPLES / "recompiles", src)
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(src)], wh)
    assert answer_keeper.keep_answers(Warehouse(wh)) == 1
    (trace,) = (src / "trace").glob("*.log.gz")
    (gb,) = (SAMPLES / "graph_breaks" / "trace").glob("*.log.gz")
    shutil.copyfile(gb, trace)
    pt2logs.ingest([str(src)], wh)
    assert answer_keeper.keep_answers(Warehouse(wh)) == 1  # (the new transaction's)
    assert len(kept_answers.kept(Warehouse(wh))) == 2  # one file per transaction
    assert _summaries(wh) == _summaries(wh, scoped_answers=False)


def test_none_kept_or_read_with_the_cache_off(tmp_path, monkeypatch):
    from tests.conftest import SAMPLES

    wh = str(tmp_path / "wh")
    monkeypatch.setenv(kept_rows.ENV, "0")
    pt2logs.ingest([str(SAMPLES / "recompiles")], wh)
    assert not Path(wh, kept_answers.FOLDER).exists()
    assert answer_keeper.keep_answers(Warehouse(wh)) == 0
    assert not answer_keeper.keep_later(Warehouse(wh), {"a txn"})  # (no process started)
    monkeypatch.setenv(kept_rows.ENV, "1")
    assert answer_keeper.keep_answers(Warehouse(wh)) == 1
    monkeypatch.setenv(kept_rows.ENV, "0")
    con = pt2logs.connect(wh)
    assert kept_answers.load(con, _runs(con)) == {}


def test_a_transaction_of_many_runs_keeps_none(copied, monkeypatch):
    shutil.rmtree(Path(copied, kept_answers.FOLDER))
    monkeypatch.setattr(kept_answers, "MAX_RUNS", 4)
    assert answer_keeper.keep_answers(Warehouse(copied)) == 0
    # asked for by a command: the transaction is said to keep none, and a command's scope notes it no more (a
    # fleet's commands would each start a keep that keeps nothing)
    con = pt2logs.connect(copied)
    kept_answers.track(con)
    rid = _runs(con)[0]
    with run_scope.scoped(con, [rid]):
        pass
    ((txn, _),) = kept_answers.unkept(con)
    assert answer_keeper.keep_answers(Warehouse(copied), {txn}) == 0
    declined: set[str] = set()
    assert kept_answers.kept(Warehouse(copied), declined) == set() and declined == {txn}
    with run_scope.scoped(con, [rid]):
        pass
    assert kept_answers.unkept(con) == set()
    monkeypatch.setattr(kept_answers, "MAX_RUNS", 5)
    assert answer_keeper.keep_answers(Warehouse(copied)) == 5


def test_a_run_read_of_a_transaction_of_many_runs_is_kept_in_a_file_of_its_own(
    sample_wh, tmp_path, monkeypatch, asked_of_duckdb
):
    """A transaction of more than MAX_RUNS runs (a fleet's bulk import or compaction) keeps each run read in a file
    of its own: read back, the pages are the same and ask DuckDB nothing; a second run read adds its own file and
    leaves the first's as it was; a diff of the two reads both."""
    wh = unread_copy(sample_wh, tmp_path / "wh")
    monkeypatch.setattr(
        kept_answers, "MAX_RUNS", 4
    )  # (the samples' one transaction of 5 runs: a big one)
    con = pt2logs.connect(wh)
    kept_answers.track(con)
    runs = _runs(con)
    with run_scope.scoped(con, runs[:2], answers=False):
        want = _pages(con, runs[0], runs[1])
    with run_scope.scoped(con, [runs[0]]):
        summary(con, runs[0])
    ((txn, run),) = kept_answers.unkept(con)
    assert run == runs[0]
    assert answer_keeper.keep_answers(Warehouse(wh), {txn}, runs={run}) == 1
    per_run: set[str] = set()
    assert kept_answers.kept(Warehouse(wh), None, per_run) == set() and per_run == {txn}
    first = Path(kept_answers.run_path(Warehouse(wh), txn, run))
    assert first.is_file()
    got = kept_answers.load(con, [run])
    assert {r for r, _, _ in got} == {run} and len(got) == len(kept_answers.asked())
    asked_of_duckdb.clear()
    with run_scope.scoped(con, [run]):
        assert {k: v for k, v in _pages(con, run).items()} == {
            k: v for k, v in want.items() if k != "diff"
        }
    assert asked_of_duckdb == [] and kept_answers.unkept(con) == set()
    with run_scope.scoped(con, [runs[1]]):
        summary(con, runs[1])
    assert kept_answers.unkept(con) == {(txn, runs[1])}
    stamp = first.stat().st_mtime_ns
    assert answer_keeper.keep_answers(Warehouse(wh), {txn}, runs={runs[1]}) == 1
    assert first.stat().st_mtime_ns == stamp
    assert len(list(first.parent.iterdir())) == 2
    assert {r for r, _, _ in kept_answers.load(con, runs[:2])} == set(runs[:2])
    asked_of_duckdb.clear()
    with run_scope.scoped(con, [runs[1], runs[0]]):
        assert _pages(con, runs[0], runs[1]) == want
    assert asked_of_duckdb == ["cache_misses"]
    # the diff's pair kept too: it goes to the transaction's own file, beside the files per run, which are read still
    pairs = kept_answers.unkept_pairs(con)
    assert pairs and answer_keeper.keep_pairs(Warehouse(wh), pairs) == len(pairs)
    assert kept_answers.kept(Warehouse(wh)) == {txn}
    assert {r for r, _, _ in kept_answers.load(con, runs[:2])} == set(runs[:2])
    asked_of_duckdb.clear()
    with run_scope.scoped(con, [runs[1], runs[0]]):
        assert _pages(con, runs[0], runs[1]) == want
    assert asked_of_duckdb == []


def test_compact_drops_a_replaced_transactions_files_per_run(tmp_path, monkeypatch):
    from tests.conftest import SAMPLES

    from pt2logs.store.compact import compact

    wh = str(tmp_path / "wh")
    for name in ("recompiles", "graph_breaks"):
        pt2logs.ingest([str(SAMPLES / name)], wh)
    monkeypatch.setattr(kept_answers, "MAX_RUNS", 0)  # (every transaction a big one)
    con = pt2logs.connect(wh)
    live = con.execute("SELECT txn, run_id FROM runs").fetchall()
    assert (
        answer_keeper.keep_answers(Warehouse(wh), {t for t, _ in live}, runs={r for _, r in live})
        == 2
    )
    folder = Path(wh, kept_answers.FOLDER, kept_answers.key())
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        t + kept_answers.RUNS_SUFFIX for t, _ in live
    )
    assert compact(wh).partitions
    kept_cache.keep(wh)
    assert list(folder.iterdir()) == []
    assert _summaries(wh) == _summaries(wh, scoped_answers=False)


def test_a_run_with_a_damaged_file_is_not_answered_from_them(copied):
    """A run whose data file is damaged is answered from the rows the snapshot holds (with a warning), as without
    kept answers: never from the answers kept when it was whole."""
    from pt2logs.query.views import damaged_runs

    (events,) = Path(copied, "events").rglob("*.parquet")
    events.unlink()  # (a file of its commit gone: the snapshot leaves it out, with a warning)
    con = pt2logs.connect(copied)
    runs = _runs(con)
    assert damaged_runs(con) == set(runs)
    assert kept_answers.load(con, runs) == {}
    assert _summaries(copied) == _summaries(copied, scoped_answers=False)


def test_compact_drops_the_replaced_transactions_answers_and_keeps_none(tmp_path):
    from tests.conftest import SAMPLES

    from pt2logs.store.compact import compact

    wh = str(tmp_path / "wh")
    for name in ("recompiles", "graph_breaks"):
        pt2logs.ingest([str(SAMPLES / name)], wh)
    assert kept_answers.kept(Warehouse(wh)) == set()  # (an ingest keeps none)
    assert answer_keeper.keep_answers(Warehouse(wh)) == 2
    old = kept_answers.kept(Warehouse(wh))
    assert len(old) == 2
    # (within the grace period the replaced commits are known: their kept rows of every kind are dropped)
    assert compact(wh).partitions
    kept_cache.keep(
        wh
    )  # (what `pt2logs compact` does after the copy: outcomes and advice items, no answers)
    assert kept_answers.kept(Warehouse(wh)) == set()
    assert answer_keeper.keep_answers(Warehouse(wh)) == 2  # (a reader keeps the new transaction's)
    now = kept_answers.kept(Warehouse(wh))
    assert len(now) == 1 and not now & old
    assert _summaries(wh) == _summaries(wh, scoped_answers=False)


def test_the_keep_asks_scopes_of_a_bounded_size():
    mib = 1 << 20
    runs = [("a", 5 * mib), ("b", 5 * mib), ("c", 9 * mib), ("d", mib), ("e", None)]
    assert 8 * mib == kept_answers.MAX_BYTES
    assert answer_keeper._chunks(runs) == [
        ["a"],
        ["b", "d", "e"],
    ]  # (c, over the bound, keeps none)


def test_a_library_ingest_keeps_no_answers_and_a_tracked_scope_notes_them(tmp_path):
    """An ingest (and the keep after it) asks no answers; a library connection keeps none and notes none; a tracked
    connection (the CLI's, serve's) notes the transaction its scope found without them, once kept none."""
    from tests.conftest import SAMPLES

    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(SAMPLES / "recompiles")], wh)
    assert not Path(wh, kept_answers.FOLDER).exists()
    con = pt2logs.connect(wh)
    (rid,) = _runs(con)
    with run_scope.scoped(con, [rid]):
        summary(con, rid)
    assert kept_answers.unkept(con) == set()  # (not tracked: nothing noted)
    assert not Path(wh, kept_answers.FOLDER).exists()
    kept_answers.track(con)
    with run_scope.scoped(con, [rid]):
        summary(con, rid)
    ((txn, run),) = kept_answers.unkept(con)
    assert run == rid
    assert kept_answers.unkept(con) == set()  # (forgotten once told)
    assert answer_keeper.keep_answers(Warehouse(wh), {txn}) == 1
    assert kept_answers.kept(Warehouse(wh)) == {txn}
    with run_scope.scoped(con, [rid]):
        summary(con, rid)
    assert kept_answers.unkept(con) == set()  # (kept: nothing to note)


def test_a_read_only_warehouse_keeps_nothing_and_fails_nothing(tmp_path):
    import os

    from tests.conftest import SAMPLES

    if os.geteuid() == 0:
        pytest.skip("root may write anywhere")
    wh = tmp_path / "wh"
    pt2logs.ingest([str(SAMPLES / "recompiles")], str(wh))
    modes = {p: p.stat().st_mode for p in [wh, *wh.rglob("*")] if p.is_dir()}
    for p in modes:
        p.chmod(0o555)
    try:
        assert not answer_keeper.writable(Warehouse(str(wh)))
        assert not answer_keeper.keep_later(
            Warehouse(str(wh)), {"t"}
        )  # (no process started for nothing)
        with pytest.raises(PermissionError):  # (what the background keep swallows)
            answer_keeper.keep_answers(Warehouse(str(wh)))
    finally:
        for p, m in modes.items():
            p.chmod(m)
    assert answer_keeper.writable(Warehouse(str(wh)))


def test_a_run_read_is_kept_alone_and_added_to_its_transactions_file(sample_wh, tmp_path):
    """Only the runs read are kept (a transaction of many runs is not asked whole for one read), each added to
    its transaction's file, the runs kept before kept still."""
    import pyarrow.parquet as pq

    wh = unread_copy(sample_wh, tmp_path / "wh")
    con = pt2logs.connect(wh)
    kept_answers.track(con)
    runs = _runs(con)
    with run_scope.scoped(con, [runs[0]]):
        summary(con, runs[0])
    ((txn, run),) = kept_answers.unkept(con)
    assert run == runs[0]
    assert answer_keeper.keep_answers(Warehouse(wh), {txn}, runs={run}) == 1

    def file_runs() -> set[str]:
        return set(pq.read_table(_kept_file(wh)).column("run_id").to_pylist())

    assert file_runs() == {runs[0]}
    with run_scope.scoped(con, [runs[0]]):
        summary(con, runs[0])
    assert kept_answers.unkept(con) == set()
    with run_scope.scoped(con, [runs[1]]):  # (its transaction's file lacks it)
        summary(con, runs[1])
    assert kept_answers.unkept(con) == {(txn, runs[1])}
    assert answer_keeper.keep_answers(Warehouse(wh), {txn}, runs={runs[1]}) == 1
    assert file_runs() == {runs[0], runs[1]}
    assert _summaries(wh) == _summaries(wh, scoped_answers=False)


def test_no_second_keeper_starts_while_one_works_in_the_warehouse(tmp_path):
    """A command that read runs without kept answers starts no keeper while one works there (the ingest's, at its
    commit: ``_keeping.<pid>.tmp`` of a live process); a marker its dead process left stops nothing."""
    import subprocess

    from pt2logs._fork import keeping

    wh = tmp_path / "wh"
    wh.mkdir()
    gone = subprocess.Popen(["true"])
    assert gone.wait() == 0
    (wh / f"_keeping.{gone.pid}.tmp").touch()
    assert not keeping(str(wh))
    (wh / f"_keeping.{os.getpid()}.tmp").touch()
    assert keeping(str(wh))
    assert answer_keeper.keep_later(Warehouse(str(wh)), {("txn", "run")}) is False
