"""Discovery holds a bounded head per file, not 64 KiB (issue 31 item 7: ingest's memory grew with the fleet).

A fleet folder of real sample runs (hard links, each run's trace under a name of its own, as torch's random
suffix makes them): every file's head was kept whole until the runs were planned, 64 KiB a file, 230 MB for
a fleet of 2,000 runs; now each keeps :data:`HEAD_KEPT` bytes once its format and rank are known. The run
ids are the ones the whole heads give (they are what a warehouse knows its runs by).
"""

from __future__ import annotations

import os

from tests.conftest import SAMPLES

from pt2logs.inputs import grouping
from pt2logs.inputs.discover import discover
from pt2logs.inputs.grouping import HEAD_KEPT

RUNS = 30


def _fleet(root) -> None:
    for i in range(RUNS):
        src = SAMPLES / ["compile_failure", "train_step", "ddp_2rank"][i % 3]
        for f in src.rglob("*"):
            if f.is_file():
                to = root / f"run-{i:03d}" / f.relative_to(src)
                if f.name.startswith("dedicated_log_torch_trace_"):
                    to = to.with_name(f.name.replace(".log", f"_{i:03d}.log"))
                to.parent.mkdir(parents=True, exist_ok=True)
                os.link(f, to)


def test_discovery_keeps_bounded_heads_and_the_same_run_ids(tmp_path, monkeypatch) -> None:
    _fleet(tmp_path)
    found = discover([str(tmp_path)])
    assert len(found.runs) == RUNS
    files = [f for plan in found.runs for f in plan.files]
    assert all(len(f.head) <= HEAD_KEPT for f in files), max(len(f.head) for f in files)
    assert sum(f.head_cut for f in files) >= RUNS  # every trace's head was longer
    # the same discovery with whole heads (nothing cut), as before: the same runs, ids and ranks
    monkeypatch.setattr(grouping, "HEAD_KEPT", 1 << 30)
    whole = discover([str(tmp_path)])
    assert not any(f.head_cut for plan in whole.runs for f in plan.files)
    assert [(p.root, p.run_id) for p in found.runs] == [(p.root, p.run_id) for p in whole.runs]
    assert [f.rank for p in found.runs for f in p.files] == [
        f.rank for p in whole.runs for f in p.files
    ]
    ranks = sorted(f.rank for plan in found.runs for f in plan.files if "rank_" in f.stem)
    assert ranks == sorted([0, 1] * (RUNS // 3))  # the ranks read from the heads before the cut


def test_planning_unopened_files_keeps_bounded_heads(tmp_path) -> None:
    """Files discovery skipped as unchanged (not opened) are read by the planner when their run is ingested
    anyway (forced, retagged): their heads are cut too, and their ranks are the ones the whole heads give."""
    from pt2logs.ingestion.plan import tasks

    _fleet(tmp_path)
    plans = discover([str(tmp_path)]).runs
    ranks = [f.rank for p in plans for f in p.files]
    for f in (f for p in plans for f in p.files):
        f.head, f.head_cut, f.rank = b"", False, None  # as discovery leaves an unchanged file
    assert len(tasks(plans, 1)) == sum(len(p.files) for p in plans)
    assert all(len(f.head) <= HEAD_KEPT for p in plans for f in p.files)
    assert [f.rank for p in plans for f in p.files] == ranks
