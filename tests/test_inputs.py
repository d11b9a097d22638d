"""Inputs as users give them: several files under one --run-id, unreadable entries, links, files
rewritten in place. Real fixtures and real filesystem conditions only."""

from __future__ import annotations

import pytest
from tests.conftest import fixture_path

import pt2logs
from pt2logs.schema import TABLES


def counts(wh: str) -> dict[str, int]:
    con = pt2logs.connect(wh)
    try:
        return {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in sorted(TABLES)}
    finally:
        con.close()


# ----------------------------------------------------------------------------- several paths, one --run-id


@pytest.mark.parametrize("folder", ["multi_rank_logs", "multi_rank_runtime", "multi_rank_messy_input"])
def test_files_given_one_by_one_under_a_run_id_are_one_run_as_their_folder(tmp_path, folder):
    src = fixture_path("tlparse", folder)
    logs = sorted(p for p in src.iterdir() if p.is_file())
    wa, wb = str(tmp_path / "a"), str(tmp_path / "b")
    pt2logs.ingest([str(src)], wa)
    res = pt2logs.ingest([str(p) for p in logs], wb, run_id="X")
    assert res.runs_new == 1 and res.run_ids == ["X"]
    a, b = pt2logs.connect(wa), pt2logs.connect(wb)
    q = "SELECT name, root, n_ranks, ranks, n_files, n_events, n_errors FROM runs"
    ((run_id,),) = b.execute("SELECT run_id FROM runs").fetchall()
    assert run_id == "X"
    assert b.execute(q).fetchall() == a.execute(q).fetchall()
    assert sorted(b.execute("SELECT relpath, rank, n_events FROM files").fetchall()) == \
           sorted(a.execute("SELECT relpath, rank, n_events FROM files").fetchall())
    assert counts(wb) == counts(wa)
    assert b.execute("SELECT count(DISTINCT rank) FROM events").fetchone() == a.execute(
        "SELECT count(DISTINCT rank) FROM events").fetchone()


def test_files_of_two_folders_under_one_run_id(tmp_path):
    """Paths in different folders: the run's root is the folder holding both, files keep their place."""
    one = fixture_path("tlparse", "multi_rank_logs", "dedicated_log_torch_trace_rank_0.log")
    two = fixture_path("tlparse", "multi_rank_schedule", "dedicated_log_torch_trace_rank_2.log")
    wh = str(tmp_path / "wh")
    res = pt2logs.ingest([str(one), str(two), str(one)], wh, run_id="both")
    con = pt2logs.connect(wh)
    assert res.runs_new == 1
    assert con.execute("SELECT run_id, name, root, n_files FROM runs").fetchall() == [
        ("both", "tlparse", str(one.parent.parent), 2)]
    assert sorted(r[0] for r in con.execute("SELECT relpath FROM files").fetchall()) == [
        "multi_rank_logs/dedicated_log_torch_trace_rank_0.log", "multi_rank_schedule/dedicated_log_torch_trace_rank_2.log"]


def test_one_file_under_a_run_id_is_unchanged(tmp_path):
    log = fixture_path("tlparse", "simple.log")
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(log)], wh, run_id="one")
    con = pt2logs.connect(wh)
    assert con.execute("SELECT run_id, name, root, source FROM runs").fetchall() == [("one", "simple.log", str(log), str(log))]
    assert con.execute("SELECT relpath FROM files").fetchall() == [("simple.log",)]
