"""The lines that say how a process ended: exit codes, signals, collective timeouts, crashes.

Pure data and small pure functions; :mod:`pt2logs.readers.lines.outcome_lines` applies them line by line.
Every pattern is copied from the program that prints it (file and line of torch 2.13 unless said),
so a change there is a change here:

* the elastic agent (``torch.distributed.run`` / torchrun), Python logging through torch's glog
  formatter (``W1123 00:14:40.177000 14741 torch/distributed/elastic/...:1028] ...``):
  ``multiprocessing/api.py:1028`` ``"Sending process %s closing signal %s"``;
  ``multiprocessing/api.py:1002`` ``"failed (exitcode: %s) local_rank: %s (pid: %s) of binary: %s"``
  (``:837`` the same ``... of fn: %s (start_method: %s)`` for function launches);
  ``multiprocessing/api.py:1047`` ``"Unable to shutdown process %s via %s, forcefully exiting via %s"``;
  ``agent/server/api.py:753`` ``"Received %s death signal, shutting down workers"`` (torch 2.13 prints
  the number: ``Received 15 death signal``) and ``:1005`` ``"Got termination signal: %s"``; the agent's
  own end, ``multiprocessing/api.py:86`` ``SignalException: Process 27461 got signal: 15``;
* ``ChildFailedError``'s table (``multiprocessing/errors/__init__.py:181`` ``_FAILURE_FORMAT_TEMPLATE``:
  ``[idx]:`` then ``time``, ``host``, ``rank : R (local_rank: L)``, ``exitcode : C (pid: P) (SIG)``,
  ``error_file``, ``traceback`` lines; ``Root Cause (first observed failure):`` before the root
  entry) and ``ProcessFailure``'s message ``"Signal {n} ({name}) received by PID {pid}"`` (``:142``);
* NCCL (``torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp``, C++ ``LOG(ERROR)`` through c10's glog
  format ``[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629]``, older torch ``[E ProcessGroupNCCL.cpp:474]``;
  real lines from public threads): ``"[Rank N] Watchdog caught collective operation timeout:
  WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=.., NumelOut=.., Timeout(ms)=600000) ran for 600081
  milliseconds before timing out."``, ``"[PG ID 1 PG GUID 1 Rank 1]  failure detected by watchdog at
  work sequence id: 1 PG status: last enqueued work: 547, last completed work: -1"`` (older: ``"Exception
  detected by watchdog at work: N, last enqueued NCCL work: N, last completed NCCL work: N-1"``),
  ``"Process group watchdog thread terminated with exception: ..."``, ``"Heartbeat monitor timed out!"``,
  ``"ProcessGroupNCCL's watchdog got stuck for N seconds"``;
* gloo (``third_party/gloo``, strings of ``libtorch_cpu.so``, real lines of this project's tests):
  ``"[.../unbound_buffer.cc:78] Timed out waiting 10000ms for recv operation to complete"``,
  ``"[.../pair.cc:553] Connection closed by peer [127.0.0.1]:33163"``, ``"Read error ...: Connection
  reset by peer"``, ``"op.preamble.length <= op.nbytes ... Is there a distributed collective mismatch"``;
  ``ProcessGroupGloo::monitoredBarrier``: ``"Rank N failed to pass monitoredBarrier in N ms"``,
  ``" timed out in monitoredBarrier after "``;
* c10d (``distributed_c10d.py:1069/1082``): ``"Waiting in store based barrier to initialize process
  group for %s seconds"``, ``"Timed out initializing process group in store based barrier"``;
  ``elastic/utils/store.py:216`` ``"Timed out waiting on barrier on ..."``;
* Python and the C/C++ runtime: ``Traceback (most recent call last):`` then the exception line (torch
  prefixes each line with ``[rankN]:`` once the process group exists, ``distributed_c10d.py:1922``
  ``_distributed_excepthook``); ``torch.OutOfMemoryError: CUDA out of memory.``; libstdc++'s
  ``terminate called after throwing an instance of 'c10::DistBackendError'``; CPython's ``Fatal Python
  error: Segmentation fault``; the shell's job reports ``Segmentation fault (core dumped)``,
  ``Aborted (core dumped)``, ``Killed`` (what bash prints for a child the kernel's OOM killer ended).
"""

from __future__ import annotations

import re
import signal as _signal
from typing import Any

#: ``[rank3]:`` (torch's log formatter and its excepthook put it before every line of a rank)
RANK_PREFIX = re.compile(r"\[rank(\d{1,7})\]:\s?")
#: torchrun's ``--tee`` / ``--redirects`` header before each worker line (``tail_log.py``: ``[{role}{local_rank}]:``,
#: e.g. ``[default0]:``, or a ``log_line_prefix_template`` such as ``[3]:``); ``[rank3]:`` is torch's own prefix
TAIL_PREFIX = re.compile(r"\[(?!rank\d)(?:[A-Za-z_][\w-]{0,40}?(\d{1,7})\]:|(\d{1,7})\]:(?=\S))")
#: a wrapper's own prefix before the line: ``(RayWorkerVllm pid=5304) `` or ``[2025-08-12 03:18:23.088] ``
WRAPPER = re.compile(r"(?:\([^)\n]{1,64}\)|\[\d{4}-\d\d-\d\d[ T][\d:.,]+\])(?::? ?)")
#: vLLM's logger prefix (vllm/logger.py ``_FORMAT``: ``%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] ``, no brackets
#: before 0.8); its ``NewLineFormatter`` (vllm/logging_utils/formatter.py) repeats it on every line of a message, the
#: traceback of ``logger.exception`` included (v1/engine/core.py ``logger.exception("EngineCore failed to start.")``
#: before it re-raises: the end of the process)
VLLM = re.compile(
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<mm>\d\d)-(?P<dd>\d\d) (?P<time>\d\d:\d\d:\d\d)(?:\.\d+)? "
    r"\[?[^\s:\]\[]+:\d+\] ?"
)
#: ANSI colour codes (vLLM's cyan process prefix and coloured levels)
ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: exceptions whose message ends with Dynamo's ``from user code:`` section (torch/_dynamo/exc.py ``augment_exc_message``):
#: the user frame is there, not in the traceback (whose innermost frames are torch's)
DYNAMO_EXC = re.compile(
    r"(?:torch\._dynamo\.exc\.|torch\._inductor\.exc\.)?(?:Unsupported|UserError|TorchRuntimeError|"
    r"InternalTorchDynamoError|BackendCompilerFailed|FailOnRecompileLimitHit|UncapturedHigherOrderOpError|"
    r"RecompileLimitExceeded|InductorError|LoweringException)$|torch\._(?:dynamo|inductor)\."
)
USER_CODE = re.compile(r"\s*from user code:\s*$")
#: torch's Python glog prefix: level, MMDD, time, pid, source path and line
GLOG = re.compile(
    r"(?P<level>[VIWEC])(?P<mmdd>\d{4}) (?P<time>\d\d:\d\d:\d\d(?:\.\d{1,9})?) +(?P<pid>\d+) [^\]\s]+:\d+\] ?"
)
#: c10's C++ log prefix: ``[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629]`` or ``[E ProcessGroupNCCL.cpp:474]``
C10 = re.compile(
    r"\[(?P<level>[VIWEF])(?:(?P<mmdd>\d{4}) (?P<time>\d\d:\d\d:\d\d(?:\.\d{1,9})?)(?: +\d+)?)? *[\w./-]+:\d+\] ?"
)
#: ``[Rank 1]`` or ``[PG ID 1 PG GUID 1(default_pg) Rank 1]`` / ``[PG 2 Rank 0]`` inside NCCL messages
NCCL_RANK = re.compile(r"\[(?:PG [^\]]{0,80}?)?Rank (\d{1,7})\]")

# ----------------------------------------------------------------------------- one-line evidence

#: (kind, what it means, regex); the first that matches a line wins. ``means``: the outcome it points
#: to (hung, crashed, failed, killed) or ``info``. Named groups fill columns: pid, code, sig, op, seq,
#: timeout_ms, elapsed_ms, rank, local_rank.
LINE_RULES: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    (
        "collective_timeout",
        "hung",
        re.compile(
            r"Watchdog caught collective operation timeout: WorkNCCL\((?P<work>(?:[^()]|\([^()]*\))*)\)(?: ran for (?P<elapsed_ms>\d+) milliseconds)?"
        ),
    ),
    (
        "watchdog_status",
        "info",
        re.compile(
            r"(?:failure|Exception) detected by watchdog at work(?: sequence id)?: (?P<seq>-?\d+)"
        ),
    ),
    (
        "heartbeat_timeout",
        "hung",
        re.compile(
            r"Heartbeat monitor timed out|watchdog got stuck for (?P<elapsed_s>\d+) seconds"
        ),
    ),
    (
        "watchdog_exception",
        "info",
        re.compile(r"(?:Process group|NCCL) watchdog thread terminated with exception"),
    ),
    (
        "collective_timeout",
        "hung",
        re.compile(
            r"Timed out waiting (?P<timeout_ms>\d+)ms for (?P<op>\w+) operation to complete"
        ),
    ),
    (
        "barrier_timeout",
        "hung",
        re.compile(
            r"Rank (?P<rank>\d+) failed to pass monitoredBarrier in (?P<timeout_ms>\d+) ms"
            r"|timed out in monitoredBarrier after|Timed out initializing process group in store based barrier"
            r"|Timed out waiting on barrier on|timed out waiting for all \d+ members to join"
        ),
    ),
    (
        "barrier_wait",
        "info",
        re.compile(
            r"Waiting in store based barrier to initialize process group for (?P<elapsed_s>[\d.]+) seconds"
        ),
    ),
    (
        "collective_mismatch",
        "crashed",
        re.compile(r"Is there a distributed collective mismatch in your code\?"),
    ),
    ("peer_closed", "failed", re.compile(r"Connection (?:closed|reset) by peer")),
    (
        "closing_signal",
        "killed",
        re.compile(r"Sending process (?P<pid>\d+) closing signal (?P<sig>SIG[A-Z0-9]+)"),
    ),
    (
        "forced_kill",
        "killed",
        re.compile(
            r"Unable to shutdown process (?P<pid>\d+) via \S+, forcefully exiting via (?:Signals\.)?(?P<sig>SIG[A-Z0-9]+)"
        ),
    ),
    (
        "worker_exit",
        "exit",
        re.compile(
            r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<local_rank>\d+) \(pid: (?P<pid>\d+)\) of (?:binary|fn)"
        ),
    ),
    (
        "agent_signal",
        "killed",
        re.compile(
            r"Received (?:Signals\.)?(?P<sig>SIG[A-Z0-9]+|\d+) death signal, shutting down workers"
            r"|Got termination signal: (?:Signals\.)?(?P<sig2>SIG[A-Z0-9]+|\d+)"
            r"|SignalException: Process (?P<pid>\d+) got signal: (?:Signals\.)?(?P<sig3>SIG[A-Z0-9]+|\d+)"
        ),
    ),
    (
        "signal_received",
        "killed",
        re.compile(
            r"Signal (?P<signum>\d+) \((?P<sig>SIG[A-Z0-9]+)\) received by PID (?P<pid>\d+)"
        ),
    ),
    (
        "abort",
        "crashed",
        re.compile(r"terminate called after throwing an instance of|Aborted \(core dumped\)"),
    ),
    (
        "segfault",
        "crashed",
        re.compile(r"Segmentation fault|Fatal Python error|Bus error \(core dumped\)|core dumped"),
    ),
    ("oom", "failed", re.compile(r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory")),
    ("oom_killed", "killed", re.compile(r"^Killed\s*$|^(?:\S+: )?(?:line \d+: )?\d+ Killed\s")),
    # torch/_dynamo/exc.py FailOnRecompileLimitHit, raised by convert_frame.py with "{limit} reached with fullgraph=True. ...":
    # the exception line alone (a paste, a log that cut the traceback) is how the process ended
    (
        "exception",
        "failed",
        re.compile(
            r"^\s*(?P<exc>(?:torch\._dynamo\.exc\.)?FailOnRecompileLimitHit)\b(?::\s?(?P<exc_msg>.*))?$"
        ),
    ),
)
#: kinds never read from a message torch's Python logger wrote (a glog-prefixed line): there they are errors
#: torch caught and logged, e.g. ``torch/_inductor/select_algorithm.py`` ``"Runtime error during autotuning: \n%s.
#: \nIgnoring this choice."`` with ``runtime/triton_heuristics.py``'s ``"No valid triton configs. {type(exc).__name__}:
#: {exc}"`` (triton 3.6 names the exception ``OutOfMemoryError: out of resource: triton_mm Required: 245760 Hardware
#: limit:232448``), or ``"Exception %s for benchmark choice %s"``; a CUDA OOM that ends the process is its traceback's
#: last line, which has no such prefix
LOGGED_NOT_EVIDENCE = ("oom", "exception")
#: a fast pre-check: a line that contains none of these words has no evidence (most lines)
TRIGGERS = re.compile(
    r"Watchdog|watchdog|Heartbeat|Timed out|timed out|monitoredBarrier|store based barrier|collective mismatch"
    r"|by peer|closing signal|Unable to shutdown|exitcode|death signal|termination signal|received by PID"
    r"|terminate called|core dumped|Segmentation fault|Fatal Python error|out of memory|OutOfMemoryError"
    r"|Killed|got signal|FailOnRecompileLimitHit"
)

# ----------------------------------------------------------------------------- multi-line shapes

TRACEBACK = re.compile(r"Traceback \(most recent call last\):\s*$")
#: a frame line of a traceback: ``  File "/x.py", line 17, in <module>``
FRAME = re.compile(r'\s+File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<fn>.+))?')
#: the line that ends a traceback: ``RuntimeError: msg`` / ``torch.OutOfMemoryError: CUDA out of memory``
EXCEPTION = re.compile(r"(?P<type>[A-Za-z_][\w.]*)(?::\s?(?P<msg>.*))?$")
CHAINED = re.compile(
    r"During handling of the above exception|The above exception was the direct cause"
)
#: ChildFailedError's table
CFE_ROOT = re.compile(r"Root Cause \(first observed failure\):")
CFE_ENTRY = re.compile(r"\[(\d+)\]:\s*$")
CFE_FIELD = re.compile(
    r"\s+(?P<key>time|host|rank|exitcode|error_file|traceback)\s*:\s?(?P<value>.*)$"
)
CFE_RANK = re.compile(r"(?P<rank>\d+) \(local_rank: (?P<local_rank>\d+)\)")
CFE_EXIT = re.compile(r"(?P<code>-?\d+) \(pid: (?P<pid>\d+)\)(?:\s*\((?P<sig>SIG[A-Z0-9]+)\))?")
CFE_BORDER = re.compile(r"={10,}\s*$")
CFE_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)_(\d\d):(\d\d):(\d\d)")

#: signals a process raises on itself when it crashes (the rest end it from outside)
CRASH_SIGNALS = frozenset({"SIGSEGV", "SIGABRT", "SIGBUS", "SIGFPE", "SIGILL", "SIGSYS", "SIGTRAP"})


def signal_name(code: int) -> str | None:
    """``-9`` → ``SIGKILL`` (a negative exit code is the signal that ended the process, as Python's
    ``Popen.returncode`` and torchrun's ``exitcode`` report it); ``137`` → ``SIGKILL`` too (a shell's
    ``128 + n``); None for an ordinary exit status."""
    n = -code if code < 0 else code - 128 if 128 < code < 128 + 65 else 0
    if n <= 0:
        return None
    try:
        return _signal.Signals(n).name
    except ValueError:
        return f"SIG{n}"


def exit_means(code: int | None, sig: str | None) -> str:
    """What an exit status says: completed (0), crashed (a crash signal), killed (any other signal),
    failed (a non-zero status)."""
    if sig:
        return "crashed" if sig in CRASH_SIGNALS else "killed"
    if code is None:
        return "info"
    return "completed" if code == 0 else "failed"


def parse_work(work: str) -> dict[str, str]:
    """``SeqNum=1, OpType=BROADCAST, NumelIn=2, Timeout(ms)=600000`` → a dict of its fields."""
    out = {}
    for part in work.split(","):
        k, _, v = part.strip().partition("=")
        if k and v:
            out[k] = v
    return out


def _ms(seconds: str) -> int | str:
    """Seconds as printed → whole milliseconds; text that is no number int64 holds stays text (the column's
    rule stores NULL and reports it)."""
    try:
        ms = float(seconds) * 1000
    except ValueError:
        return seconds
    return int(ms) if abs(ms) < 2**63 else seconds


def fill(row: dict[str, Any], kind: str, g: dict[str, str]) -> None:
    """The columns a rule's named groups give (pid, code, sig, op, seq, timeout_ms, elapsed_ms, rank, local_rank, exc)."""
    sig = g.get("sig") or g.get("sig2") or g.get("sig3")
    if sig and sig.isdigit():
        sig = signal_name(-int(sig))
    if sig:
        row["signal"] = sig
    if "code" in g:
        row["exit_code"] = int(g["code"])
        row["signal"] = row.get("signal") or signal_name(int(g["code"]))
        row["means"] = exit_means(int(g["code"]), row.get("signal"))
    if "signum" in g:
        row["exit_code"] = -int(g["signum"])
    if "local_rank" in g:
        row["local_rank"] = int(g["local_rank"])
    for k in ("timeout_ms", "elapsed_ms"):
        if k in g:
            row[k] = int(g[k])
    if "exc" in g:
        row["exc_type"], row["exc_message"] = g["exc"], g.get("exc_msg")
    if (
        "elapsed_s" in g
    ):  # seconds no int64 of ms holds (or `1.2.3`): the text, NULL and reported as bad_value
        row["elapsed_ms"] = _ms(g["elapsed_s"])
    if "op" in g:
        row["collective"] = g["op"]
    if "seq" in g:
        row["seq_num"] = int(g["seq"])
    if "work" in g:
        w = parse_work(g["work"])
        row["collective"] = w.get("OpType")
        if w.get("SeqNum", "").lstrip("-").isdigit():
            row["seq_num"] = int(w["SeqNum"])
        if w.get("Timeout(ms)", "").isdigit():
            row["timeout_ms"] = int(w["Timeout(ms)"])
        row["detail"] = {"work": g["work"]}
    if kind == "barrier_timeout":
        row["collective"] = "barrier"
    if kind in ("peer_closed", "closing_signal", "forced_kill"):
        row["secondary"] = True
