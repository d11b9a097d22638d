"""Generate docs/tables.md, docs/queries.md (named queries and macros), docs/recompile_causes.md,
docs/advice.md and docs/events.md from the declarations (tests keep them in sync).

    python -m pt2logs.docgen            # rewrite docs/tables.md and docs/queries.md
"""

from __future__ import annotations

import sys
from pathlib import Path

from pt2logs.tables import TABLES

GROUPS = {
    "core": "Runs, files, raw events",
    "compile": "Compile analytics (derived during ingest)",
    "text": "Text logs and counters",
    "spyre": "Torch-Spyre device logs",
    "outcomes": "Run outcomes: how processes ended",
}


def tables_markdown() -> str:
    out = [
        "# Tables",
        "",
        "Generated from the declarations in `src/pt2logs/tables/` by `python -m pt2logs.docgen`;",
        "a test fails when this file and the code disagree. Every table is a folder of Parquet files",
        "under the warehouse (`<table>/ingest_date=YYYY-MM-DD/*.parquet`) and a DuckDB view of the same",
        "name. Schema versions are stored in each file's metadata (`pt2logs.schema_version`).",
        "",
    ]
    for group, title in GROUPS.items():
        ts = [t for t in TABLES.values() if t.group == group]
        if not ts:
            continue
        out += [f"## {title}", ""]
        for t in ts:
            out += [
                f"### `{t.name}` (v{t.version})",
                "",
                f"One row per {t.grain}. {t.doc}",
                "",
                "| column | type | meaning |",
                "|---|---|---|",
            ]
            for c in t.columns:
                out.append(f"| `{c.name}` | {c.kind} | {c.doc.replace('|', '/')} |")
            out.append("")
    return "\n".join(out)


def queries_markdown() -> str:
    from pt2logs.query.queries import load_queries

    out = [
        "# Named queries",
        "",
        "Generated from the headers of `queries/*.sql` by `python -m pt2logs.docgen`; a test fails when this",
        "file and the queries disagree. Run one with `pt2logs query NAME [-p PARAM VALUE ...]`; every query",
        "also takes the standard filters `--since`, `--until`, `--tag KEY=VALUE` and `--run RUN` where it",
        "declares them. Without any of them a query covers every run, but for the queries about one run",
        "(`trace_events`, `bug_report_artifacts`: a timeline, a run's graphs) the newest run. A `--run`",
        "(or `-p run_id`) or `--tag` that matches no run of the warehouse is a usage error (status 2) naming",
        "the closest runs or tags; a `--since`/`--until` window with no runs is an empty answer.",
        "",
        "Ranks: a multi-rank run's rows carry their `rank` (NULL in a one-process run, whose `runs.n_ranks` is",
        "1). Results listed per run or per compile keep `rank`, one row per rank; results that combine ranks",
        "say so in their question (counts and seconds add up every rank) or in the column name",
        "(`*_per_rank_max`: the busiest rank's figure).",
        "",
        "Writing one: a query never fails on stored data ingest accepted. JSON kept from logs (`events.payload`,",
        "`compile_phases.args`, `compilation_metrics.dynamo_config`, ...) may be cut off by a killed job, hold",
        "replaced bytes or have another shape than usual; read it with `TRY(...)`, e.g.",
        "`TRY(json_extract_string(payload, '$.name'))` (NULL where it is not JSON), or, where the JSON comes",
        "from an aggregate (which `TRY` cannot hold), `CASE WHEN json_valid(x) THEN x END`. Casts of logged",
        "values are `TRY_CAST`. tests/test_damaged_inputs.py runs every query over damaged inputs.",
        "",
        "| query | question | parameters |",
        "|---|---|---|",
    ]
    for q in load_queries().values():
        params = (
            "; ".join(f"`{p.name}`" + (f" ({p.doc})" if p.doc else "") for p in q.params) or "none"
        )
        out.append(f"| `{q.name}` | **{q.title}.** {q.question} | {params} |")
    return "\n".join(out + ["", *macros_markdown()]) + "\n"


def _items(ps: list) -> str:
    return "; ".join(f"`{p.name}`" + (f" ({p.doc})" if p.doc else "") for p in ps) or "none"


def macros_markdown() -> list[str]:
    """The macros section of docs/queries.md, from the headers of ``queries/macros/*.sql``."""
    from pt2logs.query.macros import FILLS, load_macros

    macros = sorted(load_macros().values(), key=lambda m: m.name)
    out = [
        "## Macros",
        "",
        "The rules named queries share, each a DuckDB macro in `queries/macros/NAME.sql` with a header (title, what,",
        "params, fills, columns or returns; `pt2logs.query.macros` reads them once per process). Every connection has",
        "them, the views file `pt2logs.duckdb` too. `NAME.*` in columns: every column of that view or macro.",
        "",
        "| macro | what | parameters | columns (table) / result (scalar) |",
        "|---|---|---|---|",
    ]
    for m in macros:
        result = _items(m.columns) if m.table else m.returns
        cells = [f"`{m.signature}`", f"**{m.title}.** {m.what}", _items(m.params), result]
        out.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    out += [
        "",
        "Fills: SQL made from Python facts where a macro says `{{name}}` (`pt2logs.query.macros.FILLS`, the one list).",
        "",
        "| fill | what | macros |",
        "|---|---|---|",
    ]
    for name, (what, _) in FILLS.items():
        users = ", ".join(f"`{m.name}`" for m in macros if name in m.fills)
        out.append(f"| `{name}` | {what} | {users} |")
    return out


def causes_markdown() -> str:
    from pt2logs.analysis.guards import CAUSES, EXAMPLES, classify_guard

    out = [
        "# Recompile causes",
        "",
        "Generated from `pt2logs.analysis.guards` by `python -m pt2logs.docgen`. Every row of `recompiles`",
        "has a `cause` from this list, derived from the failed guard's text by rules written for the guard",
        "grammar of torch 2.0 to 2.13 (C++ tensor checks, global state, Python guards, shape-env expressions),",
        "and a `guard_subject` (the variable the guard was on). A compile refused by the recompile limit is a",
        "row with cause `recompile_limit_hit` and `is_limit_hit = true`: the frame runs eagerly from then on.",
        "",
        "| cause | meaning | a real guard | subject |",
        "|---|---|---|---|",
    ]
    for cause, meaning in CAUSES.items():
        ex = EXAMPLES.get(cause, "")
        subject = classify_guard(ex)[1] if ex else None
        out.append(
            f"| `{cause}` | {meaning} | `{ex.replace('|', '/')}` | {f'`{subject}`' if subject else ''} |"
        )
    out += [
        "",
        "`SELECT cause, count(*) FROM recompiles GROUP BY 1` or `pt2logs query top_recompile_causes`.",
    ]
    return "\n".join(out) + "\n"


def advice_markdown() -> str:
    """docs/advice.md: the advice table, rule by rule (from src/pt2logs/query/advice.toml)."""
    from pt2logs.query.advice import load_rules

    out = [
        "# Advice",
        "",
        "Generated from `src/pt2logs/query/advice.toml` by `python -m pt2logs.docgen`; a test fails when this file and",
        "the table disagree. Each rule is matched in SQL against a run's recompiles, graph breaks, failed",
        "compiles and cache lookups (the `advice_items()` macro, `queries/macros/advice_items.sql`); a fact goes to the first",
        "rule that matches it, in the order below. Each item carries the run's own evidence, the frames it",
        "applies to and the cost at stake: the compile seconds of the compiles involved (`frame`: every compile",
        "of the frame), the recompiles, breaks and failed compiles.",
        "",
        "    pt2logs advise RUN [--format markdown]     # one run, most costly first",
        "    pt2logs query advice --since 7d             # every run",
        '    pt2logs summary RUN                         # the top five, in the "Advice" section',
        "",
        'The weekly dashboard\'s card "Advice costing the most compile time this week" is `pt2logs query dash_advice`.',
        "",
        "| rule | finding | matches | evidence | cost |",
        "|---|---|---|---|---|",
    ]
    rules = load_rules()
    for r in rules:
        cells = [f"`{r.id}`", r.finding, r.matches_text(), r.evidence, r.cost]
        out.append(
            "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"
        )
    out += ["", "## What to do", ""]
    for r in rules:
        out += [f"### `{r.id}`: {r.finding}", "", r.advice, ""]
    return "\n".join(out).rstrip() + "\n"


def events_markdown() -> str:
    """docs/events.md: every TORCH_TRACE kind and artifact pt2logs interprets (and the tables it feeds), and
    every one it keeps raw on purpose with the reason (readers/trace/handlers.py, readers/trace/kept_raw.py)."""
    from pt2logs.readers.trace import handlers, kept_raw

    out = [
        "# TORCH_TRACE events: what each feeds, what is kept raw and why",
        "",
        "Generated from `src/pt2logs/readers/trace/handlers.py` (the handler table and `FEEDS`) and",
        "`src/pt2logs/readers/trace/kept_raw.py` by `python -m pt2logs.docgen`; a test fails when they disagree.",
        "Every record is an `events` row whatever its kind; tests/test_event_coverage.py reads the installed",
        "torch's source (every `trace_structured` / `trace_structured_artifact` call) and fails on a name that is",
        "in neither list. `pt2logs query event_coverage` says which of these a run has. A `*` stands for a part",
        "of the name torch makes at run time.",
        "",
        "## Interpreted",
        "",
        "| event kind | artifact | tables |",
        "|---|---|---|",
    ]
    rows = handlers.coverage_rows()
    for kind, name, tables, _why in rows:
        if (
            tables
            or (name is None and kind in handlers.HANDLERS)
            or name in handlers.ARTIFACT_HANDLERS
        ):
            out.append(f"| `{kind}` | {f'`{name}`' if name else ''} | {tables or '(state only)'} |")
    out += ["", "## Kept raw on purpose", "", "| event kind | artifact | why |", "|---|---|---|"]
    for k, why in kept_raw.KINDS.items():
        if k not in handlers.HANDLERS:
            out.append(f"| `{k}` |  | {why.replace('|', '/')} |")
    for n, why in kept_raw.ARTIFACTS.items():
        if n not in handlers.ARTIFACT_HANDLERS:
            out.append(f"| `artifact` | `{n}` | {why.replace('|', '/')} |")
    return "\n".join(out) + "\n"


def main() -> None:
    docs = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "docs"
    (docs / "tables.md").write_text(tables_markdown())
    (docs / "queries.md").write_text(queries_markdown())
    (docs / "recompile_causes.md").write_text(causes_markdown())
    (docs / "advice.md").write_text(advice_markdown())
    (docs / "events.md").write_text(events_markdown())
    print(f"wrote tables.md, queries.md, recompile_causes.md, advice.md and events.md in {docs}")


if __name__ == "__main__":
    main()
