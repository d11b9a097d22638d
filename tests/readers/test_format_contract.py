"""The contract every registered format keeps (readers/kit.py), checked for each entry of the registry.

For every format: it recognises its own real example and refuses every other format's; its reader
gives the same rows whatever the chunk sizes (down to a few bytes); a damaged copy is still read
(never raises) and the damage is recorded in ``ingest_errors`` with the file and a line number where
the format has lines. A format added to ``pt2logs.readers.ORDER`` without an example here fails
``test_every_format_has_an_example``: add its fixture to EXAMPLES.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import FIXTURES, fixture_path
from tests.readers.test_compile_debug import output_code_modules

from pt2logs.readers import DOCUMENT, FORMATS, ORDER, Format, detect, named
from pt2logs.readers.kit import FileContext


def _fixture(*parts: str) -> Callable[[Path], tuple[str, bytes, dict[str, bytes]]]:
    def make(tmp: Path) -> tuple[str, bytes, dict[str, bytes]]:
        p = fixture_path(*parts)
        return p.name, p.read_bytes(), {}

    return make


def _output_code(tmp: Path) -> tuple[str, bytes, dict[str, bytes]]:
    """A real generated module: the first one of the TORCH_LOGS=output_code capture."""
    return "output_code.py", output_code_modules()[0].encode(), {}


def _tlparse_raw(tmp: Path) -> tuple[str, bytes, dict[str, bytes]]:
    """raw.jsonl of a real tlparse 0.4.3 run on a real trace, with its payload files as siblings."""
    exe = shutil.which("tlparse") or str(Path(sys.executable).parent / "tlparse")
    if not Path(exe).exists():
        pytest.skip("tlparse CLI not installed")
    out = tmp / "tl_out"
    subprocess.run(
        [
            exe,
            str(fixture_path("tlparse", "simple.log")),
            "-o",
            str(out),
            "--overwrite",
            "--no-browser",
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    siblings = {
        str(p.relative_to(out)): p.read_bytes()
        for p in out.rglob("*")
        if p.is_file() and p.name != "raw.jsonl"
    }
    return "raw.jsonl", (out / "raw.jsonl").read_bytes(), siblings


def _job_stderr(tmp: Path) -> tuple[str, bytes, dict[str, bytes]]:
    """The stderr of a real Python program that dies of an exception (no torch log line in it)."""
    p = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json\nprint('starting', flush=True)\njson.loads('{not json')",
        ],
        capture_output=True,
        timeout=60,
    )
    return "stderr.txt", p.stderr, {}


def _run_record(tmp: Path) -> tuple[str, bytes, dict[str, bytes]]:
    """pt2logs_run.json of a real `pt2logs run` of a command that fails before torch is imported."""
    from pt2logs.recording.capture import run_command

    res = run_command(
        [sys.executable, "-c", "import sys; print('no torch here', file=sys.stderr); sys.exit(2)"],
        str(tmp / "wh"),
        echo=io.BytesIO(),
    )
    return (
        "pt2logs_run.json",
        (res.folder / "pt2logs_run.json").read_bytes(),
        {"torch_logs.txt": (res.folder / "torch_logs.txt").read_bytes()},
    )


def _ffdc_report(tmp: Path) -> tuple[str, bytes, dict[str, bytes]]:
    """An FFDC report as torch-spyre's collect() writes it (tests/inputs/spyre_ffdc/make_inputs.py says how)."""
    p = Path(__file__).resolve().parents[1] / "inputs" / "spyre_ffdc" / "job" / "ffdc_reports"
    f = next(p.glob("ffdc_runtime_launch_*.json"))
    return f.name, f.read_bytes(), {}


def _vllm_log(tmp: Path) -> tuple[str, bytes, dict[str, bytes]]:
    """vLLM 0.10's stdout, reconstructed from vLLM's format strings (tests/vllm_inputs.py: no vLLM run here)."""
    from tests.vllm_inputs import capture

    return "stdout.txt", capture(), {}


#: one real example per registered format
EXAMPLES: dict[str, Callable[[Path], tuple[str, bytes, dict[str, bytes]]]] = {
    "torch_trace": _fixture("tlparse", "simple.log"),
    "spyre_log": _fixture("spyre", "issue_excerpts.txt"),
    "spyre_kernel_spec": _fixture("spyre", "constructed", "sdsc_0.json"),
    "spyre_timing": _fixture("spyre", "constructed", "rec.12345.json"),
    "spyre_ffdc": _ffdc_report,
    "tlparse_dir": _tlparse_raw,
    "compile_debug": _output_code,
    "counters_json": _fixture("torch_logs", "counters.json"),
    "compile_times": _fixture("torch_logs", "compile_times.txt"),
    "torch_logs": _fixture("torch_logs", "recompiles.txt"),
    "run_record": _run_record,
    "vllm_log": _vllm_log,
    "job_stderr": _job_stderr,
}
#: formats read as one whole document (their role says so): damage is recorded without a line number
DOCUMENTS = set(named(DOCUMENT))

needs_fixtures = pytest.mark.skipif(not FIXTURES.is_dir(), reason="shared fixtures not present")


def read_all(
    fmt: Format, name: str, data: bytes, siblings: dict[str, bytes], chunk: int | None = None
) -> tuple[dict[str, list], Any]:
    def open_sibling(rel: str):
        if rel not in siblings:
            raise FileNotFoundError(rel)
        return [siblings[rel]]

    ctx = FileContext(
        file=name, path=f"/in/{name}", mtime=1.7e9, open_sibling=open_sibling, batch_rows=64
    )
    chunks = [data] if not chunk else [data[i : i + chunk] for i in range(0, len(data), chunk)]
    out: dict[str, list] = {}
    for table, batch in fmt.read(iter(chunks), ctx):
        out.setdefault(table, []).extend(batch.to_pylist())
    return out, ctx.stats


def test_every_format_has_an_example() -> None:
    assert set(EXAMPLES) == set(FORMATS), "every registered format needs a real example in EXAMPLES"
    assert [f.name for f in ORDER] == list(FORMATS)


@needs_fixtures
@pytest.mark.parametrize("name", list(FORMATS))
def test_sniffs_its_own_example_and_refuses_the_others(name: str, tmp_path: Path) -> None:
    fname, data, _ = EXAMPLES[name](tmp_path)
    head = data[: 64 << 10]
    assert detect(head, fname) is FORMATS[name]
    for other, make in EXAMPLES.items():
        if other == name:
            continue
        oname, odata, _ = make(tmp_path / other)
        assert not FORMATS[name].sniff(odata[: 64 << 10], oname) or ORDER.index(
            FORMATS[other]
        ) < ORDER.index(FORMATS[name]), (
            f"{name} claims the example of {other}, which comes later in the registry"
        )


@needs_fixtures
@pytest.mark.parametrize("name", list(FORMATS))
def test_any_chunk_size_gives_the_same_rows(name: str, tmp_path: Path) -> None:
    fname, data, siblings = EXAMPLES[name](tmp_path)
    whole, stats = read_all(FORMATS[name], fname, data, siblings)
    assert stats.errors == 0 and sum(len(v) for k, v in whole.items() if k != "ingest_errors") > 0
    for chunk in (1 << 16, 4099, 17):
        assert read_all(FORMATS[name], fname, data, siblings, chunk)[0] == whole, chunk


@needs_fixtures
@pytest.mark.parametrize("name", list(FORMATS))
def test_damage_is_recorded_with_file_and_line(name: str, tmp_path: Path) -> None:
    fname, data, siblings = EXAMPLES[name](tmp_path)
    # cut in the middle of the content and glue invalid UTF-8 and a broken line in
    cut = len(data) // 2
    damaged = data[:cut] + b"\n\xff\xfe{not json\n" + data[cut:]
    out, stats = read_all(FORMATS[name], fname, damaged, siblings, chunk=1000)
    errors = out.get("ingest_errors", [])
    assert errors and stats.errors + stats.warnings == len(errors)
    assert all(e["path"] == f"/in/{fname}" for e in errors)
    if name not in DOCUMENTS:
        assert all(e["line_no"] is not None and e["line_no"] >= 1 for e in errors), errors
