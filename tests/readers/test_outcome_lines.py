"""The evidence line reader (readers/outcome_lines.py) on the shapes real jobs print.

The NCCL lines are copied from a public DeepSpeed user's log of a 2-rank broadcast that hung for
10 minutes (torch 2.5, c10's ``[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629]`` prefix) and from
public threads with torch 2.0-2.2's ``[E ProcessGroupNCCL.cpp:474]`` prefix; the torchrun and
traceback shapes are those of torch 2.13 (tests/test_outcomes.py makes them for real)."""

from __future__ import annotations

import pt2logs
from pt2logs.query.queries import run_named
from pt2logs.readers.kit import FileContext
from pt2logs.readers.lines.torch_logs import read_torch_logs

NCCL_HANG = """\
Time to load cpu_adam op: 22.287405014038086 seconds
[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=131072000, NumelOut=131072000, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.
[rank1]:[E1218 20:27:21.433063423 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=131072000, NumelOut=131072000, Timeout(ms)=600000) ran for 600088 milliseconds before timing out.
[rank1]:[E1218 20:27:21.484903450 ProcessGroupNCCL.cpp:2168] [PG ID 1 PG GUID 1 Rank 1]  failure detected by watchdog at work sequence id: 1 PG status: last enqueued work: 547, last completed work: -1
[rank0]:[E1218 20:27:21.484910731 ProcessGroupNCCL.cpp:2168] [PG ID 1 PG GUID 1 Rank 0]  failure detected by watchdog at work sequence id: 1 PG status: last enqueued work: 547, last completed work: -1
[rank1]:[E1218 20:27:21.484966856 ProcessGroupNCCL.cpp:695] [Rank 1] To avoid data inconsistency, we are taking the entire process down.
[rank0]:[E1218 20:27:21.486305774 ProcessGroupNCCL.cpp:1895] [PG ID 1 PG GUID 1 Rank 0] Process group watchdog thread terminated with exception: [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=131072000, NumelOut=131072000, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.
Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:632 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7b99599e31b6 in /home/alice/lib/python3.9/site-packages/torch/lib/libc10.so)
terminate called after throwing an instance of 'c10::DistBackendError'
  what():  [PG ID 1 PG GUID 1 Rank 0] Process group watchdog thread terminated with exception: [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=131072000, NumelOut=131072000, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.
"""

OLD_NCCL = """\
[E ProcessGroupNCCL.cpp:474] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=2, NumelOut=2, Timeout(ms)=1800000) ran for 1800646 milliseconds before timing out.
[Rank 5] Exception detected by watchdog at work: 18421, last enqueued NCCL work: 18421, last completed NCCL work: 18420.
"""

TORCHRUN = """\
[rank1]: Traceback (most recent call last):
[rank0]: Traceback (most recent call last):
[rank1]:   File "/work/train.py", line 19, in <module>
[rank0]:   File "/work/train.py", line 26, in <module>
[rank1]:     raise RuntimeError("loss is NaN")
[rank0]:     dist.send(tok, 1)
[rank1]: RuntimeError: loss is NaN
[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:902.
W1123 00:14:40.177000 14741 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 14744 closing signal SIGTERM
E1123 00:14:40.242000 14741 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 1 (pid: 14745) of binary: /usr/bin/python
Traceback (most recent call last):
  File "/usr/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 383, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\x20
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-23_00:14:40
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 14744)  (SIGTERM)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 14744
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-23_00:14:40
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 14745)\x20
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def evidence(text: str, rank: int | None = None) -> list[dict]:
    ctx = FileContext(file="stderr.txt", path="/in/stderr.txt", mtime=1.79e9, rank=rank)
    rows = []
    for table, batch in read_torch_logs([text.encode()], ctx):
        if table == "outcome_evidence":
            rows += batch.to_pylist()
        assert table != "ingest_errors", batch.to_pylist()
    return rows


def test_nccl_watchdog_timeouts_one_row_per_rank_however_often_repeated():
    rows = evidence(NCCL_HANG)
    timeouts = [r for r in rows if r["kind"] == "collective_timeout"]
    assert [
        (r["rank"], r["line_no"], r["collective"], r["seq_num"], r["timeout_ms"], r["elapsed_ms"])
        for r in timeouts
    ] == [(0, 2, "BROADCAST", 1, 600000, 600081), (1, 3, "BROADCAST", 1, 600000, 600088)]
    assert all(
        r["means"] == "hung" and r["ts"] is not None and r["rank_from"] == "prefix"
        for r in timeouts
    )
    status = [
        (r["rank"], r["seq_num"], r["rank_from"]) for r in rows if r["kind"] == "watchdog_status"
    ]
    assert status == [(1, 1, "prefix"), (0, 1, "prefix")]
    assert [r["kind"] for r in rows if r["means"] == "crashed"] == ["abort"]  # terminate called ...


def test_older_nccl_lines_take_the_rank_from_the_message():
    rows = evidence(OLD_NCCL)
    assert [(r["kind"], r["rank"], r["rank_from"], r["seq_num"]) for r in rows] == [
        ("collective_timeout", 0, "message", 1),
        ("watchdog_status", 5, "message", 18421),
    ]
    assert rows[0]["collective"] == "ALLREDUCE" and rows[0]["ts"] is None


def test_torchrun_failure_interleaved_tracebacks_and_the_child_failed_table():
    rows = evidence(TORCHRUN)
    by = {(r["kind"], r["rank"]): r for r in rows}
    exc = by[("exception", 1)]
    assert (exc["line_no"], exc["exc_type"], exc["location"], exc["n_lines"]) == (
        7,
        "RuntimeError",
        "/work/train.py:19 in <module>",
        7,
    )
    peer = by[("peer_closed", 0)]
    assert (
        peer["line_no"] == 8
        and peer["secondary"]
        and peer["location"] == "/work/train.py:26 in <module>"
    )
    # the pid in "Sending process 14744" is rank 0's: the table (further down) says so
    close = by[("closing_signal", 0)]
    assert (close["pid"], close["signal"], close["rank_from"], close["secondary"]) == (
        14744,
        "SIGTERM",
        "pid",
        True,
    )
    assert by[("worker_exit", 1)]["exit_code"] == 1 and by[("worker_exit", 1)]["local_rank"] == 1
    assert by[("launcher_failed", None)]["means"] == "info"
    table = sorted(
        (r["rank"], r["exit_code"], r["signal"], r["root_cause"], r["secondary"], r["means"])
        for r in rows
        if r["kind"] == "child_failure"
    )
    assert table == [
        (0, -15, "SIGTERM", False, True, "killed"),
        (1, 1, None, True, False, "failed"),
    ]
    assert not [
        r for r in rows if r["kind"] == "signal_received"
    ]  # inside the table: read as its entry only


def test_a_logged_traceback_is_not_the_end_of_a_process():
    logged = (
        "\n".join(
            f"W1122 10:47:39.813000 10578 torch/_dynamo/convert_frame.py:2415] {x}"
            for x in (
                "WON'T CONVERT f /x.py line 3",
                "Traceback (most recent call last):",
                '  File "/x.py", line 3, in f',
                "torch._dynamo.exc.BackendCompilerFailed: backend='bad_backend' raised:",
            )
        )
        + "\n"
    )
    assert evidence(logged) == []


def test_shell_reports_and_a_traceback_cut_off_by_the_end_of_the_file():
    rows = evidence(
        "step 10\nKilled\n/bin/sh: line 1: 4242 Segmentation fault (core dumped) python x.py\n"
        'Traceback (most recent call last):\n  File "/x.py", line 9, in <module>\n'
    )
    assert [(r["kind"], r["means"], r["line_no"]) for r in rows] == [
        ("oom_killed", "killed", 2),
        ("segfault", "crashed", 3),
        ("exception", "failed", 4),
    ]
    assert rows[2]["location"] == "/x.py:9 in <module>" and "ends before" in rows[2]["text"]


def test_a_file_of_one_rank_gives_its_rank_to_lines_without_one():
    (row,) = evidence(
        'Traceback (most recent call last):\n  File "/x.py", line 1, in <module>\nValueError: bad\n',
        rank=3,
    )
    assert (row["rank"], row["rank_from"], row["exc_type"]) == (3, "file", "ValueError")


def test_an_nccl_hang_read_from_a_capture_is_a_hung_run_with_both_ranks_hung(tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    (job / "stderr.txt").write_text(NCCL_HANG)
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(job)], wh)
    con = pt2logs.connect(wh)
    ranks = {r["rank"]: r for r in run_named(con, "rank_outcomes", {}).to_pylist()}
    assert {k: (r["outcome"], r["evidence_line"]) for k, r in ranks.items()} == {
        0: ("hung", 2),
        1: ("hung", 3),
    }
    assert ranks[0]["why"] == "timed out in BROADCAST (timeout 600 s)"
    (run,) = run_named(con, "run_outcomes", {}).to_pylist()
    assert (run["outcome"], run["root_rank"], run["evidence_line"]) == ("hung", 0, 2)


def test_torchrun_tee_headers_keep_the_ranks_tracebacks_apart():
    rows = evidence(
        "[default0]:[rank0]: Traceback (most recent call last):\n"
        "[default1]:[rank1]: Traceback (most recent call last):\n"
        '[default1]:[rank1]:   File "/t.py", line 5, in <module>\n'
        '[default0]:[rank0]:   File "/t.py", line 9, in <module>\n'
        "[default1]:[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        "[default0]:[rank0]: RuntimeError: NCCL communicator was aborted on rank 0.\n"
    )
    assert [
        (r["rank"], r["local_rank"], r["kind"], r["exc_type"], r["location"]) for r in rows
    ] == [
        (1, 1, "oom", "torch.OutOfMemoryError", "/t.py:5 in <module>"),
        (0, 0, "exception", "RuntimeError", "/t.py:9 in <module>"),
    ]
