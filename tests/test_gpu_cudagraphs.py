"""CUDA graphs on a real GPU (tests/inputs/gpu_cudagraphs: torch 2.11.0+cu130 on an H200, issue 35).

torch 2.11 decides these skips when the compiled graph first runs, after the compile's metrics were
written: `cudagraph_skip_reason` is null in the trace and only TORCH_LOGS=cudagraphs says why. The
figures asserted are read from the captures' own text here, not written down."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import pt2logs
from pt2logs.query.queries import run_named

INPUTS = Path(__file__).parent / "inputs" / "gpu_cudagraphs"


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory):
    wh = str(tmp_path_factory.mktemp("cg") / "wh")
    for name in ("mutated", "cpu", "dynamic"):
        pt2logs.ingest([str(INPUTS / name)], wh, run_id=name)
    return pt2logs.connect(wh)


def _rows(con, sql: str) -> list[dict]:
    cur = con.execute(sql)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def test_a_mutated_input_skip_is_read_from_the_text_log_beside_the_trace(con) -> None:
    text = (INPUTS / "mutated" / "torch_logs.txt").read_text()
    m = re.search(
        r"\[__cudagraphs\] skipping cudagraphs due to (mutated inputs \(\d+ instances\))", text
    )
    frame = re.search(r'File "([^"]+)", line (\d+), in (\w+)', text)
    assert m and frame
    (row,) = _rows(
        con,
        "SELECT event, reason, reason_kind, function, frame_file, frame_line, source FROM cudagraph_skips "
        "WHERE run_id = 'mutated'",
    )
    assert row == {
        "event": "skip",
        "reason": m.group(1),
        "reason_kind": "mutated_inputs",
        "function": frame.group(3),
        "frame_file": Path(frame.group(1)).name,  # relative to the run's root in the views
        "frame_line": int(frame.group(2)),
        "source": "torch_logs",  # the run's best source is its trace: this table keeps both
    }
    items = run_named(con, "advice", {"run_id": "mutated", "limit": 100}).to_pylist()
    assert [(i["id"], i["location"]) for i in items] == [
        ("cudagraph_mutated_inputs", f"cg.py:{frame.group(2)}")
    ]


def test_too_many_sizes_under_dynamic_shapes(con) -> None:
    text = (INPUTS / "dynamic" / "torch_logs.txt").read_text()
    (n,) = re.findall(r"We have observed (\d+) distinct sizes", text)
    rows = _rows(
        con, "SELECT event, reason_kind, count FROM cudagraph_skips WHERE run_id = 'dynamic'"
    )
    assert rows == [{"event": "too_many_sizes", "reason_kind": "dynamic_shapes", "count": int(n)}]
    # one compile served every size: 58 graphs recorded, one per distinct size
    assert (
        len(set(re.findall(r"Recording cudagraph tree for symint key \((\d+, \d+)\)", text))) == 58
    )
    assert con.execute(
        "SELECT count(*) FROM compilation_metrics WHERE run_id = 'dynamic' AND kind = 'compilation_metrics'"
    ).fetchone() == (1,)


def test_a_cpu_op_partition_is_not_a_skip(con) -> None:
    """torch 2.11 partitions the graph: the CPU op runs outside the CUDA graph, the rest is recorded."""
    text = (INPUTS / "cpu" / "torch_logs.txt").read_text()
    assert "reason=cpu ops" in text and "skipping cudagraphs" not in text
    assert con.execute("SELECT count(*) FROM cudagraph_skips WHERE run_id = 'cpu'").fetchone() == (
        0,
    )
