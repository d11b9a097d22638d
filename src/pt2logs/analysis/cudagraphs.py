"""Why CUDA graphs were skipped or re-recorded, from torch's own messages (torch 2.13).

Every skip goes through ``log_cudagraph_skip_and_bump_counter(msg)`` (torch/_inductor/cudagraph_utils.py):
it logs ``msg`` at WARNING on the ``cudagraphs`` artifact logger (TORCH_LOGS ``[__cudagraphs]``) and sets
``compilation_metrics.cudagraph_skip_reason`` to it. The messages, as torch words them:

* ``skipping cudagraphs due to {reason}`` (``format_default_skip_message``), reason one of
  ``mutated inputs ({n} instances)`` / ``mutated inputs``, ``cpu device ({node})``,
  ``multiple devices: ...``, ``incompatible op ({op})``, ``deterministic index put ...``,
  ``dynamic shape ...`` / ``graph with symbolic shapes inputs and config.triton.cudagraph_skip_dynamic_graphs=True``,
  ``bisector``, ``cudagraph capture requires the caching allocator ...``; a reason may end with
  ``. Found from : \\n {stack_trace}`` (the user line as an FX stack trace);
* ``skipping cudagraph due to function {id} exceeding max re-recording limit (={n}) on cudagraph node
  {node} due to {reason}.`` (cudagraph_trees.py: the function falls back to eager);
* the re-recordings (DEBUG, cudagraph_trees.py): ``[{compile_id}] Re-recording function={name},
  mode={mode}, reason={reason}``;
* too many sizes (cudagraph_utils.py ``maybe_warning_due_to_dynamic_shape``): ``CUDAGraph supports dynamic
  shapes by recording a new graph for each distinct input size. ... We have observed {n} distinct sizes.``
"""

from __future__ import annotations

import re
from typing import Any

SKIP_PREFIX = re.compile(r"^skipping cudagraphs? due to ")
_RERECORD_LIMIT = re.compile(
    r"^skipping cudagraph due to function (?P<fn>\S+) exceeding max re-recording limit "
    r"\(=(?P<limit>\d+)\) on cudagraph node (?P<node>\S+) due to (?P<reason>.*?)\.?$",
    re.S,
)
_RERECORD = re.compile(
    r"^\[(?P<cid>[^\]]*)\] Re-recording function=(?P<fn>.*?), mode=(?P<mode>\S+), reason=(?P<reason>.*)$",
    re.S,
)
_SIZES = re.compile(
    r"^CUDAGraph supports dynamic shapes by recording a new graph for each distinct input size\..*?"
    r"We have observed (?P<n>\d+) distinct sizes",
    re.S,
)
_FOUND = re.compile(r"\. Found from : ?\n(?P<stack>.*)$", re.S)
_USER_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>[^\s,]+))?')

#: reason text → kind, first match wins (the words are torch's, above)
KINDS = (
    ("mutated inputs", "mutated_inputs"),
    ("mutated input", "mutated_inputs"),
    ("non-cudagraph-managed", "mutated_inputs"),
    ("cpu device", "cpu_device"),
    ("multiple devices", "multiple_devices"),
    ("non-cuda device", "cpu_device"),
    ("incompatible op", "incompatible_op"),
    ("deterministic", "incompatible_op"),
    ("symbolic shape", "dynamic_shapes"),
    ("dynamic shape", "dynamic_shapes"),
    ("unbacked", "dynamic_shapes"),
    ("caching allocator", "allocator"),
    ("bisector", "bisector"),
)


def reason_kind(reason: str) -> str:
    low = reason.lower()
    for needle, kind in KINDS:
        if needle in low:
            return kind
    return "other"


def parse(text: str) -> dict[str, Any] | None:
    """One ``[__cudagraphs]`` message (or a metrics skip reason) → the columns of a ``cudagraph_skips``
    row (event, reason, reason_kind, function, user_file, user_line, count), None when the message is
    about something else (recording, replay)."""
    text = text.strip()
    m = _RERECORD_LIMIT.match(text)
    if m:
        reason = m["reason"].strip()
        return _row("rerecord_limit", reason, "rerecord_limit", m["fn"], None, int(m["limit"]))
    m = _RERECORD.match(text)
    if m:
        reason = m["reason"].strip()
        return _row("rerecord", reason, reason_kind(reason), m["fn"], None, None)
    m = _SIZES.match(text)
    if m:
        return _row(
            "too_many_sizes", "distinct input sizes", "dynamic_shapes", None, None, int(m["n"])
        )
    m = SKIP_PREFIX.match(text)
    if m:
        reason = text[m.end() :]
        while (again := SKIP_PREFIX.match(reason)) is not None:
            reason = reason[
                again.end() :
            ]  # the cudagraphs backend adds the prefix check_for_skip already gave
        found = _FOUND.search(reason)
        stack = None
        if found:
            stack = found["stack"]
            reason = reason[: found.start()]
        return _row("skip", reason.strip(), reason_kind(reason), None, stack, None)
    return None


def _row(
    event: str, reason: str, kind: str, fn: str | None, stack: str | None, count: int | None
) -> dict[str, Any]:
    file = line = None
    if stack:
        hits = _USER_LINE.findall(stack)
        if hits:
            file, ln, func = hits[-1]
            line = int(ln)
            fn = (
                fn or func or None
            )  # the user function the stack ends in, when the message names none
    return {
        "event": event,
        "reason": reason,
        "reason_kind": kind,
        "function": fn,
        "user_file": file,
        "user_line": line,
        "count": count,
    }


def unknown(text: str) -> dict[str, Any]:
    """A skip reason in words :func:`parse` does not know (another torch): kept whole."""
    return _row("skip", text.strip(), reason_kind(text), None, None, None)
