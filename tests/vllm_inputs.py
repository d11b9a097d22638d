"""vLLM test inputs, RECONSTRUCTED FROM vLLM's SOURCE (not captured from a vLLM run: none is available here).

Log lines are made by Python's own ``logging.Formatter`` with vLLM's format strings (vllm/logger.py
``_FORMAT``, ``_DATE_FORMAT``) and the message format strings and arguments of the vLLM files that print
them, as released on PyPI (sdists of vLLM 0.6.2 - 0.33.0; the file and versions are named at each one).
Process prefixes are those of ``_add_prefix`` (vllm/executor/multiproc_worker_utils.py 0.8.5, vllm/utils 0.11:
cyan ``\\x1b[1;36m(name pid=N)\\x1b[0;0m ``) / ``decorate_logs`` and Ray's. The TORCH_TRACE is written by
the real torch ``trace_structured`` during a real ``torch.compile``, from a backend whose module sits at
``vllm/compilation/backends.py`` and logs the metadata and payloads vLLM 0.33's backends.py /
piecewise_backend.py build (names, keys, value types).
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from pathlib import Path

DATEFMT = "%m-%d %H:%M:%S"  # vllm/logger.py _DATE_FORMAT, every version
#: vllm/logger.py _FORMAT by version (VLLM_LOGGING_PREFIX empty, its default)
FMT_064 = "%(levelname)s %(asctime)s %(filename)s:%(lineno)d] %(message)s"  # 0.6.2 - 0.7.3
FMT_080 = "%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s"  # 0.8.0 - 0.10.2
FMT_011 = "%(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d] %(message)s"  # 0.11.0 - 0.28 (fileinfo = filename at INFO)
FMT_033 = "(%(vllm_process_name)s pid=%(process)d) %(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d] %(message)s"  # 0.33.0
CYAN, RESET = "\x1b[1;36m", "\x1b[0;0m"  # vllm/utils/__init__.py 0.11.0, used by _add_prefix


def line(
    fmt: str,
    msg: str,
    args: tuple,
    *,
    file: str,
    lineno: int,
    when: float,
    level: int = logging.INFO,
    proc: str | None = None,
    pid: int = 4242,
    decorate: str | None = None,
) -> str:
    """One line as vLLM's formatter writes it; ``decorate``: the stream prefix a worker process adds."""
    rec = logging.LogRecord(
        "vllm.x", level, f"/usr/lib/python3/site-packages/vllm/{file}", lineno, msg, args, None
    )
    rec.created = when
    rec.msecs = 0
    rec.process = pid
    rec.fileinfo = Path(file).name
    rec.vllm_process_name = proc or "MainProcess"
    f = logging.Formatter(fmt, DATEFMT)
    f.converter = __import__("time").gmtime
    text = f.format(rec)
    return (decorate or "") + text


T0 = 1754968703.0  # 2025-08-12 03:18:23 UTC


def cold_start_010(pid: int = 7001, rank: int = 0) -> list[tuple[str, dict]]:
    """vLLM 0.10.x (0.10.0-0.10.2), V1 engine, a worker of `VllmWorker rank=N` (0.10.0 _add_prefix); the
    expected row of each line, from the arguments given to the format string."""
    dec = f"{CYAN}(VllmWorker rank={rank} pid={pid}){RESET} "
    t = T0
    out = []

    def add(msg: str, args: tuple, file: str, lineno: int, exp: dict, dt: float = 1.0) -> None:
        nonlocal t
        t += dt
        out.append((line(FMT_080, msg, args, file=file, lineno=lineno, when=t, decorate=dec), exp))

    add(
        "Using cache directory: %s for vLLM's torch.compile",
        (f"/root/.cache/vllm/torch_compile_cache/24ae571172/rank_{rank}_0/backbone",),
        "compilation/backends.py",
        530,
        {
            "kind": "cache_dir",
            "path": f"/root/.cache/vllm/torch_compile_cache/24ae571172/rank_{rank}_0/backbone",
        },
    )
    add(
        "Dynamo bytecode transform time: %.2f s",
        (6.94,),
        "compilation/backends.py",
        541,
        {"kind": "dynamo_transform", "seconds": 6.94},
    )
    add(
        "Cache the graph for dynamic shape for later use",
        (),
        "compilation/backends.py",
        194,
        {"kind": "cache_store", "compile_range": "dynamic shape", "dynamic": True},
    )
    add(
        "Compiling a graph for dynamic shape takes %.2f s",
        (21.86,),
        "compilation/backends.py",
        215,
        {
            "kind": "compile_range",
            "compile_range": "dynamic shape",
            "dynamic": True,
            "seconds": 21.86,
        },
        21.9,
    )
    add(
        "Compiling a graph for shape %s takes %.2f s",
        (8, 3.25),
        "compilation/backends.py",
        218,
        {
            "kind": "compile_range",
            "compile_range": "shape 8",
            "range_start": 8,
            "range_end": 8,
            "seconds": 3.25,
        },
    )
    add(
        "torch.compile takes %.2f s in total",
        (32.05,),
        "compilation/monitor.py",
        34,
        {"kind": "compile_total", "seconds": 32.05},
    )
    add(
        "Graph capturing finished in %.0f secs, took %.2f GiB",
        (33.4, 0.51),
        "v1/worker/gpu_model_runner.py",
        2485,
        {"kind": "cudagraph_capture", "seconds": 33.0, "gib": 0.51},
        33,
    )
    return [
        (ln, {**e, "rank": rank, "pid": pid, "process": f"VllmWorker rank={rank}"}) for ln, e in out
    ]


def warm_start_010(pid: int = 7101) -> list[tuple[str, dict]]:
    dec = f"{CYAN}(VllmWorker rank=0 pid={pid}){RESET} "
    rows = [
        (
            "Using cache directory: %s for vLLM's torch.compile",
            ("/root/.cache/vllm/torch_compile_cache/24ae571172/rank_0_0/backbone",),
            "compilation/backends.py",
            530,
            {"kind": "cache_dir"},
        ),
        (
            "Dynamo bytecode transform time: %.2f s",
            (6.61,),
            "compilation/backends.py",
            541,
            {"kind": "dynamo_transform", "seconds": 6.61},
        ),
        (
            "Directly load the compiled graph(s) for dynamic shape from the cache, took %.3f s",
            (2.874,),
            "compilation/backends.py",
            161,
            {
                "kind": "cache_load",
                "compile_range": "dynamic shape",
                "dynamic": True,
                "seconds": 2.874,
            },
        ),
        (
            "Directly load the compiled graph(s) for shape %s from the cache, took %.3f s",
            ("8", 0.412),
            "compilation/backends.py",
            165,
            {
                "kind": "cache_load",
                "compile_range": "shape 8",
                "range_start": 8,
                "range_end": 8,
                "seconds": 0.412,
            },
        ),
        (
            "torch.compile takes %.2f s in total",
            (9.9,),
            "compilation/monitor.py",
            34,
            {"kind": "compile_total", "seconds": 9.9},
        ),
        (
            "Graph capturing finished in %.0f secs, took %.2f GiB",
            (31.2, 0.51),
            "v1/worker/gpu_model_runner.py",
            2485,
            {"kind": "cudagraph_capture", "seconds": 31.0},
        ),
    ]
    return [
        (
            line(FMT_080, m, a, file=f, lineno=n, when=T0 + 3600 + i, decorate=dec),
            {**e, "rank": 0, "pid": pid},
        )
        for i, (m, a, f, n, e) in enumerate(rows)
    ]


def every_wording() -> list[tuple[str, dict]]:
    """One line of every wording of every version read, with its logger format of that version."""
    cases = [
        # 0.6.4 backends.py: no time yet; 0.6.2 worker/model_runner.py "in %.0f secs."
        (
            FMT_064,
            "Compiling a graph for general shape",
            (),
            "compilation/backends.py",
            228,
            {
                "kind": "compile_range",
                "compile_range": "general shape",
                "dynamic": True,
                "seconds": None,
            },
        ),
        (
            FMT_064,
            "Compiling a graph for shape %s",
            (1,),
            "compilation/backends.py",
            230,
            {
                "kind": "compile_range",
                "compile_range": "shape 1",
                "range_start": 1,
                "seconds": None,
            },
        ),
        (
            FMT_064,
            "Graph capturing finished in %.0f secs.",
            (12.2,),
            "worker/model_runner.py",
            1456,
            {"kind": "cudagraph_capture", "seconds": 12.0, "gib": None},
        ),
        # 0.6.6
        (
            FMT_064,
            "Directly lookup the graph for shape %s from the cache",
            ("4",),
            "compilation/backends.py",
            186,
            {"kind": "cache_load", "compile_range": "shape 4", "range_start": 4, "seconds": None},
        ),
        (
            FMT_064,
            "Compiling a graph for general shape takes %.2f s",
            (14.77,),
            "compilation/backends.py",
            272,
            {
                "kind": "compile_range",
                "compile_range": "general shape",
                "dynamic": True,
                "seconds": 14.77,
            },
        ),
        (
            FMT_064,
            "Compiling a graph for shape %s takes %.2f s",
            (1, 13.52),
            "compilation/backends.py",
            275,
            {"kind": "compile_range", "range_start": 1, "range_end": 1, "seconds": 13.52},
        ),
        # 0.7.3
        (
            FMT_064,
            "Directly load the compiled graph for shape %s from the cache",
            ("None",),
            "compilation/backends.py",
            115,
            {"kind": "cache_load", "compile_range": "shape None", "dynamic": True, "seconds": None},
        ),
        (
            FMT_064,
            "Cache the graph of shape %s for later use",
            ("None",),
            "compilation/backends.py",
            132,
            {"kind": "cache_store", "dynamic": True},
        ),
        (
            FMT_064,
            "Using cache directory: %s for vLLM's torch.compile",
            ("/root/.cache/vllm/torch_compile_cache/56cafb45fd/rank_0",),
            "compilation/backends.py",
            408,
            {"kind": "cache_dir"},
        ),
        (
            FMT_064,
            "vLLM's torch.compile cache is disabled.",
            (),
            "compilation/backends.py",
            406,
            {"kind": "cache_disabled"},
        ),
        # 0.8.5 - 0.9.x: "shape None" is the general shape (str(None))
        (
            FMT_080,
            "Directly load the compiled graph(s) for shape %s from the cache, took %.3f s",
            ("None", 3.101),
            "compilation/backends.py",
            118,
            {"kind": "cache_load", "dynamic": True, "seconds": 3.101},
        ),
        (
            FMT_080,
            "init engine (profile, create kv cache, warmup model) took %.2f seconds",
            (66.74,),
            "v1/engine/core.py",
            116,
            {"kind": "engine_init", "seconds": 66.74},
        ),
        (
            FMT_080,
            "Initializing a V1 LLM engine (v%s) with config: %s",
            (
                "0.8.5",
                "model='Qwen/Qwen3-0.6B', speculative_config=None, tokenizer='Qwen/Qwen3-0.6B', skip_tokenizer_init=False",
            ),
            "v1/engine/core.py",
            58,
            {"kind": "engine_config", "model": "Qwen/Qwen3-0.6B", "vllm_version": "0.8.5"},
        ),
        # 0.11.1 - 0.12: decorators.py
        (
            FMT_011,
            "Directly load AOT compilation from path %s",
            ("/root/.cache/vllm/torch_compile_cache/torch_aot_compile/abc/rank_0_0/model",),
            "compilation/decorators.py",
            392,
            {"kind": "aot_load"},
        ),
        # 0.14.0 on: compile ranges (Range.__str__ "(start, end)")
        (
            FMT_011,
            "Compiling a graph for compile range %s takes %.2f s",
            ("(1, 8192)", 17.4),
            "compilation/backends.py",
            278,
            {
                "kind": "compile_range",
                "compile_range": "compile range (1, 8192)",
                "range_start": 1,
                "range_end": 8192,
                "dynamic": False,
                "seconds": 17.4,
            },
        ),
        (
            FMT_011,
            "Directly load the compiled graph(s) for compile range %s from the cache, took %.3f s",
            ("(1, 8192)", 1.25),
            "compilation/backends.py",
            226,
            {"kind": "cache_load", "range_start": 1, "range_end": 8192, "seconds": 1.25},
        ),
        (
            FMT_011,
            "Cache the graph of compile range %s for later use",
            ("(1, 8192)",),
            "compilation/backends.py",
            261,
            {"kind": "cache_store", "range_start": 1, "range_end": 8192},
        ),
        (
            FMT_011,
            "torch.compile takes %.2f s in total",
            (19.37,),
            "compilation/monitor.py",
            34,
            {"kind": "compile_total", "seconds": 19.37},
        ),
        # 0.17: piecewise_backend.py; 0.20 on: monitor.py "took"
        (
            FMT_011,
            "Saved compiler manager cache in %.2f seconds.",
            (0.31,),
            "compilation/piecewise_backend.py",
            172,
            {"kind": "cache_saved", "seconds": 0.31},
        ),
        (
            FMT_011,
            "torch.compile took %.2f s in total",
            (27.2,),
            "compilation/monitor.py",
            53,
            {"kind": "compile_total", "seconds": 27.2},
        ),
        (
            FMT_011,
            "torch.compile and initial profiling/warmup run together took %.2f s in total",
            (31.5,),
            "compilation/monitor.py",
            53,
            {"kind": "compile_total", "seconds": 31.5},
        ),
        (
            FMT_011,
            "Initial profiling/warmup run took %.2f s",
            (2.05,),
            "compilation/monitor.py",
            81,
            {"kind": "warmup_run", "seconds": 2.05},
        ),
        (
            FMT_011,
            "saved AOT compiled function to %s",
            ("/root/.cache/vllm/torch_compile_cache/torch_aot_compile/abc/rank_0_0/model",),
            "compilation/decorators.py",
            668,
            {"kind": "aot_save"},
        ),
        # a main-branch backends.py (commit 0041b00 in the code index)
        (
            FMT_011,
            "Compiling a graph for dynamic compile range takes %.2f s",
            (5.5,),
            "compilation/backends.py",
            300,
            {
                "kind": "compile_range",
                "compile_range": "dynamic compile range",
                "dynamic": True,
                "seconds": 5.5,
            },
        ),
    ]
    out = [
        (line(fmt, m, a, file=f, lineno=n, when=T0 + i), e)
        for i, (fmt, m, a, f, n, e) in enumerate(cases)
    ]
    # 0.33.0: the process in the format, the compile tag before the message
    for i, (m, a, f, n, e) in enumerate(
        [
            (
                "%sStarting torch.compile",
                ("[backbone] ",),
                "compilation/monitor.py",
                40,
                {"kind": "compile_start", "tag": "backbone"},
            ),
            (
                "%sDynamo bytecode transform time: %.2f s",
                ("[backbone] ", 4.6),
                "compilation/backends.py",
                1187,
                {"kind": "dynamo_transform", "tag": "backbone", "seconds": 4.6},
            ),
            (
                "%sCompiling a graph for compile range %s takes %.2f s",
                ("[backbone] ", "(1, 2048)", 12.0),
                "compilation/backends.py",
                417,
                {"kind": "compile_range", "tag": "backbone", "range_end": 2048, "seconds": 12.0},
            ),
            (
                "%storch.compile took %.2f s in total",
                ("", 16.9),
                "compilation/monitor.py",
                62,
                {"kind": "compile_total", "tag": None, "seconds": 16.9},
            ),
            (
                "init engine (profile, create kv cache, warmup model) took %.2f s (compilation: %.2f s)",
                (48.1, 16.9),
                "v1/engine/core.py",
                405,
                {"kind": "engine_init", "seconds": 48.1},
            ),
        ]
    ):
        out.append(
            (
                line(
                    FMT_033,
                    m,
                    a,
                    file=f,
                    lineno=n,
                    when=T0 + 100 + i,
                    proc="EngineCore_DP0",
                    pid=5150,
                ),
                {**e, "process": "EngineCore_DP0", "pid": 5150},
            )
        )
    # 0.8.5 v1/engine/core.py: the engine core process decorated by executor/multiproc_worker_utils.py _add_prefix
    out.append(
        (
            line(
                FMT_080,
                "Dynamo bytecode transform time: %.2f s",
                (7.77,),
                file="compilation/backends.py",
                lineno=430,
                when=T0 + 150,
                decorate=f"{CYAN}(EngineCore_0 pid=812){RESET} ",
            ),
            {"kind": "dynamo_transform", "process": "EngineCore_0", "pid": 812, "seconds": 7.77},
        )
    )
    # Ray: no colour, the actor's prefix, a repeat suffix
    out.append(
        (
            "(RayWorkerWrapper pid=345, ip=10.224.1.180) "
            + line(
                FMT_080,
                "Compiling a graph for general shape takes %.2f s",
                (44.78,),
                file="compilation/backends.py",
                lineno=148,
                when=T0 + 200,
            )
            + " [repeated 3x across cluster]",
            {"kind": "compile_range", "process": "RayWorkerWrapper", "pid": 345, "seconds": 44.78},
        )
    )
    return out


def capture() -> bytes:
    """A stdout capture of `vllm serve` (0.10 worker lines) with print output between: the format's example."""
    lines = [
        "INFO 08-12 03:18:20 [__init__.py:241] Automatically detected platform cuda.",
        "Loading safetensors checkpoint shards: 100% Completed | 1/1 [00:01<00:00,  1.92s/it]",
    ]
    lines += [ln for ln, _ in cold_start_010()]
    lines.append(
        "(APIServer pid=6999) INFO 08-12 03:20:01 [api_server.py:1818] Starting vLLM API server 0 on http://0.0.0.0:8000"
    )
    return ("\n".join(lines) + "\n").encode()


_TRACE_SCRIPT = """
import json, sys, time, torch
from torch._logging import trace_structured
sys.path.insert(0, sys.argv[1])
from vllm.compilation import backends
torch.compile(backends.model, backend=backends.Backend(), dynamic=True)(torch.randn(8, 4))
"""
#: the backend module: logs what vLLM 0.33 logs (backends.py VllmBackend.__call__, piecewise_backend.py
#: _log_compile_start), with a split into three submodules (submod_1 is the splitting op's, not compiled)
_BACKEND = """
import json, time, torch
from torch._logging import trace_structured

def model(x):
    y = torch.relu(x) + 1
    return torch.sigmoid(y) * 2

RANGES = [(1, 8192), (1, 1), (8, 8)]

class Backend:
    def __call__(self, gm, example_inputs):
        cfg = {"model": "Qwen/Qwen3-0.6B", "prefix": "backbone", "mode": "CompilationMode.VLLM_COMPILE", "backend": "inductor",
               "custom_ops": "none", "splitting_ops": "vllm::unified_attention, vllm::unified_attention_with_output",
               "cudagraph_mode": "CUDAGraphMode.FULL_AND_PIECEWISE", "compile_sizes": "", "compile_ranges_endpoints": "8192",
               "use_inductor_graph_partition": False, "inductor_passes": "", "enabled_passes": "fuse_norm_quant",
               "dynamic_shapes_type": "DynamicShapesType.BACKED", "dynamic_shapes_evaluate_guards": False}
        trace_structured("artifact", metadata_fn=lambda: {"name": "vllm_compilation_config", "encoding": "json"},
                         payload_fn=lambda: json.dumps(cfg))
        split = ("class GraphModule(torch.nn.Module):\\n    def forward(self, s0, l_x_):\\n"
                 "        submod_0 = self.submod_0(s0, l_x_)\\n        submod_1 = self.submod_1(submod_0)\\n"
                 "        submod_2 = self.submod_2(s0, submod_1)\\n        return (submod_2,)\\n")
        trace_structured("graph_dump", metadata_fn=lambda: {"name": "vllm_piecewise_split_graph"}, payload_fn=lambda: split)
        for index, submod in enumerate(["submod_0", "submod_2"]):
            for n, (start, end) in enumerate(RANGES):
                trace_structured("artifact", metadata_fn=lambda: {"name": "vllm_piecewise_compile_start", "encoding": "json"},
                                 payload_fn=lambda: json.dumps({"piecewise_index": index, "submod_name": submod,
                                     "total_piecewise_compiles": 2, "compile_range_start": start, "compile_range_end": end,
                                     "is_single_size": start == end, "is_cudagraph_capture_size": start == end}))
                if n == 0:
                    trace_structured("graph_dump", metadata_fn=lambda: {"name": f"vllm_{submod}"},
                                     payload_fn=lambda: gm.print_readable(print_output=False))
                time.sleep(0.02)
        return gm.forward
"""


def make_trace(folder: Path) -> Path:
    """Run the compile above with TORCH_TRACE=folder/trace; returns the trace folder."""
    pkg = folder / "src" / "vllm" / "compilation"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "backends.py").write_text(textwrap.dedent(_BACKEND))
    trace = folder / "trace"
    subprocess.run(
        [sys.executable, "-c", _TRACE_SCRIPT, str(folder / "src")],
        check=True,
        timeout=300,
        env={**__import__("os").environ, "TORCH_TRACE": str(trace)},
        capture_output=True,
    )
    return trace
