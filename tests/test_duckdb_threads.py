"""PT2LOGS_DUCKDB_THREADS: the threads of every DuckDB database pt2logs opens (pt2logs.query.views)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from tests.conftest import SAMPLES

import pt2logs
from pt2logs.cli import main
from pt2logs.query.views import THREADS_ENV


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    wh = str(tmp_path_factory.mktemp("threads") / "wh")
    pt2logs.ingest([str(SAMPLES / "graph_breaks")], wh)
    return wh


def _threads(wh: str) -> int:
    con = pt2logs.connect(wh)
    try:
        return con.execute("SELECT current_setting('threads')").fetchone()[0]
    finally:
        con.close()


def test_connections_take_the_threads_the_environment_names(warehouse, monkeypatch):
    monkeypatch.setenv(THREADS_ENV, "3")
    assert _threads(warehouse) == 3
    monkeypatch.setenv(THREADS_ENV, "1")
    assert _threads(warehouse) == 1
    con = pt2logs.connect(warehouse, threads=2)  # a caller's own setting wins
    assert con.execute("SELECT current_setting('threads')").fetchone()[0] == 2
    con.close()
    monkeypatch.delenv(THREADS_ENV)
    import duckdb

    assert (
        _threads(warehouse)
        == duckdb.connect().execute("SELECT current_setting('threads')").fetchone()[0]
    )


@pytest.mark.parametrize("bad", ["0", "two", "-1"])
def test_a_wrong_value_is_one_clear_error(warehouse, monkeypatch, bad):
    monkeypatch.setenv(THREADS_ENV, bad)
    res = CliRunner().invoke(main, ["summary", "-w", warehouse])
    assert res.exit_code == 1
    assert f"{THREADS_ENV}={bad!r}: a number of threads, 1 or more" in res.output
    assert "Traceback" not in res.output
