"""Compaction's copy: a partition's live rows read a row group at a time, written ordered by run.

Memory is bounded by row groups and a sort chunk, never by the partition (issue 31, item 7: DuckDB's
copy of a 2,000-run partition peaked at 346 MB, a 10,000-run one at 3.64 GB):

- :func:`dead_rows` reads only ``run_id`` and ``txn`` of each row group;
- :func:`copy_table` reads one row group at a time (pyarrow), its text columns as Parquet stores them
  (dictionary-encoded: an ``events`` row group's envelopes take a fifth of their decoded bytes, and sorting
  moves indices), keeps the live rows (the ``(run_id, txn)`` pairs of the committed runs), puts them in
  the file's declared columns and sorts them by ``run_id`` in chunks of :data:`CHUNK_BYTES`; a partition
  larger than one chunk spills each sorted chunk to a temporary Arrow stream and merges them run by run,
  :data:`FAN_IN` at a time (one batch of each in memory). Texts are decoded a batch at a time on the way
  out. The compacted file holds each run's rows together, runs in ``run_id`` order: a row group's
  ``run_id`` min/max statistics prune the reads of one run. Within a run, rows keep the order of the files
  they came from;
- :func:`copy_payloads` keeps each payload key once: the keys (16 bytes a row) are read first, then each
  key's first row is copied a row group at a time.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pt2logs.store.parts import PAYLOAD_KEY, PAYLOADS, file_schema

#: live rows sorted in memory at once, at most (bytes, texts dictionary-encoded); a partition over it is
#: merged from files
CHUNK_BYTES = 32 << 20
#: the bytes of a spilled chunk's batches: the merge holds one batch of each chunk it merges
MERGE_BATCH_BYTES = 1 << 20
#: rows read at a time, at most, and bytes (as Parquet counts a row group's bytes, before compression; its
#: texts decoded can be ten times more: the rows bound those)
READ_ROWS = 65536
READ_BYTES = 4 << 20
#: spilled chunks merged at once, at most (more: merged in rounds)
FAN_IN = 8
#: the bytes of a batch on the way out, decoded (its rows follow the size of the rows decoded before: a
#: ``compilation_metrics`` row holds its configs, ~30 KiB decoded, 8,192 of them 221 MB)
OUT_BYTES = 2 << 20

Live = dict[Any, pa.Array]  # txn -> the run ids committed by it (live now)
_NO_RUNS = pa.array([], pa.string())


def live_runs(live: pa.Table) -> Live:
    """``live`` (``run_id``, ``txn``: each run's committing transaction) by transaction."""
    out: dict[Any, list] = {}
    for run, txn in zip(
        live.column("run_id").to_pylist(), live.column("txn").to_pylist(), strict=True
    ):
        out.setdefault(txn, []).append(run)
    return {t: pa.array(runs, pa.string()) for t, runs in out.items()}


@contextlib.contextmanager
def _parquet(fs: Any, path: str, remote: bool, encoded: bool) -> Iterator[pq.ParquetFile]:
    """``path`` opened, its text columns read dictionary-encoded (as Parquet stores them: a row group of
    800,000 rows of one transaction's runs holds a few distinct ``run_id`` and ``txn``)."""
    fh = fs.open(path, "rb") if remote else open(path, "rb")  # noqa: SIM115 (closed below)
    try:
        pf = pq.ParquetFile(fh)
        names = [f.name for f in pf.schema_arrow if _text(f)] if encoded else []
        yield pq.ParquetFile(fh, read_dictionary=names, metadata=pf.metadata)
    finally:
        fh.close()


def _text(f: pa.Field) -> bool:
    return pa.types.is_string(f.type) or pa.types.is_large_string(f.type)


def _encoded(f: pa.Field) -> bool:
    """A column kept dictionary-encoded in flight: a text, but the run id (sorted on) and txn (stamped)."""
    return f.name not in ("run_id", "txn") and _text(f)


def in_flight(schema: pa.Schema) -> pa.Schema:
    """``schema`` (a file's) as rows are held while copied: its texts dictionary-encoded."""
    return pa.schema(
        [pa.field(f.name, pa.dictionary(pa.int32(), f.type)) if _encoded(f) else f for f in schema]
    )


def to_flight(rows: pa.Table, schema: pa.Schema, constants: dict[str, Any]) -> pa.Table:
    """A row group's rows in ``in_flight(schema)``: the columns in order, of their types (a column the file
    lacks NULL), ``constants`` stamped."""
    n = rows.num_rows
    arrays = []
    for f in in_flight(schema):
        plain = f.type.value_type if pa.types.is_dictionary(f.type) else f.type
        if f.name in constants:
            a = pa.repeat(pa.scalar(constants[f.name], plain), n)
        elif f.name in rows.column_names:
            a = rows.column(f.name)
        else:
            a = pa.nulls(n, plain)
        if a.type != f.type:
            if pa.types.is_dictionary(a.type):
                a = a.cast(a.type.value_type)
            if a.type != plain:
                a = a.cast(plain)
            if plain != f.type:
                a = a.dictionary_encode()
        arrays.append(a)
    return pa.Table.from_arrays(arrays, schema=in_flight(schema))


def decoded(t: pa.Table, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """``t`` (in flight) as ``schema``'s batches, texts decoded, about :data:`OUT_BYTES` each."""
    rows, at = 64, 0
    while at < t.num_rows:
        b = _plain(t.slice(at, rows), schema)
        at += b.num_rows
        yield b
        rows = max(16, min(1 << 16, OUT_BYTES * b.num_rows // max(1, b.nbytes)))


def _live_mask(rows: pa.Table, live: Live) -> pa.Array:
    """True for the rows whose ``(run_id, txn)`` is a live run's (both read dictionary-encoded or not)."""
    run = rows.column("run_id").combine_chunks()
    txn = rows.column("txn").combine_chunks()
    txns = pc.unique(txn)
    txns = (txns.dictionary_decode() if pa.types.is_dictionary(txns.type) else txns).to_pylist()
    if len(txns) == 1:  # a data file is one transaction's
        return _runs_in(run, live.get(txns[0], _NO_RUNS))
    if pa.types.is_dictionary(txn.type):
        txn = txn.dictionary_decode()
    mask = pa.array(np.zeros(rows.num_rows, dtype=bool))
    for t in txns:
        if t is not None:
            m = pc.and_(pc.equal(txn, t), _runs_in(run, live.get(t, _NO_RUNS)))
            mask = pc.or_(mask, pc.fill_null(m, False))
    return mask


def _runs_in(run: pa.Array, runs: pa.Array) -> pa.Array:
    """``run`` (each row's run id) is one of ``runs``: looked up once per distinct id when encoded."""
    if pa.types.is_dictionary(run.type):
        found = pc.is_in(run.dictionary.cast(pa.string()), value_set=runs)
        return pc.fill_null(found.take(run.indices), False)
    return pc.fill_null(pc.is_in(run.cast(pa.string()), value_set=runs), False)


def _row_groups(
    fs: Any,
    paths: list[str],
    remote: bool,
    columns: Callable[[pa.Schema], list[str]],
    encoded: bool = True,
) -> Iterator[pa.Table]:
    """The rows of ``paths``, about :data:`READ_BYTES` at a time (a row group of a million rows is not read
    whole), with the columns ``columns(file's schema)`` names; ``encoded``: texts dictionary-encoded (not
    for texts that never repeat: the store's payloads took 4 times their bytes so)."""
    for path in paths:
        with _parquet(fs, path, remote, encoded) as pf:
            cols = columns(pf.schema_arrow)
            for i in range(pf.num_row_groups):  # a batch never spans row groups
                rg = pf.metadata.row_group(i)
                rows = max(
                    1, min(READ_ROWS, READ_BYTES * rg.num_rows // max(1, rg.total_byte_size))
                )
                for b in pf.iter_batches(
                    batch_size=rows, row_groups=[i], columns=cols, use_threads=False
                ):
                    yield pa.Table.from_batches([b])


def dead_rows(fs: Any, paths: list[str], remote: bool, live: Live) -> int:
    """Rows of ``paths`` that no live run owns (only ``run_id`` and ``txn`` read)."""
    dead = 0
    for rows in _row_groups(fs, paths, remote, lambda _: ["run_id", "txn"]):
        mask = _live_mask(rows, live)
        dead += rows.num_rows - pc.sum(mask).as_py() if rows.num_rows else 0
    return dead


def copy_table(
    fs: Any,
    paths: list[str],
    remote: bool,
    live: Live,
    schema: pa.Schema,
    convert: Callable[[pa.Table], pa.Table],
) -> Iterator[pa.RecordBatch]:
    """The live rows of ``paths`` in ``schema`` (``convert``: a row group's live rows → :func:`in_flight`
    form), ordered by ``run_id``."""
    names = set(schema.names)
    chunk: list[pa.Table] = []
    size = 0
    spill: _Spill | None = None
    try:
        for rows in _row_groups(fs, paths, remote, lambda s: [n for n in s.names if n in names]):
            kept = rows.filter(_live_mask(rows, live))
            if kept.num_rows == 0:
                continue
            out = convert(kept)
            chunk.append(out)
            size += out.get_total_buffer_size()
            if size >= CHUNK_BYTES:
                spill = spill or _Spill()
                spill.add(_sorted(chunk))
                chunk, size = [], 0
        if spill is None:  # the partition fits one chunk: sorted in memory
            if chunk:
                yield from decoded(_sorted(chunk), schema)
            return
        if chunk:
            spill.add(_sorted(chunk))
        chunk = []
        yield from spill.merge(schema)
    finally:
        if spill is not None:
            spill.close()


def _sorted(chunk: list[pa.Table]) -> pa.Table:
    t = pa.concat_tables(chunk) if len(chunk) > 1 else chunk[0]
    t = t.take(pc.sort_indices(t, sort_keys=[("run_id", "ascending")]))  # stable: source order kept
    return t.combine_chunks()


def _plain(b: pa.RecordBatch | pa.Table, schema: pa.Schema) -> pa.RecordBatch:
    """``b`` (one chunk, in flight) with its texts decoded, as ``schema``."""
    return pa.RecordBatch.from_arrays(
        [
            (c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c).combine_chunks()
            if isinstance(c, pa.ChunkedArray)
            else (c.dictionary_decode() if pa.types.is_dictionary(c.type) else c)
            for c in b.columns
        ],
        schema=schema,
    )


class _Spill:
    """Sorted chunks in temporary Arrow streams (lz4), merged back run by run."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix=f"pt2logs-compact-{os.getpid()}-")
        self.paths: list[str] = []
        self.made = 0

    def _write(self, batches: Iterable[pa.RecordBatch], schema: pa.Schema) -> None:
        self.made += 1
        path = os.path.join(self.dir, f"{self.made}.arrows")
        opts = pa.ipc.IpcWriteOptions(compression="lz4")
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, schema, options=opts) as w:
            for b in batches:
                w.write_batch(b)
        self.paths.append(path)

    def add(self, t: pa.Table) -> None:
        rows = max(1, t.num_rows * MERGE_BATCH_BYTES // max(1, t.get_total_buffer_size()))
        self._write(t.to_batches(max_chunksize=rows), t.schema)

    def merge(self, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        """The chunks' rows as ``schema``'s batches, run by run: the smallest ``run_id`` first, an earlier
        chunk's rows first; :data:`FAN_IN` chunks at a time (rounds of merges into larger chunks before
        the last one, their texts encoded again)."""
        flight = in_flight(schema)
        while len(self.paths) > FAN_IN:
            groups = [self.paths[i : i + FAN_IN] for i in range(0, len(self.paths), FAN_IN)]
            self.paths = []
            for g in groups:
                if len(g) == 1:
                    self.paths.append(g[0])
                    continue
                merged = _merged([_Cursor(p) for p in g], schema)
                self._write(
                    (
                        to_flight(pa.Table.from_batches([b]), schema, {}).to_batches()[0]
                        for b in merged
                    ),
                    flight,
                )
                for p in g:
                    os.remove(p)
        yield from _merged([_Cursor(p) for p in self.paths], schema)

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _merged(cursors: list[_Cursor], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The rows of ``cursors`` (sorted streams) in ``run_id`` order as ``schema``'s batches (texts decoded
    a run's piece at a time), about :data:`OUT_BYTES` each."""
    heap = [(c.run, i) for i, c in enumerate(cursors) if c.run is not None]
    heapq.heapify(heap)
    out: list[pa.RecordBatch] = []
    size, limit = 0, 64
    try:
        while heap:
            _, i = heapq.heappop(heap)
            c = cursors[i]
            piece = _plain(c.take(limit), schema)
            out.append(piece)
            size += piece.nbytes
            limit = max(16, min(1 << 16, OUT_BYTES * piece.num_rows // max(1, piece.nbytes)))
            if size >= OUT_BYTES:
                yield pa.Table.from_batches(out).combine_chunks().to_batches()[0]
                out, size = [], 0
            if c.run is not None:
                heapq.heappush(heap, (c.run, i))
        if out:
            yield pa.Table.from_batches(out).combine_chunks().to_batches()[0]
    finally:
        for c in cursors:
            c.close()


class _Cursor:
    """One spilled chunk read a batch at a time; ``run``: the run its next rows belong to."""

    def __init__(self, path: str) -> None:
        self.file = pa.OSFile(path, "rb")
        self.reader = pa.ipc.open_stream(self.file)
        self.batch: pa.RecordBatch | None = None
        self.ends: list[int] = []
        self.runs: list[str] = []
        self.seg = 0
        self.at = 0
        self.run: str | None = None
        self._load()

    def _load(self) -> None:
        while True:
            try:
                b = self.reader.read_next_batch()
            except StopIteration:
                break
            if b.num_rows:
                ree = pc.run_end_encode(b.column("run_id"))
                self.batch = b
                self.ends = ree.run_ends.to_pylist()
                self.runs = ree.values.to_pylist()
                self.seg = self.at = 0
                self.run = self.runs[0]
                return
        self.batch, self.run = None, None

    def take(self, limit: int) -> pa.RecordBatch:
        """Up to ``limit`` rows of the current run (of the current batch)."""
        end = min(self.ends[self.seg], self.at + limit)
        out = self.batch.slice(self.at, end - self.at)
        self.at = end
        if end == self.ends[self.seg]:
            self.seg += 1
            if self.seg < len(self.ends):
                self.run = self.runs[self.seg]
            else:
                self._load()
        return out

    def close(self) -> None:
        self.file.close()


def copy_payloads(fs: Any, paths: list[str], remote: bool, txn: str) -> Iterator[pa.RecordBatch]:
    """Every payload key of ``paths`` once (its first row), stamped with ``txn``: never fewer (runs of any
    partition, and ingests running now that saw these files committed, may name any of them)."""
    keys = [t.column(0) for t in _row_groups(fs, paths, remote, lambda _: [PAYLOAD_KEY])]
    n = sum(len(k) for k in keys)
    if n == 0:
        return
    firsts = (
        pa.table({"k": pa.chunked_array(keys, keys[0].type), "i": pa.array(np.arange(n))})
        .group_by("k", use_threads=False)
        .aggregate([("i", "min")])
        .column("i_min")
    )
    del keys
    keep = np.zeros(n, dtype=bool)
    keep[firsts.to_numpy()] = True
    del firsts
    schema = file_schema(PAYLOADS)
    at = 0
    for rows in _row_groups(fs, paths, remote, lambda _: [PAYLOAD_KEY, "payload"], encoded=False):
        mask = keep[at : at + rows.num_rows]
        at += rows.num_rows
        kept = rows.filter(pa.array(mask))
        if kept.num_rows:
            yield pa.RecordBatch.from_arrays(
                [
                    kept.column(0).cast(schema.field(0).type).combine_chunks(),
                    kept.column(1).cast(schema.field(1).type).combine_chunks(),
                    pa.repeat(pa.scalar(txn, pa.string()), kept.num_rows),
                ],
                schema=schema,
            )
