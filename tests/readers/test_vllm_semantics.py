"""vLLM semantics (issue 33 item 7) and vLLM's loggers under another format (item 4).

Lines are made by Python's own ``logging.Formatter`` with vLLM's format strings and the message format
strings of the vLLM files that print them (tests/vllm_inputs.py; each file and version named at its line):
a failed AOT load per rank, the engine's compilation time, vLLM 0.6.6's cache lookups timed with a
compile's words, the cache factors and why a start was not warm.
"""

from __future__ import annotations

import hashlib
import logging

import pytest
from tests import vllm_inputs as V
from tests.readers.test_vllm import read

import pt2logs
from pt2logs.query.queries import run_named
from pt2logs.readers import detect
from pt2logs.readers.lines.vllm_log import read_vllm_log

AOT = "/root/.cache/vllm/torch_compile_cache/torch_aot_compile/1f0359061970579fedb51aa5cfac428d/rank_{r}_0/model"


def _rows(lines: list[str]) -> list[dict]:
    t, _ = read(read_vllm_log, "\n".join(lines) + "\n")
    return sorted(t.get("vllm_log_events", []), key=lambda r: r["line_no"])


def test_a_failed_aot_load_is_a_failed_warm_start_per_rank_with_its_reason():
    # compilation/decorators.py (0.17 on): logger.warning("Compiling model again due to a load failure from %s, reason: %s", ...)
    lines = [
        V.line(
            V.FMT_011,
            "Compiling model again due to a load failure from %s, reason: %s",
            (AOT.format(r=r), "Kernel index 1 not found in id_to_kernel"),
            file="compilation/decorators.py",
            lineno=324,
            when=V.T0 + r,
            level=logging.WARNING,
            decorate=f"(Worker_TP{r} pid={4150 + r}) ",
        )
        for r in range(2)
    ]
    rows = _rows(lines)
    assert [(r["kind"], r["rank"], r["reason"], r["level"]) for r in rows] == [
        ("aot_load_failed", 0, "Kernel index 1 not found in id_to_kernel", "WARNING"),
        ("aot_load_failed", 1, "Kernel index 1 not found in id_to_kernel", "WARNING"),
    ]
    assert rows[1]["path"] == AOT.format(r=1)


def test_engine_init_keeps_its_compilation_part():
    # v1/engine/core.py (0.33): "init engine (profile, create kv cache, warmup model) took %.2f s (compilation: %.2f s)"
    rows = _rows(
        [
            V.line(
                V.FMT_033,
                "init engine (profile, create kv cache, warmup model) took %.2f s (compilation: %.2f s)",
                (469.04, 55.52),
                file="v1/engine/core.py",
                lineno=345,
                when=V.T0,
                proc="EngineCore_DP0",
            ),
            V.line(
                V.FMT_033,
                "init engine (profile, create kv cache, warmup model) took %.2f s (compilation: %.2f s — "
                "language_model: %.2f s, encoder: %.2f s)",
                (300.1, 60.5, 50.0, 10.5),
                file="v1/engine/core.py",
                lineno=336,
                when=V.T0 + 1,
                proc="EngineCore_DP0",
            ),
        ]
    )
    assert [(r["kind"], r["seconds"], r["compile_seconds"]) for r in rows] == [
        ("engine_init", 469.04, 55.52),
        ("engine_init", 300.1, 60.5),
    ]


def test_vllm_066_timing_after_a_cache_lookup_is_the_load():
    """compilation/backends.py 0.6.6 wrap_inductor: "Directly lookup the graph for shape %s from the cache"
    (str(runtime_shape): None for the general shape) on the first graph, then after the last one
    "Compiling a graph for general shape takes %.2f s" whether it compiled or loaded."""
    f = "compilation/backends.py"
    lines = [
        V.line(
            V.FMT_064,
            "Directly lookup the graph for shape %s from the cache",
            ("None",),
            file=f,
            lineno=186,
            when=V.T0,
        ),
        V.line(
            V.FMT_064,
            "Compiling a graph for general shape takes %.2f s",
            (0.34,),
            file=f,
            lineno=272,
            when=V.T0 + 1,
        ),
        # a compile with nothing loaded before it stays a compile
        V.line(
            V.FMT_064,
            "Cache the graph of shape %s for later use",
            ("8",),
            file=f,
            lineno=222,
            when=V.T0 + 2,
        ),
        V.line(
            V.FMT_064,
            "Compiling a graph for shape %s takes %.2f s",
            (8, 12.5),
            file=f,
            lineno=275,
            when=V.T0 + 3,
        ),
    ]
    rows = _rows(lines)
    assert [(r["kind"], r["dynamic"], r["seconds"]) for r in rows] == [
        ("cache_load", True, 0.34),
        ("cache_store", False, None),
        ("compile_range", False, 12.5),
    ]


def test_vllm_loggers_under_another_format_are_a_vllm_capture():
    fmt = logging.Formatter(
        "%(asctime)s | %(name)s | %(lineno)d | %(levelname)s : %(message)s", "%Y-%m-%d %H:%M:%S"
    )
    fmt.converter = __import__("time").gmtime

    def one(msg: str, args: tuple, when: float) -> str:
        rec = logging.LogRecord(
            "vllm.compilation.backends",
            logging.INFO,
            "/x/vllm/compilation/backends.py",
            140,
            msg,
            args,
            None,
        )
        rec.created = when
        return fmt.format(rec)

    text = (
        "\n".join(
            [
                one("Dynamo bytecode transform time: %.2f s", (6.94,), V.T0),
                one(
                    "Directly load the compiled graph(s) for compile range %s from the cache, took %.3f s",
                    ("(1, 8192)", 1.25),
                    V.T0 + 2,
                ),
            ]
        )
        + "\n"
    )
    assert text.startswith("2025-08-12 03:18:23 | vllm.compilation.backends | 140 | INFO : Dynamo")
    assert detect(text.encode(), "stdout.txt").name == "vllm_log"
    rows = _rows(text.splitlines())
    assert [(r["kind"], r["seconds"], r["logger_file"], r["logger_line"]) for r in rows] == [
        ("dynamo_transform", 6.94, "vllm.compilation.backends", 140),
        ("cache_load", 1.25, "vllm.compilation.backends", 140),
    ]
    assert rows[0]["ts"].isoformat().startswith("2025-08-12T03:18:23")


def _start(kind: str, factors: tuple[str, str, str, str], when: float) -> list[str]:
    f, dec = "compilation/backends.py", "(EngineCore_DP0 pid=2507) "
    env, cfg, comp, code = factors
    # backends.py: hash_key = hashlib.md5(str(factors).encode(), usedforsecurity=False).hexdigest()[:10]
    d = f"/root/.cache/vllm/torch_compile_cache/{hashlib.md5(str(list(factors)).encode()).hexdigest()[:10]}/rank_0_0/backbone"
    out = [
        V.line(
            V.FMT_011,
            "Initializing a V1 LLM engine (v%s) with config: %s",
            ("0.11.0", "model='Qwen/Qwen3-0.6B', seed=0"),
            file="v1/engine/core.py",
            lineno=77,
            when=when,
        ),
        V.line(
            V.FMT_011,
            "Using cache directory: %s for vLLM's torch.compile",
            (d,),
            file=f,
            lineno=548,
            when=when + 1,
            decorate=dec,
        ),
        # compilation/backends.py: logger.debug("torch.compile cache factors: env=%s cfg=%s comp=%s code=%s dir=%s", ...)
        V.line(
            V.FMT_011,
            "torch.compile cache factors: env=%s cfg=%s comp=%s code=%s dir=%s",
            (env, cfg, comp, code, d),
            file=f,
            lineno=560,
            when=when + 1,
            level=logging.DEBUG,
            decorate=dec,
        ),
    ]
    if kind == "warm":
        out.append(
            V.line(
                V.FMT_011,
                "Directly load the compiled graph(s) for compile range %s from the cache, took %.3f s",
                ("(1, 8192)", 1.2),
                file=f,
                lineno=226,
                when=when + 2,
                decorate=dec,
            )
        )
    else:
        if kind == "failed":
            out.append(
                V.line(
                    V.FMT_011,
                    "Compiling model again due to a load failure from %s, reason: %s",
                    (AOT.format(r=0), "Source code has changed since the last compilation."),
                    file="compilation/decorators.py",
                    lineno=324,
                    when=when + 2,
                    level=logging.WARNING,
                    decorate=dec,
                )
            )
        out.append(
            V.line(
                V.FMT_011,
                "Compiling a graph for compile range %s takes %.2f s",
                ("(1, 8192)", 17.4),
                file=f,
                lineno=278,
                when=when + 3,
                decorate=dec,
            )
        )
    return out


@pytest.fixture(scope="module")
def starts_wh(tmp_path_factory):
    root = tmp_path_factory.mktemp("vllm_starts")
    wh = str(root / "wh")
    base = ("e1e1e1e1e1", "c0c0c0c0c0", "d0d0d0d0d0", "a0a0a0a0a0")
    runs = [
        ("a_warm", "warm", base),
        ("b_cold", "cold", (base[0], "c1c1c1c1c1", base[2], "a1a1a1a1a1")),
        ("c_failed", "failed", base),
    ]
    for i, (name, kind, factors) in enumerate(runs):
        (root / name).mkdir()
        (root / name / "stdout.txt").write_text(
            "\n".join(_start(kind, factors, V.T0 + 3600 * i)) + "\n"
        )
        pt2logs.ingest([str(root / name)], wh)
    return wh


def test_why_a_start_was_not_warm(starts_wh):
    rows = run_named(pt2logs.connect(starts_wh), "vllm_why_not_warm", {}).to_pylist()
    got = {r["run"]: r for r in rows}
    assert set(got) == {"b_cold", "c_failed"}  # the warm start is no row
    cold, failed = got["b_cold"], got["c_failed"]
    assert (cold["start"], cold["warm_run"], cold["changed"]) == ("cold", "a_warm", "config, code")
    assert (cold["config_hash"], cold["warm_config_hash"]) == ("c1c1c1c1c1", "c0c0c0c0c0")
    assert cold["cache_hash"] != cold["warm_cache_hash"]
    assert (failed["start"], failed["load_failure_reason"], failed["changed"]) == (
        "failed warm start",
        "Source code has changed since the last compilation.",
        "no factor differs",
    )
    assert failed["model"] == "Qwen/Qwen3-0.6B" and failed["rank"] == 0


def test_text_that_only_mentions_vllm_stays_foreign():
    text = (
        "cd /root/vllm - INFO - Starting torch.compile\n"
        "pip install vllm | 140 | INFO : Directly load the compiled graph(s) for shape 4 from the cache, took 1.0 s\n"
    )
    assert _rows(text.splitlines()) == []
    f = detect(text.encode(), "stdout.txt")
    assert f is None or f.name != "vllm_log"


def test_a_failed_warm_start_is_not_called_cold(starts_wh):
    # The failed start's lines are vLLM's own: compilation/decorators.py (0.17 on; on vLLM main the same call is
    # in AotCompileCache.try_load) logger.warning("Compiling model again due to a load failure from %s,
    # reason: %s", artifact_path, message), then its compile ranges ("Compiling a graph for compile range %s
    # takes %.2f s", backends.py). It is a failed warm start, with vLLM's reason: not a clean cold start.
    con = pt2logs.connect(starts_wh)
    got = {r["run"]: r for r in run_named(con, "vllm_cold_start", {}).to_pylist()}
    assert {k: got[k]["start"] for k in got} == {
        "a_warm": "warm",
        "b_cold": "cold",
        "c_failed": "failed warm start",
    }
    failed = got["c_failed"]
    assert (failed["failed_loads"], failed["load_failure_reason"], failed["rank"]) == (
        1,
        "Source code has changed since the last compilation.",
        0,
    )
    assert failed["compile_s"] == 17.4 and failed["ranges_compiled"] == 1  # what it cost
    assert (got["b_cold"]["failed_loads"], got["b_cold"]["load_failure_reason"]) == (0, None)
    by_start = {r["start"]: r["runs"] for r in run_named(con, "vllm_cold_vs_warm", {}).to_pylist()}
    assert by_start == {"cold": 1, "failed warm start": 1, "warm": 1}
