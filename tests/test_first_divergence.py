"""first_divergence on tlparse's own multi-rank test logs (shared fixtures, several torch versions)."""

from __future__ import annotations

from tests.conftest import fixture_path

import pt2logs
from pt2logs.query.queries import run_named


def _divergence(tmp_path, folder: str) -> dict:
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(fixture_path("tlparse", folder))], wh)
    (row,) = run_named(pt2logs.connect(wh), "first_divergence", {}).to_pylist()
    return row


def test_a_collective_schedule_that_differs_on_one_rank(tmp_path):
    # tlparse's multi_rank_schedule: rank 1's first graph has no reduce_scatter (the three files' envelopes all
    # say rank 0: a process is its file, its rank the one in the file name)
    d = _divergence(tmp_path, "multi_rank_schedule")
    assert (d["step"], d["what"], d["compile_id"]) == (1, "collectives", "0/0")
    assert (
        d["ranks_a"] == [0, 2]
        and d["side_a"] == "all_reduce, all_gather_into_tensor, reduce_scatter_tensor"
    )
    assert d["ranks_b"] == [1] and d["side_b"] == "all_reduce, all_gather_into_tensor"
    assert d["where_b"].startswith("dedicated_log_torch_trace_rank_1_")


def test_guards_on_object_ids_are_not_a_divergence(tmp_path):
    # graph_exec_order_tests: the recompile guards name object ids (___check_obj_id(fn, 1398...)) that differ
    # between the processes; the real difference is the second graph's collectives
    d = _divergence(tmp_path, "graph_exec_order_tests")
    assert (d["step"], d["what"], d["ranks_a"], d["ranks_b"]) == (2, "collectives", [0], [1])
    assert "reduce_scatter_tensor" in d["side_b"] and "reduce_scatter_tensor" not in d["side_a"]


def test_ranks_that_compile_different_frames(tmp_path):
    d = _divergence(tmp_path, "multi_rank_logs")
    assert (d["step"], d["what"], d["ranks_a"], d["ranks_b"]) == (1, "frame", [0, 2], [1, 3])
