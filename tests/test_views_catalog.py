"""The snapshot catalog (pt2logs.query.catalog): a connection to a snapshot already made attaches its
catalog file instead of making ~90 views and macros again; it answers as a catalog made afresh, and a
commit that lands gets a catalog of its own while older connections keep theirs."""

from __future__ import annotations

import os
import shutil

import duckdb
import pytest
from tests.conftest import SAMPLES

import pt2logs
from pt2logs.query import catalog, kept_files, views
from pt2logs.reports import compose
from pt2logs.tables import TABLES


def _fingerprint(con: duckdb.DuckDBPyConnection) -> dict[str, tuple]:
    """Every table's row count and an order-free hash of its rows."""
    return {
        name: con.execute(f'SELECT count(*), bit_xor(hash(t)) FROM "{name}" t').fetchall()[0]
        for name in TABLES
    }


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "views_cache"
    monkeypatch.setenv(catalog.ENV, str(folder))
    return folder


def _connect_fresh(wh: str, monkeypatch) -> duckdb.DuckDBPyConnection:
    """A connection whose catalog is made in memory, as every connection was before the cache."""
    with monkeypatch.context() as m:
        m.setenv(catalog.ENV, "0")
        return pt2logs.connect(wh)


def _no_build(monkeypatch) -> None:
    """Making the views' statements fails from now on: a connection must use a cached catalog."""

    def refuse(*a, **k):
        raise AssertionError("the views were made again for a snapshot already cached")

    monkeypatch.setattr(views, "_statements", refuse)


def test_a_cached_catalog_answers_as_one_made_afresh(sample_wh, cache, monkeypatch):
    fresh = _connect_fresh(sample_wh, monkeypatch)
    first = pt2logs.connect(sample_wh)  # makes the catalog file
    assert len(list(cache.glob("*.duckdb"))) == 1
    _no_build(monkeypatch)
    again = pt2logs.connect(sample_wh)  # attaches it
    want = _fingerprint(fresh)
    assert _fingerprint(first) == want
    assert _fingerprint(again) == want
    run = fresh.execute("SELECT run_id FROM runs ORDER BY run_id LIMIT 1").fetchall()[0][0]
    assert compose.summary(again, run).as_dict() == compose.summary(fresh, run).as_dict()
    assert views.read_warnings(again) == views.read_warnings(fresh) == []


def test_a_commit_that_lands_gets_its_own_catalog_and_older_connections_keep_theirs(
    tmp_path, cache, monkeypatch
):
    wh = str(tmp_path / "wh")
    one = tmp_path / "one"
    shutil.copytree(SAMPLES / "recompiles", one / "recompiles")
    pt2logs.ingest([str(one)], wh)
    before = pt2logs.connect(wh)
    runs_before = before.execute("SELECT count(*) FROM runs").fetchall()[0][0]
    pt2logs.ingest([str(SAMPLES)], wh)
    after = pt2logs.connect(wh)
    assert len(list(cache.glob("*.duckdb"))) == 2
    assert after.execute("SELECT count(*) FROM runs").fetchall()[0][0] > runs_before
    # the older connection still reads its snapshot: its catalog stays attached
    assert before.execute("SELECT count(*) FROM runs").fetchall()[0][0] == runs_before
    assert _fingerprint(after) == _fingerprint(_connect_fresh(wh, monkeypatch))
    # taken anew (what a query does once the snapshot is old): the new commit's catalog, the old one detached
    old_name = catalog.attached(before)
    views.create_views(before, views.Warehouse(wh))
    assert catalog.attached(before) != old_name
    assert _fingerprint(before) == _fingerprint(after)
    names = {
        r[0] for r in before.execute("SELECT database_name FROM duckdb_databases()").fetchall()
    }
    assert old_name not in names
    _no_build(monkeypatch)
    assert _fingerprint(pt2logs.connect(wh)) == _fingerprint(after)


def test_what_the_user_makes_goes_to_the_connection_and_wins(sample_wh, cache):
    pt2logs.connect(sample_wh)
    con = pt2logs.connect(sample_wh)  # the read-only catalog file attached
    con.execute("CREATE TABLE mine AS SELECT run_id FROM runs")
    assert con.execute("SELECT count(*) FROM mine").fetchall()[0][0] > 0
    # a macro made on the connection replaces the catalog's, for the catalog's own macros too
    con.execute(
        "CREATE OR REPLACE MACRO selected_runs(run, since, until, tag) AS TABLE "
        "SELECT 'none' AS run_id WHERE false"
    )
    assert con.execute("SELECT count(*) FROM rank_outcomes(NULL, NULL, NULL, NULL)").fetchall()[0][
        0
    ] == (0)
    # a run scope's temporary copies shadow the views (serve.scope reads main.<table>)
    con.execute("CREATE TEMP TABLE runs AS SELECT * FROM main.runs LIMIT 1")
    assert con.execute("SELECT count(*) FROM runs").fetchall()[0][0] == 1


def test_a_file_changed_in_place_or_a_new_code_stamp_is_another_key(sample_wh, cache):
    from pt2logs.store.snapshot import take

    wh = views.Warehouse(sample_wh)
    con = duckdb.connect()
    snap = take(wh, read_records=lambda runs: views.commit_records(con, wh, runs))
    k = catalog.key(wh, snap)
    assert catalog.key(wh, snap) == k
    runs_file = wh.path(*snap.files["runs"][0].split("/"))
    st = os.stat(runs_file)
    try:
        os.utime(runs_file, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
        assert catalog.key(wh, snap) != k
    finally:
        os.utime(runs_file, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_damaged_or_unwritable_cache_falls_back_to_memory(sample_wh, cache, monkeypatch):
    want = _fingerprint(_connect_fresh(sample_wh, monkeypatch))
    pt2logs.connect(sample_wh)
    (path,) = cache.glob("*.duckdb")
    path.write_bytes(b"not a database")
    assert _fingerprint(pt2logs.connect(sample_wh)) == want  # made in memory, the bad file removed
    assert not path.exists()
    shutil.rmtree(cache)
    cache.write_text("a file where the folder should be")
    assert _fingerprint(pt2logs.connect(sample_wh)) == want


def test_the_library_writes_no_catalog_unless_asked_and_the_cli_keeps_one(
    sample_wh, tmp_path, monkeypatch
):
    from click.testing import CliRunner

    from pt2logs.cli import main

    monkeypatch.delenv(catalog.ENV, raising=False)
    monkeypatch.setattr(kept_files, "_folder", None)
    monkeypatch.setenv("PT2LOGS_CACHE", str(tmp_path / "cache"))
    pt2logs.connect(sample_wh)
    assert not (tmp_path / "cache").exists()  # the library: in memory
    runner = CliRunner()
    first = runner.invoke(main, ["summary", "-w", sample_wh])
    assert first.exit_code == 0, first.output
    assert len(list((tmp_path / "cache" / "views").glob("*.duckdb"))) == 1
    _no_build(monkeypatch)  # the next command attaches the catalog the first one kept
    again = runner.invoke(main, ["summary", "-w", sample_wh])
    assert again.exit_code == 0, again.output
    assert again.output == first.output
