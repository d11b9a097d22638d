"""Issue 33, end to end: the same real capture as each collector and launcher writes it gives the same
recompiles, graph breaks, guards, outcome evidence and outcome as the raw capture (`pt2logs ingest`, named
queries, `pt2logs summary`); what the wrapping carried reaches the rows; framed foreign text stays no log.

The capture: two real GPU TORCH_LOGS captures (shared fixtures gpu/graph_breaks, gpu/recompile_causes)
and a TORCH_LOGS=guards capture (torch_logs/guards.txt), followed by the NCCL watchdog lines of a public 2-rank hang (tests/readers/test_outcome_lines.py), wrapped
line by line by tests/framing_writers.py. All runs are ingested once, in one warehouse."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import fixture_path
from framing_writers import WRITERS, cri, lines_of, ray, srun_label

import pt2logs
from pt2logs.cli import main
from pt2logs.query.queries import run_named

sys.path.insert(0, str(Path(__file__).parent / "readers"))
from test_outcome_lines import NCCL_HANG  # noqa: E402  (the real NCCL lines, kept in one place)

#: vLLM 0.10's line as its formatter writes it (vllm/compilation/backends.py; tests/vllm_inputs.py FMT_080)
VLLM_LINE = "INFO 08-12 03:18:25 [backends.py:519] Dynamo bytecode transform time: 6.94 s"
FOREIGN = [
    "Epoch 1/10",
    "loss=0.53 acc=0.81",
    "Traceback? no: just text",
    "saving checkpoint to /ckpt/step_100",
] * 30


@pytest.fixture(scope="module")
def capture() -> list[str]:
    out = lines_of(fixture_path("gpu", "graph_breaks", "torch_logs.txt").read_bytes())
    out += lines_of(fixture_path("gpu", "recompile_causes", "torch_logs.txt").read_bytes())
    out += lines_of(
        fixture_path("torch_logs", "guards.txt").read_bytes()
    )  # TORCH_LOGS=guards: `guards` rows
    return out + NCCL_HANG.splitlines()


@pytest.fixture(scope="module")
def wh(
    capture: list[str], tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, pt2logs.IngestResult]:
    root = tmp_path_factory.mktemp("framed")
    jobs = {"raw": ("\n".join(capture) + "\n").encode()}
    jobs |= {name: w(capture) for name, w in WRITERS.items()}
    jobs["cri_parts"] = cri(
        capture, max_len=100
    )  # containerd's P parts, small so that many lines are split
    # two srun tasks of one capture without [rankN] prefixes, interleaved as srun writes them
    gpu = lines_of(fixture_path("gpu", "recompile_causes", "torch_logs.txt").read_bytes())
    a, b = (
        srun_label(gpu, task=0, width=2).splitlines(True),
        srun_label(gpu, task=12, width=2).splitlines(True),
    )
    jobs["srun_two_tasks"] = b"".join(x + y for x, y in zip(a, b))
    jobs["ray_repeat"] = ray(
        [VLLM_LINE, VLLM_LINE + "\x1b[32m [repeated 7x across cluster]\x1b[0m"],
        worker="RayWorkerWrapper",
        pid=4155527,
        ip="10.0.0.5",
    )
    jobs["foreign_cri"] = cri(FOREIGN)
    paths = []
    for name, data in jobs.items():
        (root / name).mkdir()
        (root / name / "stderr.txt").write_bytes(data)
        paths.append(str(root / name))
    w = str(root / "wh")
    return w, pt2logs.ingest(paths, w)


def facts(con, name: str) -> tuple:
    (run_id,) = con.execute("select run_id from runs where name = ?", [name]).fetchall()[0]
    q = lambda sql: con.execute(sql, [run_id]).fetchall()  # noqa: E731
    outcome = [
        (r["outcome"], r["root_rank"])
        for r in run_named(con, "run_outcomes", {}).to_pylist()
        if r["run_id"] == run_id
    ]
    return (
        q("select count(*) from recompiles where run_id = ?")[0][0],
        q("select count(*) from graph_breaks where run_id = ?")[0][0],
        sorted(q("select kind, rank, means from outcome_evidence where run_id = ?")),
        outcome,
        q("select count(*) from ingest_errors where run_id = ?")[0][0],
        q("select count(*), sum(guard_count), sum(n_guard_lines) from guards where run_id = ?")[0],
    )


@pytest.mark.parametrize("name", [*sorted(WRITERS), "cri_parts"])
def test_framed_capture_reads_as_the_raw_one(wh: tuple, name: str) -> None:
    con = pt2logs.connect(wh[0])
    raw = facts(con, "raw")
    assert raw[0] > 0 and raw[1] > 0 and raw[2] and raw[3] == [("hung", 0)] and raw[5][0] > 0
    if (
        name == "srun_label"
    ):  # srun's task id (0 here) is the rank of the lines that name none (`terminate called`)
        raw = (*raw[:2], sorted((k, 0 if r is None else r, m) for k, r, m in raw[2]), *raw[3:])
    assert facts(con, name) == raw
    (run_id,) = con.execute("select run_id from runs where name = ?", [name]).fetchall()[0]
    n, wrapped = con.execute(
        "select count(*), count(distinct wrapped) from log_lines l left join collected_lines c "
        "using (run_id, file, line_no) where run_id = ? and l.message <> '' and c.wrapped is null",
        [run_id],
    ).fetchall()[0]
    assert n == 0, "every row of a wrapped capture has its collected_lines row"


def test_carried_columns(wh: tuple) -> None:
    con = pt2logs.connect(wh[0])
    assert (
        con.execute(
            "select count(*) from collected_lines c join runs r using (run_id) where r.name = 'raw'"
        ).fetchall()[0][0]
        == 0
    )
    row = con.execute(
        "select l.stream, l.collected_ts, l.pod, l.container from collected_lines l join runs r using (run_id) "
        "where r.name = 'gcp_logentry' order by line_no limit 1"
    ).fetchall()[0]
    assert row[0] == "stderr" and row[1] is not None and row[2:] == ("trainer-0", "trainer")
    row = con.execute(
        "select l.host, l.worker from collected_lines l join runs r using (run_id) "
        "where r.name = 'journald' order by line_no limit 1"
    ).fetchall()[0]
    assert row == ("gpu-node-3", "python3")


def test_launcher_rank_goes_to_rows_without_one(wh: tuple) -> None:
    """srun's task ids are the ranks of lines that name none: two tasks of one capture are two ranks."""
    con = pt2logs.connect(wh[0])
    (run_id, n_ranks) = con.execute(
        "select run_id, n_ranks from runs where name = 'srun_two_tasks'"
    ).fetchall()[0]
    one = con.execute(
        "select count(*) from recompiles r join runs using (run_id) where name = 'recompile_causes'"
    ).fetchall()[0]
    by_rank = dict(
        con.execute(
            "select rank, count(*) from recompiles where run_id = ? group by rank", [run_id]
        ).fetchall()
    )
    assert n_ranks == 2 and set(by_rank) == {0, 12} and by_rank[0] == by_rank[12] > 0
    assert one is not None


def test_ray_repeat_count_is_kept(wh: tuple) -> None:
    """`[repeated 7x across cluster]`: the line stands for 7 more workers' lines (Ray's dedup, cited in
    framing_patterns.RAY_REPEAT); the process comes from Ray's prefix."""
    con = pt2logs.connect(wh[0])
    rows = con.execute(
        "select v.repeat, v.process, v.pid, v.seconds from vllm_log_events v join runs r using (run_id) "
        "where r.name = 'ray_repeat' order by line_no"
    ).fetchall()
    assert rows == [
        (None, "RayWorkerWrapper", 4155527, 6.94),
        (7, "RayWorkerWrapper", 4155527, 6.94),
    ]


def test_framed_foreign_text_is_not_a_log(wh: tuple) -> None:
    skipped = {Path(p).parent.name: why for p, why in wh[1].skipped}
    assert skipped.get("foreign_cri") == "not a recognised log format"
    assert not {"raw", "cri", "docker_json"} & set(skipped)


def test_summary_and_formats_cli(wh: tuple) -> None:
    r = CliRunner().invoke(main, ["formats"])
    assert (
        r.exit_code == 0
        and "cri " in r.output
        and "srun_label" in r.output
        and "process_tag" in r.output
    )
    r = CliRunner().invoke(main, ["summary", "-w", wh[0], "cri_parts"])
    assert r.exit_code == 0, r.output
    assert "hung" in r.output


def test_framed_captures_are_detected_as_their_inner_format() -> None:
    """The sniffer reads a framed capture by its own lines: a job's stderr, a vLLM log, TORCH_LOGS text."""
    from pt2logs.readers import detect

    vllm = [VLLM_LINE, VLLM_LINE.replace("03:18:25", "03:18:27")]
    for name in ("cri", "docker_json", "loki_jsonl", "journald"):
        assert (
            detect(WRITERS[name](NCCL_HANG.splitlines())[:65536], "0.log").name == "job_stderr"
        ), name
        assert detect(WRITERS[name](vllm)[:65536], "0.log").name == "vllm_log", name
        assert detect(WRITERS[name](FOREIGN)[:65536], "stderr.log") is None, name
