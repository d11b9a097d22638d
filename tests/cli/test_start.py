"""The command line starts light: `pt2logs --help` and `pt2logs CMD --help` import none of the heavy libraries.

Start time is what every command costs before it does anything (issue 36: `pt2logs --help` was 0.4-0.7 s, the
CLI pulling in the readers, ingestion, DuckDB and pyarrow before a command was chosen). Each command imports what
it needs inside its body; these tests run the real console entry in a fresh interpreter and look at
``sys.modules`` when it exits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")

#: the libraries a command's start must not pay for
HEAVY = ("pyarrow", "duckdb", "polars", "torch", "altair", "numpy", "pandas", "fsspec", "rich")

#: the commands whose --help is checked, each after the one before in one fresh interpreter (a subprocess each
#: cost seconds on a loaded machine); the heavy libraries are read after each, so a failure names the command
HELPS = [
    ["--help"],
    ["--version"],
    *(
        [cmd, "--help"]
        for cmd in (
            "ingest",
            "run",
            "summary",
            "advise",
            "query",
            "diff",
            "ranks",
            "dashboard",
            "serve",
        )
    ),
]

#: a fresh interpreter runs the CLI's group, as the console script does, for each argument list in turn
PROBE = """
import json, sys
heavy, helps = set(sys.argv[1].split(",")), json.loads(sys.argv[2])
from pt2logs.cli import main
got = []
for args in helps:
    main(args, prog_name="pt2logs", standalone_mode=False)
    got.append({
        "args": args,
        "heavy": sorted({m.split(".")[0] for m in sys.modules} & heavy),
        "pt2logs": sorted(m for m in sys.modules if m.startswith("pt2logs.")),
    })
sys.stdout.write("\\nPROBE " + json.dumps(got) + "\\n")
"""


@pytest.fixture(scope="module")
def loaded() -> list[dict]:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.run(
        [sys.executable, "-c", PROBE, ",".join(HEAVY), json.dumps(HELPS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    line = [x for x in p.stdout.splitlines() if x.startswith("PROBE ")][-1]
    return json.loads(line[len("PROBE ") :])


def test_help_imports_no_heavy_library(loaded):
    first = loaded[0]
    assert first["args"] == ["--help"]
    assert first["heavy"] == []
    # nor the pipeline: reading, ingesting, querying are loaded by the command that does them
    for stage in ("readers", "ingestion", "query", "store.warehouse", "inputs", "tables"):
        assert not [m for m in first["pt2logs"] if m.startswith(f"pt2logs.{stage}")], stage


def test_no_commands_help_imports_a_heavy_library(loaded):
    assert len(loaded) == len(HELPS)
    assert [(x["args"], x["heavy"]) for x in loaded] == [(args, []) for args in HELPS]
