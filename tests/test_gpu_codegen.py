"""AOTInductor and kernel provenance on a real GPU (torch 2.11.0+cu130 on an H200, issue 35):
tests/inputs/gpu_aoti_segfault (export + aoti_compile_and_package; the process died with SIGSEGV after
the AOT compile) and tests/inputs/gpu_provenance (provenance_tracking_level = 1). Figures are read from
the captures here, not written down."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

import pt2logs
from pt2logs.query.queries import run_named

INPUTS = Path(__file__).parent / "inputs"


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory):
    wh = str(tmp_path_factory.mktemp("gpu") / "wh")
    for name in ("gpu_aoti_segfault", "gpu_provenance"):
        pt2logs.ingest([str(INPUTS / name)], wh, run_id=name)
    return pt2logs.connect(wh)


def _trace(name: str) -> str:
    (f,) = (INPUTS / name / "trace").glob("*.log.gz")
    return gzip.decompress(f.read_bytes()).decode()


def test_an_aot_compile_counts_its_time_and_kernels(con) -> None:
    text = _trace("gpu_aoti_segfault")
    # the compile_fx_aot span, begun and ended in the trace's chromium events (ts in µs)
    begin, end = (
        float(t) for t in re.findall(r'"name": "compile_fx_aot",\n\t"ts": ([\d.]+),', text)
    )
    (row,) = run_named(con, "aot_compiles", {"run_id": "gpu_aoti_segfault"}).to_pylist()
    assert row["kind"] == "aot_inductor" and row["compile_s"] == pytest.approx(
        (end - begin) / 1e6, abs=0.01
    )
    kernels = set(re.findall(r"def (triton_\w+)\(", text)) | set(
        re.findall(r"(triton_\w+)\s*=\s*async_compile", text)
    )
    assert row["kernels"] == max(len(kernels), 1)
    # the compile ended (its span closed): the crash came after it, and no exit status was logged
    (out,) = run_named(con, "run_outcomes", {"run_id": "gpu_aoti_segfault"}).to_pylist()
    assert out["outcome"] == "unknown" and "inside" not in (out["why"] or "")


def test_kernel_provenance_names_the_user_lines(con) -> None:
    script = (INPUTS / "gpu_scripts" / "cudagraphs_aoti_provenance.py").read_text().splitlines()
    rows = run_named(con, "kernel_provenance", {"run_id": "gpu_provenance"}).to_pylist()
    assert rows, "no provenance rows"
    # each user line the kernels came from is a line of the compiled function `p` in the script
    code = {str(i + 1): script[i].strip() for i in range(len(script))}
    assert {r["user_code"] for r in rows} == {
        "y = x @ w",
        "return torch.nn.functional.silu(y) + y.mean()",
    }
    # (the script was formatted after the run: its line numbers moved, its lines did not change)
    assert all(r["user_code"] in code.values() for r in rows)
    assert {r["user_func"] for r in rows} == {"p"}
