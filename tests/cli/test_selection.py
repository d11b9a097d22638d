"""A selection that names no run is a mistake, said as one (issue 30 item 3): --run / RUN / --tag that
match no run of the warehouse are usage errors (status 2) naming the closest runs or tags, in every
command that takes them; a time window with no runs is an answer (status 0). And an ingest that found
no log says so, with a hint; --strict fails on it."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from tests.conftest import SAMPLES

from pt2logs.cli import main


@pytest.fixture(scope="module")
def tagged_wh(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Three sample runs, two of them tagged: ingested once for the module, only read."""
    wh = str(tmp_path_factory.mktemp("selection") / "wh")
    for run, tag in (
        ("recompiles", "model=llama"),
        ("graph_breaks", "model=mistral"),
        ("ddp_2rank", None),
    ):
        args = ["ingest", str(SAMPLES / run), "-w", wh, "-q", "-j", "1"] + (
            ["--tag", tag] if tag else []
        )
        assert CliRunner().invoke(main, args, catch_exceptions=False).exit_code == 0
    return wh


def cli(wh: str, *args: str):
    if (
        args[0] == "ingest"
    ):  # in this process: no pool forked from a test process that holds threads
        args = (*args, "-j", "1")
    return CliRunner().invoke(main, [*args, "-w", wh], catch_exceptions=False)


NO_RUN = [  # (command, what the error must name)
    (["query", "recompile_list", "--run", "recompils"], "closest runs: recompiles ("),
    (["query", "recompile_list", "-p", "run_id", "graph_brk"], "closest runs: graph_breaks ("),
    (["query", "graph_break_hotspots", "--run", "zzzz", "-f", "csv"], "newest runs: "),
    (["summary", "ddp_2rnak"], "closest runs: ddp_2rank ("),
    (["ranks", "ddp_2rnak"], "closest runs: ddp_2rank ("),
    (["advise", "recompils"], "closest runs: recompiles ("),
    (["diff", "recompiles", "grph_breaks"], "closest runs: graph_breaks ("),
    (["bundle", "recompils"], "closest runs: recompiles ("),
    (["export", "perfetto", "recompils", "-o", "-"], "closest runs: recompiles ("),
    (["dashboard", "--run", "recompils", "-o", "/dev/null"], "closest runs: recompiles ("),
]


@pytest.mark.parametrize(
    "args,names", NO_RUN, ids=[" ".join(a[:2]) + f" {i}" for i, (a, _) in enumerate(NO_RUN)]
)
def test_a_run_that_matches_nothing_is_a_usage_error(tagged_wh, args, names):
    r = cli(tagged_wh, *args)
    assert r.exit_code == 2, r.output
    assert "no run matches" in r.output and names in r.output, r.output


TAG = [
    (
        ["query", "runs", "--tag", "model=lama"],
        "no run has the tag model=lama; closest: model=llama",
    ),
    (["query", "recompile_list", "--tag", "modle=mistral"], "closest: model=mistral"),
    (
        ["query", "runs", "--run", "recompiles", "--tag", "model=mistral"],
        "no run matching 'recompiles' has the tag",
    ),
    (["dashboard", "--tag", "model=lama", "-o", "/dev/null"], "closest: model=llama"),
    (["export", "perfetto", "--tag", "model=lama", "-o", "-"], "closest: model=llama"),
]


@pytest.mark.parametrize("args,says", TAG, ids=[f"{a[0]} {i}" for i, (a, _) in enumerate(TAG)])
def test_a_tag_that_matches_nothing_is_a_usage_error(tagged_wh, args, says):
    r = cli(tagged_wh, *args)
    assert r.exit_code == 2 and says in r.output, r.output


def test_selections_that_match_still_answer(tagged_wh):
    r = cli(tagged_wh, "query", "runs", "--tag", "model=llama", "-f", "csv")
    assert r.exit_code == 0 and r.output.count("\n") == 2 and "recompiles" in r.output
    r = cli(tagged_wh, "query", "runs", "--run", "r", "-f", "csv")  # a prefix of one name
    assert r.exit_code == 0 and "recompiles" in r.output
    assert (
        cli(
            tagged_wh, "query", "recompile_list", "-p", "run_id", "recompiles", "-f", "csv"
        ).exit_code
        == 0
    )


def test_a_time_window_with_no_runs_is_an_empty_answer(tagged_wh):
    """The samples ran in 2026-11; a window after the newest run is legitimately empty."""
    r = cli(tagged_wh, "query", "runs", "--since", "2099-01-01", "-f", "csv")
    assert r.exit_code == 0 and r.output.count("\n") == 1, r.output  # the header only
    r = cli(
        tagged_wh,
        "query",
        "graph_break_hotspots",
        "--until",
        "2000-01-01",
        "--tag",
        "model=llama",
        "-f",
        "csv",
    )
    assert r.exit_code == 0, r.output


def test_an_empty_warehouse_says_so(tmp_path):
    wh = str(tmp_path / "wh")
    (tmp_path / "empty").mkdir()
    assert (
        cli(wh, "ingest", str(tmp_path / "empty")).exit_code == 0
    )  # the warehouse exists, with no run
    r = cli(wh, "query", "runs", "--run", "x")
    assert r.exit_code == 2 and "the warehouse has no runs yet" in r.output


def test_ingest_of_an_empty_folder_says_so(tmp_path):
    (tmp_path / "empty").mkdir()
    r = cli(str(tmp_path / "wh"), "ingest", str(tmp_path / "empty"))
    assert r.exit_code == 0
    assert "note: no log found in" in r.output and "there is no file in it" in r.output
    assert "pt2logs formats" in r.output and "torch_trace" in r.output
    r = cli(str(tmp_path / "wh"), "ingest", str(tmp_path / "empty"), "--strict")
    assert r.exit_code == 1 and "error: no log found in" in r.output


def test_ingest_strict_of_a_folder_without_logs_fails(tmp_path):
    d = tmp_path / "notes"
    d.mkdir()
    (d / "README.md").write_text((SAMPLES / "README.md").read_text())
    (d / "generate.py").write_text((SAMPLES / "generate.py").read_text())
    r = cli(str(tmp_path / "wh"), "ingest", str(d))
    assert r.exit_code == 0 and "2 files skipped as not a recognised log format" in r.output
    assert "README.md: not a recognised log format" in r.output
    r = cli(str(tmp_path / "wh"), "ingest", str(d), "--strict")
    assert r.exit_code == 1 and "error: no log found" in r.output


def test_ingest_strict_of_unchanged_logs_still_passes(tmp_path):
    wh = str(tmp_path / "wh")
    assert cli(wh, "ingest", str(SAMPLES / "compile_failure"), "--strict").exit_code == 0
    r = cli(wh, "ingest", str(SAMPLES / "compile_failure"), "--strict")
    assert r.exit_code == 0 and "1 unchanged" in r.output and "no log found" not in r.output
