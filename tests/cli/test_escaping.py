"""Log text is shown as it is: never read as rich markup, emoji codes or markdown/HTML.

The warehouse holds one real TORCH_LOGS capture (the recompiles fixture) in a run folder named
``evil[/bold]run``, with three more recompiles whose guard-failure text looks like markup.
"""

from __future__ import annotations

import io
import shutil

import pytest
from click.testing import CliRunner
from tests.conftest import fixture_path

import pt2logs
from pt2logs.cli import main

GLOG = "V1122 09:45:00.{us:06d} 15437 torch/_dynamo/guards.py:5396] [9/{n}] [__recompiles] "
EVIL_REASONS = [
    "[rank0]: W1122 hello",
    "File [/home/alice/x.py] changed :fire:",
    "[/bold] <img onerror=alert(1)> a|b & c \\| d",
]


@pytest.fixture(scope="module")
def evil_wh(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("evil")
    run = (
        root / "in" / "evil[" / "bold]run"
    )  # the run folder `evil[/bold]run`, as the ingest root sees it
    run.mkdir(parents=True)
    log = run / "torch_logs.txt"
    shutil.copy(fixture_path("torch_logs", "recompiles.txt"), log)
    lines = []
    for n, reason in enumerate(EVIL_REASONS, start=1):
        head = GLOG.format(us=n, n=n)
        lines += [
            f"{head}Recompiling function evil_{n} in /home/alice/bench/workload.py:9{n}",
            f"{head}    triggered by the following guard failure(s):",
            f"{head}    - 9/0: {reason}",
        ]
    with open(log, "a") as f:
        f.write("\n".join(lines) + "\n")
    wh = str(root / "wh")
    res = pt2logs.ingest([str(root / "in")], wh)
    assert res.runs_new == 1 and res.errors == 0
    return wh


def cli(*args: str) -> str:
    r = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.stdout


@pytest.fixture(autouse=True)
def _wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")


def test_summary_shows_markup_like_text_as_it_is(evil_wh):
    out = cli("summary", "-w", evil_wh, "--rows", "100")
    assert out.startswith("evil[/bold]run  run ")
    assert "[rank0]: W1122 hello" in out
    assert "File [/home/alice/x.py] changed :fire:" in out
    assert "[/bold] <img onerror=alert(1)>" in out  # the summary cuts a cell at 38 characters
    assert "\\[" not in out  # shown, not escaped twice


def test_diff_shows_run_names_as_they_are(evil_wh):
    out = cli("diff", "evil", "evil", "-w", evil_wh)
    assert out.startswith("A evil[/bold]run (") and "→  B evil[/bold]run (" in out


def test_query_table_shows_values_and_names_as_they_are(evil_wh):
    out = cli(
        "query",
        'SELECT r.name AS "[bold]run[/bold]", c.reason FROM recompiles c JOIN runs r USING (run_id) '
        "WHERE c.compile_id LIKE '9/%' ORDER BY c.compile_id",
        "-w",
        evil_wh,
    )
    lines = out.splitlines()
    assert lines[0].split() == ["[bold]run[/bold]", "reason"]
    assert [ln.split("  ")[0] for ln in lines[1:4]] == ["evil[/bold]run"] * 3
    for reason, line in zip(EVIL_REASONS, lines[1:4]):
        assert line.rstrip().endswith(reason), (reason, line)


def test_markdown_cells_are_escaped(evil_wh):
    out = cli(
        "query",
        "SELECT reason || chr(10) || 'next line' AS \"a|b\" FROM recompiles WHERE compile_id = '9/3'",
        "-w",
        evil_wh,
        "-f",
        "markdown",
    )
    assert out.splitlines() == [
        "| a\\|b |",
        "|---|",
        "| [/bold] &lt;img onerror=alert(1)> a\\|b &amp; c \\\\\\| d next line |",
    ]


def test_the_progress_bar_shows_paths_as_they_are():
    from rich.console import Console

    from pt2logs.cli.progress import IngestProgress

    buf = io.StringIO()
    with IngestProgress(True, console=Console(file=buf, force_terminal=True, width=120)) as p:
        p.update("start", {"bytes": 10, "runs": 1})
        p.update("file", {"bytes": 5, "path": "/data/evil[/bold]run/torch_logs.txt"})
    assert "evil[/bold]run" in buf.getvalue()
