"""The TORCH_TRACE record loop with its `events` rows made natively (``pt2logs._native._records``).

The C splitter cuts a buffer into records; ``event_columns`` (``_native/events.c``) then reads each
record's envelope in a strict subset of JSON and writes its ``events`` row straight into Arrow
column buffers, so Python sees only the records that have a handler (to run it) and the records
the native pass leaves (a damaged or unusual envelope, a payload whose md5 does not match, a number
too large for its column): those go through the Python loop (:func:`pt2logs.readers.trace.loop.record_loop`),
which is also the oracle — the tests compare every table, row for row, with that loop on its own.

:func:`usable` says whether this loop can read a file: the extension is built, ``PT2LOGS_NATIVE`` is
not ``0``, and the file's rank (from its name) fits the ``rank`` column.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from pt2logs.readers.kit import Batch, FileContext
from pt2logs.readers.trace import native as records_native
from pt2logs.readers.trace.events import phases
from pt2logs.readers.trace.events.metrics import FRAME_SPAN_US
from pt2logs.readers.trace.handlers import ARTIFACT_HANDLERS, ENVELOPE_FREE, HANDLERS, KNOWN_PLAIN
from pt2logs.readers.trace.loop import finish, record_loop
from pt2logs.readers.trace.state import TraceState
from pt2logs.tables.rows import safe_text

#: the columns event_columns returns, in order, with their Arrow types; "key" and "tod" (the row's
#: local date key and time of day) become ``ts`` when the time base is known
_COLS = (
    ("line_no", pa.int64()),
    ("n_lines", pa.int32()),
    ("key", pa.int64()),
    ("tod", pa.int64()),
    ("level", pa.string()),
    ("thread", pa.int64()),
    ("pathname", pa.binary()),
    ("lineno", pa.int32()),
    ("event_type", pa.string()),
    ("artifact_name", pa.string()),
    ("compile_id", pa.string()),
    ("frame_id", pa.int32()),
    ("frame_compile_id", pa.int32()),
    ("attempt", pa.int32()),
    ("compiled_autograd_id", pa.int32()),
    ("envelope", pa.string()),
    ("payload", pa.binary()),
    ("payload_bytes", pa.int64()),
    ("payload_md5", pa.string()),
    ("payload_ok", pa.bool_()),
    ("rank", pa.int32()),
)


def usable(ctx: FileContext) -> bool:
    rank = ctx.rank
    return records_native.native_status()[0] and (
        rank is None or (type(rank) is int and 0 <= rank < 2**31)
    )


def read_records_native(
    st: TraceState, chunks: Iterable[bytes], first_line: int
) -> Iterator[Batch]:
    """:func:`pt2logs.readers.trace.loop.read_records` over the native splitter's records, with the
    events rows made natively (same rows, same derived tables, same errors)."""
    event_columns = records_native._ext.event_columns  # type: ignore[union-attr]
    stats, tb, file = st.stats, st.tb, st.ctx.file
    file_rank = st.ctx.rank
    loads = orjson.loads
    envelope_free = ENVELOPE_FREE
    ext = records_native._ext
    chromium, chromium_native = (
        phases.chromium_event,
        phases.native_handler(ext.chromium, ext.PhaseCols),
    )  # type: ignore[union-attr]
    batch_rows, batch_bytes = st.ctx.batch_rows, st.ctx.batch_bytes
    # the chromium events are done inside event_columns once the time base is set; before, it stops after
    # the first one (its handler sets the time base, from its epoch time), a few times; see _native/events.c
    ready = first = native_chromium = None
    tries = 0
    for recs in records_native.iter_record_groups(chunks, st.error, first_line):
        i, n = 0, len(recs)
        while i < n:
            if tb.year is not None:
                native_chromium = ready = ready or phases.native_args(
                    st, ext.PhaseCols, chromium, True
                )
            elif tries < 8:
                tries += 1
                native_chromium = first = first or phases.native_args(
                    st, ext.PhaseCols, chromium, False
                )
            else:
                native_chromium = None
            # stop where the Python loop would look at flushing (same batches, same error order)
            stop, rows, cols, handled, last_rank, tb.bump, tb._last_mmdd, pbytes, ranks = (
                event_columns(
                    recs,
                    i,
                    HANDLERS,
                    ARTIFACT_HANDLERS,
                    file_rank,
                    st.rank,
                    tb.bump,
                    tb._last_mmdd,
                    max(batch_rows - st.pending(), 1),
                    max(batch_bytes - st._ev_bytes, 1),
                    native_chromium,
                )
            )
            if rows:
                columns, keys, tods = _arrays(cols, rows, file)
                st.add_segment(columns, keys, tods, pbytes)
                stats.ranks.update(ranks)
                stats.events += rows
                _count_kinds(stats, columns["event_type"])
                for j, h, kind, cid, rank, key in handled:
                    if (
                        h is None
                    ):  # an entire_frame_compile span closed natively: its duration (in kind's place)
                        st.scratch(cid)[FRAME_SPAN_US] = kind
                        continue
                    rec = st.rec = recs[j]
                    st.key, st.rank, st._text = key, rank, None
                    if h is chromium:
                        chromium_native(st, None, None, cid)
                    elif h in envelope_free:
                        h(st, None, None, cid)
                    else:
                        env = loads(rec.envelope)
                        h(st, env, env.get(kind), cid)
                last = recs[stop - 1]
                st.last_line = last.line_no + last.n_lines - 1
                st.rank = last_rank
                st._last_ok = True
            if stop < n and not rows:  # a record the native pass leaves to the Python loop
                yield from record_loop(st, (recs[stop],))
                stop += 1
            i = stop
            if (st.pending() >= batch_rows or st._ev_bytes >= batch_bytes) and st.should_flush():
                yield from st.flush()
    finish(st)
    yield from st.flush(final=True)


def _arrays(cols: tuple, n: int, file: str) -> tuple[dict[str, pa.Array], np.ndarray, np.ndarray]:
    out: dict[str, pa.Array] = {}
    # pathname and payload stay binary (any bytes): the flush checks their UTF-8 (TraceState._events_batch)
    for (name, typ), (valid, offsets, data) in zip(_COLS, cols):
        bufs = [None if valid is None else pa.py_buffer(valid)]
        if offsets is not None:
            bufs.append(pa.py_buffer(offsets))
        bufs.append(pa.py_buffer(data))
        out[name] = pa.Array.from_buffers(typ, n, bufs)
    out["file"] = pa.repeat(
        pa.scalar(safe_text(file), pa.string()), n
    )  # a non-UTF-8 name: \xNN, as the Python loop stores it
    keys = out.pop("key").to_numpy()
    tods = out.pop("tod").to_numpy()
    return out, keys, tods


def _count_kinds(stats, kinds: pa.Array) -> None:
    """stats.kinds and stats.unknown as the Python loop counts them (every row here has a kind)."""
    counts = stats.kinds
    for item in pc.value_counts(kinds).to_pylist():
        k, c = item["values"], item["counts"]
        counts[k] = counts.get(k, 0) + c
        if k != "artifact" and k not in HANDLERS and k not in KNOWN_PLAIN:
            stats.unknown += c
