"""Ingest: discover runs, parse their files, commit them to the warehouse.

The flow (see docs/architecture.md)::

    discover(paths) ─► runs ─► skip unchanged ─► transactions of a few runs        plan.py
        ─► tasks (files; pieces of big traces)                                   plan.py, split.py
        ─► chunks of tasks, handed to an engine: in-process, a process pool, Ray  plan.py, engines/
        ─► each task streams its file through its reader into its worker's        worker.py
           PartWriter (one per worker and transaction; on Ray one per group)
        ─► the parent writes `files` and `runs` rows: the commit                  commit.py

Engines import only the worker; the planner asks the query side (:mod:`pt2logs.ingestion.committed`) what is
already committed. Nothing here prints: progress goes to a callback (events ``discover``, ``start``,
``file``, ``commit``, ``done``), results come back as an :class:`IngestResult` that the CLI formats.

(The package is ``ingestion``, not ``ingest``: a subpackage named ``ingest`` would replace the
``pt2logs.ingest`` function of the API as an attribute of ``pt2logs`` once imported.)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from pt2logs.store import DEFAULT_WAREHOUSE

if TYPE_CHECKING:
    from pt2logs.ingestion.commit import IngestResult
    from pt2logs.ingestion.committed import KnownRuns
    from pt2logs.ingestion.engines.inprocess import Engine
    from pt2logs.inputs.discover import RunPlan
    from pt2logs.store.warehouse import Warehouse

__all__ = ["Engine", "IngestResult", "Progress", "ingest"]


def __getattr__(name: str) -> Any:
    """``Engine`` and ``IngestResult`` on first use: importing the package (or one of its modules, e.g. the
    views file's writer, which runs in a process of its own) does not load the readers, pyarrow's compute
    functions and the planner."""
    if name == "Engine":
        from pt2logs.ingestion.engines.inprocess import Engine

        return Engine
    if name == "IngestResult":
        from pt2logs.ingestion.commit import IngestResult

        return IngestResult
    raise AttributeError(f"module 'pt2logs.ingestion' has no attribute {name!r}")


#: progress(event, info); events: discover, start, file, commit, done
Progress = Callable[[str, dict[str, Any]], None]


def _no_progress(event: str, info: dict[str, Any]) -> None:
    pass


def ingest(
    paths: Iterable[str],
    warehouse: str = DEFAULT_WAREHOUSE,
    *,
    run_id: str | None = None,
    tags: dict[str, str] | None = None,
    fmt: str | None = None,
    engine: Engine | None = None,
    progress: Progress = _no_progress,
    extra_run_fields: dict[str, Any] | None = None,
    force: bool = False,
    as_one_run: bool = False,
    views_later: bool = False,
) -> IngestResult:
    """Ingest logs under ``paths`` into ``warehouse``; idempotent and atomic per transaction. The
    ``engine`` is closed at the end, also when the ingest fails before it is used (its workers end).

    ``views_later`` (``pt2logs ingest`` as a program, which ends right after): the views file ``pt2logs.duckdb``
    and the committed runs' kept outcomes are left to a forked process that makes them once everything is
    committed, not waited for (DuckDB's ~0.3 s off a one-trace ingest's critical path, and the keep's ~1 s
    off 300 runs'; views_file.py)."""
    if engine is None:
        from pt2logs.ingestion.engines.inprocess import Engine

        engine = Engine()
    try:
        return _ingest(
            paths,
            warehouse,
            run_id,
            tags,
            fmt,
            engine,
            progress,
            extra_run_fields,
            force,
            as_one_run,
            views_later,
        )
    finally:
        engine.close()


def _ingest(
    paths: Iterable[str],
    warehouse: str,
    run_id: str | None,
    tags: dict[str, str] | None,
    fmt: str | None,
    engine: Engine,
    progress: Progress,
    extra_run_fields: dict[str, Any] | None,
    force: bool,
    as_one_run: bool,
    views_later: bool,
) -> IngestResult:
    from pt2logs.ingestion import plan
    from pt2logs.ingestion.commit import IngestResult
    from pt2logs.ingestion.views_file import ViewsFile
    from pt2logs.inputs.discover import InputError, discover
    from pt2logs.readers import FORMATS
    from pt2logs.readers.trace.native import native_status
    from pt2logs.store.warehouse import Warehouse

    t0 = time.perf_counter()
    paths = list(paths)
    if not paths:
        raise InputError("no input path given")
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    engine.begin(
        paths
    )  # a pool forks here, before DuckDB or a thread starts, if the inputs need one
    wh = Warehouse(warehouse)
    wh.init()
    with ViewsFile(wh) as views:  # a prepared views file the ingest did not get to write is dropped
        later = views_later
        if (
            later
        ):  # its writer forked now, before a thread or DuckDB; told to write after the commit
            views.fork_writer(ahead=not engine.has_processes())
        elif (
            engine.jobs > 1
        ):  # a new warehouse's views file, made in a thread while workers parse (views_file.py);
            views.prepare()  # not beside a parse in this process: DuckDB's memory would add to its peak
        res = IngestResult(warehouse=wh.url())
        with wh.lock():
            res.removed_orphans = len(wh.recover())
        known_files, known_runs = plan.known(wh, force)
        progress("discover", {"paths": paths})
        found = discover(paths, run_id=run_id, one_run=as_one_run, fmt=fmt, known=known_files)
        res.skipped = found.skipped
        res.problems = (
            found.problems
        )  # unreadable entries outside every run: errors of the ingest itself
        res.errors += len(found.problems)
        todo, res.runs_unchanged = plan.todo(
            found.runs, force, retag=bool(tags or extra_run_fields), known_runs=known_runs
        )
        total = sum(p.bytes for p in todo)
        native, why = native_status()
        if todo and not native:  # said once per ingest: the result is right, only slower
            res.notes.append(why)
        progress(
            "start",
            {
                "runs": len(todo),
                "bytes": total,
                "unchanged": res.runs_unchanged,
                "skipped": len(res.skipped),
            },
        )
        txns = [
            _transaction(
                wh, group, engine, known_runs, tags or {}, extra_run_fields or {}, progress, res
            )
            for group in plan.transactions(todo)
        ]
        res.seconds = time.perf_counter() - t0
        try:
            # the outcomes are kept by the forked writer where there is one (this process ends at once)
            if not (later and views.release(txns)):
                _keep_outcomes(wh, txns, res)
                with wh.lock():
                    views.write()
        except Exception as e:  # noqa: BLE001 - the data is committed; only the DuckDB CLI's convenience file failed
            res.notes.append(
                f"pt2logs.duckdb (the same views, for the DuckDB CLI) could not be rewritten: {type(e).__name__}: "
                f"{e}. Everything ingested is committed; pt2logs commands read the warehouse directly."
            )
        progress("done", res.as_dict())
        return res


def _transaction(
    wh: Warehouse,
    group: list[RunPlan],
    engine: Engine,
    known_runs: KnownRuns,
    tags: dict[str, str],
    extra: dict[str, Any],
    progress: Progress,
    res: IngestResult,
) -> str:
    """Parse one transaction's runs with ``engine`` and commit them (its id); nothing of it is visible if it
    fails."""
    from pt2logs.ingestion import plan
    from pt2logs.ingestion.commit import commit
    from pt2logs.ingestion.worker import FileOutcome

    txn = wh.begin()
    try:
        outcomes: list[FileOutcome] = []

        def done(batch: list[FileOutcome]) -> None:
            for o in batch:
                outcomes.append(o)
                progress(
                    "file",
                    {
                        "path": o.task.url,
                        "bytes": o.task.nbytes,
                        "events": o.stats.events,
                        "errors": o.stats.errors,
                    },
                )

        tasks = plan.tasks(group, engine.jobs)
        work = (
            plan.chunks(tasks, engine.jobs)
            if engine.keeps_writer
            else plan.balance(tasks, engine.jobs)
        )
        engine.map(txn.info, work, done)
        commit(txn, group, outcomes, known_runs, tags, extra, res)
        progress("commit", {"txn": txn.id, "runs": len(group)})
    except BaseException:
        txn.abort()
        raise
    return txn.id


def _keep_outcomes(wh: Warehouse, txns: list[str], res: IngestResult) -> None:
    """The committed runs' outcomes and advice items decided once and kept (pt2logs.query.kept_rows); a failure is a
    note: what is not kept is decided at query time."""
    if not txns:
        return
    from pt2logs.query import kept_cache  # DuckDB: loaded once the parse is done

    try:
        kept = kept_cache.keep(wh, set(txns))
    except Exception as e:  # noqa: BLE001 - the data is committed; outcomes are then decided at query time
        res.notes.append(
            f"the runs' outcomes could not be kept ({type(e).__name__}: {e}); they are decided when asked"
        )
        return
    for txn, why in kept.skipped:
        res.notes.append(f"the outcomes of transaction {txn} are decided when asked: {why}")
