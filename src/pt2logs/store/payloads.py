"""The payload store: each distinct long text once per warehouse, keyed by its content.

Ranks and repeated runs of one model log the same graphs, guards and output code: the same payload
text in every run. Each run is its own task and Parquet file, so zstd never sees two copies
together; the store does. ``<wh>/payloads/ingest_date=…/part-<txn>-….parquet`` holds rows
``(payload_key, payload, txn)``; an ``events`` row whose payload is there holds its ``payload_key``
and a NULL ``payload``, and the ``events`` view puts the text back (:mod:`pt2logs.query.views`). The same
for the ``args`` of ``compile_phases`` (key column ``args_key``): a chromium event's args carry the
compile's configs, tens of KB that every compile of a run repeats (``parts.STORED`` lists the columns).

**The key** is the XXH3-128 of the payload's stored UTF-8 bytes, computed here where the batch is
written (never the envelope's md5: a damaged log's md5 does not match its payload, and a tlparse
output folder can call a payload ok whose bytes do not hash to it). The same hash the warehouse
uses for its input files (:mod:`pt2logs.inputs.sources`); 128 bits: two distinct payloads sharing a key
is a chance of about n²/2¹²⁹ (10⁻²¹ for a billion payloads). Hashing costs ~0.1 ms per MB.

**Safety** (docs/warehouse.md): a writer leaves a payload out of its own store rows only when the
key is in a *committed* payload file (its transaction has a ``runs`` file; not replaced by a
compaction) or in store rows of its own transaction. Committed payload rows are never dropped:
a compaction copies every row of the payload files it replaces into its own committed files
before it lists the old ones for deletion. Rows of one transaction commit or roll back together.
Any copy of a key is the same text, so duplicates (two writers that stored one payload at once)
are harmless; the view keeps one.

**Memory**: the keys of committed payloads are read once per writer (16 bytes each, a sorted
array; newest files first, at most :func:`max_keys`: a payload older than that is stored again,
which costs bytes, never correctness); the keys a writer stored itself, a set of at most
:data:`OWN_KEYS`.
"""

from __future__ import annotations

import os
import posixpath

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import xxhash

from pt2logs.store import recovery
from pt2logs.store.parts import PAYLOAD_KEY, PAYLOADS, Layout, TxnInfo, file_schema, txn_of
from pt2logs.store.snapshot import is_data_path
from pt2logs.tables.rows import from_numpy

#: payloads shorter than this stay in their row (a key costs 16 bytes, a join, and short texts
#: repeat enough for Parquet's dictionary to store them once per file anyway)
MIN_BYTES = 64
#: at most this many committed keys held per writer (16 bytes each in a sorted array: 64 MB;
#: env ``PT2LOGS_PAYLOAD_KEYS``)
MAX_KEYS = 4_000_000
#: at most this many keys of its own held per writer (a set: ~90 bytes each, 45 MB; a transaction
#: is at most 1 GB of logs, which rarely holds this many distinct payloads of 64 bytes or more)
OWN_KEYS = 500_000

_KEY = pa.binary(16)


def max_keys() -> int:
    return int(os.environ.get("PT2LOGS_PAYLOAD_KEYS", MAX_KEYS))


def enabled() -> bool:
    """``PT2LOGS_PAYLOAD_STORE=0`` keeps every payload in its row (as warehouses before the store)."""
    return os.environ.get("PT2LOGS_PAYLOAD_STORE", "1") != "0"


def keys_of(arr: pa.Array, rows: np.ndarray) -> list[bytes]:
    """The key of each of ``rows`` of a string array: XXH3-128 of its bytes, hashed in place."""
    width = 8 if pa.types.is_large_string(arr.type) else 4
    offsets = np.frombuffer(
        arr.buffers()[1],
        dtype=np.int64 if width == 8 else np.int32,
        count=len(arr) + 1,
        offset=arr.offset * width,
    )
    buf = arr.buffers()[2]
    data = memoryview(buf) if buf is not None else memoryview(b"")
    digest = xxhash.xxh3_128_digest
    return [digest(data[a:b]) for a, b in zip(offsets[rows].tolist(), offsets[rows + 1].tolist())]


def committed_keys(lay: Layout, limit: int | None = None) -> np.ndarray:
    """Sorted keys (numpy ``S16``) of the committed payload files: their transaction has a ``runs``
    file, and no compaction replaced them. Newest files first, at most ``limit`` keys. A file deleted
    while it is read (a compaction's grace ran out) is skipped: its rows are in the compaction's."""
    committed = {txn_of(p) for p in recovery.table_files(lay, "runs")} - {None}
    garbage = recovery.garbage_names(lay)
    limit = max_keys() if limit is None else limit
    # where a writer puts them only (a stray copy elsewhere is never read: its keys would name texts no view reads)
    files = [
        p
        for p in recovery.table_files(lay, PAYLOADS)
        if txn_of(p) in committed
        and posixpath.basename(p.replace(os.sep, "/")) not in garbage
        and is_data_path(lay.rel(p))
    ]
    files.sort(
        key=lambda p: posixpath.basename(p.replace(os.sep, "/")), reverse=True
    )  # names sort by txn time
    parts: list[np.ndarray] = []
    n = 0
    for p in files:
        if n >= limit:
            break
        try:
            with lay.fs.open(p, "rb") as f:
                col = pq.read_table(f, columns=[PAYLOAD_KEY]).column(0).combine_chunks()
        except (OSError, ValueError):  # (ArrowInvalid: a damaged file, left out by readers too)
            continue
        parts.append(_as_numpy(col))
        n += len(col)
    if not parts:
        return np.empty(0, dtype="S16")
    return np.unique(np.concatenate(parts))[:limit]


def _as_numpy(col: pa.Array) -> np.ndarray:
    col = col.cast(_KEY) if col.type != _KEY else col
    return np.frombuffer(
        col.buffers()[1], dtype="S16", count=len(col), offset=col.offset * 16
    ).copy()


def _in_sorted(sorted_keys: np.ndarray, q: np.ndarray) -> np.ndarray:
    if not len(sorted_keys):
        return np.zeros(len(q), dtype=bool)
    pos = np.searchsorted(sorted_keys, q)
    return sorted_keys[np.minimum(pos, len(sorted_keys) - 1)] == q


class PayloadStore:
    """One writer's side of the store: splits ``events`` batches into rows with keys and new store rows."""

    def __init__(self, info: TxnInfo):
        self.info = info
        self._committed: np.ndarray | None = None
        self._own: set[bytes] = set()

    def known(self) -> np.ndarray:
        if self._committed is None:
            self._committed = committed_keys(Layout(self.info.location))
        return self._committed

    def split(
        self, batch: pa.RecordBatch, text: str = "payload", key: str = PAYLOAD_KEY
    ) -> tuple[pa.RecordBatch, pa.RecordBatch | None]:
        """``batch`` with the stored texts of column ``text`` NULL and their keys in column ``key``; the
        store rows of texts neither committed nor stored by this writer yet (None when there are none)."""
        n = batch.num_rows
        col = batch.schema.get_field_index(text)
        pay = batch.column(col)
        big = pc.fill_null(pc.greater_equal(pc.binary_length(pay), MIN_BYTES), False)
        big_np = big.to_numpy(zero_copy_only=False)
        rows = np.flatnonzero(big_np)
        if not len(rows):
            return batch.append_column(key, pa.nulls(n, _KEY)), None
        keys = keys_of(pay, rows)
        committed = _in_sorted(self.known(), np.array(keys, dtype="S16"))
        own, room = self._own, min(OWN_KEYS, max_keys())
        new: list[int] = []
        for j in np.flatnonzero(~committed).tolist():
            k = keys[j]
            if k not in own:
                new.append(j)
                if (
                    len(own) < room
                ):  # past it, a payload seen again is stored again (bytes, not answers)
                    own.add(k)
        full: list[bytes | None] = [None] * n
        for r, k in zip(rows.tolist(), keys):
            full[r] = k
        # the rows left with their text, taken (if_else would copy every payload byte, and the batch's
        # buffer size, which sizes the writer's row groups, would count them all)
        kept = pc.take(pay, from_numpy(np.arange(n, dtype=np.int32), null=big_np))
        out = batch.set_column(col, batch.schema.field(col), kept)
        out = out.append_column(key, pa.array(full, type=_KEY))
        if not new:
            return out, None
        picked = rows[np.asarray(new)]
        stored = pa.RecordBatch.from_arrays(
            [
                pa.array([keys[j] for j in new], type=_KEY),
                pc.take(pay, from_numpy(picked)),
                pa.array([self.info.txn] * len(new), type=pa.string()),
            ],
            schema=file_schema(PAYLOADS),
        )
        return out, stored
