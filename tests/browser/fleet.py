"""Test warehouses for the dashboard: a few weeks of runs made from the sample traces, and a trace
whose graph break, failure and recompile carry an XSS payload.

A sample trace is moved in time by rewriting every glog prefix date (``V1122 10:46:49``) and every
epoch number (chromium ``ts`` in µs, ``start_time`` in s, ...) by the same number of days, and
recomputing the payload md5s, so the copy is a valid trace of a run on another day (and, its head
being different, a distinct run).
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from tests.conftest import SAMPLES, shared_dir
from tests.tracegen import record

import pt2logs

_GLOG = re.compile(rb"^([VIWEC])(\d\d)(\d\d) ")
_EPOCH = re.compile(rb"(?<![\w.])(1[6-9]\d{8})(\d{0,9})(?=[.,\s\]}]|$)")
_MD5 = re.compile(rb'"has_payload": "[0-9a-f]{32}"')
_TIMES = re.compile(
    rb'("(?:entire_frame_compile|backend_compile|inductor_compile|code_gen)_time_s": )([0-9.eE+-]+)'
)
SAMPLE_DAY = dt.date(2026, 11, 22)  # the day the sample traces were made (sample_traces/README.md)

#: the XSS payloads planted in logs: if any of them runs, window.__xss is set
SCRIPT = "<script>window.__xss=1</script>"
IMG = '<img src=x onerror="window.__xss=2">'
ATTR = '"><svg onload="window.__xss=3">'


def _shift_line(line: bytes, days: int, year: int, scale: float = 1.0) -> bytes:
    m = _GLOG.match(line)
    if scale != 1.0 and b'"compilation_metrics"' in line[:200]:
        line = _TIMES.sub(
            lambda t: t.group(1) + repr(round(float(t.group(2)) * scale, 6)).encode(), line
        )
    if m:
        d = dt.date(year, int(m.group(2)), int(m.group(3))) + dt.timedelta(days=days)
        line = m.group(1) + b"%02d%02d " % (d.month, d.day) + line[m.end() :]

    def epoch(m: re.Match) -> bytes:
        scale = 10 ** len(m.group(2))
        if len(m.group(2)) not in (0, 3, 6, 9):
            return m.group(0)
        v = int(m.group(0)) + days * 86400 * scale
        return str(v).encode()

    return _EPOCH.sub(epoch, line)


def shift_trace(
    src: Path, dst: Path, days: int, year: int = SAMPLE_DAY.year, scale: float = 1.0
) -> None:
    """Copy a (gzipped) TORCH_TRACE log ``days`` later, payload md5s recomputed; ``scale``
    multiplies the compile times of compilation_metrics (not the chromium spans)."""
    raw = gzip.decompress(src.read_bytes()) if src.suffix == ".gz" else src.read_bytes()
    out: list[bytes] = []
    head: int | None = None
    payload: list[bytes] = []

    def flush() -> None:
        if head is not None and payload:
            md5 = hashlib.md5(b"\n".join(p[1:] for p in payload)).hexdigest().encode()
            out[head] = _MD5.sub(b'"has_payload": "' + md5 + b'"', out[head])

    for line in raw.split(b"\n"):
        if line.startswith(b"\t"):
            payload.append(_shift_line(line, days, year))
            out.append(payload[-1])
            continue
        flush()
        payload = []
        out.append(_shift_line(line, days, year, scale))
        head = len(out) - 1 if b'"has_payload"' in line else None
    flush()
    dst.parent.mkdir(parents=True, exist_ok=True)
    data = b"\n".join(out)
    dst.write_bytes(gzip.compress(data, 1) if dst.suffix == ".gz" else data)


def shifted_run(scenario: str, dest: Path, day: dt.date, scale: float = 1.0) -> Path:
    """A copy of sample scenario ``scenario`` that ran on ``day``, under ``dest/<scenario>/``."""
    run = dest / scenario / f"{scenario}-{day.isoformat()}" / "trace"
    for f in sorted((SAMPLES / scenario / "trace").glob("*.log*")):
        shift_trace(f, run / f.name, (day - SAMPLE_DAY).days, scale=scale)
    return run


#: the model tag of each sample scenario in the fleet
MODELS = {
    "train_step": "mlp",
    "recompiles": "shapes",
    "graph_breaks": "breaky",
    "compile_failure": "broken",
    "ddp_2rank": "ddp",
}


@dataclass(frozen=True)
class PlannedRun:
    scenario: str
    day: dt.date
    scale: float  # compile times of the copy = the sample's x scale
    folder: str


def make_fleet(
    dest: Path, wh: str, until: dt.date, weeks: int = 3, xss: bool = True
) -> list[PlannedRun]:
    """Ingest ~1 run a day (none on Sundays) over ``weeks`` weeks ending the day before ``until``,
    tagged with a model; this week adds graph-breaking runs, the 2-rank run and the XSS trace."""
    plan: set[tuple[str, dt.date]] = set()
    rota = ["train_step", "recompiles", "compile_failure", "train_step", "graph_breaks"]
    for i in range(weeks * 7):
        day = until - dt.timedelta(days=weeks * 7 - i)
        if day.weekday() != 6:
            plan.add((rota[i % len(rota)], day))
    plan |= {
        ("graph_breaks", until - dt.timedelta(days=3)),
        ("ddp_2rank", until - dt.timedelta(days=1)),
    }
    first = min(d for _, d in plan)
    # compile times shrink over the weeks (1.3x the sample's at first, 0.9x at the end): a trend to see
    runs = [
        PlannedRun(
            sc,
            day,
            scale_on(day, first, until),
            str(shifted_run(sc, dest, day, scale_on(day, first, until))),
        )
        for sc, day in sorted(plan, key=lambda p: (p[1], p[0]))
    ]
    for scenario, model in MODELS.items():
        if (dest / scenario).is_dir():
            pt2logs.ingest([str(dest / scenario)], wh, tags={"model": model})
    if xss:
        day = until - dt.timedelta(days=1)
        p = xss_trace(
            dest / "evil" / f"evil{IMG}" / "trace" / "dedicated_log_torch_trace_evil.log", day
        )
        pt2logs.ingest([str(dest / "evil")], wh, tags={"model": f"evil{SCRIPT}"})
        runs.append(PlannedRun("evil", day, 1.0, str(p.parent)))
    return runs


#: the fleet the dashboard tests share: runs up to the day before UNTIL
UNTIL = dt.date(2026, 11, 23)
_FLEETS: dict[str, tuple[str, list[PlannedRun]]] = {}


def fleet(tmp_path_factory: Any) -> tuple[str, list[PlannedRun]]:
    """(warehouse, plan) of the shared fleet, built once per test session for every xdist worker
    (``shared_dir``: 6.6 CPU s, which each worker of test_dashboard.py or a browser file spent again).
    Tests only read it."""
    if "fleet" not in _FLEETS:

        def make(base: Path) -> None:
            plan = make_fleet(base / "logs", str(base / "wh"), UNTIL)
            rows = [[r.scenario, r.day.isoformat(), r.scale, r.folder] for r in plan]
            (base / "plan.json").write_text(json.dumps(rows))

        base = shared_dir("fleet", make)
        plan = [
            PlannedRun(sc, dt.date.fromisoformat(day), scale, folder)
            for sc, day, scale, folder in json.loads((base / "plan.json").read_text())
        ]
        _FLEETS["fleet"] = (str(base / "wh"), plan)
    return _FLEETS["fleet"]


def scale_on(day: dt.date, first: dt.date, until: dt.date) -> float:
    return round(1.3 - 0.4 * (day - first).days / max(1, (until - first).days), 3)


def xss_trace(path: Path, day: dt.date) -> Path:
    """A small valid trace whose file names, graph break, failure and recompile carry payloads."""
    t0 = dt.datetime.combine(day, dt.time(9, 30), dt.timezone.utc)
    when = t0.strftime("%m%d %H:%M:%S.000000")
    epoch = t0.timestamp()
    evil_file = f"/src/{IMG}{ATTR}.py"
    gb = (
        f"Graph break in user code at {evil_file}:12\n"
        f"Graph Break Reason: {SCRIPT} data-dependent {IMG}\n"
        f"  Explanation: the reason says {SCRIPT} and {IMG}\n"
        f"  Hint: do not {ATTR}\n\n"
        f" For more details about this graph break, please visit: "
        f"https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html"
    )
    frame = {"frame_id": 0, "frame_compile_id": 0, "attempt": 0}
    recs = [
        record({"str": [evil_file, 0]}, when=when),
        record(
            {
                "dynamo_start": {"stack": [{"line": 10, "name": f"fn{SCRIPT}", "filename": 0}]},
                **frame,
            },
            when=when,
        ),
        record(
            {"artifact": {"name": "dynamo_graph_break_reason", "encoding": "string"}, **frame},
            gb,
            when=when,
        ),
        record(
            {
                "compilation_metrics": {
                    "co_name": f"fn{SCRIPT}",
                    "co_filename": evil_file,
                    "co_firstlineno": 10,
                    "start_time": epoch,
                    "entire_frame_compile_time_s": 1.5,
                    "backend_compile_time_s": 1.0,
                    "inductor_compile_time_s": 0.8,
                    "code_gen_time_s": 0.5,
                    "fail_type": f"Evil{SCRIPT}",
                    "fail_reason": f"{IMG} failed {ATTR}",
                    "restart_reasons": [],
                },
                **frame,
            },
            when=when,
        ),
        record(
            {
                "dynamo_start": {"stack": [{"line": 10, "name": f"fn{SCRIPT}", "filename": 0}]},
                "frame_id": 0,
                "frame_compile_id": 1,
                "attempt": 0,
            },
            when=when,
        ),
        record(
            {
                "artifact": {"name": "recompile_reasons", "encoding": "json"},
                "frame_id": 0,
                "frame_compile_id": 1,
                "attempt": 0,
            },
            json.dumps([f"0/0: tensor 'x{IMG}' size mismatch at index 0. expected 4, actual 8"]),
            when=when,
        ),
        record(
            {
                "compilation_metrics": {
                    "co_name": f"fn{SCRIPT}",
                    "co_filename": evil_file,
                    "co_firstlineno": 10,
                    "start_time": epoch + 2,
                    "entire_frame_compile_time_s": 0.5,
                    "backend_compile_time_s": 0.4,
                    "inductor_compile_time_s": 0.3,
                    "code_gen_time_s": 0.2,
                    "recompile_reason": f"tensor 'x{IMG}' size mismatch",
                },
                "frame_id": 0,
                "frame_compile_id": 1,
                "attempt": 0,
            },
            when=when,
        ),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(recs))
    return path


def clear(dest: Path) -> None:
    shutil.rmtree(dest, ignore_errors=True)


#: the tables the dashboards read (compile_phases and events are not needed)
DASHBOARD_TABLES = (
    "compilation_metrics",
    "recompiles",
    "graph_breaks",
    "kernels",
    "cache_events",
    "failures",
)


def clone_runs(
    src: str, dst: str, copies: int, days: int = 27, now: dt.datetime | None = None
) -> int:
    """A big warehouse, fast: every run of ``src`` copied ``copies`` times straight into Parquet
    (one transaction), copy i starting i % ``days`` days before ``now`` and tagged model=m<i % 7>.
    Returns the number of runs written."""
    from pt2logs.query.views import arrow_table
    from pt2logs.store.warehouse import Warehouse
    from pt2logs.tables.schema import TABLES

    now = now or dt.datetime.now(dt.timezone.utc)
    con = pt2logs.connect(src)
    wh = Warehouse(dst)
    wh.init()
    txn = wh.begin()
    w = txn.writer()

    def select(table: str, overrides: dict[str, str]) -> str:
        cols = [overrides.get(c, f't."{c}"') + f' AS "{c}"' for c in TABLES[table].schema.names]
        return f"SELECT {', '.join(cols)} FROM {table} t, range({copies}) r(i)"

    common = {"run_id": "t.run_id || '-' || lpad(CAST(i AS VARCHAR), 6, '0')", "txn": f"'{txn.id}'"}
    for table in DASHBOARD_TABLES:
        # long texts (configs, stack traces) are NULL in the copies: no dashboard query reads them
        sch = TABLES[table].schema
        texts = [f.name for f in sch if pa.types.is_string(f.type) or pa.types.is_list(f.type)]
        probes = ", ".join(f'max(length(CAST("{c}" AS VARCHAR)))' for c in texts)
        sizes = con.sql(f"SELECT {probes} FROM {table}").fetchall()[0]
        long = {c: "NULL" for c, n in zip(texts, sizes, strict=True) if (n or 0) > 400}
        w.write_table(table, arrow_table(con, select(table, {**long, **common})).cast(sch))
    w.close()
    shift = f"(to_days(CAST(i % {days} AS INTEGER)) + to_seconds(CAST(i % 3600 AS BIGINT)))"
    runs = arrow_table(
        con,
        select(
            "runs",
            {
                **common,
                "name": "t.name || '-' || i",
                "started_at": f"$now - {shift}",
                "ended_at": f"$now - {shift} + (t.ended_at - t.started_at)",
                "tags": "'{\"model\": \"m' || (i % 7) || '\"}'",
            },
        ),
        {"now": now},
    ).cast(TABLES["runs"].schema)
    txn.commit(None, runs)
    return runs.num_rows
