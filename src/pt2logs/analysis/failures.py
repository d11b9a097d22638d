"""Failed compiles: the exception (type, full message, a masked key), its stack and its user frame.

Sources: the trace's ``compilation_metrics`` (``fail_type`` / ``fail_reason``, the traceback in
``exception_stack_trace``, the compile's user stack in ``stack_trace`` as ``Line: N, Name: f,
Filename: F`` lines, and ``fail_user_frame_*`` when torch knows it) and TORCH_LOGS text, whose
``WON'T CONVERT <fn> <file> line <n>`` warning carries ``due to:`` and a traceback.

A failure's identity (``failure_key``) is its exception type (last dotted part: ``torch._dynamo.exc.
BackendCompilerFailed`` and ``BackendCompilerFailed`` are one type) and its message with what varies
between runs masked (:func:`pt2logs.analysis.identity.mask`); the full text is kept beside it.
Its user frame is torch's ``fail_user_frame`` when given, else the innermost user-code frame of the
exception's traceback (the user's code that raised, e.g. a custom backend), else that of the
compile's user stack (where the compiled function was called), else the compiled function itself
when it is user code (logs older than those stacks).
"""

from __future__ import annotations

import re
from typing import Any

from pt2logs.analysis.identity import Frame, frame_text, mask, pick_frames

_FRAME = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+)(?:, in (?P<func>.+))?\s*$')
_METRIC_FRAME = re.compile(r"^Line: (?P<line>\d+), Name: (?P<func>.*?), Filename: (?P<file>.+)$")
_EXC = re.compile(
    r"^(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Failed|Unsupported|Exit|Interrupt"
    r"|Warning|Restart\w*|Abort\w*|Skip\w*|Violation|Timeout\w*)|(?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*)"
    r"(?::[ \t]?(?P<msg>.*))?$"
)
_END = re.compile(
    r"^(?:Set TORCHDYNAMO_VERBOSE|from user code:|You can suppress this exception|"
    r"For even more developer context|The above exception was the direct cause|"
    r"During handling of the above exception)"
)
_WONT = re.compile(r"^WON'T CONVERT (?P<func>\S+) (?P<file>.+) line (?P<line>\d+)\s*$", re.M)
#: the longest masked message kept in a key
KEY_CHARS = 300


def short_type(exc_type: str | None) -> str | None:
    """``torch._dynamo.exc.BackendCompilerFailed`` → ``BackendCompilerFailed``."""
    if not exc_type:
        return None
    t = exc_type.strip().removeprefix("<class '").removesuffix("'>")
    return t.rsplit(".", 1)[-1] or None


def failure_key(exc_type: str | None, message: str | None) -> str | None:
    """Exception type + masked message: the same failure on every machine and run."""
    t, m = short_type(exc_type), mask(message)
    if not t and not m:
        return None
    m = (m or "")[:KEY_CHARS]
    return f"{t}: {m}" if t and m else (t or m)


def traceback_parts(text: str) -> tuple[list[Frame], str | None, str | None]:
    """A Python traceback (as printed) → (frames of its last ``Traceback`` block, exception type,
    full message). The message runs from the exception line to torch's trailing advice."""
    lines = text.replace("\r", "").split("\n")
    start = max(
        (i for i, ln in enumerate(lines) if ln.startswith("Traceback (most recent call last):")),
        default=-1,
    )
    frames: list[Frame] = []
    exc_at = None
    for i in range(start + 1, len(lines)):
        m = _FRAME.match(lines[i])
        if m:
            frames.append((m.group("file"), int(m.group("line")), m.group("func")))
            continue
        if lines[i] and not lines[i][0].isspace() and _EXC.match(lines[i]) and start >= 0:
            exc_at = i
            break
    if exc_at is None:
        return frames, None, None
    m = _EXC.match(lines[exc_at])
    body = [m.group("msg") or ""]  # type: ignore[union-attr]
    for ln in lines[exc_at + 1 :]:
        if _END.match(ln) or ln.startswith("Traceback (most recent call last):"):
            break
        body.append(ln)
    return frames, m.group("type"), "\n".join(body).strip()  # type: ignore[union-attr]


def metric_stack(stack: Any) -> list[Frame]:
    """``compilation_metrics.stack_trace`` (``Line: N, Name: f, Filename: F`` strings) → frames."""
    out: list[Frame] = []
    for s in stack if isinstance(stack, (list, tuple)) else []:
        m = _METRIC_FRAME.match(str(s).strip())
        if m:
            out.append((m.group("file"), int(m.group("line")), m.group("func")))
    return out


def failure_columns(
    exc_type: str | None,
    message: str | None,
    tb_frames: list[Frame],
    call_frames: list[Frame],
    user_file: str | None = None,
    user_line: int | None = None,
    compiled: Frame | None = None,
) -> dict[str, Any]:
    """The identity columns of one ``failures`` row (see the module docstring for the frame rule;
    ``compiled``: the compiled function's (file, first line, name))."""
    frames = tb_frames or call_frames
    pick = pick_frames([(user_file, user_line, None)]) if user_file else pick_frames(tb_frames)
    if pick.frame_file is None:
        pick = pick_frames(call_frames)
    if pick.frame_file is None and compiled and compiled[0]:
        pick = pick_frames([compiled])
    return {
        "exc_type": short_type(exc_type),
        "exc_message": message,
        "failure_key": failure_key(exc_type, message),
        "frame_file": pick.frame_file,
        "frame_kind": pick.frame_kind,
        "frame_line": pick.frame_line,
        "frame_func": pick.frame_func,
        "stack": [frame_text(f) for f in frames],
    }


def from_metrics(meta: dict[str, Any], user_file: str | None = None) -> dict[str, Any]:
    """Identity columns for the failure of a ``compilation_metrics`` record (``user_file``: its
    ``fail_user_frame_filename``, resolved)."""
    tb = meta.get("exception_stack_trace")
    text = (
        "\n".join(str(x) for x in tb)
        if isinstance(tb, (list, tuple))
        else (tb if isinstance(tb, str) else "")
    )
    frames, _, _ = traceback_parts(text) if text else ([], None, None)
    reason = meta.get("fail_reason")
    ftype = meta.get("fail_type")
    return failure_columns(
        None if ftype is None else str(ftype),
        None if reason is None else str(reason),
        frames,
        metric_stack(meta.get("stack_trace")),
        user_file,
        meta.get("fail_user_frame_lineno"),
        _compiled(meta.get("co_filename"), meta.get("co_firstlineno"), meta.get("co_name")),
    )


def _compiled(file: Any, line: Any, name: Any) -> Frame | None:
    if not isinstance(file, str):
        return None
    return (file, line if isinstance(line, int) else None, name if isinstance(name, str) else None)


def parse_wont_convert(text: str) -> dict[str, Any] | None:
    """TORCH_LOGS ``WON'T CONVERT <fn> <file> line <n>`` + ``due to:`` + traceback → the failure's
    columns (``co_name`` / ``co_filename`` / ``co_firstlineno`` of the frame, raw ``fail_type`` /
    ``fail_reason``, identity columns); None when the text is not one."""
    head = _WONT.search(text)
    if head is None:
        return None
    frames, exc_type, message = traceback_parts(text[head.end() :])
    row = failure_columns(
        exc_type,
        message,
        frames,
        [],
        compiled=(head.group("file"), int(head.group("line")), head.group("func")),
    )
    row.update(
        co_name=head.group("func"),
        co_filename=head.group("file"),
        co_firstlineno=int(head.group("line")),
        fail_type=short_type(exc_type),
        fail_reason=message,
        is_restart=False,
    )
    return row


def restart_columns(reason: str) -> dict[str, Any]:
    """Identity columns of a restart of dynamo's analysis (no exception: the reason is the message)."""
    return {
        "exc_type": None,
        "exc_message": reason,
        "failure_key": failure_key(None, reason.split("\n", 1)[0]),
        "stack": [],
    }
