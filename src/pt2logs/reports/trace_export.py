"""Runs as a timeline: the Chrome Trace Event Format that ui.perfetto.dev and chrome://tracing open.

The events come from the named query ``trace_events`` (queries/trace_events.sql), streamed in
batches ordered by run, rank and time; this module lays them out and returns the document as
pieces of JSON text (:func:`chrome_trace`), so a big run never sits in memory. Only the CLI writes
them (``pt2logs export perfetto``).

Layout:

* one **process** per run and rank (``pid``), named ``<run> · rank N``; its labels say the run id
  and when the run started (times are µs since the run's first event, so several runs line up);
* in each process, **threads** (``tid``): ``compile phases`` (the trace's dynamo_timed spans, nested
  as logged), then one per **frame** (``frame 0``, ``frame 1``, ``frame !1/0`` for compiled autograd)
  holding that frame's compiles as spans and its graph breaks, recompiles and cache lookups as
  instant events with their reason, and ``other events`` for instants outside a compile;
* a span that does not nest in its thread (it starts inside another and ends after it: threads
  of one process that overlap) goes to a second thread of the same name (``compile phases (2)``),
  so every thread's spans nest and the viewers draw them as stacks, never dropped.

Format reference: the Trace Event Format document (Google, "Trace Event Format", 2016: a JSON object
with ``traceEvents``; ``ph`` X = complete event with ``dur``, i = instant with scope ``s``, M =
metadata ``process_name`` / ``thread_name`` / ``*_sort_index`` / ``process_labels``; ``ts`` and
``dur`` in µs).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import duckdb
import orjson

from pt2logs.analysis.identity import compile_lane
from pt2logs.query.queries import iter_named
from pt2logs.version import __version__

#: where the instants of no compile go, and the spans of compile phases
PHASES, OTHER = "compile phases", "other events"


@dataclass
class ExportStats:
    """What a document holds, filled while it is written (complete once the last piece is out)."""

    runs: set[str] = field(default_factory=set)
    processes: int = 0
    threads: int = 0
    spans: int = 0
    instants: dict[str, int] = field(default_factory=dict)

    @property
    def events(self) -> int:
        return self.spans + sum(self.instants.values())


class _Process:
    """One run's rank: its threads, each a stack of the open spans' ends (for the nesting rule)."""

    def __init__(self, pid: int):
        self.pid = pid
        self.lanes: dict[
            str, list[tuple[int, list[int]]]
        ] = {}  # track name -> [(tid, open span ends)]
        self.next_tid = 1

    def tid(
        self,
        track: str,
        start: int | None = None,
        end: int | None = None,
        out: list | None = None,
        order: int = 0,
    ) -> int:
        """The thread of ``track`` where a span [start, end] nests (a new one when none does); for an
        instant (start None), the track's first thread. New threads' metadata go to ``out``."""
        lanes = self.lanes.setdefault(track, [])
        if start is not None and end is not None:
            for tid, stack in lanes:
                while stack and stack[-1] <= start:
                    stack.pop()
                if not stack or end <= stack[-1]:
                    stack.append(end)
                    return tid
        elif lanes:
            return lanes[0][0]
        tid, self.next_tid = self.next_tid, self.next_tid + 1
        lanes.append((tid, [end] if start is not None and end is not None else []))
        name = track if len(lanes) == 1 else f"{track} ({len(lanes)})"
        if out is not None:
            out.append(
                {
                    "name": "thread_name",
                    "ph": "M",
                    "pid": self.pid,
                    "tid": tid,
                    "args": {"name": name},
                }
            )
            out.append(
                {
                    "name": "thread_sort_index",
                    "ph": "M",
                    "pid": self.pid,
                    "tid": tid,
                    "args": {"sort_index": order * 100 + len(lanes)},
                }
            )
        return tid


#: the longest string kept in an event's args (a whole dynamo_config in every span would dwarf the trace)
MAX_ARG = 500


def _shorten(args: dict[str, Any]) -> dict[str, Any]:
    """An event's args without NULLs, with nested args flattened in and over-long strings cut (and
    saying so: the warehouse has them whole)."""
    out: dict[str, Any] = {}
    for k, v in args.items():
        if isinstance(v, dict) and k == "args":
            out.update((kk, vv) for kk, vv in _shorten(v).items() if kk not in out)
        elif v is not None:
            text = (
                v
                if isinstance(v, str)
                else orjson.dumps(v).decode()
                if isinstance(v, (list, dict))
                else None
            )
            out[k] = (
                f"{text[:200]}… ({len(text):,} characters; whole in the warehouse)"
                if text and len(text) > MAX_ARG
                else v
            )
    return out


def _lane_order(lane: str | None) -> tuple[str, int]:
    """(thread name, sort order) of a compile-id lane: ``0`` → frame 0; ``!1/0`` → frame !1/0."""
    if lane is None:
        return OTHER, 1_000_000
    digits = lane.rsplit("/", 1)[-1]
    auto = lane.startswith("!")
    return f"frame {lane}", 1 + int(digits) + (
        500_000 if auto else 0
    ) if digits.isdigit() else 999_999


def trace_events(
    con: duckdb.DuckDBPyConnection,
    params: dict[str, Any],
    stats: ExportStats | None = None,
    batch_rows: int = 50_000,
) -> Iterator[dict[str, Any]]:
    """Every event of the selected runs (``params``: run_id, since, until, tag as the named queries
    take them), metadata first for each process and thread; ``stats`` is filled on the way."""
    stats = stats if stats is not None else ExportStats()
    procs: dict[tuple[str, int | None], _Process] = {}
    for batch in iter_named(con, "trace_events", params, batch_rows):
        for r in batch.to_pylist():
            key = (r["run_id"], r["rank"])
            meta: list[dict[str, Any]] = []
            p = procs.get(key)
            if p is None:
                p = procs[key] = _Process(len(procs) + 1)
                stats.runs.add(r["run_id"])
                stats.processes += 1
                rank = f"rank {r['rank']}" if r["rank"] is not None else "no rank"
                start = datetime.fromtimestamp(r["run_start_us"] / 1e6, timezone.utc).isoformat(
                    timespec="milliseconds"
                )
                meta += [
                    {
                        "name": "process_name",
                        "ph": "M",
                        "pid": p.pid,
                        "args": {"name": f"{r['run']} · {rank}"},
                    },
                    {
                        "name": "process_sort_index",
                        "ph": "M",
                        "pid": p.pid,
                        "args": {"sort_index": p.pid},
                    },
                    {
                        "name": "process_labels",
                        "ph": "M",
                        "pid": p.pid,
                        "args": {"labels": f"run {r['run_id']}, started {start}"},
                    },
                ]
            ts, dur = r["ts_us"], r["dur_us"]
            args = _shorten(orjson.loads(r["args"])) if r["args"] else {}
            if r["compile_id"] is not None:
                args["compile_id"] = r["compile_id"]
            if r["reason"] is not None:
                args["reason"] = r["reason"]
            if not r["time_known"]:
                args["time_known"] = (
                    False  # placed at its compile's start (or the rank's first event)
                )
            threads_before = p.next_tid
            if r["ph"] == "X":
                track, order = (
                    (PHASES, 0)
                    if r["kind"] == "phase"
                    else _lane_order(compile_lane(r["compile_id"]))
                )
                tid = p.tid(track, ts, ts + dur, meta, order)
                ev = {
                    "name": r["name"],
                    "cat": r["kind"],
                    "ph": "X",
                    "ts": ts,
                    "dur": dur,
                    "pid": p.pid,
                    "tid": tid,
                    "args": args,
                }
                stats.spans += 1
            else:
                track, order = _lane_order(compile_lane(r["compile_id"]))
                tid = p.tid(track, out=meta, order=order)
                ev = {
                    "name": r["name"],
                    "cat": r["kind"],
                    "ph": "i",
                    "s": "t",
                    "ts": ts,
                    "pid": p.pid,
                    "tid": tid,
                    "args": args,
                }
                stats.instants[r["kind"]] = stats.instants.get(r["kind"], 0) + 1
            stats.threads += p.next_tid - threads_before
            yield from meta
            yield ev


def chrome_trace(
    con: duckdb.DuckDBPyConnection,
    params: dict[str, Any],
    stats: ExportStats | None = None,
    batch_rows: int = 50_000,
) -> Iterator[bytes]:
    """The Chrome trace JSON document of the selected runs, as pieces of UTF-8 text to write in order
    (an object with ``traceEvents``; ``otherData`` says what made it). Memory stays bounded by one
    batch of ``batch_rows`` query rows and each rank's open spans."""
    stats = stats if stats is not None else ExportStats()
    yield b'{"traceEvents":[\n'
    first = True
    for ev in trace_events(con, params, stats, batch_rows):
        yield (b"" if first else b",\n") + orjson.dumps(ev)
        first = False
    selection = {k: v for k, v in params.items() if v is not None}
    if not selection and len(stats.runs) == 1:  # none: the query gave the newest run; say which
        selection = {"run_id": next(iter(stats.runs))}
    other = {
        "producer": f"pt2logs {__version__}",
        "selection": selection,
        "time_unit": "µs since each run's first event",
    }
    yield b'\n],"displayTimeUnit":"ms","otherData":' + orjson.dumps(other) + b"}\n"
