"""TORCH_TRACE structured trace → ``events`` and every table derived from it.

``read_trace(chunks, ctx)`` is a pure function from the bytes of one trace file
to ``(table, RecordBatch)`` pairs. It keeps per-file state only (the string
table, the frame of each compile, open chromium spans, the time base), so its
memory does not grow with the file. Rows are buffered column-wise and leave as
Arrow batches every ``ctx.batch_rows`` records.

Every record becomes one ``events`` row (lossless: envelope JSON and payload
text). Then the handler registered for its event key (or, for artifacts, for
its artifact name) in :data:`HANDLERS` / :data:`ARTIFACT_HANDLERS` may add rows
to derived tables. Kinds with no handler are counted as ``unknown`` in the
file's stats: they stay queryable in ``events``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa

import pt2logs.tables  # noqa: F401  (registers the tables)
from pt2logs.readers.errors import EXCERPT, Batch, add_error
from pt2logs.readers.records import Record, iter_records
from pt2logs.readers.timebase import TimeBase
from pt2logs.schema import TABLES, Rows, TupleRows

CONTEXT_KEYS = frozenset(
    {"rank", "compiled_autograd_id", "frame_id", "frame_compile_id", "attempt", "stack", "subgraph_name", "has_payload"}
)
#: event kinds whose metadata names an artifact
NAMED_KINDS = frozenset({"artifact", "dump_file", "graph_dump"})

WARNING_KINDS = frozenset({"payload_md5_mismatch", "truncated", "decode_error", "unmatched_span_end", "unclosed_span"})



@dataclass
class ReadStats:
    """What a reader saw in one file; the ingest layer puts it in ``files`` and ``runs``."""

    lines: int = 0
    events: int = 0
    errors: int = 0
    warnings: int = 0
    unknown: int = 0
    first_ts: int | None = None
    last_ts: int | None = None
    ranks: set[int] = field(default_factory=set)
    torch_version: str | None = None
    kinds: dict[str, int] = field(default_factory=dict)

    def merge_ts(self, lo: int | None, hi: int | None) -> None:
        if lo is not None and (self.first_ts is None or lo < self.first_ts):
            self.first_ts = lo
        if hi is not None and (self.last_ts is None or hi > self.last_ts):
            self.last_ts = hi


@dataclass
class FileContext:
    """Where the bytes come from; readers never open files themselves."""

    file: str  # relative path shown in rows
    path: str = ""  # full path or URL, for ingest_errors
    rank: int | None = None  # rank from the file name / head, when the envelope has none
    mtime: float | None = None
    batch_rows: int = 50_000
    batch_bytes: int = 8 << 20
    stats: ReadStats = field(default_factory=ReadStats)
    #: for a piece of a split file: what the bytes before it established (pt2logs.readers.split.PieceStart)
    piece: Any = None
    #: byte chunks of another file, by path relative to this file's folder (set by ingest; readers of
    #: multi-file formats such as a tlparse output folder use it); raises OSError when there is none
    open_sibling: Callable[[str], Iterable[bytes]] | None = None


def compile_id_text(ca: Any, fid: Any, fcid: Any) -> str | None:
    """Torch's text form: ``F/C``, ``!A/F/C`` with compiled autograd, ``!A`` alone."""
    if fid is None and fcid is None:
        return None if ca is None else f"!{ca}"
    s = f"{fid}/{fcid}"
    return s if ca is None else f"!{ca}/{s}"


_EV_COLS = (
    "file", "line_no", "n_lines", "ts", "level", "thread", "pathname", "lineno", "event_type", "artifact_name",
    "compile_id", "frame_id", "frame_compile_id", "attempt", "compiled_autograd_id", "envelope",
    "payload", "payload_bytes", "payload_md5", "payload_ok", "rank",
)


class TraceState:
    """Per-file state shared by the handlers."""

    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.stats = ctx.stats
        self.tb = TimeBase(ctx.mtime)
        self.strings: dict[int, str] = {}
        #: compile_id -> (co_name, co_filename, co_firstlineno) of the frame being compiled
        self.frames: dict[str, tuple[str | None, str | None, int | None]] = {}
        #: per-compile scratch space for handlers (graph breaks seen, cache hits, ...)
        self.compiles: dict[str, dict[str, Any]] = {}
        self.spans: list[list[Any]] = []  # open chromium spans
        self.rows: dict[str, Rows | TupleRows] = {}
        self.ts_rows: set[str] = set()
        self.errors = Rows("ingest_errors")
        self._err_keys: list[tuple[int, int]] = []
        self.ev: dict[str, list[Any]] = {c: [] for c in _EV_COLS}
        self._ev_keys: list[int] = []
        self._ev_tods: list[int] = []
        self._ev_bytes = 0
        # the record being handled
        self.rec: Record | None = None
        self.key = 0
        self.rank: int | None = ctx.rank
        self._text: str | None = None
        self._last_ok = True  # the last record parsed and its md5 matched
        #: readers that rebuild records (tlparse output) judge payloads whose md5 cannot match: (record, md5) ->
        #: True/False, or None when the payload cannot be checked (re-encoded upstream); not a warning then
        self.payload_verdict: Callable[[Record, str], bool | None] | None = None

    # -- helpers for handlers -------------------------------------------------
    def table(self, name: str) -> Rows:
        r = self.rows.get(name)
        if r is None:
            r = self.rows[name] = Rows(name)
            if "ts" in r.cols:
                self.ts_rows.add(name)
        return r

    def tuples(self, name: str, fields: tuple[str, ...]) -> TupleRows:
        """A tuple accumulator for a hot table (see :class:`~pt2logs.schema.TupleRows`)."""
        r = self.rows.get(name)
        if r is None:
            r = self.rows[name] = TupleRows(name, fields)
        return r  # type: ignore[return-value]

    def add(self, name: str, row: dict[str, Any]) -> None:
        """Add a derived row; file, line, rank and (local) time are filled in."""
        rec = self.rec
        row.setdefault("file", self.ctx.file)
        row.setdefault("rank", self.rank)
        if rec is not None:
            row.setdefault("line_no", rec.line_no)
            row.setdefault("ts", (self.key, rec.tod_us))
        self.table(name).add(row)

    def text(self) -> str:
        """The current record's payload as text (decoded once)."""
        if self._text is None:
            p = self.rec.payload if self.rec is not None else None
            self._text = "" if p is None else p.decode("utf-8", "replace")
        return self._text

    def json_payload(self) -> Any:
        """The current payload parsed as JSON; reports and returns None when it is not JSON."""
        p = self.rec.payload if self.rec is not None else None
        if p is None:
            return None
        try:
            return orjson.loads(p)
        except orjson.JSONDecodeError as e:
            self.error("bad_payload_json", self.rec.line_no + 1, f"payload is not valid JSON ({e})", p[:EXCERPT])
            return None

    def error(self, kind: str, line_no: int | None, message: str, excerpt: bytes | str = b"") -> None:
        if kind == "truncated" and self._last_ok:
            return  # no final newline, but the last record is whole: nothing was cut
        add_error(self.errors, self.ctx, kind, line_no, message, excerpt,
                  "warning" if kind in WARNING_KINDS else "error", rank=self.rank)

    def frame(self, cid: str | None) -> tuple[str | None, str | None, int | None]:
        return self.frames.get(cid or "", (None, None, None))

    def scratch(self, cid: str | None) -> dict[str, Any]:
        return self.compiles.setdefault(cid or "", {})

    # -- batching ----------------------------------------------------------------
    def pending(self) -> int:
        return len(self.ev["line_no"])

    def should_flush(self) -> bool:
        n = len(self._ev_keys)
        if n < self.ctx.batch_rows and self._ev_bytes < self.ctx.batch_bytes:
            return False
        if not self.tb.calibrated:
            if n < 8 * self.ctx.batch_rows and self._ev_bytes < 4 * self.ctx.batch_bytes:
                return False  # wait a little longer for an epoch timestamp
            self.tb.fallback(self._ev_keys[0])
        return True

    def flush(self, final: bool = False) -> Iterator[Batch]:
        if not self.tb.calibrated:
            self.tb.fallback(self._ev_keys[0] if self._ev_keys else 0)
        tb = self.tb
        if self._ev_keys:
            ts = tb.convert(self._ev_keys, self._ev_tods)
            self.ev["ts"][:] = ts
            valid = [t for t in ts if t is not None]
            if valid:
                self.stats.merge_ts(min(valid), max(valid))
            yield "events", self._events_batch()
        for name in sorted(self.ts_rows):
            rows = self.rows[name]
            if isinstance(rows, TupleRows):
                continue
            col = rows.cols["ts"]
            rows.cols["ts"] = [tb.to_utc(*v) if isinstance(v, tuple) else v for v in col]
        for name, rows in self.rows.items():
            if len(rows):
                yield name, rows.take()
        if len(self.errors):
            yield "ingest_errors", self.errors.take()

    def _events_batch(self) -> pa.RecordBatch:
        t = TABLES["events"]
        ev = self.ev
        arrays = []
        for name in t.reader_columns:
            col = t.column(name)
            vals = ev[name]
            if name == "payload":
                arrays.append(self._text_array(vals, ev["line_no"], "payload"))
            elif name in ("envelope", "pathname", "level"):
                arrays.append(self._text_array(vals, ev["line_no"], name))
            elif col.kind == "ts":
                arrays.append(pa.array(vals, type=pa.int64()).cast(col.type))
            else:
                arrays.append(pa.array(vals, type=col.type))
        for lst in ev.values():
            lst.clear()  # in place: the reader's hot loop holds references to these lists
        self._ev_keys.clear()
        self._ev_tods.clear()
        self._ev_bytes = 0
        fields = [pa.field(n, t.column(n).type) for n in t.reader_columns]
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))

    def _text_array(self, vals: list[bytes | None], lines: list[int], what: str) -> pa.Array:
        # bytes -> binary is a memcpy; the cast validates UTF-8 in one vectorised pass
        # (ten times faster than letting pa.array decode each bytes object as a string)
        try:
            return pa.array(vals, type=pa.binary()).cast(pa.string())
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            out = []
            for v, ln in zip(vals, lines):
                if v is None or isinstance(v, str):
                    out.append(v)
                    continue
                try:
                    out.append(v.decode("utf-8"))
                except UnicodeDecodeError as e:
                    self.error("decode_error", ln, f"invalid UTF-8 in the {what} at byte {e.start}; kept with U+FFFD replacements", v[max(0, e.start - 40) : e.start + 40])
                    out.append(v.decode("utf-8", "replace"))
            return pa.array(out, type=pa.string())


Handler = Callable[[TraceState, dict, Any, "str | None"], None]

#: event key -> handler; filled by pt2logs.readers.trace_events
HANDLERS: dict[str, Handler] = {}
#: artifact name -> handler (for "artifact" events)
ARTIFACT_HANDLERS: dict[str, Handler] = {}
#: event kinds that are only bookkeeping (not "unknown" even without a handler)
KNOWN_PLAIN: set[str] = set()


def handles(*keys: str, artifact: bool = False) -> Callable[[Handler], Handler]:
    """Register a handler for event keys (or artifact names)."""

    def deco(fn: Handler) -> Handler:
        for k in keys:
            (ARTIFACT_HANDLERS if artifact else HANDLERS)[k] = fn
        return fn

    return deco


def read_trace(chunks: Iterable[bytes], ctx: FileContext) -> Iterator[Batch]:
    """Parse one TORCH_TRACE file given as byte chunks; yield ``(table, batch)``."""
    st = TraceState(ctx)
    first_line = 1
    if ctx.piece is not None:  # a piece of a split file starts with the state of the bytes before it
        first_line = ctx.piece.first_line
        st.strings.update(ctx.piece.strings)
        st.scratch(None).update(ctx.piece.flags)
        if ctx.piece.rank is not None:
            st.rank = ctx.piece.rank
    yield from read_records(st, iter_records(chunks, st.error, first_line))


def read_records(st: TraceState, records: Iterable[Record]) -> Iterator[Batch]:
    """The record loop of :func:`read_trace`: events rows, handler dispatch, batching. Also used by
    readers that rebuild trace records from another layout (:mod:`pt2logs.readers.tlparse_dir`)."""
    from pt2logs.readers import trace_events  # noqa: F401  (registers the handlers)

    ctx = st.ctx
    stats = st.stats
    ev = st.ev
    loads = orjson.loads
    JSONError = orjson.JSONDecodeError
    md5 = hashlib.md5
    kinds = stats.kinds
    handlers = HANDLERS
    art_handlers = ARTIFACT_HANDLERS
    file = ctx.file
    tb = st.tb
    # bound appends: the lists are cleared in place at each flush, so these stay valid
    a_file, a_line, a_nl, a_level, a_thread, a_path, a_lineno = (
        ev["file"].append, ev["line_no"].append, ev["n_lines"].append, ev["level"].append, ev["thread"].append,
        ev["pathname"].append, ev["lineno"].append)
    a_payload, a_pbytes, a_env, a_kind, a_name, a_cid = (
        ev["payload"].append, ev["payload_bytes"].append, ev["envelope"].append, ev["event_type"].append,
        ev["artifact_name"].append, ev["compile_id"].append)
    a_fid, a_fcid, a_att, a_ca, a_rank, a_md5, a_ok = (
        ev["frame_id"].append, ev["frame_compile_id"].append, ev["attempt"].append, ev["compiled_autograd_id"].append,
        ev["rank"].append, ev["payload_md5"].append, ev["payload_ok"].append)
    a_key, a_tod = st._ev_keys.append, st._ev_tods.append
    tb_key = tb.key
    context_keys = CONTEXT_KEYS
    named_kinds = NAMED_KINDS
    known_plain = KNOWN_PLAIN
    file_rank = ctx.rank
    batch_rows = ctx.batch_rows
    batch_bytes = ctx.batch_bytes
    n_pending = 0
    last_line = 0
    cid_cache: dict[tuple, str | None] = {}

    for rec in records:
        st.rec = rec
        st._text = None
        st._last_ok = True
        key = st.key = tb_key(rec.mmdd)
        last_line = rec.line_no + rec.n_lines - 1
        try:
            env = loads(rec.envelope)
        except JSONError as e:
            st.error("bad_json", rec.line_no, f"envelope is not valid JSON ({e}); record kept in events without metadata", rec.envelope)
            env = None
            st._last_ok = False
        if env is not None and type(env) is not dict:
            st.error("not_an_object", rec.line_no, f"envelope is JSON {type(env).__name__}, not an object; record kept in events without metadata", rec.envelope)
            env = None
        a_file(file)
        a_line(rec.line_no)
        a_nl(rec.n_lines)
        a_key(key)
        a_tod(rec.tod_us)
        a_level(rec.level)
        a_thread(rec.thread)
        a_path(rec.pathname)
        a_lineno(rec.lineno)
        payload = rec.payload
        a_payload(payload)
        if payload is not None:
            n = len(payload)
            a_pbytes(n)
            st._ev_bytes += n
        else:
            a_pbytes(None)
        n_pending += 1
        if env is None:
            a_env(None)
            for c in ("event_type", "artifact_name", "compile_id", "frame_id", "frame_compile_id", "attempt",
                      "compiled_autograd_id", "payload_md5", "payload_ok"):
                ev[c].append(None)
            a_rank(st.rank)
        else:
            a_env(rec.envelope)
            kind = None
            for k in env:
                if k not in context_keys:
                    kind = k
                    break
            meta = env.get(kind) if kind is not None else None
            name = meta.get("name") if kind in named_kinds and type(meta) is dict else None
            fid = env.get("frame_id")
            fcid = env.get("frame_compile_id")
            ca = env.get("compiled_autograd_id")
            if fid is None and fcid is None and ca is None:
                cid = None
            else:
                ck = (ca, fid, fcid)
                cid = cid_cache.get(ck, False)
                if cid is False:
                    cid = cid_cache[ck] = compile_id_text(ca, fid, fcid)
            rank = env.get("rank")
            if type(rank) is int:
                st.rank = rank
                stats.ranks.add(rank)
            else:
                rank = file_rank
            a_kind(kind)
            a_name(name)
            a_cid(cid)
            a_fid(fid if type(fid) is int else None)
            a_fcid(fcid if type(fcid) is int else None)
            att = env.get("attempt")
            a_att(att if type(att) is int else None)
            a_ca(ca if type(ca) is int else None)
            a_rank(rank)
            expect = env.get("has_payload")
            a_md5(expect if type(expect) is str else None)
            if expect is not None:
                ok = payload is not None and md5(payload).hexdigest() == expect
                if not ok and st.payload_verdict is not None:
                    ok = st.payload_verdict(rec, expect)
                if ok is False:
                    st._last_ok = False
                    st.error("payload_md5_mismatch", rec.line_no,
                             "payload md5 does not match has_payload (edited or damaged payload); payload kept" if payload is not None
                             else "has_payload is set but no payload lines follow; record kept", rec.envelope)
                a_ok(ok)
            else:
                a_ok(None)
                if payload is not None:
                    st.error("unexpected_payload", rec.line_no, "payload lines follow a record without has_payload; kept", payload[:200])
            kinds[kind] = kinds.get(kind, 0) + 1
            h = art_handlers.get(name) if kind == "artifact" else None
            if h is None:
                h = handlers.get(kind)  # type: ignore[arg-type]
            if h is not None:
                st.rank = rank
                h(st, env, meta, cid)
            elif kind not in known_plain and kind != "artifact":
                stats.unknown += 1
        if (n_pending >= batch_rows or st._ev_bytes >= batch_bytes) and st.should_flush():
            stats.events += n_pending
            n_pending = 0
            yield from st.flush()
    stats.events += n_pending
    st.rec = None
    from pt2logs.readers.trace_events import finish_file

    finish_file(st)
    stats.lines = last_line
    yield from st.flush(final=True)
