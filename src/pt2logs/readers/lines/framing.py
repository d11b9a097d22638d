"""The unwrapping layer: a program's lines as collectors and launchers hand them over → the lines the
program wrote, and what the wrapping carried.

A fleet's text logs pass through a launcher and a collector before they are read: Kubernetes writes
each line as ``<time> stderr F <line>``, Docker as a JSON object, Slurm puts ``0: `` before it, Ray
``(RayTrainWorker pid=123, ip=10.0.0.5) ``. The formats are data (:mod:`.framing_patterns`, each entry
cited to the program that writes it); this module only applies them:

* :func:`detect` looks at a file's head once: which framing most of its lines have (None: none), and
  which prefixes its lines carry. A head with neither gives None, and a reader then reads the file as
  it is, a first-byte test a line watching for a framing that starts later (:mod:`.unwrapped`).
* :class:`Unwrap` takes the file's lines one by one (``feed``) and gives back the program's lines with a
  :class:`Carried` (stream, time, host, pod, container, rank, local rank, worker, pid, repeat count):

  - a line of another framing than the file's (files concatenated, exports that mix shapes) is tried
    against the others; a line of none is handed over as it is;
  - partial lines are joined: CRI ``P`` parts up to the ``F`` part, Docker ``log`` values without their
    ``\\n`` up to the one with it, each stream on its own; a joined line longer than ``max_line`` keeps its
    first ``max_line`` characters (a ``line_too_long`` warning); a line still open at the end of the file
    is handed over by :meth:`Unwrap.finish`;
  - a JSON record whose line is itself a Docker / Fluent Bit record (CloudWatch, Loki exports of
    container logs) is unwrapped again; a message holding several lines gives each of them;
  - prefixes are stripped, any number stacked, in any order; the first rank and worker they name are kept;
  - Ray's `` [repeated 7x across cluster]`` suffix is stripped and kept as ``repeat`` = 7: the line stands
    for 7 lines of other processes (its first occurrence was printed on its own before).

The layer never decides what the inner lines are: a framed file of foreign text unwraps to foreign text,
and the caller's sniffers refuse it as they refuse the raw text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from pt2logs.readers.lines.carried import Carried, iso_us, labels_into, str_or_none  # noqa: F401  (iso_us: the layer's names)
from pt2logs.readers.lines.framing_detect import (  # noqa: F401  (Found: the layer's names)
    _CRI,
    _JSON_START,
    _MAYBE,
    _TEXT,
    HEAD_LINES,
    MAX_LINE,
    MAX_OPEN,
    Found,
    _json_framing,
    line_framing,
)
from pt2logs.readers.lines.framing_patterns import FRAMINGS, PREFIXES, RAY_REPEAT, Framing


def detect(head: bytes) -> Found | None:
    """A file's wrapping from its first bytes; None when its lines are neither framed nor prefixed
    (nor carry Ray's repeat suffix): read it as it is."""
    if _MAYBE.search(b"\n" + head) is None and b"x across cluster]" not in head:
        return None
    text = head.decode("utf-8", "replace")
    lines = text.split("\n")
    if len(lines) > 1 and not head.endswith(b"\n"):
        lines.pop()  # the head ends inside a line
    lines = [ln.rstrip("\r") for ln in lines[:HEAD_LINES] if ln.strip()]
    if not lines:
        return None
    counts: dict[str, int] = {}
    framed = 0
    for (
        ln
    ) in lines:  # a line may fit several text framings (journald's ISO time fits `timestamped` too)
        if ln[:1] == "{":
            f = line_framing(ln)
            names = [f.name] if f is not None else []
        else:
            names = [f.name for f in _TEXT if f.line.match(ln)]  # type: ignore[union-attr]
        for name in names:
            counts[name] = counts.get(name, 0) + 1
        framed += bool(names)
    framing = (
        None  # most lines framed (by one framing, or several mixed): the commonest is the file's
    )
    if framed * 2 > len(lines):
        framing = max(FRAMINGS, key=lambda f: counts.get(f.name, 0))
    docker_partial = True
    if framing is not None:  # the prefixes are on the lines inside the framing
        probe = Unwrap(Found(framing, (), False))
        inner: list[str] = []
        logs_end = logs = 0
        for i, ln in enumerate(lines):
            if framing.name == "docker_json" and ln.startswith('{"log":"'):
                logs += 1
                logs_end += ln.find('\\n","', 8) > 0
            inner.extend(t for _, t, _ in probe.feed(i + 1, ln))
        inner.extend(t for _, t, _ in probe.finish())
        lines = [ln for ln in inner if ln.strip()]
        docker_partial = (
            logs == 0 or logs_end > 0
        )  # records that never end in \n are not Docker's parts
    seen: dict[str, int] = {}
    for ln in lines:
        pos = 0
        while True:
            for p in PREFIXES:
                m = p.line.match(ln, pos)
                if m is not None and m.end() > pos:
                    seen[p.name] = seen.get(p.name, 0) + 1
                    pos = m.end()
                    break
            else:
                break
    n = max(len(lines), 1)
    prefixes = tuple(
        p for p in PREFIXES if seen.get(p.name, 0) and (not p.every_line or seen[p.name] * 2 > n)
    )
    repeats = "x across cluster]" in text
    if framing is None and not prefixes and not repeats:
        return None
    return Found(
        framing, prefixes, repeats or any(p.name == "process_tag" for p in prefixes), docker_partial
    )


# ----------------------------------------------------------------------------- unwrapping

Inner = tuple[int, str, Carried]


class Unwrap:
    """One file's unwrapping (see the module's rules). ``feed(line_no, text)`` → the inner lines that
    line completes (none while a partial line is open; several when a record holds several lines), each
    ``(line_no, text, carried)`` with the number of the file line where it starts."""

    def __init__(
        self, found: Found, on_error: Callable[..., None] | None = None, max_line: int = MAX_LINE
    ):
        self.found = found
        self.framing = found.framing
        self.on_error = on_error
        self.max_line = max_line
        self.open: dict[str | None, list[Any]] = {}  # by stream: [line_no, parts, size, carried]
        self.prefixes = found.prefixes
        self.repeats = found.repeats
        self.docker_partial = found.docker_partial

    # -- one line -----------------------------------------------------------------------
    def feed(self, line_no: int, text: str) -> list[Inner]:
        f = self.framing
        if f is None:
            return [(line_no, *self.strip(text, Carried()))]
        got = self.parse(f, text)
        if got is None:  # another framing on this line, or none
            g = line_framing(text)
            got = self.parse(g, text) if g is not None else None
            if got is None:
                return [(line_no, *self.strip(text, Carried()))]
        msg, c, partial = got
        if partial is None:  # a record: its lines, each its own
            return self.lines(line_no, msg, c)
        return self.join(line_no, msg, c, partial)

    def parse(self, f: Framing, text: str) -> tuple[str, Carried, bool | None] | None:
        """(message, carried, partial) for a line of framing ``f``; partial None: not a joinable line
        (the message may hold several lines); None: the line is not of this framing."""
        if f.kind == "text":
            m = f.line.match(text)  # type: ignore[union-attr]
            if m is None:
                return None
            g = m.groupdict()
            c = Carried(f.name, g.get("stream"), g.get("time"))
            msg = g.get("msg") or ""
            if f.name == "cri":
                return msg, c, g["tag"] == "P"
            if f.name == "journald":
                c.host = g["host"]
                c.worker = g["ident"]
                c.pid = int(g["pid"]) if g.get("pid") else None
            return msg, c, False
        if text[:1] != "{":
            return None
        try:
            obj = orjson.loads(text)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(obj, dict):
            return None
        return self.record(obj, f)

    def record(
        self, obj: dict, f: Framing, depth: int = 0
    ) -> tuple[str, Carried, bool | None] | None:
        key = next((k for k in f.keys if k in obj), None)
        if key is None:
            g = _json_framing(obj)
            if g is None:
                return None
            f, key = g, next(k for k in g.keys if k in obj)
        msg = obj[key]
        if isinstance(
            msg, list
        ):  # journald: a message that is not printable UTF-8 comes as its bytes
            try:
                msg = bytes(msg).decode("utf-8", "replace")
            except (TypeError, ValueError):
                return None
        elif not isinstance(msg, str):
            return None
        c = Carried(f.name, str_or_none(obj.get("stream")))
        t = obj.get("time") or obj.get("timestamp") or obj.get("__REALTIME_TIMESTAMP")
        if f.name == "journald_json" and isinstance(t, str) and t.isdigit():
            c.time = int(t)
        elif f.name == "cloudwatch_json" and type(t) is int:
            c.time = t * 1000
        elif isinstance(t, str):
            c.time = t
        if f.name == "journald_json":
            c.host = str_or_none(obj.get("_HOSTNAME"))
            c.worker = str_or_none(obj.get("SYSLOG_IDENTIFIER"))
            c.container = str_or_none(obj.get("CONTAINER_NAME"))
            pid = obj.get("_PID")
            c.pid = int(pid) if isinstance(pid, str) and pid.isdigit() else None
            if obj.get("CONTAINER_PARTIAL_MESSAGE") == "true":
                return msg, c, True
        if f.name == "cloudwatch_json":
            c.pod = str_or_none(obj.get("logStreamName"))
        labels_into(obj, c)
        if (
            depth == 0 and msg[:1] == "{" and _JSON_START.match(msg)
        ):  # a Docker / Fluent Bit record inside
            try:
                inner = orjson.loads(msg)
            except orjson.JSONDecodeError:
                inner = None
            g = _json_framing(inner) if isinstance(inner, dict) else None
            if g is not None:
                got = self.record(inner, g, 1)  # type: ignore[arg-type]
                if got is not None:
                    m2, c2, _ = got
                    c2.via = f"{f.name}+{c2.via}"
                    for k in ("host", "pod", "container"):
                        setattr(c2, k, getattr(c2, k) or getattr(c, k))
                    c2.time = c2.time or c.time
                    return m2, c2, None
        if depth == 0 and msg[:1].isdigit() and (m := _CRI.line.match(msg)) is not None:  # type: ignore[union-attr]
            c.via = f"{f.name}+cri"  # a node's CRI log shipped without its cri stage (promtail, Fluent Bit)
            c.stream, c.time = m.group("stream"), m.group("time")
            return m.group("msg") or "", c, m.group("tag") == "P"
        if f.name == "docker_json" and f.partial and self.docker_partial:
            if msg.endswith("\n"):
                return msg[:-1], c, False
            return msg, c, True
        return msg, c, None

    # -- partial lines --------------------------------------------------------------------
    def join(self, line_no: int, msg: str, c: Carried, partial: bool) -> list[Inner]:
        key = c.stream
        cur = self.open.get(key)
        if cur is None and not partial:
            return [(line_no, *self.strip(msg[:-1] if msg.endswith("\r") else msg, c))]
        out: list[Inner] = []
        if cur is None:
            if (
                len(self.open) >= MAX_OPEN
            ):  # streams are few: a file that opens more is damage, the oldest goes over
                out = self.close(min(self.open, key=lambda k: self.open[k][0]))
            cur = self.open[key] = [line_no, [], 0, c]
        if cur[2] < self.max_line:
            cur[1].append(msg)
        elif cur[2] - len(msg) < self.max_line and self.on_error is not None:
            self.on_error(
                "line_too_long",
                cur[0],
                f"a line written in parts goes past {self.max_line >> 10} KiB: its first "
                f"{self.max_line >> 10} KiB were kept, the rest skipped",
            )
        cur[2] += len(msg)
        if partial:
            return out
        return out + self.close(key)

    def close(self, key: str | None) -> list[Inner]:
        line_no, parts, _, c = self.open.pop(key)
        text = "".join(parts)[: self.max_line]
        return [(line_no, *self.strip(text[:-1] if text.endswith("\r") else text, c))]

    def finish(self) -> list[Inner]:
        """The lines still open at the end of the file (a last part without its end), in line order."""
        out: list[Inner] = []
        for key in sorted(self.open, key=lambda k: self.open[k][0]):
            out.extend(self.close(key))
        return out

    def lines(self, line_no: int, msg: str, c: Carried) -> list[Inner]:
        if msg.endswith("\n"):
            msg = msg[:-1]
        if "\n" not in msg:
            return [(line_no, *self.strip(msg[:-1] if msg.endswith("\r") else msg, c))]
        out = []
        for part in msg.split("\n"):
            cc = Carried(c.via, c.stream, c.time)
            cc.host, cc.pod, cc.container, cc.worker, cc.pid = (
                c.host,
                c.pod,
                c.container,
                c.worker,
                c.pid,
            )
            out.append((line_no, *self.strip(part[:-1] if part.endswith("\r") else part, cc)))
        return out

    # -- prefixes and Ray's repeat suffix ----------------------------------------------
    def strip(self, text: str, c: Carried) -> tuple[str, Carried]:
        prefixes = self.prefixes
        if prefixes:
            pos = 0
            via = [c.via] if c.via else []
            while True:
                for p in prefixes:
                    m = p.line.match(text, pos)
                    if m is not None and m.end() > pos:
                        break
                else:
                    break
                pos = m.end()
                via.append(p.name)
                g = m.groupdict()
                if g.get("rank") is not None and c.rank is None:
                    c.rank = int(g["rank"])
                if g.get("local_rank") is not None and c.local_rank is None:
                    c.local_rank = int(g["local_rank"])
                w = g.get("worker") or g.get("daemon")
                if w and c.worker is None:
                    c.worker = w
                    r = re.search(r"\brank=(\d{1,7})\b", w)
                    if r is not None and c.rank is None:
                        c.rank = int(r.group(1))
                if g.get("pid") and c.pid is None:
                    c.pid = int(g["pid"])
                h = g.get("host") or g.get("dhost")
                if h and c.host is None:
                    c.host = h
                if g.get("container") and c.container is None:
                    c.container = g["container"]
            if pos:
                text = text[pos:]
                c.via = "+".join(via)
        if self.repeats and "x across cluster]" in text:
            m = RAY_REPEAT.search(text)
            if m is not None:
                c.repeat = int(m.group("repeat"))
                text = text[: m.start()]
        return text, c
