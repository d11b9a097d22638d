"""The commands about one run import only what they use (issue 36: a summary of a small warehouse paid ~0.1 s of
CPU importing every reader, Spyre's regexes included, for two lists of format names the outcome rules take).

The macros' fills (SQL made from Python facts: the registry's format lists, the advice table) are made once per
code and kept beside the snapshot catalogs (pt2logs.query.kept_files); a command whose catalog and fills are kept
imports neither the readers nor the advice rules; and none imports fsspec or pyarrow's Parquet module (a local
warehouse is read through DuckDB). Each case runs the real CLI in a fresh interpreter and looks at
``sys.modules`` when the command is done.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")

#: a fresh interpreter runs commands through the CLI's group, then prints the modules it holds
PROBE = """
import json, sys
from pt2logs.cli import main
for args in json.loads(sys.argv[1]):
    main(args, prog_name="pt2logs", standalone_mode=False)
sys.stdout.write("\\nPROBE " + json.dumps(sorted(sys.modules)) + "\\n")
"""


def _modules(cache: Path, *commands: list[str]) -> set[str]:
    env = {
        **os.environ,
        "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "PT2LOGS_CACHE": str(cache),
    }
    env.pop("PT2LOGS_VIEWS_CACHE", None)
    p = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(list(commands))],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    line = [x for x in p.stdout.splitlines() if x.startswith("PROBE ")][-1]
    return set(json.loads(line[len("PROBE ") :]))


@pytest.fixture(scope="module")
def after_first(sample_wh: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[set, set]:
    """The modules of a first summary (catalog and fills made), then of summary, ranks, advise and diff after it
    (both kept), in one interpreter each."""
    cache = tmp_path_factory.mktemp("cache")
    w = ["--warehouse", sample_wh]
    first = _modules(cache, ["summary", "recompiles", *w, "-f", "json"])
    later = _modules(
        cache,
        ["summary", "recompiles", *w, "-f", "json"],
        ["ranks", "ddp_2rank", *w, "-f", "json"],
        ["advise", "recompiles", *w, "-f", "json"],
        ["diff", "graph_breaks", "recompiles", *w, "-f", "json"],
    )
    return first, later


def test_a_kept_catalog_needs_no_reader(after_first):
    first, later = after_first
    # the first one made the fills from the registry (the readers imported once per code)...
    assert "pt2logs.readers" in first
    # ...the later ones read them back: no reader, no registry, no Spyre regexes, no advice table
    assert not [m for m in later if m.startswith("pt2logs.readers")]
    assert "pyarrow.compute" not in later
    # nor what only writing or a remote warehouse needs: fsspec (pt2logs.store.local_files), pyarrow's Parquet
    assert "fsspec" not in later and "fsspec" not in first
    assert "pyarrow.parquet" not in later


def test_fills_kept_are_the_fills_made(tmp_path, monkeypatch):
    """What a later process reads back is what the facts make (one file per code stamp)."""
    from pt2logs.query import kept_files, macros

    monkeypatch.setenv(kept_files.ENV, str(tmp_path))
    made = {name: make() for name, (_, make) in macros.FILLS.items()}
    assert kept_files.kept_texts("fills", lambda: made) == made
    assert [p.name for p in tmp_path.glob("fills-*.json")] == [
        f"fills-{kept_files.code_stamp()}.json"
    ]
    # read back, not made again
    assert kept_files.kept_texts("fills", lambda: {}) == made
    # a damaged file is made again, never an error
    next(tmp_path.glob("fills-*.json")).write_text("{not json")
    assert kept_files.kept_texts("fills", lambda: made) == made
