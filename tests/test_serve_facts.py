"""serve keeps every run's run_facts() rows in memory per snapshot (pt2logs.serve.connection): the weekly cards
read them and answer what a plain connection answers, with the facts kept per commit or not, and a commit that
lands is in the next page's cards (the table made again from the new snapshot, never from the old one)."""

from __future__ import annotations

import shutil

import pytest
from tests.conftest import SAMPLES
from tests.test_run_facts import CARDS, _name

import pt2logs
from pt2logs.query import kept_rows
from pt2logs.query.queries import run_named
from pt2logs.serve import connection

#: the kept run facts are what these tests are about (tests/conftest.py: the suite keeps none elsewhere)
pytestmark = pytest.mark.kept_rows


def _cards(con) -> dict[str, list]:
    return {k: run_named(con, _name(k), p).to_pylist() for k, p in CARDS.items()}


@pytest.fixture(scope="module")
def wh(tmp_path_factory: pytest.TempPathFactory) -> str:
    wh = str(tmp_path_factory.mktemp("serve_facts") / "wh")
    pt2logs.ingest([str(SAMPLES / "recompiles"), str(SAMPLES / "graph_breaks")], wh)
    return wh


@pytest.mark.parametrize("kept", [True, False], ids=["kept", "not kept"])
def test_the_cards_read_the_facts_in_memory_and_answer_the_same(wh, tmp_path, kept):
    w = tmp_path / "wh"
    shutil.copytree(wh, w)
    if not kept:
        shutil.rmtree(w / kept_rows.FACTS.folder)
    server = connection.Connection(str(w))
    try:
        with server.read() as con:
            got = _cards(con)
            assert con.sql("SELECT count(*) FROM temp._serve_run_facts").fetchall()[0][0] > 0
    finally:
        server.close()
    assert got == _cards(pt2logs.connect(str(w))) and all(got.values())


def test_a_commit_that_lands_is_in_the_cards(wh, tmp_path, monkeypatch):
    w = tmp_path / "wh"
    shutil.copytree(wh, w)
    monkeypatch.setattr(connection, "CHECK_S", 0.0)
    server = connection.Connection(str(w))
    try:
        with server.read() as con:
            before = _cards(con)
        pt2logs.ingest([str(SAMPLES / "train_step")], str(w))
        assert server.current() == 2
        with server.read() as con:
            after = _cards(con)
            facts = con.sql("SELECT count(DISTINCT run_id) FROM run_facts(NULL, NULL, NULL, NULL)")
            assert facts.fetchall() == [(3,)]
    finally:
        server.close()
    assert after == _cards(pt2logs.connect(str(w))) and after != before
