"""The commands that read the warehouse: queries, query, summary, advise, diff, ranks."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import click

from pt2logs.cli.options import (
    check_selection,
    connect_warehouse,
    filter_options,
    format_option,
    output_option,
    query_error,
    run_option,
    say_warnings,
    warehouse_option,
    wide_option,
    write_rows,
)


@click.command()
@click.option("--verbose", "-v", is_flag=True, help="Also show each query's parameters and file.")
def queries(verbose: bool) -> None:
    """List the named queries (queries/*.sql) with the question each answers.

    \b
    Example:
      pt2logs queries
      pt2logs query graph_break_hotspots --since 7d
    """
    from pt2logs.query.queries import load_queries

    for q in load_queries().values():
        click.echo(f"{click.style(q.name, bold=True)}  {q.title}")
        click.echo(f"    {q.question}")
        if verbose:
            click.echo(f"    params: {', '.join(p.name for p in q.params) or 'none'}   ({q.path})")


@click.command()
@click.argument("query")
@warehouse_option
@click.option(
    "-p",
    "--param",
    "params",
    nargs=2,
    multiple=True,
    metavar="NAME VALUE",
    help="Query parameter, e.g. -p run_id 3f2a -p limit 10.",
)
@filter_options
@run_option
@format_option()
@output_option
@wide_option
def query(
    query: str,
    warehouse: str,
    params: tuple[tuple[str, str], ...],
    since: str | None,
    until: str | None,
    tag: str | None,
    run: str | None,
    fmt: str,
    output: str | None,
    wide: bool,
) -> None:
    """Run a named query, or SQL (QUERY with spaces, or - to read it from stdin).

    Every table is a view, so ad-hoc SQL just works. Named queries take
    parameters with -p; --since/--until/--tag/--run fill the standard ones.
    Without them a query covers every run; the ones about one run
    (trace_events, bug_report_artifacts) then give the newest run.
    The rows stream into every format: memory does not grow with them
    (the table format shows the first 1,000 and counts the rest).

    \b
    Examples:
      pt2logs query top_recompile_causes
      pt2logs query graph_break_hotspots --since 7d --tag model=llama -f markdown
      pt2logs query recompile_list --run 3f2a --wide
      pt2logs query "SELECT cause, count(*) FROM recompiles GROUP BY 1"
      echo "SELECT * FROM runs" | pt2logs query - -f csv
    """
    from pt2logs.cli.outputs import OUTPUT_FORMATS
    from pt2logs.query.queries import QueryError, bind, get_query, load_queries, stream_sql

    given: dict[str, Any] = {k: v for k, v in params}
    for k, v in (("since", since), ("until", until), ("tag", tag), ("run_id", run)):
        if v is not None:
            given[k] = v
    if query == "-":
        sql, named = sys.stdin.read(), None
    elif query in load_queries() or (" " not in query.strip() and "\n" not in query):
        try:
            named = get_query(query)
        except QueryError as e:
            raise query_error(e) from None
        sql = named.sql
    else:
        sql, named = query, None
    con = connect_warehouse(warehouse)
    if named is None or any(p.name == "run_id" for p in named.params):  # -p run_id is --run
        check_selection(con, given.get("run_id"), given.get("tag"))
    try:
        bound = (
            bind(named, sql, given) if named else bind(None, sql, {k: v for k, v in given.items()})
        )
        # batch by batch: memory does not grow with the rows
        rows = stream_sql(con, sql, bound, OUTPUT_FORMATS[fmt].batch_rows)
    except QueryError as e:
        raise query_error(e) from None
    say_warnings(con)
    write_rows(rows, fmt, output, wide)


@click.command()
@click.argument("run", required=False)
@warehouse_option
@format_option("report")
@click.option("--rows", default=10, show_default=True, help="Rows per section.")
@click.option(
    "--wide",
    is_flag=True,
    help="Every column of each section's query, every cell in full, however wide.",
)
def summary(run: str | None, warehouse: str, fmt: str, rows: int, wide: bool) -> None:
    """What happened in one run: compiles, time by phase, recompiles, breaks, kernels, caches.

    RUN is a run id, an id prefix or a run name; default: the newest run.

    \b
    Examples:
      pt2logs summary
      pt2logs summary ddp_2rank --format json
      pt2logs summary --wide
    """
    from pt2logs.cli.render import print_summary
    from pt2logs.query.queries import QueryError
    from pt2logs.reports.compose import page_queries
    from pt2logs.reports.compose import summary as build
    from pt2logs.reports.runs import scoped_to

    con = connect_warehouse(warehouse, track=True)
    try:
        # its queries read the run's rows only, copied from the tables they read
        with scoped_to(con, run, queries=page_queries("summary")):
            s = build(con, run)
    except QueryError as e:
        raise query_error(e) from None
    print_summary(s, fmt, max_rows=rows, wide=wide)
    keep_answers_later(con)


@click.command()
@click.argument("run_a")
@click.argument("run_b")
@warehouse_option
@format_option("report")
@click.option(
    "--fail-on-regression",
    "fail_pct",
    type=float,
    metavar="PCT",
    help="Exit with status 1 if total compile time grew by more than PCT %, or new graph-break sites appeared (for CI gates).",
)
@click.option("--wide", is_flag=True, help="Every column and every cell in full, however wide.")
def diff(
    run_a: str, run_b: str, warehouse: str, fmt: str, fail_pct: float | None, wide: bool
) -> None:
    """What changed from RUN_A to RUN_B: compile time per function and phase, breaks, recompiles, kernels, caches.

    \b
    Examples:
      pt2logs diff nightly-1121 nightly-1122
      pt2logs diff 3f2a 9c1b --fail-on-regression 10
    """
    from pt2logs.cli.render import print_diff
    from pt2logs.query.queries import QueryError
    from pt2logs.reports.diff import QUERIES, regression
    from pt2logs.reports.diff import diff as build
    from pt2logs.reports.runs import scoped_to

    con = connect_warehouse(warehouse, track=True)
    try:
        # its queries read the two runs' rows only, copied from the tables they read
        with scoped_to(con, run_a, run_b, queries=QUERIES):
            d = build(con, run_a, run_b)
    except QueryError as e:
        raise query_error(e) from None
    print_diff(d, fmt, wide=wide)
    why = regression(d, fail_pct) if fail_pct is not None else []
    if why:
        click.echo("regression: " + "; ".join(why), err=True)
    keep_answers_later(con)
    if why:
        sys.exit(1)


@click.command()
@click.argument("run", required=False)
@warehouse_option
@format_option()
@output_option
@wide_option
def ranks(run: str | None, warehouse: str, fmt: str, output: str | None, wide: bool) -> None:
    """Per-rank divergence in a multi-rank run: ranks whose compiles, recompiles,
    cache outcomes or graph breaks differ from the majority (a desync shows here first),
    how each rank ended (outcome, why) and the first step where their compiles diverge.

    \b
    Example:
      pt2logs ranks ddp_2rank
    """
    from pt2logs.cli.render import print_ranks
    from pt2logs.query.queries import QueryError
    from pt2logs.reports.compose import page_queries
    from pt2logs.reports.compose import ranks as build
    from pt2logs.reports.runs import scoped_to

    con = connect_warehouse(warehouse, track=True)
    try:
        # its queries read the run's rows only, copied from the tables they read
        with scoped_to(con, run, queries=page_queries("ranks")):
            report = build(con, run)
    except QueryError as e:
        raise query_error(e) from None
    print_ranks(report, fmt, output, wide)
    keep_answers_later(con)


@click.command()
@click.argument("run", required=False)
@warehouse_option
@format_option()
@output_option
@click.option("--limit", default=20, show_default=True, help="Items to show, most costly first.")
def advise(run: str | None, warehouse: str, fmt: str, output: str | None, limit: int) -> None:
    """What to do about one run: each finding of the advice table (docs/advice.md) that
    matched its recompiles, graph breaks, failures and cache lookups, with the run's own
    evidence, the frames it applies to, the cost at stake, and the fix.

    RUN is a run id, an id prefix or a run name; default: the newest run. --format markdown
    writes a document to paste into an issue; csv/json/... write the rows of `pt2logs query advice`.

    \b
    Examples:
      pt2logs advise
      pt2logs advise recompiles --format markdown -o advice.md
      pt2logs advise 3f2a --format json
    """
    from pt2logs.cli.advice_view import advice_markdown, print_advice
    from pt2logs.query.queries import QueryError
    from pt2logs.reports.compose import advise as build
    from pt2logs.reports.runs import scoped_to

    con = connect_warehouse(warehouse, track=True)
    try:
        # one query: only the tables it reads are copied (all of them cost it more than they save)
        with scoped_to(con, run, queries=("advice",)):
            r, rows = build(con, run, limit)
    except QueryError as e:
        raise query_error(e) from None
    if fmt == "table" and not output:
        print_advice(r, rows)
    elif fmt == "markdown":
        text = advice_markdown(r, rows)
        if output:
            with open(output, "w") as f:
                f.write(text)
            click.echo(f"wrote {len(rows)} advice items to {output}", err=True)
        else:
            click.echo(text, nl=False)
    else:
        import pyarrow as pa

        write_rows(pa.Table.from_pylist(rows) if rows else run_empty(con), fmt, output)
    keep_answers_later(con)


def keep_answers_later(con: Any) -> None:
    """After the output: the answers the command's run scope found not kept, kept by a process of its own that
    this one does not wait for (pt2logs.query.answer_keeper; the next command about the run reads them). Only
    in the ``pt2logs`` program."""
    from pt2logs.cli._env import is_program

    if not is_program():  # (never forked from a host process: a test's CliRunner, a notebook)
        return
    from pt2logs.query.kept_answers import unkept, unkept_pairs

    wanted, pairs = unkept(con), unkept_pairs(con)
    if not (wanted or pairs):
        return
    from pt2logs.query.answer_keeper import keep_later
    from pt2logs.query.views import warehouse_of

    wh = warehouse_of(con)
    for f in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            f.flush()
    con.close()  # (the forked process opens its own connection: DuckDB's threads end here)
    if wh is not None:
        keep_later(wh, wanted, pairs)


def run_empty(con: Any) -> Any:
    """The advice query's columns, no rows (a format that writes a schema needs them)."""
    from pt2logs.query.queries import run_named

    return run_named(con, "advice", {"run_id": "\x00no run", "limit": 0})
