"""The state of one TORCH_TRACE file while it is read.

:class:`TraceState` holds per-file state only (the string table, the frame of each compile, open
chromium spans, the time base) and the rows being built: ``events`` column-wise (the hot path), every
derived table and ``ingest_errors`` in a :class:`~pt2logs.readers.kit.RowSink`.

Handlers (one small module per event family in :mod:`pt2logs.readers.trace.events`) get it; the table of
which handler takes which event key or artifact name is :mod:`pt2logs.readers.trace.handlers`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import orjson
import pyarrow as pa

from pt2logs.readers import identity_cols
from pt2logs.readers.kit import EXCERPT, Batch, FileContext, RowSink
from pt2logs.readers.segment_rows import Derived, SegmentRows
from pt2logs.readers.timebase import TimeBase
from pt2logs.readers.trace.records import Record
from pt2logs.tables import TABLES
from pt2logs.tables.rows import TS_LIMIT, TS_MIN, Rows, TupleRows, from_numpy, to_array

CONTEXT_KEYS = frozenset(
    {
        "rank",
        "compiled_autograd_id",
        "frame_id",
        "frame_compile_id",
        "attempt",
        "stack",
        "subgraph_name",
        "has_payload",
    }
)
#: event kinds whose metadata names an artifact
NAMED_KINDS = frozenset({"artifact", "dump_file", "graph_dump"})

WARNING_KINDS = frozenset(
    {
        "payload_md5_mismatch",
        "truncated",
        "decode_error",
        "unmatched_span_end",
        "unclosed_span",
        "bad_value",
        "payload_too_large",
    }
)


def compile_id_text(ca: Any, fid: Any, fcid: Any) -> str | None:
    """Torch's text form: ``F/C``, ``!A/F/C`` with compiled autograd, ``!A`` alone."""
    if fid is None and fcid is None:
        return None if ca is None else f"!{ca}"
    s = f"{fid}/{fcid}"
    return s if ca is None else f"!{ca}/{s}"


_EV_COLS = (
    "file",
    "line_no",
    "n_lines",
    "ts",
    "level",
    "thread",
    "pathname",
    "lineno",
    "event_type",
    "artifact_name",
    "compile_id",
    "frame_id",
    "frame_compile_id",
    "attempt",
    "compiled_autograd_id",
    "envelope",
    "payload",
    "payload_bytes",
    "payload_md5",
    "payload_ok",
    "rank",
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
        self.out = RowSink(ctx)
        self.rows = self.out.rows
        self.errors = self.out.errors
        self.ts_rows: set[str] = set()
        self.ev: dict[str, list[Any]] = {c: [] for c in _EV_COLS}
        self._ev_keys: list[int] = []
        self._ev_tods: list[int] = []
        self._ev_bytes = 0
        #: events rows waiting for their time stamps, in file order: (columns without ts, keys, tods); the
        #: native loop adds them whole, the rows in ``ev`` join them at each seal
        self._segments: list[tuple[dict[str, pa.Array], np.ndarray, np.ndarray]] = []
        self._seg_rows = 0
        self.last_line = 0  # the last line of the records read so far
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
            r = self.out.table(name)
            if "ts" in r.cols:
                self.ts_rows.add(name)
        return r  # type: ignore[return-value]

    def tuples(self, name: str, fields: tuple[str, ...]) -> TupleRows:
        """A tuple accumulator for a hot table (see :class:`~pt2logs.tables.rows.TupleRows`)."""
        return self.out.tuples(name, fields)

    def _fill(self, name: str, row: dict[str, Any]) -> dict[str, Any]:
        """File, line, rank, (local) time and the identity columns, where ``row`` lacks them."""
        rec = self.rec
        row.setdefault("file", self.ctx.file)
        row.setdefault("rank", self.rank)
        if rec is not None:
            row.setdefault("line_no", rec.line_no)
            row.setdefault("ts", (self.key, rec.tod_us))
        identity_cols.fill(name, row, self.stats)
        return row

    def where(self, cid: str | None) -> dict[str, Any]:
        """Where a compile-table row made now is seen: its source, compile id, file, rank, the record's line
        and (local) time. A row that waits for later facts (its compile's metrics) keeps these."""
        rec = self.rec
        return {
            "source": "trace",
            "compile_id": cid,
            "file": self.ctx.file,
            "rank": self.rank,
            "line_no": rec.line_no if rec else None,
            "ts": (self.key, rec.tod_us) if rec else None,
        }

    def add(self, name: str, row: dict[str, Any]) -> None:
        """Add a derived row; file, line, rank and (local) time are filled in."""
        self.table(name).add(self._fill(name, row))

    def add_many(
        self,
        name: str,
        shared: dict[str, Any],
        columns: dict[str, Any],
        n: int | None = None,
        derived: Derived | None = None,
    ) -> None:
        """``n`` rows that differ only in ``columns`` (Python lists or Arrow arrays of ``n`` values each): the
        rest of each row is ``shared``, filled once as :meth:`add` fills a row (a cache key's hundreds of
        components, say, without a dict per row); ``derived``: columns computed from another one's values
        (see :class:`~pt2logs.readers.segment_rows.SegmentRows`; its first call for a table sets them)."""
        if n is None:
            n = len(next(iter(columns.values()), ()))
        if not n:
            return
        self._fill(name, shared)
        if name not in self.rows and "ts" in TABLES[name].names:
            self.ts_rows.add(name)
        self.out.segments(name, derived).add_piece(shared, n, columns)

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
            self.error(
                "bad_payload_json",
                self.rec.line_no + 1,
                f"payload is not valid JSON ({e})",
                p[:EXCERPT],
            )
            return None

    def error(
        self, kind: str, line_no: int | None, message: str, excerpt: bytes | str = b""
    ) -> None:
        if kind == "truncated" and self._last_ok:
            return  # no final newline, but the last record is whole: nothing was cut
        self.out.error(
            kind,
            line_no,
            message,
            excerpt,
            "warning" if kind in WARNING_KINDS else "error",
            self.rank,
        )

    def frame(self, cid: str | None) -> tuple[str | None, str | None, int | None]:
        return self.frames.get(cid or "", (None, None, None))

    def scratch(self, cid: str | None) -> dict[str, Any]:
        return self.compiles.setdefault(cid or "", {})

    # -- batching ----------------------------------------------------------------
    def pending(self) -> int:
        """events rows not yet flushed."""
        return len(self._ev_keys) + self._seg_rows

    def should_flush(self) -> bool:
        n = self.pending()
        if n < self.ctx.batch_rows and self._ev_bytes < self.ctx.batch_bytes:
            return False
        if not self.tb.calibrated:
            if n < 8 * self.ctx.batch_rows and self._ev_bytes < 4 * self.ctx.batch_bytes:
                return False  # wait a little longer for an epoch timestamp
            self.tb.fallback(0)
        return True

    def add_segment(
        self, columns: dict[str, pa.Array], keys: np.ndarray, tods: np.ndarray, payload_bytes: int
    ) -> None:
        """events rows made whole elsewhere (the native loop: :mod:`pt2logs.readers.trace.fast`), after
        the rows already in ``ev``."""
        self._seal()
        self._segments.append((columns, keys, tods))
        self._seg_rows += len(keys)
        self._ev_bytes += payload_bytes

    def flush(self, final: bool = False) -> Iterator[Batch]:
        if not self.tb.calibrated:
            self.tb.fallback(0)
        tb = self.tb
        self._seal()
        if self._segments:
            yield "events", self._events_batch()
        self._ev_bytes = 0
        for name in sorted(self.ts_rows):
            rows = self.rows[name]
            if isinstance(rows, TupleRows):
                continue
            if isinstance(rows, SegmentRows):
                for shared, _, _ in rows.pieces:
                    v = shared.get("ts")
                    shared["ts"] = tb.to_utc(*v) if isinstance(v, tuple) else v
                continue
            col = rows.cols["ts"]
            rows.cols["ts"] = [tb.to_utc(*v) if isinstance(v, tuple) else v for v in col]
        yield from self.out.flush()

    def _seal(self) -> None:
        """The rows in ``ev`` (the Python loop's) → a segment (their lists, converted at the flush)."""
        if not self._ev_keys:
            return
        self._segments.append(
            (
                {c: list(v) for c, v in self.ev.items()},
                np.array(self._ev_keys, dtype=np.int64),
                np.array(self._ev_tods, dtype=np.int64),
            )
        )
        self._seg_rows += len(self._ev_keys)
        for lst in self.ev.values():
            lst.clear()  # in place: the reader's hot loop holds references to these lists
        self._ev_keys.clear()
        self._ev_tods.clear()

    def _events_batch(self) -> pa.RecordBatch:
        """The pending segments as one batch: columns built (values that do not fit reported, text checked
        as UTF-8) column by column in row order, ``ts`` from the time base."""
        t = TABLES["events"]
        segs = self._segments
        keys = np.concatenate([s[1] for s in segs])
        tods = np.concatenate([s[2] for s in segs])
        lines: list[int] | None = None
        arrays = []
        for name in t.reader_columns:
            if name == "ts":
                arrays.append(self._ts_array(keys, tods))
                continue
            col = t.column(name)
            text = name in ("payload", "envelope", "pathname", "level")
            parts = []
            for columns, _, _ in segs:
                vals = columns[name]
                if not isinstance(vals, list):
                    parts.append(vals)
                elif text:
                    parts.append(self._binary(vals))
                else:
                    bad: list[int] = []
                    parts.append(to_array(vals, col, bad))
                    for i in bad:
                        self.out.bad_value("events", name, vals[i], columns["line_no"][i])
            if text:
                parts = [p.cast(pa.binary()) for p in parts]
            arr = parts[0] if len(parts) == 1 else pa.concat_arrays(parts)
            if text:
                try:
                    arr = arr.cast(pa.string())
                except (pa.ArrowInvalid, pa.ArrowTypeError):
                    if lines is None:
                        lines = [
                            ln
                            for c, _, _ in segs
                            for ln in (
                                c["line_no"]
                                if isinstance(c["line_no"], list)
                                else c["line_no"].to_pylist()
                            )
                        ]
                    arr = self._text_array(arr.to_pylist(), lines, name)
            arrays.append(arr)
        segs.clear()
        self._seg_rows = 0
        return pa.RecordBatch.from_arrays(arrays, schema=t.reader_schema)

    def _ts_array(self, keys: np.ndarray, tods: np.ndarray) -> pa.Array:
        """Row keys + times of day → UTC timestamps through the time base (None for an impossible date)."""
        ukeys, inv = np.unique(keys, return_inverse=True)
        # an impossible date, or one outside years 1-9999 (a damaged log's), is no date: NULL
        days = [self.tb.to_utc(int(k), 0) for k in ukeys]
        day_ok = np.array([d is not None and TS_MIN <= d < TS_LIMIT for d in days], dtype=bool)
        ts = np.array([d if ok else 0 for d, ok in zip(days, day_ok)], dtype=np.int64)[inv] + tods
        valid = day_ok[inv] & (ts >= TS_MIN) & (ts < TS_LIMIT)
        if not valid.all():
            arr = from_numpy(ts, pa.int64(), null=~valid)
            ts = ts[valid]
        else:
            arr = from_numpy(ts, pa.int64())
        if len(ts):
            self.stats.merge_ts(int(ts.min()), int(ts.max()))
        return arr.cast(TABLES["events"].column("ts").type)

    @staticmethod
    def _binary(vals: list) -> pa.Array:
        try:
            return pa.array(vals, type=pa.binary())
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # str values (rebuilt records): as UTF-8
            return pa.array(
                [v.encode("utf-8", "surrogatepass") if isinstance(v, str) else v for v in vals],
                type=pa.binary(),
            )

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
                    self.error(
                        "decode_error",
                        ln,
                        f"invalid UTF-8 in the {what} at byte {e.start}; kept with U+FFFD replacements",
                        v[max(0, e.start - 40) : e.start + 40],
                    )
                    out.append(v.decode("utf-8", "replace"))
            return pa.array(out, type=pa.string())
