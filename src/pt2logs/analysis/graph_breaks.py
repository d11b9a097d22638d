"""Graph-break reports: the ``dynamo_graph_break_reason`` artifact and TORCH_LOGS ``[__graph_breaks]``.

Both carry the same body (TORCH_LOGS lines with their glog prefix already stripped). Formats:

* torch 2.7+ (structured ``unimplemented``): ``Graph break in user code at FILE:LINE``, then
  ``Graph Break Reason: <reason>`` where the reason is ``<gb_type>`` / ``  Explanation: ...`` /
  ``  Hint: ...`` lines / ``  Developer debug context: ...`` / `` For more details ... /gb/gbNNNN.html``.
  When the reason starts with ``Encountered graph break when attempting to trace ...:`` or
  ``Failed to handle graph break gracefully. ...:`` the real type is the next non-empty line; we
  take the line right above ``Explanation:`` (skipping ``Higher Order Operator:``). Then optional
  ``Stack variable source attribution:``, ``User code traceback:`` frames (TORCHDYNAMO_VERBOSE adds
  a ``==== most recent `torch.compile` tracing attempt ====`` section) and the internal
  ``Traceback (most recent call last):``. Repeats in TORCH_LOGS say ``Graph break (user stack
  suppressed due to duplicate graph break) in user code at FILE:LINE`` with no traceback.
* torch 2.5-2.6: ``Graph break in user code at FILE:LINE`` / ``Reason: Unsupported: <msg>`` /
  ``User code traceback:``.
* torch 2.4: ``Graph break: from user code at:`` (or ``Graph break: skip: from user code at:``)
  frames, then a traceback ending in ``torch._dynamo.exc.Unsupported: <msg>``; torch 2.1-2.3:
  ``Graph break: <msg> from user code at: File ...``. Frame skips (2.7+): ``Graph break:
  torch.compile cannot properly resume ...`` + ``The graph break occurred in the following user
  code:`` frames + traceback; ``WON'T CONVERT fn FILE line N`` + traceback.

Old messages have no type: ``gb_type`` is then a short form of the reason's first line (after
``Unsupported:``): the text before the first ``:`` or ``(`` and before `` in file `` / `` from user
code``, e.g. ``call_function BuiltinVariable(print) [...]`` -> ``call_function BuiltinVariable``.
"""

from __future__ import annotations

import re
from typing import Any

_LOCATION = re.compile(
    r"^Graph break (?P<dup>\(user stack suppressed due to duplicate graph break\) )?"
    r"in user code at (?P<file>.+):(?P<line>\d+)\s*$",
    re.M,
)
_GB_ID = re.compile(r"/gb/(gb\d+)\.html")
_FRAME = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+)(?:, in (?P<func>.+))?$')
_REASON_HEAD = re.compile(r"^(?:Graph Break Reason|Reason):[ \t]?(?P<rest>.*)$")
_OLD_INLINE = re.compile(r"^Graph break: (?P<reason>.+?) from user code at:?", re.M | re.S)
_USER_SECTION = re.compile(
    r"^(?:User code traceback:|Graph break: .*from user code at:\s*$|from user code:|The graph "
    r"break occurred in the following user code:|={5,} (?:most recent `torch\.compile` tracing|"
    r"The above exception occurred while processing))"
)
_INLINE_FRAME = re.compile(r"from user code at:?[ \t]+(?=File \")")
_SECTION_END = re.compile(
    r"^(?:User code traceback:|Traceback \(most recent call last\):|Stack variable source "
    r"attribution:|NOTE: the most recent|Most recent bytecode instructions|from user code:|"
    r"Set TORCHDYNAMO_VERBOSE|={5,} The above exception)"
)
_EXC_LINE = re.compile(
    r"^(?P<exc>(?:[A-Za-z_]\w*\.)+\w+|\w*(?:Error|Exception|Unsupported|Failed|Frame|Analysis|"
    r"Exit|Interrupt|Warning)): (?P<msg>.*)$"
)
_MARKER = re.compile(
    r"^\s*(?:Explanation:|Hint:|Developer debug context:|For more details|Higher Order Operator:)"
)
_WRAPPED_TYPE = re.compile(
    r"^(?:Encountered graph break when attempting to trace|Failed to handle graph break "
    r"gracefully).*:$"
)
_SHORT_PREFIX = re.compile(r"^(?:(?:torch\._dynamo\.exc\.)?Unsupported:\s*|['\"])+")
_SHORT_CUT = re.compile(r"[:(]| in file | from user code")


def parse_graph_break(text: str) -> dict[str, Any]:
    """Parse one graph-break body. Never raises; missing parts are None / empty."""
    lines = [
        ln.rstrip("\r") for ln in _INLINE_FRAME.sub("from user code at:\n  ", text).split("\n")
    ]
    location = _LOCATION.search("\n".join(lines))
    gb_id = _GB_ID.search(text)
    reason, headed = _reason(lines)
    frames = _user_frames(lines)
    filename, lineno = (
        (location.group("file"), int(location.group("line"))) if location else (None, None)
    )
    if location is None and frames:
        filename, lineno = frames[-1][0], frames[-1][1]
    reason_lines = reason.split("\n")
    structured = gb_id is not None or (headed and not reason.startswith("Unsupported:"))
    return {
        "gb_id": gb_id.group(1) if gb_id else None,
        "gb_type": _gb_type(reason_lines, structured),
        "reason": reason,
        "user_filename": filename,
        "user_lineno": lineno,
        "explanation": _explanation(reason_lines),
        "hints": _hints(reason_lines),
        "is_duplicate": bool(location and location.group("dup")),
        "user_stack": [f"{f}:{n} in {fn}" if fn else f"{f}:{n}" for f, n, fn in frames],
        "frames": frames,
    }


def _reason(lines: list[str]) -> tuple[str, bool]:
    for i, line in enumerate(lines):
        m = _REASON_HEAD.match(line)
        if m:
            body = [m.group("rest")]
            for nxt in lines[i + 1 :]:
                if _SECTION_END.match(nxt):
                    break
                body.append(nxt)
            return "\n".join(body).strip(), line.startswith("Graph Break Reason")
    head = "\n".join(lines[:3])
    old = _OLD_INLINE.match(head)
    if old and not old.group("reason").startswith(("skip:", "torch.compile cannot")):
        return old.group("reason").strip().strip("'\""), False
    exc = _last_exception(lines)
    if exc is not None:
        return exc, False
    return next((ln.strip() for ln in lines if ln.strip()), ""), False


def _last_exception(lines: list[str]) -> str | None:
    """Message of the last exception after a ``Traceback (most recent call last):``."""
    start = None
    for i, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last):"):
            start = i
    if start is None:
        return None
    for i in range(len(lines) - 1, start, -1):
        m = _EXC_LINE.match(lines[i])
        if m and not lines[i].startswith(" "):
            body = [m.group("msg")]
            for nxt in lines[i + 1 :]:
                if _SECTION_END.match(nxt) or nxt.startswith("The above exception"):
                    break
                body.append(nxt)
            return "\n".join(body).strip()
    return None


def _gb_type(reason_lines: list[str], structured: bool) -> str | None:
    for i, line in enumerate(reason_lines):
        if line.strip().startswith("Explanation:"):
            for prev in reversed(reason_lines[:i]):
                if prev.strip() and not prev.strip().startswith("Higher Order Operator:"):
                    return prev.strip()
            break
    content = [ln.strip() for ln in reason_lines if ln.strip()]
    if not content:
        return None
    if _WRAPPED_TYPE.match(content[0]) and len(content) > 1:
        return content[1]
    if structured:
        return content[0]
    short = _SHORT_CUT.split(_SHORT_PREFIX.sub("", content[0]), maxsplit=1)[0].strip(" '\"")
    return (short or content[0])[:120]


def _explanation(reason_lines: list[str]) -> str | None:
    for i, line in enumerate(reason_lines):
        stripped = line.strip()
        if stripped.startswith("Explanation:"):
            body = [stripped[len("Explanation:") :]]
            for nxt in reason_lines[i + 1 :]:
                if _MARKER.match(nxt):
                    break
                body.append(nxt.strip())
            return "\n".join(body).strip() or None
    return None


def _hints(reason_lines: list[str]) -> list[str]:
    hints: list[str] = []
    current: list[str] | None = None
    for line in reason_lines:
        stripped = line.strip()
        if stripped.startswith("Hint:"):
            current = [stripped[len("Hint:") :].strip()]
            hints.append("")
        elif current is not None and stripped and not _MARKER.match(line):
            current.append(stripped)
        else:
            current = None
        if current is not None:
            hints[-1] = "\n".join(current)
    return hints


def _user_frames(lines: list[str]) -> list[tuple[str, int, str | None]]:
    """Frames of the user-code sections (never the internal ``Traceback`` frames)."""
    frames: list[tuple[str, int, str | None]] = []
    inside = False
    for line in lines:
        if _USER_SECTION.match(line):
            inside = True
        elif inside and _SECTION_END.match(line):
            inside = False
        elif inside:
            m = _FRAME.match(line)
            if m:
                frames.append((m.group("file"), int(m.group("line")), m.group("func")))
    return frames
