"""Every run's torch version, from the best source its logs have (issue 19, section 4).

Order (``kit.TORCH_SOURCES``): torch's ``torch_version`` artifact, the ``# torch version:`` line of an
``fx_graph_runnable`` payload (torch/_dynamo/repro/after_aot.py), ``compilation_metrics.pytorch_version``,
the counters dump's ``torch``, the torch installed where ``pt2logs run`` ran. The fixtures below gave
``torch ?`` before: the tlparse logs (torch 2.6-2.9 nightlies) have neither the artifact nor the metrics
field, only the repro payload. Expected versions are read from the files with a plain text search here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest
from tests.conftest import fixture_path

import pt2logs
from pt2logs.readers.documents.compile_debug import read_compile_debug
from pt2logs.readers.kit import FileContext, ReadStats


def _runs(wh: str) -> list[tuple]:
    con = duckdb.connect()
    return con.execute(
        f"SELECT torch_version, torch_version_from FROM read_parquet('{wh}/runs/**/*.parquet')"
    ).fetchall()


def _first(path: Path, pattern: str) -> str:
    """The first match of ``pattern``'s group in the file (or the folder's files), by a plain scan."""
    files = sorted(path.rglob("*.log")) if path.is_dir() else [path]
    for f in files:
        m = re.search(pattern, f.read_text(errors="replace"))
        if m:
            return m.group(1)
    raise AssertionError(f"{pattern} not in {path}")


REPRO = r"\n\t# torch version: (\S+)"


@pytest.mark.parametrize(
    "parts",
    [
        ("tlparse", "simple.log"),
        ("tlparse", "cache_hit_miss.log"),
        ("tlparse", "multi_rank_logs"),
        ("tlparse", "inductor_provenance_jit_log.txt"),
    ],
)
def test_logs_without_artifact_or_metrics_field_take_the_repro_payload(parts, tmp_path):
    src = fixture_path(*parts)
    text = "".join(
        f.read_text(errors="replace")
        for f in ([src] if src.is_file() else sorted(src.rglob("*.log")))
    )
    assert (
        '"torch_version"' not in text and '"pytorch_version"' not in text
    )  # why these showed "torch ?"
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(src)], wh)
    assert _runs(wh) == [(_first(src, REPRO), "repro_payload")]


def test_the_artifact_wins_over_payload_and_metrics(tmp_path):
    src = fixture_path("torch_logs", "trace_one_per_kind.log")
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(src)], wh)
    art = _first(src, r'"name": "torch_version".*\n\t\{\n\t"pytorch_version": "([^"]+)"')
    assert _runs(wh) == [(art, "torch_version_artifact")]


def test_a_gpu_run_folder_prefers_its_trace_to_its_counters(tmp_path):
    folder = fixture_path("gpu", "train_loop")
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(folder)], wh)
    assert _runs(wh) == [(_first(folder / "trace", REPRO), "repro_payload")]
    # the counters dump alone still names it
    wh2 = str(tmp_path / "wh2")
    pt2logs.ingest([str(folder / "counters.json")], wh2)
    assert _runs(wh2) == [(json.loads((folder / "counters.json").read_text())["torch"], "counters")]


def test_merge_keeps_the_better_source_in_any_order():
    def stats(v: str, src: str) -> ReadStats:
        s = ReadStats()
        s.note_torch(v, src)
        return s

    for order in (
        (("2.9", "counters"), ("2.8", "compilation_metrics")),
        (("2.8", "compilation_metrics"), ("2.9", "counters")),
    ):
        agg = ReadStats()
        for v, src in order:
            agg.merge(stats(v, src))
        assert (agg.torch_version, agg.torch_from) == ("2.8", "compilation_metrics")
    s = stats("2.8", "pt2logs_run")
    s.note_torch("  ", "torch_version_artifact")  # blank: not a version
    assert (s.torch_version, s.torch_from) == ("2.8", "pt2logs_run")


def test_a_torch_compile_debug_runnable_file_names_its_torch(tmp_path):
    """fx_graph_runnable.py is written by the same repro writer as the payload: take a real one out of a trace."""
    log = fixture_path("tlparse", "simple.log").read_text()
    start = log.index('{"artifact": {"name": "fx_graph_runnable"')
    body = log[log.index("\n", start) + 1 :]
    lines = []
    for line in body.split("\n"):
        if not line.startswith("\t"):
            break
        lines.append(line[1:])
    data = "\n".join(lines).encode()
    ctx = FileContext(
        file="torch_compile_debug/run_x/torchinductor/model__0_forward_1.0/fx_graph_runnable.py"
    )
    list(read_compile_debug([data], ctx))
    assert (ctx.stats.torch_version, ctx.stats.torch_from) == (
        _first(fixture_path("tlparse", "simple.log"), REPRO),
        "repro_payload",
    )


def test_pt2logs_run_records_the_installed_torch_last(tmp_path, wh):
    """A command that died before torch logged: the version is the one installed where pt2logs ran it."""
    import importlib.metadata

    from pt2logs.recording.capture import run_command

    res = run_command(["python", "-c", "import sys; sys.exit(3)"], wh, folder=str(tmp_path / "cap"))
    assert res.exit_code == 3
    assert _runs(wh) == [(importlib.metadata.version("torch"), "pt2logs_run")]


def test_runs_written_before_v3_still_show_their_torch(tmp_path):
    """A v2 runs file has no torch_version_from: the views read it as NULL, summary shows no source."""
    import pyarrow.parquet as pq

    from pt2logs.reports.compose import summary

    src = fixture_path("tlparse", "simple.log")
    wh = tmp_path / "wh"
    pt2logs.ingest([str(src)], str(wh))
    for f in (wh / "runs").rglob("*.parquet"):
        t = pq.read_table(f, partitioning=None)
        meta = dict(t.schema.metadata or {}) | {b"pt2logs.schema_version": b"2"}
        pq.write_table(t.drop_columns(["torch_version_from"]).replace_schema_metadata(meta), f)
    s = summary(pt2logs.connect(str(wh)))
    assert (s.overview["torch"], s.overview["torch_from"]) == (_first(src, REPRO), None)
