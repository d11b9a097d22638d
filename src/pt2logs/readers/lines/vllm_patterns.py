"""vLLM's log lines: its logger's prefix and the messages that time a cold start, each with the vLLM
file and versions that print it (read in the released sources, vLLM 0.6.2 to 0.33.0 on PyPI).

**The prefix** (vllm/logger.py ``_FORMAT``, ``_DATE_FORMAT = "%m-%d %H:%M:%S"``):

* 0.6.2 - 0.7.x: ``%(levelname)s %(asctime)s %(filename)s:%(lineno)d] %(message)s``
  (from 0.6.4 behind ``VLLM_LOGGING_PREFIX``, empty by default);
* 0.8.0 - 0.10.x: ``... [%(filename)s:%(lineno)d] %(message)s``;
* 0.11.0 on: ``[%(fileinfo)s:%(lineno)d]`` (the file name, or at DEBUG a shortened path such as
  ``v1/worker/gpu_model_runner.py``);
* 0.33.0: ``(%(vllm_process_name)s pid=%(process)d) %(levelname)s ...``, the process in the format itself.

Before 0.33 a worker's lines get the process prefix from the stream (``_add_prefix``:
``(VllmWorker rank=0 pid=7) `` in v1/executor/multiproc_executor.py 0.7-0.10.0; ``decorate_logs``:
``(EngineCore_DP0 pid=7) ``, ``(Worker_TP1 pid=7) ``, ``(APIServer pid=7) `` from 0.10.1), cyan
(``\\x1b[1;36m``) in vllm/utils; Ray adds ``(RayWorkerWrapper pid=345, ip=10.0.0.1) `` and may end a line
with `` [repeated 3x across cluster]``. From 0.11 the level, time and file may be coloured
(vllm/logging_utils/formatter.py ``ColoredFormatter``): ANSI codes are removed before reading. A multi-line
message repeats the prefix on every line (``NewLineFormatter``: ``\\r\\n`` + prefix).

**The messages** (``%s`` = ``[tag] `` from 0.33, the compile tag, e.g. ``[backbone] ``):

* ``Dynamo bytecode transform time: %.2f s``: compilation/backends.py, 0.6.6 on;
* ``Compiling a graph for general shape`` / ``... for shape %s`` (no time): backends.py 0.6.4;
  ``Compiling a graph for general shape takes %.2f s`` / ``for shape %s takes``: 0.6.6 - 0.9.x;
  ``for dynamic shape takes``: 0.10.0 - 0.12.x; ``for compile range %s takes`` (``(a, b)``, vllm/config/utils.py
  ``Range.__str__``): 0.14.0 on; ``for dynamic compile range takes``: a main-branch backends.py (commit 0041b00);
  ``took`` read too;
* ``Directly lookup the graph for shape %s from the cache``: 0.6.6; ``Directly load the compiled graph for
  shape %s from the cache``: 0.7.x; ``Directly load the compiled graph(s) for shape %s from the cache, took %.3f s``:
  0.8.5 - 0.12 (``for dynamic shape`` from 0.10), ``for compile range %s``: 0.14 on;
* ``Cache the graph of shape %s for later use`` (0.6.6 - 0.12), ``Cache the graph for dynamic shape for later
  use`` (0.10 - 0.12), ``Cache the graph of compile range %s for later use`` (0.14 on);
* ``torch.compile takes %.2f s in total``: compilation/monitor.py 0.6.6 - 0.17; ``took``: 0.20 on;
  ``torch.compile and initial profiling/warmup run together took %.2f s in total``: decorators.py 0.20 on;
* ``Starting torch.compile``, monitor.py 0.33; ``Initial profiling/warmup run took %.2f s``, monitor.py 0.20 on;
* ``Using cache directory: %s for vLLM's torch.compile`` / ``vLLM's torch.compile cache is disabled.``: backends.py 0.7.0 on;
* ``Saved compiler manager cache in %.2f seconds.``: piecewise_backend.py 0.17, backends.py 0.20 on;
* ``Directly load AOT compilation from path %s`` (decorators.py 0.11.1 on), ``saved AOT compiled function to %s`` (0.17 on);
* ``Graph capturing finished in %.0f secs.`` (worker/model_runner.py 0.6.2), ``Graph capturing finished in
  %.0f secs, took %.2f GiB`` (worker/model_runner.py and v1/worker/gpu_model_runner.py 0.6.6 on);
* ``init engine (profile, create kv cache, warmup model) took %.2f seconds`` (v1/engine/core.py 0.7 - 0.11),
  ``... took %.2f s (compilation: %.2f s)`` (0.33);
* ``Initializing a V1 LLM engine (v%s) with config: model=%r, ...`` (v1/engine/core.py; V0's
  ``Initializing an LLM engine (v%s) with config: model=%r``, engine/llm_engine.py);
* ``init engine (profile, create kv cache, warmup model) took %.2f s (compilation: %.2f s)`` and
  ``... (compilation: %.2f s — language_model: %.2f s, encoder: %.2f s)`` (v1/engine/core.py, 0.33): the
  compilation part is ``compile_seconds``;
* ``Compiling model again due to a load failure from %s, reason: %s`` (compilation/decorators.py, the AOT
  artifact's load, WARNING; 0.17 on): a warm start that failed, with its reason (``Compile cache file
  corrupted.`` for an ``EOFError``);
* ``torch.compile cache factors: env=%s cfg=%s comp=%s code=%s dir=%s`` (compilation/backends.py, DEBUG,
  after ``Using cache directory``; seen in the releases from 0.11 on): the four hashes the cache
  directory's hash is made of (env vars, vLLM config, compiler, traced code).

**vLLM 0.6.6 - 0.7.x cache loads.** ``wrap_inductor`` (compilation/backends.py 0.6.6) logs ``Directly lookup
the graph for shape %s from the cache`` (0.7: ``Directly load the compiled graph for shape %s``) with
``str(runtime_shape)`` (``None`` for the general shape) on the first piecewise graph and, after the last
one, ``Compiling a graph for general shape takes %.2f s`` (``for shape %s takes``) whether it compiled or
loaded: that timing line after a load of the same shape is the load's time, not a compile.

**Another logging format.** A program that configures logging itself prints vLLM's loggers (``vllm``,
``vllm.compilation.backends``, ...) under its own format, e.g. ``2026-06-03 10:01:02 | vllm.compilation |
140 | INFO : Directly load …`` or ``logging.BASIC_FORMAT``'s ``INFO:vllm.x:msg``: read by the logger's name and
level (:data:`OTHER`).
"""

from __future__ import annotations

import re

#: ANSI colour codes (vLLM's coloured formatter and process prefix)
ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: the logger's own part: level, month-day, time, [file:line] (brackets from 0.8.0)
LINE = re.compile(
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<mm>\d\d)-(?P<dd>\d\d) (?P<time>\d\d:\d\d:\d\d)(?:\.\d+)? "
    r"\[?(?P<file>[^\s:\]\[]+):(?P<lineno>\d+)\] ?(?P<msg>.*)$"
)
#: vLLM's logger under another format: a full date, the logger's name (``vllm`` or ``vllm.x``), an optional line
#: number and the level, in either order (``%(asctime)s | %(name)s | %(lineno)d | %(levelname)s : ``, ``%(levelname)s:%(name)s:``)
OTHER = re.compile(
    r"(?:\[?(?P<year>\d{4})-(?P<mm>\d\d)-(?P<dd>\d\d)[ T](?P<time>\d\d:\d\d:\d\d)(?:[.,]\d+)?\]?\s*(?:[-|:]\s*)?)?"
    r"(?:(?P<file>vllm(?:\.\w+)*)(?:\s*[-|:]\s*(?P<lineno>\d+))?\s*[-|:]\s*\[?(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\]?\s*[-|:]\s?"
    r"|\[?(?P<level2>DEBUG|INFO|WARNING|ERROR|CRITICAL)\]?\s*[-|:]\s*(?P<file2>vllm(?:\.\w+)*)\s*[-|:]\s?)(?P<msg>.*)$"
)
#: a process prefix before it: ``(VllmWorker rank=0 pid=7)``, ``(EngineCore_DP0 pid=7)``, ``(RayWorkerWrapper pid=7, ip=...)``
PROCESS = re.compile(r"\((?P<name>[^()]{0,80}?) ?pid=(?P<pid>\d{1,10})(?:, ip=[^()\s]{1,64})?\)")
WORKER_RANK = re.compile(r"\brank=(\d{1,7})\b")
RAY_REPEAT = re.compile(r" \[repeated (?P<repeat>\d{1,9})x across cluster\]$")
TAG = re.compile(r"^\[(?P<tag>[^\]\s]{1,80})\] ")

#: seconds as ``%.2f`` prints them, inf and nan included (a broken clock): read, then stored as NULL and reported
_S = r"(?P<s>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|-?inf|nan)"
_WHAT = r"(?P<what>general shape|dynamic shape|dynamic compile range|compile range (?P<range>\(-?\d+, -?\d+\))|shape (?P<shape>\S+?))"

#: kind -> pattern on the message (after the tag); group ``s``: seconds, ``gib``, ``path``, ``what``
MESSAGES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("dynamo_transform", re.compile(rf"^Dynamo bytecode transform time: {_S} s$")),
    ("compile_range", re.compile(rf"^Compiling a graph for {_WHAT}(?: t(?:akes|ook) {_S} s)?$")),
    (
        "cache_load",
        re.compile(
            rf"^Directly (?:load the compiled graph(?:\(s\))?|lookup the graph) for {_WHAT} from the cache(?:, took {_S} s)?$"
        ),
    ),
    ("cache_store", re.compile(rf"^Cache the graph (?:of |for ){_WHAT} for later use$")),
    (
        "compile_total",
        re.compile(
            rf"^torch\.compile (?:and initial profiling/warmup run together )?t(?:akes|ook) {_S} s in total$"
        ),
    ),
    ("compile_start", re.compile(r"^Starting torch\.compile$")),
    ("warmup_run", re.compile(rf"^Initial profiling/warmup run took {_S} s$")),
    ("cache_dir", re.compile(r"^Using cache directory: (?P<path>.+) for vLLM's torch\.compile$")),
    ("cache_disabled", re.compile(r"^vLLM's torch\.compile cache is disabled\.$")),
    ("cache_saved", re.compile(rf"^Saved compiler manager cache in {_S} seconds\.$")),
    ("aot_load", re.compile(r"^Directly load AOT compilation from path (?P<path>.+)$")),
    ("aot_save", re.compile(r"^saved AOT compiled function to (?P<path>.+)$")),
    (
        "cudagraph_capture",
        re.compile(
            rf"^Graph capturing finished in {_S} secs(?:\.|, took (?P<gib>-?\d+(?:\.\d+)?) GiB)$"
        ),
    ),
    (
        "engine_init",
        re.compile(
            rf"^init engine \(profile, create kv cache, warmup model\) took {_S} (?:seconds|s)\b(?: \(compilation: (?P<cs>\d+(?:\.\d+)?|inf|nan) s)?"
        ),
    ),
    (
        "aot_load_failed",
        re.compile(
            r"^Compiling model again due to a load failure from (?P<path>.+?), reason: ?(?P<reason>.*)$"
        ),
    ),
    (
        "cache_factors",
        re.compile(
            r"^torch\.compile cache factors: env=\S* cfg=\S* comp=\S* code=\S* dir=(?P<path>.+)$"
        ),
    ),
    (
        "engine_config",
        re.compile(
            r"^Initializing an? (?:V1 )?LLM engine \(v(?P<version>[^)\s]+)\) with config: model=(?P<model>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\S+?),"
        ),
    ),
)
#: a vLLM logger line's level and date, possibly coloured: the one test every line of a capture gets
QUICK = re.compile(
    r"(?:INFO|WARNING|DEBUG|ERROR|CRITICAL)(?:\x1b\[[0-9;]*m)? (?:\x1b\[[0-9;]*m)?\d\d-\d\d \d"
).search
#: the first words of each message (after the tag), to skip the patterns for every other vLLM line
STARTS = (
    "Dynamo",
    "Compiling a graph",
    "Directly",
    "Cache the graph",
    "torch.compile",
    "Starting torch",
    "Initial profiling",
    "Using cache directory",
    "vLLM's torch.compile",
    "Saved compiler",
    "saved AOT",
    "Graph capturing",
    "init engine",
    "Initializing a",
    "Compiling model again",
)
