"""A kept answer's rows as text the standard library reads (pt2logs.query.answer_rows): every answer the keep writes
reads back as the rows pyarrow gives (the same Python values, types and zones), the same columns justified and kept
whole by the table format, and its Arrow table where a writer needs one; a type it does not write, or a text that
does not read, leaves the answer to its IPC stream. tests/cli/test_kept_answers_cli.py: the CLI's commands print the
same bytes from them, without importing pyarrow."""

from __future__ import annotations

import datetime as dt
import decimal
import json

import pyarrow as pa
import pytest
from tests.test_kept_answers import _pages, _runs, unread_copy

import pt2logs
from pt2logs.cli.outputs import _aligned
from pt2logs.query import answer_keeper, answer_rows, kept_answers, queries, run_scope
from pt2logs.query.answer_rows import _same, decode, encode
from pt2logs.store.warehouse import Warehouse

#: the kept rows and answers are what these tests are about (tests/conftest.py: the suite keeps none elsewhere)
pytestmark = pytest.mark.kept_rows


@pytest.fixture(scope="module")
def kept_wh(sample_wh, tmp_path_factory) -> str:
    """The sample warehouse, every run's answers kept (as tests/test_kept_answers.py keeps them)."""
    wh = unread_copy(sample_wh, tmp_path_factory.mktemp("rows") / "wh")
    assert answer_keeper.keep_answers(Warehouse(wh)) == 5
    return wh


def _back(t: pa.Table) -> answer_rows.Rows:
    text = encode(t)
    assert text is not None, t.schema
    return decode(text, lambda: t)


def test_every_kept_answer_reads_back_as_its_tables_rows(kept_wh):
    """Every answer of every sample run: its text is written, and reads back as the table's ``to_pylist()``, value for
    value (types, float bits, zones), with the columns the table format justifies and keeps whole."""
    con = pt2logs.connect(kept_wh)
    got = kept_answers.load(con, _runs(con))
    assert got
    for (rid, q, _), (stream, text) in got.items():
        assert text is not None, (rid, q)
        table = pa.ipc.open_stream(stream).read_all()
        rows = decode(text, lambda t=table: t)
        assert rows.column_names == table.column_names, (rid, q)
        assert rows.num_rows == table.num_rows
        assert _same(rows.to_pylist(), table.to_pylist()), (rid, q)
        assert (rows.numeric, rows.fixed) == _aligned(table.schema), (rid, q)
        assert rows.to_arrow() is table


def test_the_values_of_every_kind_it_writes():
    utc = dt.timezone.utc
    t = pa.table(
        {
            "i": pa.array([1, None, -(2**62)], pa.int64()),
            "u8": pa.array([0, 255, None], pa.uint8()),
            "f": pa.array([0.1, float("nan"), float("-inf")]),
            "f32": pa.array([1.5, None, 3.25], pa.float32()),
            "s": pa.array(["a", None, 'ü [x] \n"q"']),
            "b": pa.array([True, False, None]),
            "n": pa.array([None, None, None], pa.null()),
            "ts": pa.array(
                [dt.datetime(2026, 11, 27, 1, 2, 3, 456789, tzinfo=utc), None, None],
                pa.timestamp("us", tz="Etc/UTC"),
            ),
            "ts_ny": pa.array(
                [dt.datetime(2026, 11, 1, 5, 30, tzinfo=utc), None, None],
                pa.timestamp("ms", tz="America/New_York"),
            ),
            "naive": pa.array([dt.datetime(2026, 1, 1), None, None], pa.timestamp("s")),
            "d": pa.array([dt.date(2026, 2, 3), None, None], pa.date32()),
            "dec": pa.array(
                [decimal.Decimal("12"), None, decimal.Decimal("-3")], pa.decimal128(38, 0)
            ),
            "dec2": pa.array([decimal.Decimal("1.20"), None, None], pa.decimal128(10, 2)),
            "ls": pa.array([["a", None], None, []], pa.list_(pa.string())),
            "li": pa.array([[1, 2], None, [None]], pa.list_(pa.int32())),
        }
    )
    rows = _back(t)
    assert _same(rows.to_pylist(), t.to_pylist())
    assert (rows.numeric, rows.fixed) == _aligned(t.schema)
    assert rows.column("s").to_pylist() == t.column("s").to_pylist()
    assert _same(rows.column(2).to_pylist(), t.column(2).to_pylist())
    picked = rows.select(["s", "i"])
    assert picked.column_names == ["s", "i"] and _same(
        picked.to_pylist(), t.select(["s", "i"]).to_pylist()
    )
    assert picked.to_arrow().equals(t.select(["s", "i"]))
    added = rows.with_columns({"outcome": ["x", None, "z"], "why": ["w", "v", None]})
    want = t.append_column("outcome", pa.array(["x", None, "z"], pa.string())).append_column(
        "why", pa.array(["w", "v", None], pa.string())
    )
    assert _same(added.to_pylist(), want.to_pylist())
    assert added.to_arrow().schema.equals(want.schema)  # (NaN: Table.equals is false)
    assert _same(added.to_arrow().to_pylist(), want.to_pylist())
    assert (added.numeric, added.fixed) == _aligned(want.schema)
    empty = _back(t.slice(0, 0)).with_columns({"outcome": [], "why": []})
    assert empty.num_rows == 0 and empty.column_names == [*t.column_names, "outcome", "why"]


def test_duplicate_column_names_read_as_pyarrow_reads_them():
    t = pa.table([pa.array([1, 2]), pa.array(["a", "b"])], names=["x", "x"])
    assert _same(_back(t).to_pylist(), t.to_pylist())


@pytest.mark.parametrize(
    "col",
    [
        pa.array([{"a": 1}], pa.struct([("a", pa.int64())])),
        pa.array([dt.timedelta(seconds=1)], pa.duration("us")),
        pa.array([b"\x00"], pa.binary()),
        pa.array([dt.datetime(2026, 1, 1)], pa.timestamp("ns")),
        pa.array(
            [dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)], pa.timestamp("us", tz="+00:00")
        ),
        pa.array([[[1]]], pa.list_(pa.list_(pa.int64()))),
    ],
)
def test_a_type_it_does_not_write_leaves_the_answer_to_its_stream(col):
    assert encode(pa.table({"c": col})) is None


def test_a_text_that_does_not_read_is_read_from_its_stream(kept_wh):
    """A damaged text (or one of another version) in a kept file: the answer is its IPC stream's table, the same
    rows."""
    con = pt2logs.connect(kept_wh)
    rid = _runs(con)[0]
    got = kept_answers.load(con, [rid])
    key = next(k for k in got if k[1] == "run_overview")
    want = pa.ipc.open_stream(got[key][0]).read_all()
    for bad in ('{"v": 99, "names": [], "kinds": [], "rows": []}', "{not json", '{"v": 1}'):
        with pytest.raises((ValueError, KeyError)):
            decode(bad, lambda: want)
        broken = {**got, key: (got[key][0], bad)}
        kept_answers.as_rows(con)
        stop = kept_answers.answering(con, broken, lambda name: None)
        try:
            t = queries.run_named(con, "run_overview", {"run_id": rid})
        finally:
            stop()
        assert isinstance(t, pa.Table) and t.equals(want)


def test_the_commands_answer_the_same_from_the_rows(kept_wh):
    """A connection that asks for rows (the CLI's) composes every page as a library connection does from the Arrow
    tables, and as the copies answer without kept answers."""
    con = pt2logs.connect(kept_wh)
    kept_answers.as_rows(con)
    runs = _runs(con)
    for i, rid in enumerate(runs):
        other = runs[i - 1]
        with run_scope.scoped(con, [other, rid], answers=False):
            want = _pages(con, rid, other)
        with run_scope.scoped(con, [other, rid]):
            got = _pages(con, rid, other)
        assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)


def test_the_diffs_pair_is_kept_and_read_for_the_bases_live_transaction(
    kept_wh, tmp_path, asked_of_duckdb
):
    """The diff's cache_misses compares two runs: a tracked scope of the two notes the pair, the keep adds its answer
    to the run's file, filed with the base's live transaction; the next diff asks DuckDB nothing and says the same; a
    base of another transaction (ingested again) is asked."""
    import dataclasses
    import shutil

    from tests.test_kept_answers import _plain

    from pt2logs.reports.diff import diff

    wh = str(tmp_path / "wh")
    shutil.copytree(kept_wh, wh)
    con = pt2logs.connect(wh)
    kept_answers.track(con)
    a, b = _runs(con)[:2]
    live = dict(con.execute("SELECT run_id, txn FROM runs").fetchall())
    with run_scope.scoped(con, [a, b]):
        want = _plain(dataclasses.asdict(diff(con, a, b)))
    pairs = kept_answers.unkept_pairs(con)
    assert pairs == {(live[b], b, a, live[a])} and kept_answers.unkept_pairs(con) == set()
    assert answer_keeper.keep_pairs(Warehouse(wh), pairs) == 1

    asked = asked_of_duckdb
    asked.clear()
    for rows in (False, True):
        con = pt2logs.connect(wh)
        kept_answers.track(con)
        if rows:
            kept_answers.as_rows(con)
        with run_scope.scoped(con, [a, b]):
            assert _plain(dataclasses.asdict(diff(con, a, b))) == want
        assert asked == [] and kept_answers.unkept_pairs(con) == set()
        assert kept_answers.unkept(con) == set()
    # the base ingested again (another live transaction): its pair's answer is not read
    got = kept_answers.load(con, [a, b])
    kept_answers._LIVE[con][a] = "another transaction"
    missed: list[str] = []
    stop = kept_answers.answering(con, got, missed.append)
    try:
        assert queries.run_named(con, "cache_misses", {"run_id": b, "base": a}) is not None
    finally:
        stop()
    assert missed == ["cache_misses"] and len(asked) == 1


def test_the_files_columns_known_without_pyarrow_are_the_files_schemas():
    from pt2logs.query.view_sources import file_columns
    from pt2logs.store.parts import file_schema, stored_tables

    for table in stored_tables():
        assert file_columns(table) == set(file_schema(table).names), table


def test_the_ingests_keep_takes_small_commits_only(kept_wh, tmp_path):
    """The keep ``pt2logs ingest`` starts (most_runs: cli.ingest.AT_COMMIT_RUNS) leaves a larger commit as it is:
    nothing kept, nothing declined (its runs' answers are kept lazily, when read)."""
    import shutil

    from pt2logs.cli.ingest import AT_COMMIT_RUNS

    wh = str(tmp_path / "wh")
    shutil.copytree(kept_wh, wh, ignore=shutil.ignore_patterns(kept_answers.FOLDER))
    con = pt2logs.connect(wh)
    runs = set(_runs(con))
    assert len(runs) > AT_COMMIT_RUNS  # (the sample warehouse: one commit of 5 runs)
    kept = answer_keeper.keep_answers(Warehouse(wh), None, runs=runs, most_runs=AT_COMMIT_RUNS)
    assert kept == 0 and kept_answers.kept(Warehouse(wh), declined := set()) == set()
    assert declined == set()
    assert answer_keeper.keep_answers(Warehouse(wh), None, runs=runs, most_runs=len(runs)) == 5
