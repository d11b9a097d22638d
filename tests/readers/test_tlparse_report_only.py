"""A tlparse output folder without its raw log (issue 33 item 8): one clear message, not one "not a recognised
log format" line per report file. The folder is real tlparse (0.4.3) output of a real trace, with raw.jsonl
and raw.log removed as a copy that kept only the HTML report would."""

from __future__ import annotations

from tests.conftest import fixture_path
from tests.readers.test_tlparse_dir import tlparse

from pt2logs.inputs.discover import discover


def test_a_report_folder_without_its_raw_log_is_one_message(tmp_path):
    _, out = tlparse([fixture_path("tlparse", "comp_metrics.log")], tmp_path)
    for p in [*out.rglob("raw.jsonl"), *out.rglob("raw.log")]:
        p.unlink()
    n_files = sum(1 for p in out.rglob("*") if p.is_file())
    assert n_files > 10
    res = discover([str(tmp_path / "out")])
    assert res.runs == []
    (skip,) = res.skipped
    assert skip[0].endswith("tl_out") and skip[1].startswith(
        f"tlparse report folder without its raw log: {skip[0]}"
    )
    assert f"({n_files} report file(s) not read" in skip[1]


def test_the_same_folder_with_its_raw_log_is_still_a_run(tmp_path):
    _, out = tlparse([fixture_path("tlparse", "comp_metrics.log")], tmp_path)
    res = discover([str(tmp_path / "out")])
    assert [p.files[0].fmt.name for p in res.runs] == ["tlparse_dir"]
