"""Ingest: discover runs, parse their files, commit them to the warehouse.

The flow (see docs/architecture.md)::

    discover(paths) ─► runs ─► skip unchanged ─► transactions of a few runs
        ─► tasks (files) run by an engine (in-process or a process pool)
        ─► each task streams its files through their reader into a PartWriter
        ─► the parent writes `files` and `runs` rows: the commit

Nothing here prints: progress goes to a callback, results come back as an
:class:`IngestResult` that the CLI formats.
"""

from __future__ import annotations

import datetime as dt
import os
import posixpath
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa

from pt2logs import __version__
from pt2logs.discover import InputError, InputFile, RunPlan, discover
from pt2logs.readers import FORMATS
from pt2logs.readers.kit import FileContext, ReadStats
from pt2logs.schema import TABLES, Rows, stamp
from pt2logs.sources import ReadResult, filesystem, is_remote, read_head, stream, stream_range
from pt2logs.warehouse import DEFAULT_WAREHOUSE, PartWriter, TxnInfo, Warehouse

#: a transaction commits after this many bytes of input or runs, whichever first
#: (env PT2LOGS_TXN_BYTES / PT2LOGS_TXN_RUNS: an ingest killed midway loses at most one transaction)
TXN_BYTES = int(os.environ.get("PT2LOGS_TXN_BYTES", 1 << 30))
TXN_RUNS = int(os.environ.get("PT2LOGS_TXN_RUNS", 2000))

Progress = Callable[[str, dict[str, Any]], None]


def _no_progress(event: str, info: dict[str, Any]) -> None:
    pass


@dataclass
class FileTask:
    run_id: str
    url: str
    relpath: str
    fmt: str
    rank: int | None
    mtime: float | None
    size: int
    #: (start, end) byte range when a large file is parsed in pieces (end None = to the end)
    piece: tuple[int, int | None] | None = None


@dataclass
class FileOutcome:
    task: FileTask
    stats: ReadStats
    read: ReadResult
    seconds: float


@dataclass
class IngestResult:
    warehouse: str
    runs_new: int = 0
    runs_updated: int = 0
    runs_unchanged: int = 0
    files: int = 0
    bytes: int = 0
    content_bytes: int = 0
    events: int = 0
    errors: int = 0
    warnings: int = 0
    unknown: int = 0
    seconds: float = 0.0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)
    removed_orphans: int = 0

    @property
    def mb_per_s(self) -> float:
        return self.content_bytes / 1e6 / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items()}
        d["mb_per_s"] = round(self.mb_per_s, 1)
        d["skipped"] = [{"path": p, "why": w} for p, w in self.skipped]
        return d


def _memory_pool() -> None:
    """Arrow's default allocator here (mimalloc) keeps freed memory around; jemalloc with no decay
    gives it back at once, which keeps peak RSS flat whatever the input size (see bench/)."""
    import pyarrow as pa

    try:
        pool = pa.jemalloc_memory_pool()
        pa.jemalloc_set_decay_ms(0)
    except (NotImplementedError, pa.ArrowNotImplementedError, AttributeError):
        return
    pa.set_memory_pool(pool)


def parse_file(info: TxnInfo, task: FileTask, writer: PartWriter) -> FileOutcome:
    """Stream one file through its reader into ``writer``. Never raises on bad input."""
    t0 = time.perf_counter()
    fs, path = filesystem(task.url)
    fmt = FORMATS[task.fmt]
    ctx = FileContext(file=task.relpath, path=task.url, rank=task.rank, mtime=task.mtime,
                      open_sibling=lambda name: open_sibling(fs, path, name))
    rr = ReadResult()
    stamp_values = {"run_id": task.run_id, "txn": info.txn, "rank": task.rank}
    if task.piece is not None:
        from pt2logs.readers.split import piece_start

        ctx.piece = piece_start(path, task.piece[0])
        chunks = stream_range(path, task.piece[0], task.piece[1], rr)
    else:
        chunks = stream(fs, path, rr)
    for table, batch in fmt.read(chunks, ctx):
        writer.write(table, stamp(batch, TABLES[table], stamp_values))
    if rr.error:
        ctx.stats.errors += 1
        err = Rows("ingest_errors")
        err.add({"rank": task.rank, "path": task.url, "line_no": None, "kind": "unreadable", "severity": "error",
                 "message": rr.error + " (rows before this point were kept)", "excerpt": ""})
        writer.write("ingest_errors", stamp(err.take(), TABLES["ingest_errors"], stamp_values))
    return FileOutcome(task, ctx.stats, rr, time.perf_counter() - t0)


def open_sibling(fs: Any, path: str, name: str) -> Iterable[bytes]:
    """Chunks of the file ``name`` (relative, inside the folder of ``path``), for readers of multi-file
    formats (a tlparse output folder: raw.jsonl + payloads/); FileNotFoundError when there is none."""
    folder = posixpath.dirname(path)
    p = posixpath.normpath(posixpath.join(folder, name))
    if not p.startswith(folder.rstrip("/") + "/") or not fs.isfile(p):
        raise FileNotFoundError(name)
    return stream(fs, p, ReadResult())


def run_tasks(info: TxnInfo, tasks: list[FileTask], tag: str) -> list[FileOutcome]:
    """Parse a list of files into one PartWriter (one set of Parquet files per table)."""
    _memory_pool()
    writer = PartWriter(info, tag)
    try:
        out = [parse_file(info, t, writer) for t in tasks]
    except BaseException:
        writer.discard()
        raise
    writer.close()
    return out


class Engine:
    """Decides where tasks run; see pt2logs.engines."""

    jobs = 1

    def map(self, info: TxnInfo, groups: list[list[FileTask]], on_done: Callable[[list[FileOutcome]], None]) -> None:
        for i, g in enumerate(groups):
            on_done(run_tasks(info, g, f"p{os.getpid()}-{i}"))

    def close(self) -> None:
        pass


def committed_state(wh: Warehouse) -> tuple[dict[str, tuple], dict[str, dict[str, Any]]]:
    """Live files (url -> (size, mtime, format, run_id)) and runs (run_id -> {tags, ...})."""
    if not wh.table_files("runs"):
        return {}, {}
    from pt2logs.views import connect

    con = connect(wh)
    files = {}
    for url, size, mtime, fmt, run_id in con.execute(
            "SELECT path, bytes, epoch_us(mtime), format, run_id FROM files").fetchall():
        files[url] = (size, None if mtime is None else mtime / 1e6, fmt, run_id)
    runs = {}
    for run_id, tags, n_files in con.execute("SELECT run_id, tags, n_files FROM runs").fetchall():
        runs[run_id] = {"tags": orjson.loads(tags) if tags else {}, "n_files": n_files}
    con.close()
    return files, runs


def _unchanged(plan: RunPlan) -> bool:
    """Every file of the run is in the warehouse, unchanged, under this run id."""
    return bool(plan.files) and all(f.known_run == plan.run_id for f in plan.files)


def ingest(paths: Iterable[str], warehouse: str = DEFAULT_WAREHOUSE, *, run_id: str | None = None,
           tags: dict[str, str] | None = None, fmt: str | None = None, engine: Engine | None = None,
           progress: Progress = _no_progress, extra_run_fields: dict[str, Any] | None = None,
           force: bool = False, as_one_run: bool = False) -> IngestResult:
    """Ingest logs under ``paths`` into ``warehouse``; idempotent and atomic per transaction."""
    t0 = time.perf_counter()
    paths = list(paths)
    if not paths:
        raise InputError("no input path given")
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    wh = Warehouse(warehouse)
    wh.init()
    res = IngestResult(warehouse=wh.url())
    with wh.lock():
        res.removed_orphans = len(wh.recover())
    known_files, known_runs = ({}, {}) if force else committed_state(wh)
    progress("discover", {"paths": paths})
    found = discover(paths, run_id=run_id, one_run=as_one_run, fmt=fmt, known=known_files)
    res.skipped = found.skipped
    todo: list[RunPlan] = []
    for plan in found.runs:
        if not force and _unchanged(plan) and not tags and not extra_run_fields:
            res.runs_unchanged += 1
            continue
        todo.append(plan)
    total = sum(p.bytes for p in todo)
    progress("start", {"runs": len(todo), "bytes": total, "unchanged": res.runs_unchanged, "skipped": len(res.skipped)})
    engine = engine or Engine()
    try:
        for group in _txn_groups(todo):
            _ingest_group(wh, group, known_runs, tags or {}, extra_run_fields or {}, engine, progress, res)
    finally:
        engine.close()
    res.seconds = time.perf_counter() - t0
    with wh.lock():
        write_views_db(wh)
    progress("done", res.as_dict())
    return res


def _txn_groups(plans: list[RunPlan]) -> Iterable[list[RunPlan]]:
    group: list[RunPlan] = []
    size = 0
    for p in plans:
        group.append(p)
        size += p.bytes
        if size >= TXN_BYTES or len(group) >= TXN_RUNS:
            yield group
            group, size = [], 0
    if group:
        yield group


def _pieces(task: FileTask, compression: str, jobs: int) -> list[FileTask]:
    """A large, uncompressed, local trace file becomes one task per piece (see readers.split)."""
    from pt2logs.readers.split import SPLIT_MIN_BYTES, split_points

    if jobs <= 1 or task.fmt != "torch_trace" or compression != "none" or task.size < SPLIT_MIN_BYTES:
        return [task]
    fs, path = filesystem(task.url)
    if is_remote(fs):
        return [task]
    points = split_points(path, jobs)
    if len(points) == 1:
        return [task]
    ends = points[1:] + [None]
    return [FileTask(**{**task.__dict__, "piece": (a, b)}) for a, b in zip(points, ends)]


def _merge_pieces(outs: list[FileOutcome]) -> FileOutcome:
    """One outcome per file: the pieces' statistics added up, in file order."""
    if len(outs) == 1:
        return outs[0]
    import hashlib

    outs = sorted(outs, key=lambda o: o.task.piece[0] if o.task.piece else 0)
    st, rr = ReadStats(), ReadResult()
    h = hashlib.sha1()
    for o in outs:
        s = o.stats
        st.lines = max(st.lines, s.lines)
        st.events += s.events
        st.errors += s.errors
        st.warnings += s.warnings
        st.unknown += s.unknown
        st.ranks |= s.ranks
        st.merge_ts(s.first_ts, s.last_ts)
        st.torch_version = st.torch_version or s.torch_version
        for k, v in s.kinds.items():
            st.kinds[k] = st.kinds.get(k, 0) + v
        rr.bytes_read += o.read.bytes_read
        rr.content_bytes += o.read.content_bytes
        rr.error = rr.error or o.read.error
        h.update(o.read.sha1.encode())
    # a file parsed in N pieces: the sha1 of its pieces' sha1s, marked as such
    rr.sha1 = f"pieces{len(outs)}:{h.hexdigest()}"
    task = FileTask(**{**outs[0].task.__dict__, "piece": None})
    return FileOutcome(task, st, rr, max(o.seconds for o in outs))


def _split(tasks: list[FileTask], jobs: int) -> list[list[FileTask]]:
    """Balance tasks over jobs by size (largest first), keeping each group's order stable."""
    if jobs <= 1 or len(tasks) <= 1:
        return [tasks] if tasks else []
    bins: list[list[FileTask]] = [[] for _ in range(min(jobs * 2, len(tasks)))]
    sizes = [0] * len(bins)
    for t in sorted(tasks, key=lambda t: -t.size):
        i = sizes.index(min(sizes))
        bins[i].append(t)
        sizes[i] += t.size
    return [b for b in bins if b]


def _ensure_head(f: InputFile) -> None:
    if not f.head:
        fs, path = filesystem(f.url)
        f.head, f.compression = read_head(fs, path)
        from pt2logs.discover import _rank_of

        f.rank = _rank_of(f)


def _ingest_group(wh: Warehouse, plans: list[RunPlan], known_runs: dict[str, dict[str, Any]],
                  tags: dict[str, str], extra: dict[str, Any], engine: Engine, progress: Progress,
                  res: IngestResult) -> None:
    txn = wh.begin()
    try:
        tasks: list[FileTask] = []
        for plan in plans:
            for f in plan.files:
                _ensure_head(f)
                task = FileTask(plan.run_id, f.url, f.relpath, f.fmt.name, f.rank, f.mtime, f.size)
                tasks.extend(_pieces(task, f.compression, engine.jobs))
        pieces: dict[tuple[str, str], list[FileOutcome]] = {}

        def done(batch: list[FileOutcome]) -> None:
            for o in batch:
                pieces.setdefault((o.task.run_id, o.task.url), []).append(o)
                size = o.task.size if o.task.piece is None else (o.task.piece[1] or o.task.size) - o.task.piece[0]
                progress("file", {"path": o.task.url, "bytes": size, "events": o.stats.events, "errors": o.stats.errors})

        engine.map(txn.info, _split(tasks, engine.jobs), done)
        outcomes: dict[str, list[FileOutcome]] = {}
        for (run_id, _), outs in pieces.items():
            outcomes.setdefault(run_id, []).append(_merge_pieces(outs))
        files_rows = Rows("files", full=True)
        runs_rows = Rows("runs", full=True)
        now = txn.started
        for plan in plans:
            outs = outcomes.get(plan.run_id, [])
            agg = ReadStats()
            formats: set[str] = set()
            nbytes = 0
            for o in sorted(outs, key=lambda o: o.task.relpath):
                s = o.stats
                files_rows.add({
                    "run_id": plan.run_id, "rank": o.task.rank if o.task.rank is not None else (min(s.ranks) if len(s.ranks) == 1 else None),
                    "path": o.task.url, "relpath": o.task.relpath, "format": o.task.fmt,
                    "compression": _compression(plan, o.task.url), "bytes": o.read.bytes_read,
                    "content_bytes": o.read.content_bytes, "content_hash": o.read.sha1,
                    "mtime": None if o.task.mtime is None else int(o.task.mtime * 1e6),
                    "n_lines": s.lines, "n_events": s.events, "n_errors": s.errors, "n_warnings": s.warnings,
                    "n_unknown": s.unknown, "first_ts": s.first_ts, "last_ts": s.last_ts,
                })
                agg.events += s.events
                agg.errors += s.errors
                agg.warnings += s.warnings
                agg.unknown += s.unknown
                agg.ranks |= s.ranks | ({o.task.rank} if o.task.rank is not None else set())
                agg.merge_ts(s.first_ts, s.last_ts)
                agg.torch_version = agg.torch_version or s.torch_version
                formats.add(o.task.fmt)
                nbytes += o.read.content_bytes
                res.bytes += o.read.bytes_read
                res.content_bytes += o.read.content_bytes
            prev = known_runs.get(plan.run_id)
            run_tags = {**(prev["tags"] if prev else {}), **tags}
            row = {
                "run_id": plan.run_id, "name": plan.name, "source": plan.source, "root": plan.root,
                "n_ranks": len(agg.ranks), "ranks": sorted(agg.ranks), "n_files": len(outs), "formats": sorted(formats),
                "torch_version": agg.torch_version, "started_at": agg.first_ts, "ended_at": agg.last_ts,
                "tags": orjson.dumps(run_tags).decode(), "ingested_at": now, "committed_at": now,
                "bytes": nbytes, "n_events": agg.events, "n_errors": agg.errors, "n_warnings": agg.warnings,
                "pt2logs_version": __version__,
            }
            row.update(extra)
            runs_rows.add(row)
            if prev:
                res.runs_updated += 1
            else:
                res.runs_new += 1
            res.run_ids.append(plan.run_id)
            res.files += len(outs)
            res.events += agg.events
            res.errors += agg.errors
            res.warnings += agg.warnings
            res.unknown += agg.unknown
        txn.commit(_table("files", files_rows, txn.id), _table("runs", runs_rows, txn.id))
        progress("commit", {"txn": txn.id, "runs": len(plans)})
    except BaseException:
        txn.abort()
        raise


def _compression(plan: RunPlan, url: str) -> str:
    for f in plan.files:
        if f.url == url:
            return f.compression
    return "none"


def _table(name: str, rows: Rows, txn: str) -> pa.Table:
    t = TABLES[name]
    batch = rows.take()
    return pa.Table.from_batches([stamp(batch, t, {"txn": txn})])


def write_views_db(wh: Warehouse) -> str | None:
    """(Re)write ``<wh>/pt2logs.duckdb``: the same views, for the DuckDB CLI or a BI tool. Local only."""
    if wh.remote:
        return None
    import duckdb

    from pt2logs.views import MACROS, view_statements

    target = wh.path("pt2logs.duckdb")
    # the views depend only on which tables have files and which columns their newest files hold (and the macros)
    signature = orjson.dumps([__version__, MACROS] + [[name, bool(wh.table_files(name)), sorted(_newest_columns(wh, name))]
                                                      for name in sorted(TABLES)])
    sig_path = wh.path("_views.json")
    if os.path.exists(target) and os.path.exists(sig_path):
        with open(sig_path, "rb") as f:
            if f.read() == signature:
                return target
    tmp = f"{target}.{os.getpid()}.tmp"
    if os.path.exists(tmp):
        os.remove(tmp)
    con = duckdb.connect(tmp)
    try:
        for s in view_statements(con, wh):
            con.execute(s)
    finally:
        con.close()
    os.replace(tmp, target)
    wh._write_bytes(sig_path, signature)
    return target


def _newest_columns(wh: Warehouse, table: str) -> set[str]:
    from pt2logs.views import _present_columns

    return _present_columns(None, wh, table) or set()  # type: ignore[arg-type]


def now_utc() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)
