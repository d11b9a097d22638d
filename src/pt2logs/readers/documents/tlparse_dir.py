"""tlparse output folder (``tlparse LOG -o DIR``) → the same tables as the trace it was made from.

What tlparse 0.4.x writes, and how it is read back:

* ``raw.jsonl`` — line 1 ``{"string_table": [...]}`` (the trace's ``str`` records, by index), then one
  envelope per trace record except ``str`` and ``chromium_event`` records, with four keys added by
  tlparse: ``timestamp`` (the glog time with the *current* year and a ``Z``: only month, day and time
  of day are used), ``thread``, ``pathname`` (with a leading space), ``lineno``, and
  ``payload_filename`` for records with a payload. This is the file this reader is given.
* ``payloads/<md5>.txt`` (output code, byte-exact) and the per-compile artifact copies named by
  ``payload_filename`` (``.txt`` byte-exact; ``.json`` re-serialized by tlparse with sorted keys;
  ``.html`` rendered, unusable) — the payloads, read through ``ctx.open_sibling``.
* ``chromium_events.json`` — every ``chromium_event`` payload, in order, as one JSON array.
* ``compile_directory.json``, ``index.html``, per-compile folders: views of the same data.

Each line of ``raw.jsonl`` is turned back into a trace record and goes through the trace reader's
record loop (:func:`pt2logs.readers.trace.loop.read_records`), so every handler (metrics, recompiles,
graph breaks, kernels, caches, guards, phases) applies unchanged; the chromium events follow as
records of their own. Rows of tables with a ``source`` column say ``tlparse_dir``.

What does not come back (documented in docs/inputs.md): the glog level letter (``events.level`` is
NULL), the original envelope text (rebuilt from the parsed JSON), the line numbers of the original
log (rows point into ``raw.jsonl`` / ``chromium_events.json``), the md5 check of ``.json`` payloads
re-serialized by tlparse (``payload_ok`` NULL), the envelope of chromium events (rebuilt with the
compile id of the event's ``args``). Timestamps come from the epoch times in the payloads (compile
start times, chromium ``ts``): tlparse's year is never used.

Memory: one record (and one payload) at a time; ``chromium_events.json`` is split on its element
lines (tlparse pretty-prints it) instead of being loaded whole.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from typing import Any

import orjson

from pt2logs.readers.documents.tlparse_chromium import (
    CHROMIUM_BASE,
    CHROMIUM_FILE,
    chromium_elements,
    compile_ctx,
    retag,
)
from pt2logs.readers.format import TRACE, Format, Layout
from pt2logs.readers.kit import (
    MAX_LINE,
    Batch,
    FileContext,
    iter_lines,
    whole,
)
from pt2logs.readers.trace.loop import read_records
from pt2logs.readers.trace.records import MAX_PAYLOAD, Record
from pt2logs.readers.trace.state import CONTEXT_KEYS, TraceState, compile_id_text

SOURCE = "tlparse_dir"
ADDED_KEYS = ("timestamp", "thread", "pathname", "lineno", "payload_filename")
_TIMESTAMP = re.compile(r"^\d{4}-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?")
_DAY_US = 86_400_000_000


def _safe(name: str) -> bool:
    return (
        bool(name)
        and not name.startswith(("/", "\\"))
        and ".." not in name.replace("\\", "/").split("/")
    )


class _Rebuild:
    """Turns the lines of raw.jsonl (and chromium_events.json) back into trace records."""

    def __init__(self, st: TraceState, ctx: FileContext):
        self.st = st
        self.ctx = ctx
        self.strings: list[str] | None = None
        self.reencoded: set[int] = set()  # line numbers whose payload tlparse re-serialized
        self.mmdd = 101
        self.tod = 0
        self.n_lines = 0
        self.starts: dict[str, float] = {}  # compile id -> epoch µs of its first chromium event

    def chunks(self, name: str) -> Iterable[bytes] | None:
        if self.ctx.open_sibling is None or not _safe(name):
            return None
        try:
            return self.ctx.open_sibling(name)
        except OSError:
            return None

    def open(self, name: str, line_no: int | None = None) -> bytes | None:
        """A sibling file: one payload, at most MAX_PAYLOAD bytes of it, as the trace keeps (the rest is
        passed over, and reported)."""
        chunks = self.chunks(name)
        if chunks is None:
            return None
        try:
            data = whole(chunks, MAX_PAYLOAD)
            if data is None:
                data = b"".join(_head(self.chunks(name) or (), MAX_PAYLOAD))
                self.warn(
                    "payload_too_large",
                    line_no,
                    f"{name} is larger than {MAX_PAYLOAD >> 20} MiB: its first "
                    f"{MAX_PAYLOAD >> 20} MiB were kept, the rest skipped",
                )
            return data
        except OSError:
            return None

    def warn(self, kind: str, line_no: int | None, message: str) -> None:
        self.st.out.error(kind, line_no, message, "", "warning", self.st.rank)

    def peek_starts(self, n: int = 500) -> None:
        """The epoch time of the first chromium event of each compile id among the first ``n``: paired
        with the local glog time of the first raw.jsonl record of that compile, it fixes the log's year
        and UTC offset before any row is stamped (tlparse's own year is never used)."""
        chunks = self.chunks(CHROMIUM_FILE)
        if chunks is None:
            return
        for k, (_, ev) in enumerate(chromium_elements(chunks, None)):
            if k >= n:
                break
            args = ev.get("args") if isinstance(ev, dict) else None
            cid = args.get("compile_id") if isinstance(args, dict) else None
            ts = ev.get("ts") if isinstance(ev, dict) else None
            if isinstance(cid, str) and isinstance(ts, (int, float)) and cid not in self.starts:
                self.starts[cid] = ts

    def records(self, chunks: Iterable[bytes]) -> Iterator[Record]:
        st = self.st
        # a trace record's line: the trace's bound (st.error takes no severity: it knows the kind's)
        for line_no, raw in iter_lines(
            chunks,
            lambda kind, n, msg, excerpt=b"", _severity=None: st.error(kind, n, msg, excerpt),
            MAX_LINE,
        ):
            self.n_lines = (
                line_no + len(raw) if raw[:1] == b"\n" else line_no
            )  # (a run of blank lines: its last)
            if not raw.strip():
                continue
            try:
                d = orjson.loads(raw)
            except orjson.JSONDecodeError:
                # kept as an events row; the record loop reports bad_json
                yield Record(line_no, 1, None, self.mmdd, self.tod, None, None, None, raw, None)
                continue
            if isinstance(d, dict) and line_no == 1 and "string_table" in d:
                tbl = d["string_table"]
                self.strings = [str(s) for s in tbl] if isinstance(tbl, list) else []
                continue
            if not isinstance(d, dict):
                yield Record(line_no, 1, None, self.mmdd, self.tod, None, None, None, raw, None)
                continue
            ts = _TIMESTAMP.match(str(d.get("timestamp") or ""))
            if ts:
                mo, dd, hh, mi, ss, frac = ts.groups()
                self.mmdd = int(mo) * 100 + int(dd)
                self.tod = ((int(hh) * 60 + int(mi)) * 60 + int(ss)) * 1_000_000 + int(
                    (frac or "0").ljust(6, "0")
                )
            elif "timestamp" in d:
                st.error(
                    "bad_timestamp",
                    line_no,
                    "tlparse timestamp not understood; the previous record's time is used",
                    str(d.get("timestamp"))[:200],
                )
            if self.strings:
                yield from self._string_records(line_no, d)
            thread = d.get("thread")
            path = d.get("pathname")
            lineno = d.get("lineno")
            pf = d.get("payload_filename")
            env = {k: v for k, v in d.items() if k not in ADDED_KEYS}
            kind = next((k for k in env if k not in CONTEXT_KEYS), None)
            if kind is not None:
                env = {kind: env.pop(kind), **env}
            payload = self._payload(line_no, env.get("has_payload"), pf)
            if self.starts and not st.tb.calibrated and ts:
                cid = compile_id_text(
                    env.get("compiled_autograd_id"),
                    env.get("frame_id"),
                    env.get("frame_compile_id"),
                )
                if cid in self.starts:
                    st.tb.observe(st.tb.key(self.mmdd), self.tod, self.starts[cid])
            yield Record(
                line_no,
                1,
                None,
                self.mmdd,
                self.tod,
                thread if isinstance(thread, int) else None,
                path.strip().encode() if isinstance(path, str) else None,
                lineno if isinstance(lineno, int) else None,
                orjson.dumps(env),
                payload,
            )

    def _string_records(self, line_no: int, d: dict) -> Iterator[Record]:
        """The string table as the ``str`` records it came from, just before the first record."""
        strings, self.strings = self.strings or [], None
        thread = d.get("thread") if isinstance(d.get("thread"), int) else None
        for i, s in enumerate(strings):
            yield Record(
                1,
                1,
                None,
                self.mmdd,
                self.tod,
                thread,
                None,
                None,
                orjson.dumps({"str": [s, i]}),
                None,
            )

    def _payload(self, line_no: int, md5: Any, pf: Any) -> bytes | None:
        if not isinstance(md5, str):
            return None
        data = self.open(f"payloads/{md5}.txt", line_no)
        if data is not None:
            return data
        if isinstance(pf, str) and not pf.endswith(".html"):
            data = self.open(pf, line_no)
            if data is not None:
                if pf.endswith(".json") and hashlib.md5(data).hexdigest() != md5:
                    try:
                        orjson.loads(data)
                        self.reencoded.add(line_no)
                    except orjson.JSONDecodeError:
                        pass
                return data
        self.reencoded.add(line_no)
        self.warn(
            "payload_unavailable",
            line_no,
            f"tlparse kept no copy of this payload (payloads/{md5}.txt, {pf or 'no payload_filename'}); record kept without it",
        )
        return None

    def verdict(self, rec: Record, md5: str) -> bool | None:
        return None if rec.line_no in self.reencoded else False

    def chromium(self) -> Iterator[Record]:
        chunks = self.chunks(CHROMIUM_FILE)
        if chunks is None:
            self.warn(
                "no_chromium_events",
                None,
                f"no {CHROMIUM_FILE} beside raw.jsonl: no compile phases",
            )
            return
        for line_no, ev in chromium_elements(chunks, self.st):
            if not isinstance(ev, dict):
                continue
            ts = ev.get("ts")
            payload = orjson.dumps(ev)
            env: dict[str, Any] = {"chromium_event": {}}
            args = ev.get("args")
            cid = args.get("compile_id") if isinstance(args, dict) else None
            if isinstance(cid, str):
                env.update(compile_ctx(cid))
            env["has_payload"] = hashlib.md5(payload).hexdigest()
            mmdd, tod = self._local(ts)
            yield Record(
                CHROMIUM_BASE + line_no,
                1,
                None,
                mmdd,
                tod,
                None,
                None,
                None,
                orjson.dumps(env),
                payload,
            )

    def _local(self, ts: Any) -> tuple[int, int]:
        """Month/day and time of day of an epoch µs time in the log's local time (once calibrated)."""
        if not isinstance(ts, (int, float)) or ts != ts:
            return self.mmdd, self.tod
        tb = self.st.tb
        try:
            local = int(ts) + (tb.offset_us if tb.calibrated else 0)
            d = datetime.fromtimestamp(local // 1_000_000, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return self.mmdd, self.tod
        return d.month * 100 + d.day, local % _DAY_US


_RANK_DIR = re.compile(r"(?:^|/)rank_(\d{1,6})/[^/]*$")


def _head(chunks: Iterable[bytes], n: int) -> Iterator[bytes]:
    """The first ``n`` bytes of a stream, in its chunks."""
    for c in chunks:
        if n <= 0:
            return
        yield c[:n]
        n -= len(c)


def read_tlparse_dir(chunks: Iterable[bytes], ctx: FileContext) -> Iterator[Batch]:
    """``raw.jsonl`` of a tlparse output folder (its siblings through ``ctx.open_sibling``) → trace tables."""
    if ctx.rank is None:
        m = _RANK_DIR.search(ctx.file or "")
        if (
            m
        ):  # tlparse --all-ranks-html: rank_<N>/raw.jsonl (envelopes of older torch have no rank)
            ctx.rank = int(m.group(1))
            ctx.stats.ranks.add(ctx.rank)
    st = TraceState(ctx)
    rb = _Rebuild(st, ctx)
    st.payload_verdict = rb.verdict
    if ctx.open_sibling is None:
        rb.warn(
            "no_siblings",
            None,
            "read without access to the tlparse folder: payloads and chromium events are missing",
        )
    else:
        rb.peek_starts()

    def records() -> Iterator[Record]:
        yield from rb.records(chunks)
        yield from rb.chromium()

    folder = posixpath.dirname(ctx.file)
    chromium_file = posixpath.join(folder, CHROMIUM_FILE) if folder else CHROMIUM_FILE
    chromium_path = (
        posixpath.join(posixpath.dirname(ctx.path), CHROMIUM_FILE) if ctx.path else chromium_file
    )
    for table, batch in read_records(st, records()):
        yield table, retag(batch, SOURCE, chromium_file, chromium_path)
    ctx.stats.lines = rb.n_lines


def sniff_tlparse_raw(head: bytes, name: str) -> bool:
    """``raw.jsonl`` of a tlparse output folder: its first line is ``{"string_table": [``."""
    return head.lstrip()[:40].replace(b" ", b"").startswith(b'{"string_table":[')


def is_tlparse_folder(names: set[str]) -> bool:
    """tlparse's output: ``raw.jsonl`` or its ``raw.log`` copy of the trace (a folder trimmed to save
    space may keep only one) beside ``compile_directory.json`` or ``index.html``; or both of these without
    either raw file (a report copied without its raw log: one run folder, which discovery reports once)."""
    report = names & {"compile_directory.json", "index.html"}
    return bool(report) and (bool(names & {"raw.jsonl", "raw.log"}) or len(report) == 2)


FORMAT = Format(
    "tlparse_dir",
    "tlparse output folder (raw.jsonl + payloads/ + chromium_events.json)",
    sniff_tlparse_raw,
    read_tlparse_dir,
    role=TRACE,
    source=SOURCE,
    source_rank=2,
    switch="TORCH_TRACE, read through tlparse",
    layout=Layout(
        run_folder=is_tlparse_folder,
        rank_folder=re.compile(r"^rank_\d+$"),
        parent_files=re.compile(r"^(?:index\.html|chromium_events\.json|.*\.html)$"),
        read_first=("raw.log", "raw.jsonl"),
        without_reads="tlparse report folder without its raw log",
    ),
)
