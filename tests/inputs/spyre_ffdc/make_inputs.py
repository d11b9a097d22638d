"""Makes the Spyre test inputs in this folder, as torch-spyre prints and writes them. NOT captured on
a Spyre machine: no device here. Run: ``python tests/inputs/spyre_ffdc/make_inputs.py``.

FFDC reports (``job/ffdc_reports/*.json``): the dict ``collect()`` builds in
torch_spyre/profiler/_ffdc.py, key for key and in its order, written the way each version writes it:

* ``ffdc_compile_20260611T090102_000417_777.json``: torch-spyre/torch-spyre 03c46a9 (categories
  ``compile`` / ``runtime_launch`` / ``unimplemented``; no failure.file/lineno; _ENV_KEYS ends with
  USE_SPYRE_PROFILER; ``json.dump(report, f, indent=2, default=str)``); its artifact search timed out.
* ``ffdc_compile_frontend_20261002T140311_123456_4242.json``: torch-spyre/torch-spyre 4b73e4c
  (compile_frontend / compile_backend split, failure.file/lineno, TORCH_SPYRE_FFDC in _ENV_KEYS,
  stdlib json.dump indent=2).
* ``ffdc_runtime_launch_20261002T140312_654321_4242.json``: dmholtz/torch-spyre 36b4533, written
  through torch_spyre._json (orjson, OPT_INDENT_2): runtime.kernel_name and code_dir set, no device.

Tracebacks are real ``traceback.format_exception`` output of code compiled under torch-spyre's file
names (the raise sites of the hooks: _inductor/lowering.py through compile_fx, execution/kernel_runner.py).
Messages: ``RuntimeError(f"Invoked {kernel_name} which contains unimplemented operation {op}")`` is
SpyreUnimplementedRunner.run's (torch_spyre/_inductor/runtime/kernel_runner.py 12f3c3a).

The capture ``job/spyre_stderr.txt`` mixes, as one process's stderr does: C++ unified logging lines
(torch_spyre/csrc/logging_config.cpp 46513a4: ``[LEVEL] [component] %Y-%m-%d %H:%M:%S func: msg``),
Python ``[LEVEL] [spyre.x] msg`` lines (torch_spyre/logging_config.py 01f522f ``_make_formatter``),
deprecated SPYRE_INDUCTOR_LOG lines (torch_spyre/_inductor/logging_utils.py 3caea17:
``[%(levelname)s] [%(module)s] %(message)s``; the messages of async_compile.py and kernel_runner.py of
that era), the pre-scheduling passes' ``logger.info("elapsed %5dms  %s", elapsed_ms, pass_name)`` and
multi-line ``BEFORE PRE-SCHEDULING`` (torch_spyre/_inductor/passes.py 02607a9), torch's own TORCH_LOGS
lines and unrelated output. It is written by hand, not by this script.
"""

from __future__ import annotations

import json
import linecache
import traceback
from pathlib import Path

import orjson

HERE = Path(__file__).parent
SITE = "/home/alice/.venv/lib/python3.11/site-packages"
PY = "3.11.9 (main, Apr  6 2024, 17:59:24) [GCC 11.4.0]"


def _exc(
    where: str, func: str, raise_line: str, caller: str = "/home/alice/proj/run_model.py"
) -> BaseException:
    """An exception raised from ``where`` (a torch-spyre file) called from the user's script; the
    sources go to linecache so the traceback shows its lines as a real one does."""
    ns: dict = {}
    for path, src in (
        (where, f"def {func}(*a):\n    {raise_line}\n"),
        (
            caller,
            "def main(f):\n    return f(1)\n\n\ndef catch(f):\n    try:\n        main(f)\n"
            "    except Exception as e:\n        return e\n",
        ),
    ):
        linecache.cache[path] = (len(src), None, src.splitlines(keepends=True), path)
        exec(compile(src, path, "exec"), ns)  # noqa: S102 - a real traceback under these file names
    return ns["catch"](ns[func])


def _failure(exc: BaseException, category: str, with_site: bool) -> dict:
    f: dict = {
        "category": category,
        "exception_type": type(exc).__name__,
        "message": str(exc),
        "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
    }
    if with_site:
        frames = traceback.extract_tb(exc.__traceback__)
        f["file"], f["lineno"] = frames[-1].filename, frames[-1].lineno
    return f


ENV_OLD = [
    "TORCH_COMPILE_DEBUG",
    "TORCH_SPYRE_DEBUG",
    "SPYRE_INDUCTOR_LOG",
    "SPYRE_INDUCTOR_LOG_LEVEL",
    "DUMP_SPYRE_CODE",
    "TORCH_LOGS",
    "TORCHINDUCTOR_FORCE_DISABLE_CACHES",
    "SENCORES",
    "USE_SPYRE_PROFILER",
]
ENV_NEW = ENV_OLD[:-1] + ["TORCH_SPYRE_FFDC"]
REQUIRED = 11  # len(REQUIRED_FIELDS)


def _report(
    meta_ts: str,
    pid: int,
    failure: dict,
    env: dict,
    artifacts: dict,
    runtime: dict,
    hw: dict,
    ms: float,
    errors: list[str],
) -> dict:
    missing = [
        k
        for k in ("failure.exception_type", "failure.message", "failure.traceback")
        if failure.get(k.split(".")[1]) is None
    ]
    return {
        "metadata": {
            "timestamp": meta_ts,
            "host": "spyre-pod-7",
            "pid": pid,
            "python_version": PY,
            "torch_version": "2.9.1+cpu",
            "torch_spyre_version": "0.4.0.dev112+g3c1f2a9",
            "platform": "Linux-5.14.0-427.el9.s390x-s390x-with-glibc2.34",
        },
        "failure": failure,
        "environment": env,
        "artifacts": artifacts,
        "runtime": runtime,
        "hardware_state": hw,
        "collector": {
            "capture_latency_ms": ms,
            "missing_fields": missing,
            "collector_errors": errors,
            "success": not errors,
            "completeness_pct": round(100 * (REQUIRED - len(missing)) / REQUIRED, 1),
        },
    }


def main() -> None:
    out = HERE / "job" / "ffdc_reports"
    out.mkdir(parents=True, exist_ok=True)
    cache = "/tmp/torchinductor_alice"
    # 1. 03c46a9: category "compile", no file/lineno, the artifact search timed out
    e1 = _exc(
        f"{SITE}/torch_spyre/_inductor/lowering.py",
        "lower_mm",
        "raise NotImplementedError('mm: unsupported stick layout for shape [65, 4096] x [4096, 128]')",
    )
    env1 = {k: "" for k in ENV_OLD} | {"TORCH_SPYRE_DEBUG": "1", "TORCH_LOGS": "+torch_spyre"}
    r1 = _report(
        "2026-06-11T09:01:02.000417+00:00",
        777,
        _failure(e1, "compile", False),
        env1,
        {"searched": False, "error": "artifact search timed out"},
        {"kernel_name": None, "code_dir": None},
        {"spyre_available": False, "note": "hardware state unavailable without Spyre access"},
        2003.41,
        ["artifacts: timed out"],
    )
    (out / "ffdc_compile_20260611T090102_000417_777.json").write_text(
        json.dumps(r1, indent=2, default=str)
    )
    # 2. 4b73e4c: compile_frontend, file/lineno, artifacts found
    e2 = _exc(
        f"{SITE}/torch_spyre/_inductor/lowering.py",
        "lower_mm",
        "raise NotImplementedError('mm: unsupported stick layout for shape [65, 4096] x [4096, 128]')",
    )
    env2 = {k: "" for k in ENV_NEW} | {
        "TORCH_COMPILE_DEBUG": "1",
        "TORCH_LOGS": "+torch_spyre",
        "TORCH_SPYRE_FFDC": "1",
    }
    run_dir = "/home/alice/proj/torch_compile_debug/run_2026_10_02_14_03_10_874212-pid_4242/torchinductor/model__0_inference_0.0"
    arts = [
        f"{run_dir}/{n}"
        for n in ("fx_graph_readable.py", "fx_graph_transformed.py", "ir_pre_fusion.txt")
    ]
    r2 = _report(
        "2026-10-02T14:03:11.123456+00:00",
        4242,
        _failure(e2, "compile_frontend", True),
        env2,
        {"searched": True, "found_count": len(arts), "paths": arts},
        {"kernel_name": None, "code_dir": None},
        {"spyre_available": True},
        38.77,
        [],
    )
    (out / "ffdc_compile_frontend_20261002T140311_123456_4242.json").write_text(
        json.dumps(r2, indent=2, default=str)
    )
    # 3. 36b4533 through orjson: runtime_launch of an unimplemented op, with the kernel
    kernel = "sdsc_fused_index_put_0"
    e3 = _exc(
        f"{SITE}/torch_spyre/execution/kernel_runner.py",
        "run",
        f"raise RuntimeError('Invoked {kernel} which contains unimplemented operation aten.index_put_.default')",
    )
    code_dir = f"{cache}/inductor-spyre/{kernel}_5e2c4f0a9b1d3e77_q1w2e3r4"
    r3 = _report(
        "2026-10-02T14:03:12.654321+00:00",
        4242,
        _failure(e3, "runtime_launch", True),
        env2,
        {"searched": True, "found_count": 0, "paths": []},
        {"kernel_name": kernel, "code_dir": code_dir},
        {"spyre_available": False, "note": "hardware probe timed out after 1.0s"},
        1012.5,
        [],
    )
    (out / "ffdc_runtime_launch_20261002T140312_654321_4242.json").write_bytes(
        orjson.dumps(r3, option=orjson.OPT_INDENT_2)
    )


if __name__ == "__main__":
    main()
