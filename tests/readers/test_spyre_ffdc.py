"""Torch-Spyre as it logs today: FFDC failure reports (TORCH_SPYRE_FFDC=1) and the deprecated
SPYRE_INDUCTOR_LOG ``[LEVEL] [module] msg`` lines, read in the same capture as everything else.

The inputs (tests/inputs/spyre_ffdc/) are built as torch-spyre's source writes and prints them;
make_inputs.py there cites the files and commits. Expected values are read from the inputs themselves.
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime
from pathlib import Path

import pytest

import pt2logs
from pt2logs.readers import FORMATS, detect
from pt2logs.readers.kit import FileContext
from pt2logs.readers.spyre import SPYRE_FFDC, read_ffdc, read_spyre_log, sniff_spyre_log
from pt2logs.readers.spyre.ffdc import ffdc_anchor
from pt2logs.reports.compose import summary

JOB = Path(__file__).resolve().parents[1] / "inputs" / "spyre_ffdc" / "job"
REPORTS = sorted((JOB / "ffdc_reports").glob("ffdc_*.json"))
CAPTURE = JOB / "spyre_stderr.txt"


def read(reader, data: bytes, name: str = "r.json") -> tuple[dict[str, list[dict]], FileContext]:
    ctx = FileContext(file=name, path=f"/x/{name}")
    out: dict[str, list[dict]] = {}
    for table, batch in reader(iter([data]), ctx):
        out.setdefault(table, []).extend(batch.to_pylist())
    return out, ctx


def test_the_inputs_are_there() -> None:
    assert len(REPORTS) == 3 and CAPTURE.is_file()


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.name)
def test_each_report_is_one_row_with_its_sections(path: Path) -> None:
    doc = json.loads(path.read_bytes())
    assert detect(path.read_bytes()[: 64 << 10], path.name) is FORMATS["spyre_ffdc"] is SPYRE_FFDC
    out, ctx = read(read_ffdc, path.read_bytes(), path.name)
    assert ctx.stats.errors == 0 and "ingest_errors" not in out
    (row,) = out["spyre_failure_reports"]
    fail, meta = doc["failure"], doc["metadata"]
    assert row["category"] == fail["category"] and path.name.startswith(f"ffdc_{fail['category']}_")
    assert row["exc_type"] == fail["exception_type"] and row["exc_message"] == fail["message"]
    assert row["traceback"] == fail["traceback"]
    assert row["raise_line"] == fail.get("lineno")
    assert (row["raise_file"] is None) == ("file" not in fail)
    if "file" in fail:  # package-relative: the same on every install
        assert fail["file"].endswith("/" + row["raise_file"]) and row["raise_file"].startswith(
            "torch_spyre/"
        )
    assert row["ts"] == datetime.fromisoformat(meta["timestamp"])
    assert (
        row["pid"] == meta["pid"]
        and row["host"] == meta["host"]
        and row["torch_version"] == meta["torch_version"]
    )
    assert row["python_version"] == meta["python_version"].split()[0]
    assert (
        row["kernel_name"] == doc["runtime"]["kernel_name"]
        and row["code_dir"] == doc["runtime"]["code_dir"]
    )
    assert json.loads(row["environment"]) == doc["environment"]
    assert row["spyre_available"] is doc["hardware_state"]["spyre_available"]
    assert row["hardware_note"] == doc["hardware_state"].get("note")
    assert row["artifact_paths"] == doc["artifacts"].get("paths") and row["artifacts_error"] == doc[
        "artifacts"
    ].get("error")
    assert row["completeness_pct"] == doc["collector"]["completeness_pct"]
    assert (
        row["collector_errors"] == doc["collector"]["collector_errors"]
        and row["capture_ok"] is doc["collector"]["success"]
    )
    # the user frame of the traceback, by the failures rule
    user = [
        m
        for m in re.findall(r'File "([^"]+)", line (\d+)', fail["traceback"])
        if "site-packages" not in m[0]
    ]
    assert (row["frame_file"], row["frame_line"]) == (user[-1][0], int(user[-1][1]))
    assert row["other"] is None


def test_failure_identity_masks_what_varies() -> None:
    rows = [read(read_ffdc, p.read_bytes())[0]["spyre_failure_reports"][0] for p in REPORTS]
    by_msg: dict[str, set] = {}
    for r in rows:
        by_msg.setdefault(re.sub(r"\d+", "N", r["exc_message"]), set()).add(r["failure_key"])
    assert all(len(keys) == 1 for keys in by_msg.values())  # same message shape, same identity
    assert len({r["failure_key"] for r in rows}) == len(by_msg) == 2


def test_damaged_reports_are_errors_never_lost() -> None:
    data = REPORTS[0].read_bytes()
    out, ctx = read(read_ffdc, data[: len(data) // 2])
    assert "spyre_failure_reports" not in out and [e["kind"] for e in out["ingest_errors"]] == [
        "bad_json"
    ]
    out, _ = read(read_ffdc, b"[" + data + b"]")
    assert [e["kind"] for e in out["ingest_errors"]] == ["not_an_object"]
    doc = json.loads(data)
    doc["failure"]["category"] = 7
    doc["future_section"] = {"x": 1}
    out, _ = read(read_ffdc, json.dumps(doc, indent=2).encode())
    (row,) = out["spyre_failure_reports"]
    assert row["category"] is None and json.loads(row["other"]) == {"future_section": {"x": 1}}
    assert [e["kind"] for e in out["ingest_errors"]] == ["no_category"]


def test_the_report_folder_belongs_to_the_run_above_it() -> None:
    assert ffdc_anchor("/in/job/ffdc_reports", "/in") == "/in/job"
    assert ffdc_anchor("/in/job/torchinductor_alice/torch-spyre/ffdc_reports", "/in") == "/in/job"
    assert ffdc_anchor("/in/job/torch-spyre-ffdc", "/in/job") == "/in/job"
    assert (
        ffdc_anchor("/in/ffdc_reports", "/in/ffdc_reports") is None
    )  # the root itself: no folder above it
    assert ffdc_anchor("/in/job/reports", "/in") is None


def _spyre_capture_lines() -> list[str]:
    """The capture's torch-spyre lines, told apart independently of the reader: a level in brackets
    and a logger or module in brackets."""
    return [
        ln for ln in CAPTURE.read_text().splitlines() if re.match(r"^\[[A-Z]+\] \[[\w.]+\] ", ln)
    ]


def test_spyre_inductor_log_lines_are_spyre_rows() -> None:
    data = CAPTURE.read_bytes()
    assert detect(data, CAPTURE.name) is FORMATS["spyre_log"]
    out, ctx = read(read_spyre_log, data, CAPTURE.name)
    msgs = out["spyre_messages"]
    assert [m["message"] for m in msgs] == [
        re.sub(r"^\[[A-Z]+\] \[[\w.]+\] (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \w+: )?", "", ln)
        for ln in _spyre_capture_lines()
    ]
    module = [ln for ln in _spyre_capture_lines() if re.match(r"^\[[A-Z]+\] \[\w+\] ", ln)]
    assert [(m["level"], m["component"]) for m in msgs if m["shape"] == "module"] == [
        tuple(re.match(r"^\[([A-Z]+)\] \[(\w+)\]", ln).groups()) for ln in module
    ]
    runs = [ln.split("RUN: ", 1)[1].split() for ln in module if "RUN: " in ln]
    assert [(k["kernel_name"], k["launch_arg"]) for k in out["kernel_launches"]] == [
        tuple(r) for r in runs
    ] and runs
    # the passes' elapsed times (passes.py: "elapsed %5dms  %s") are spyre_timing rows
    passes = [
        re.search(r"elapsed +(\d+)ms  (\w+)$", ln).groups()
        for ln in _spyre_capture_lines()
        if "] elapsed " in ln
    ]
    assert [(t["step"], t["inclusive_ns"]) for t in out["spyre_timing"]] == [
        (p, int(ms) * 10**6) for ms, p in passes
    ]
    assert len(passes) == 3
    # torch's lines went to the TORCH_LOGS reader, the rest are foreign log lines: every line has a row
    assert len(out["recompiles"]) == 1
    n_lines = len(data.decode().splitlines())
    kept = len(msgs) + sum(ln["n_lines"] for ln in out["log_lines"])
    assert kept == n_lines


def test_sniffing_module_lines() -> None:
    assert sniff_spyre_log(
        b"[INFO] [kernel_runner] RUN: sdsc_fused_add_0_0 /tmp/x/g2.graph.cbor\n", "err.txt"
    )
    assert not sniff_spyre_log(
        b"[INFO] [server] started on port 80\n[INFO] [server] ready\n", "err.txt"
    )
    # another program's [LEVEL] [name] line in a Spyre capture stays a foreign line
    out, ctx = read(
        read_spyre_log,
        b"[INFO] [kernel_runner] RUN: k_0 /tmp/k/g2.graph.cbor\n[INFO] [vllm] unrelated\n",
    )
    assert [m["component"] for m in out["spyre_messages"]] == ["kernel_runner"] and ctx.stats.kinds[
        "foreign"
    ] == 1


@pytest.fixture(scope="module")
def job_wh(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    tmp = tmp_path_factory.mktemp("ffdc")
    shutil.copytree(JOB, tmp / "job")
    shutil.copy(CAPTURE, tmp / "plain_stderr.txt")
    wh = str(tmp / "wh")
    pt2logs.ingest([str(tmp / "job")], wh)
    pt2logs.ingest([str(tmp / "plain_stderr.txt")], wh)
    return wh, tmp


def test_reports_join_the_run_of_their_capture(job_wh: tuple[str, Path]) -> None:
    wh, tmp = job_wh
    con = pt2logs.connect(wh)
    job = con.sql("SELECT run_id FROM runs WHERE name = 'job'").fetchall()
    assert len(job) == 1
    formats = con.sql(
        "SELECT format, count(*) FROM files WHERE run_id = ? GROUP BY 1 ORDER BY 1",
        params=[job[0][0]],
    ).fetchall()
    assert formats == [("spyre_ffdc", len(REPORTS)), ("spyre_log", 1)]
    got = con.sql(
        "SELECT run_id, category, exc_message FROM spyre_failure_reports ORDER BY ts"
    ).fetchall()
    docs = sorted(
        (json.loads(p.read_bytes()) for p in REPORTS), key=lambda d: d["metadata"]["timestamp"]
    )
    assert got == [(job[0][0], d["failure"]["category"], d["failure"]["message"]) for d in docs]
    # user frames are relative to the run's root, like every failure's
    assert {r[0] for r in con.sql("SELECT frame_file FROM spyre_failure_reports").fetchall()} == {
        "run_model.py"
    }


def test_summary_shows_reports_only_where_present(job_wh: tuple[str, Path]) -> None:
    wh, _ = job_wh
    con = pt2logs.connect(wh)
    with_reports = summary(con, "job")
    (t,) = [t for k, _, t in with_reports.sections if k == "spyre_failures"]
    rows = t.to_pylist()
    assert sum(r["reports"] for r in rows) == len(REPORTS)
    assert {r["category"] for r in rows} == {
        json.loads(p.read_bytes())["failure"]["category"] for p in REPORTS
    }
    without = summary(con, "plain_stderr")
    assert "spyre_failures" not in [k for k, _, _ in without.sections]


def test_run_page_has_a_card_only_where_present(job_wh: tuple[str, Path]) -> None:
    from pt2logs.dashboard import page

    wh, _ = job_wh
    con = pt2logs.connect(wh)
    cards = {c.key: c for c in page.build(con, run="job", warehouse=wh).cards}
    card = cards["spyre_failures"]
    assert card.error is None and card.spec is not None
    assert sum(card.data.column("reports").to_pylist()) == len(REPORTS)
    assert "spyre_failures" not in {
        c.key for c in page.build(con, run="plain_stderr", warehouse=wh).cards
    }
