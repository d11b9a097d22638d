"""The warehouse the serve tests share: the sample traces, a GPU run that recompiles (shared fixtures,
when present), and a trace whose names, reasons, failure and tag carry XSS payloads (tests/browser/fleet.py);
and the app over it, served on a free port of 127.0.0.1 from a thread."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.browser import fleet as fl
from tests.conftest import FIXTURES, SAMPLES, shared_dir

import pt2logs

GPU_RECOMPILES = FIXTURES / "gpu" / "recompile_causes"
_SITES: dict[str, str] = {}


def warehouse(tmp_path_factory: Any) -> str:
    """The shared warehouse, ingested once per test session for every xdist worker (``shared_dir``:
    five files read it). Tests only read it."""
    if "wh" not in _SITES:
        _SITES["wh"] = str(shared_dir("serve_site", _make) / "wh")
    return _SITES["wh"]


def _make(base: Path) -> None:
    wh = str(base / "wh")
    pt2logs.ingest([str(SAMPLES)], wh)
    if GPU_RECOMPILES.is_dir():
        pt2logs.ingest([str(GPU_RECOMPILES)], wh)
    fl.xss_trace(
        base / "evil" / f"evil{fl.IMG}" / "trace" / "dedicated_log_torch_trace_evil.log",
        fl.SAMPLE_DAY,
    )
    pt2logs.ingest([str(base / "evil")], wh, tags={"model": f"evil{fl.SCRIPT}"})


def app(wh: str) -> Any:
    from pt2logs.cli.outputs import OUTPUT_FORMATS
    from pt2logs.serve.app import create_app

    return create_app(wh, {"json": OUTPUT_FORMATS["json"], "csv": OUTPUT_FORMATS["csv"]})


def evil_run(wh: str) -> str:
    con = pt2logs.connect(wh)
    return con.execute("SELECT run_id FROM runs WHERE name LIKE 'evil%'").fetchall()[0][0]
