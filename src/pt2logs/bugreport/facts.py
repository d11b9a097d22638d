"""What a bug report needs, read from the warehouse (named queries) and, where the warehouse keeps a
path but not the text, from the run's own files (``pt2logs_run.json``, ``sdsc_*.json``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import duckdb
import orjson

from pt2logs.inputs.sources import filesystem, read_head
from pt2logs.query.queries import QueryError, run_named
from pt2logs.readers import switches
from pt2logs.reports.runs import resolve_run

#: the log formats that tell which debug switches were on, when the run's own record does not say (each
#: Format's ``switch``)
FORMAT_SWITCHES = switches()
#: the most read from one of the run's files (a kernel spec, the run record)
FILE_BYTES = 256 << 10
#: advice items in a report (the most costly)
ADVICE_ITEMS = 5


@dataclass
class Facts:
    run: dict[str, Any]
    compile: dict[str, Any] | None  # the compile described (bug_report_compiles row)
    compiles: list[dict[str, Any]]  # every compile of the run, failed first
    artifacts: list[dict[str, Any]]  # bug_report_artifacts rows of that compile
    guards: list[dict[str, Any]]  # recompile_list rows of the run
    record: dict[str, Any] = field(default_factory=dict)  # pt2logs_run.json, when the run has one
    spyre_log: list[dict[str, Any]] = field(default_factory=list)
    spyre_specs: list[dict[str, Any]] = field(
        default_factory=list
    )  # with "text": the spec file's head
    compare: dict[str, Any] | None = (
        None  # the other backend's run: {"run": ..., "overview": ..., "transfers": ...}
    )
    overview: dict[str, Any] = field(default_factory=dict)
    #: the TORCH_COMPILE_DEBUG files of the run (they name no compile)
    debug_files: list[dict[str, Any]] = field(default_factory=list)
    #: the run's advice items (the named query ``advice``), most costly first
    advice: list[dict[str, Any]] = field(default_factory=list)
    #: the run's AOTInductor / export compiles, kernel provenance and the rank checks that disagree
    #: (the named queries aot_compiles, kernel_provenance, rank_collective_checks)
    aot: list[dict[str, Any]] = field(default_factory=list)
    provenance: list[dict[str, Any]] = field(default_factory=list)
    rank_checks: list[dict[str, Any]] = field(default_factory=list)

    @property
    def is_spyre(self) -> bool:
        return any(f.startswith("spyre") for f in self.run.get("formats") or [])


def read_file(path: str | None, limit: int = FILE_BYTES) -> str | None:
    """The first ``limit`` bytes of one of the run's files as text (None when it is gone)."""
    if not path:
        return None
    try:
        fs, p = filesystem(path)
        data, _ = read_head(fs, p, limit)
    except (OSError, ValueError):
        return None
    return data.decode("utf-8", "replace")


def compact_json(text: str | None) -> str | None:
    """A JSON document re-indented with every object or list that fits in 100 characters on one line (a
    kernel spec's shapes and schedules then take a line each, not one per number); the text as it was
    when it is not JSON."""
    if not text:
        return text
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text

    def dump(v: Any, ind: int) -> str:
        pad = " " * (ind + 1)
        flat = json.dumps(v, separators=(", ", ": "), ensure_ascii=False)
        if len(flat) + ind <= 100:
            return flat
        if isinstance(v, dict) and v:
            items = [
                f"{pad}{json.dumps(str(k), ensure_ascii=False)}: {dump(x, ind + 1)}"
                for k, x in v.items()
            ]
            return "{\n" + ",\n".join(items) + "\n" + " " * ind + "}"
        if isinstance(v, list) and v and any(isinstance(x, (dict, list)) and x for x in v):
            return "[\n" + ",\n".join(pad + dump(x, ind + 1) for x in v) + "\n" + " " * ind + "]"
        return flat

    return dump(obj, 0) + "\n"


def gather(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    compile_id: str | None = None,
    compare: str | None = None,
) -> Facts:
    p = {"run_id": run_id}
    (run,) = run_named(con, "bug_report_run", p).to_pylist()
    compiles = run_named(con, "bug_report_compiles", p).to_pylist()
    chosen = None
    if compile_id is not None:
        picked = [c for c in compiles if c["compile_id"] == compile_id]
        if not picked:
            ids = ", ".join(sorted({str(c["compile_id"]) for c in compiles})[:12]) or "none"
            raise QueryError(f"run {run['run']} has no compile {compile_id!r}; its compiles: {ids}")
        chosen = picked[0]
    elif compiles:
        chosen = compiles[0]  # failed first
    rows = run_named(
        con, "bug_report_artifacts", {**p, "compile_id": (chosen or {}).get("compile_id") or "-"}
    ).to_pylist()
    artifacts = [
        a
        for a in rows
        if a["compile_id"] is not None and chosen is not None and a["rank"] == chosen["rank"]
    ]
    facts = Facts(run, chosen, compiles, artifacts, run_named(con, "recompile_list", p).to_pylist())
    facts.debug_files = [a for a in rows if a["compile_id"] is None]
    facts.overview = run_named(con, "run_overview", p).to_pylist()[0]
    facts.advice = run_named(con, "advice", {**p, "limit": ADVICE_ITEMS}).to_pylist()
    facts.aot = run_named(con, "aot_compiles", p).to_pylist()
    facts.provenance = run_named(con, "kernel_provenance", p).to_pylist()
    facts.rank_checks = [
        r for r in run_named(con, "rank_collective_checks", p).to_pylist() if not r["agree"]
    ]
    rec = read_file(run.get("record_path"))
    if rec:
        try:
            loaded = orjson.loads(rec)
            facts.record = loaded if isinstance(loaded, dict) else {}
        except orjson.JSONDecodeError:
            pass
    if facts.is_spyre:
        rows = run_named(con, "spyre_debug_excerpt", p).to_pylist()
        facts.spyre_log = [r for r in rows if r["part"] == "log"]
        facts.spyre_specs = [
            dict(r, kernels=r["text"], text=compact_json(read_file(r["path"])))
            for r in rows
            if r["part"] == "spec"
        ]
        other = compare or _other_backend(con, run)
        if other is not None:
            facts.compare = _comparison(con, other)
            facts.compare["mine"] = run_named(con, "spyre_transfer_volume", p).to_pylist()
    return facts


def _backend(tags: Any) -> str | None:
    t = orjson.loads(tags) if isinstance(tags, str) else (tags or {})
    return (
        str(t.get("backend")).lower()
        if isinstance(t, dict) and t.get("backend") is not None
        else None
    )


def _other_backend(con: duckdb.DuckDBPyConnection, run: dict[str, Any]) -> str | None:
    """The run of the same job on the other Spyre backend: tags equal but ``backend`` (sendnn vs spyre)."""
    mine = _backend(run.get("tags"))
    if mine not in ("sendnn", "spyre"):
        return None
    want = {"sendnn": "spyre", "spyre": "sendnn"}[mine]
    base = {k: v for k, v in orjson.loads(run["tags"] or "{}").items() if k != "backend"}
    for r in run_named(con, "bug_report_run", {}).to_pylist():
        t = orjson.loads(r["tags"] or "{}")
        if _backend(r["tags"]) == want and {k: v for k, v in t.items() if k != "backend"} == base:
            return r["run_id"]
    return None


def _comparison(con: duckdb.DuckDBPyConnection, other: str) -> dict[str, Any]:
    r = resolve_run(con, other)
    p = {"run_id": r.run_id}
    return {
        "run": run_named(con, "bug_report_run", p).to_pylist()[0],
        "overview": run_named(con, "run_overview", p).to_pylist()[0],
        "transfers": run_named(con, "spyre_transfer_volume", p).to_pylist(),
    }


def all_text(f: Facts) -> list[str]:
    """Every text of the facts, for the redactor to learn user names from."""
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)

    walk(
        [
            f.run,
            f.compile,
            f.artifacts,
            f.guards,
            f.record,
            f.spyre_log,
            f.spyre_specs,
            f.compare,
            f.debug_files,
            f.aot,
            f.provenance,
            f.rank_checks,
        ]
    )
    return out
