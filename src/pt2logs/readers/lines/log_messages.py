"""What torch's log messages mean: closed TORCH_LOGS messages → ``recompiles`` / ``graph_breaks`` /
``kernels`` / ``extern_calls`` rows with ``source='torch_logs'``.

Messages are interpreted with the shared parsers of :mod:`pt2logs.analysis`: ``[__recompiles]`` /
``[__recompiles_verbose]`` → ``recompiles`` (one row per compile id, like the trace); the
recompile-limit warning (``torch._dynamo hit config.recompile_limit (8)``, no artifact tag) marks that
compile's row as a limit hit, or makes one (a warning whose first lines are missing too: ``function: …`` /
``last reason: …`` of a W line); ``[__guards]`` → ``guards`` (one row per compile); ``[__graph_breaks]`` → ``graph_breaks``, repeats of a break
within one compile id (duplicate-suppressed lines) folded into ``occurrences``; ``[__output_code]`` →
``kernels`` / ``extern_calls``; ``[__cudagraphs]`` → ``cudagraph_skips``; cache hit / miss / bypass lines and the keys' components →
``cache_events`` / ``cache_key_components`` (:mod:`pt2logs.readers.lines.log_caches`).

Rows that later messages may still change wait here, at most :data:`MAX_PENDING` compiles of them.
"""

from __future__ import annotations

import re
from typing import Any

from pt2logs.analysis import cudagraphs
from pt2logs.analysis.failures import parse_wont_convert
from pt2logs.analysis.graph_breaks import parse_graph_break
from pt2logs.analysis.guard_text import count_guards, guard_lines
from pt2logs.analysis.guards import (
    classify_guard,
    parse_recompile_limit_message,
    parse_recompiles_message,
)
from pt2logs.analysis.output_code import parse_output_code
from pt2logs.readers.compile_rows import break_site, graph_break_row, kernel_rows, recompile_columns
from pt2logs.readers.identity_cols import break_frames
from pt2logs.readers.kit import RowSink
from pt2logs.readers.lines.log_caches import CacheLines

SOURCE = "torch_logs"
MAX_PENDING = 10_000

#: (a message of kernels' code: matched, not stripped, as it is often large)
_OUTPUT_CODE = re.compile(r"\s*Output code:")
_LIMIT_MSG = re.compile(r"hit config\.\w*(?:recompile|cache_size)_limit|cache_size_limit \(\d+\)")
#: the lines after the recompile limit's first line (convert_frame.py: ``"   function: %s\n   last reason: %s\n"``)
_PARTIAL_LIMIT = re.compile(r"\s*(?:function: '[^'\n]*' \(|last reason: )")
#: messages of the guards artifact that are not the guards (guards.py: the shape guard's code, the eval latency)
_NOT_GUARDS = ("Python shape guard function:", "Guard eval latency = ")
_GB_START = re.compile(
    r"^Graph break (?:\(user stack suppressed due to duplicate graph break\) )?in user code at ",
    re.M,
)


#: messages of the recompiles artifact that are not recompiles: the config-cache note (torch 2.1-2.3)
#: and its ``* key=value (prev: ...)`` lines
_NOT_A_RECOMPILE = (
    "Current config does not match config saved",
    "Saved hash:",
    "Restoring saved config",
    "* ",
)


def frame_of(cid: str | None) -> str | None:
    return None if cid is None else cid.rsplit("/", 1)[0] if "/" in cid else cid


class MessageRows:
    """Turns closed messages (anything with line_no, rank, cid, level, artifact) into rows."""

    def __init__(self, sink: RowSink):
        self.sink = sink
        self.caches = CacheLines(sink)
        self.pending_rc: dict[tuple, dict[str, Any]] = {}
        self.pending_gb: dict[tuple, dict[tuple, dict[str, Any]]] = {}
        self.pending_guards: dict[tuple, dict[str, Any]] = {}
        self.frames: dict[tuple, tuple[str | None, str | None, int | None]] = {}
        #: frame columns of each break site seen with its stack, for repeats whose stack the log
        #: suppressed (``Graph break (user stack suppressed due to duplicate graph break)``)
        self.site_frames: dict[tuple, dict[str, Any]] = {}
        #: each rank's last recompile row of a message with no compile id (a reformatted log): the recompile
        #: limit's warning that follows it marks it, as the shared compile id does in torch's own format
        self.last_rc: dict[int | None, dict[str, Any]] = {}

    def message(self, msg: Any, text: str) -> None:
        art = msg.artifact
        if art in ("recompiles", "recompiles_verbose"):
            if not text.startswith(_NOT_A_RECOMPILE):
                self.recompile(msg, text)
        elif art == "graph_breaks":
            self.graph_breaks(msg, text)
        elif art == "guards":
            self.guards(msg, text)
        elif art == "output_code" and _OUTPUT_CODE.match(text):
            self.output_code(msg, text)
        elif art == "cudagraphs":
            self.cudagraphs(msg, text)
        elif msg.level in ("W", "I", "V") and _LIMIT_MSG.search(
            text,
            0,
            len(text) if (n := text.find("\n")) < 0 else n,  # the first line (not copied)
        ):
            self.limit_hit(msg, text)
        elif art is None and msg.level == "W" and _PARTIAL_LIMIT.match(text):
            self.limit_hit(
                msg, text
            )  # the recompile limit's warning with its first line cut (a paste, another rank's block)
        elif art is None and text.startswith("WON'T CONVERT "):
            self.failure(msg, text)
        elif art is None:
            self.caches.message(msg, text)

    def _base(self, msg: Any) -> dict[str, Any]:
        return {
            "source": SOURCE,
            "file": self.sink.ctx.file,
            "line_no": msg.line_no,
            "compile_id": msg.cid,
            "rank": msg.rank,
            "ts": msg.ts,
        }

    def recompile(self, msg: Any, text: str) -> None:
        key = (msg.rank, msg.cid)
        p = parse_recompiles_message(text)
        if p["co_name"] is None and not p["reasons"]:
            return  # a note of the artifact (no function, no guard failure), not a recompile
        if p["co_name"] is not None:
            self.frames[(msg.rank, frame_of(msg.cid))] = (
                p["co_name"],
                p["co_filename"],
                p["co_firstlineno"],
            )
        if key in self.pending_rc and msg.cid is not None:
            return  # recompiles and recompiles_verbose both on: one row per compile
        row = self._base(msg)
        row.update(
            co_name=p["co_name"],
            co_filename=p["co_filename"],
            co_firstlineno=p["co_firstlineno"],
            **recompile_columns(p["reasons"]),
        )
        self._pend(
            self.pending_rc, key if msg.cid is not None else (msg.rank, None, msg.line_no), row
        )
        if msg.cid is None and len(self.last_rc) < MAX_PENDING:
            self.last_rc[msg.rank] = row

    def limit_hit(self, msg: Any, text: str) -> None:
        p = parse_recompile_limit_message(text)
        if p["co_name"] is not None:
            self.frames.setdefault(
                (msg.rank, frame_of(msg.cid)), (p["co_name"], p["co_filename"], p["co_firstlineno"])
            )
        row = (
            self.pending_rc.get((msg.rank, msg.cid))
            if msg.cid is not None
            else self.last_rc.pop(msg.rank, None)
        )
        if row is not None and (
            row["is_limit_hit"]
            or row["co_name"] != p["co_name"]
            or row not in self.pending_rc.values()
        ):
            row = None
        if row is None:
            prev, reason = p["last_reason"] or (None, None)
            subject = classify_guard(reason)[1] if reason else None
            row = self._base(msg)
            row.update(
                co_name=p["co_name"],
                co_filename=p["co_filename"],
                co_firstlineno=p["co_firstlineno"],
                reason=reason,
                all_reasons=[reason] if reason else [],
                guard_subject=subject,
                prev_compile_id=prev,
            )
            self._pend(
                self.pending_rc,
                (msg.rank, msg.cid) if msg.cid is not None else (msg.rank, None, msg.line_no),
                row,
            )
        row.update(cause="recompile_limit_hit", is_limit_hit=True)

    def guards(self, msg: Any, text: str) -> None:
        """``[__guards]``: ``GUARDS:`` then the guard manager's tree (one message) or one message per guard
        (torch 2.1-2.4): one ``guards`` row per compile, like the trace's ``dynamo_cpp_guards_str``."""
        key = (msg.rank, msg.cid)
        cur = self.pending_guards.get(key)
        head = (
            0 if text.startswith("GUARDS:") else text.find("\nGUARDS:") + 1
        )  # (messages of one prefix joined)
        if text.startswith("GUARDS:", head) and text[head + 7 : head + 8] in ("", "\n"):
            if cur is not None:
                self._emit_pending(
                    self.pending_guards, key
                )  # a compile's guards ended (no compile id: the next one's)
            cur = {**self._base(msg), "parts": []}
            self._pend(self.pending_guards, key, cur)
            text = text[head + 8 :]
        elif text.startswith(_NOT_GUARDS) or (
            cur is None and not text.lstrip().startswith("TREE_GUARD_MANAGER:")
        ):
            return  # (a guard line with no GUARDS: before it: the capture starts inside a compile's guards)
        elif cur is None:
            cur = {**self._base(msg), "parts": []}
            self._pend(self.pending_guards, key, cur)
        for tail in _NOT_GUARDS:
            if (j := text.find("\n" + tail)) >= 0:
                text = text[:j]
        if text.strip():
            cur["parts"].append(text)

    def graph_breaks(self, msg: Any, text: str) -> None:
        starts = [m.start() for m in _GB_START.finditer(text)]
        bounds = [0, *starts[1:]] if starts and starts[0] > 0 else starts or [0]
        pieces = [text[a:b] for a, b in zip(bounds, [*bounds[1:], len(text)], strict=True)]
        key = (msg.rank, msg.cid if msg.cid is not None else f"line {msg.line_no}")
        breaks = self.pending_gb.get(key)
        if breaks is None:
            breaks = {}
            self._pend(self.pending_gb, key, breaks)
        for piece in pieces:
            if not piece.strip():
                continue
            gb = parse_graph_break(piece)
            k = break_site(gb)
            if k in breaks:
                breaks[k]["occurrences"] += 1
                continue
            breaks[k] = graph_break_row(self._base(msg), gb, "log_line", self._break_frames(gb, k))

    def _break_frames(self, gb: dict[str, Any], site: tuple) -> dict[str, Any]:
        key = (self.sink.ctx.file, *site)
        if not gb.get("frames") and key in self.site_frames:
            return self.site_frames[key]
        cols = break_frames(gb)
        if gb.get("frames") and len(self.site_frames) < MAX_PENDING:
            self.site_frames[key] = cols
        return cols

    def failure(self, msg: Any, text: str) -> None:
        """``WON'T CONVERT fn file line N`` + ``due to:`` + a traceback: a compile that failed."""
        row = parse_wont_convert(text)
        if row is not None:
            self.sink.add("failures", {**self._base(msg), **row})

    def output_code(self, msg: Any, text: str) -> None:
        kernels, externs = kernel_rows(
            dict(self._base(msg), cache_hit=None), parse_output_code(text)
        )
        for r in kernels:
            self.sink.add("kernels", r)
        for r in externs:
            self.sink.add("extern_calls", r)

    def cudagraphs(self, msg: Any, text: str) -> None:
        """``[__cudagraphs]`` skips, re-recordings, too many sizes → ``cudagraph_skips`` (:mod:`pt2logs.analysis.cudagraphs`)."""
        row = cudagraphs.parse(text)
        if row is not None:
            file, line = row.pop("user_file"), row.pop("user_line")
            self.sink.add(
                "cudagraph_skips",
                self._base(msg) | row | {"co_name": None, "frame_file": file, "frame_line": line},
            )

    def _pend(self, d: dict, key: tuple, value: Any) -> None:
        d[key] = value
        if len(d) > MAX_PENDING:
            oldest = next(iter(d))
            self._emit_pending(d, oldest)

    def _emit_pending(self, d: dict, key: tuple) -> None:
        v = d.pop(key)
        if d is self.pending_rc:
            self.sink.add("recompiles", v)
            return
        if d is self.pending_guards:
            parts = v.pop("parts")
            v.pop("ts", None)
            if parts:
                text = "\n".join(parts)
                self.sink.add(
                    "guards",
                    {
                        **v,
                        "guards": text,
                        "guard_count": count_guards(text),
                        "n_guard_lines": guard_lines(text),
                        "dynamic_symbols": [],
                        "symbol_sources": [],
                    },
                )
            return
        for row in v.values():
            if row.get("co_name") is None:
                co = self.frames.get((row["rank"], frame_of(row["compile_id"])))
                if co is not None:
                    row["co_name"], row["co_filename"], row["co_firstlineno"] = co
            self.sink.add("graph_breaks", row)

    def finish(self) -> None:
        for d in (self.pending_rc, self.pending_gb, self.pending_guards):
            for key in list(d):
                self._emit_pending(d, key)
