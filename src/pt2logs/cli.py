"""The ``pt2logs`` command line: parse options, call the library, print.

This is the only module (with :mod:`pt2logs.render`) that writes to the
terminal. Every command has ``--help`` with an example.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from pt2logs import __version__
from pt2logs.warehouse import DEFAULT_WAREHOUSE

WAREHOUSE_HELP = "Warehouse folder or URL (s3://, gs://, ...). Default: $PT2LOGS_WAREHOUSE or ./pt2logs_warehouse."


def warehouse_option(f: Any) -> Any:
    return click.option("--warehouse", "-w", envvar="PT2LOGS_WAREHOUSE", default=DEFAULT_WAREHOUSE,
                        show_default=True, help=WAREHOUSE_HELP)(f)


def parse_tags(values: tuple[str, ...]) -> dict[str, str]:
    tags = {}
    for v in values:
        if "=" not in v or not v.split("=", 1)[0].strip():
            raise click.BadParameter(f"{v!r}: expected KEY=VALUE, e.g. --tag model=llama", param_hint="--tag")
        k, val = v.split("=", 1)
        tags[k.strip()] = val.strip()
    return tags


class Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        order = ["ingest", "run", "summary", "query", "queries", "diff", "ranks", "dashboard", "compact", "tables", "formats"]
        cmds = super().list_commands(ctx)
        return [c for c in order if c in cmds] + [c for c in cmds if c not in order]


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="pt2logs")
def main() -> None:
    """pt2logs: PyTorch 2 compiler logs → a Parquet warehouse you can query and chart.

    \b
    Start here:
      pt2logs ingest ./traces                 # TORCH_TRACE dirs, stderr captures, ... → ./pt2logs_warehouse
      pt2logs summary                         # what happened in the latest run
      pt2logs queries                         # the named questions you can ask
      pt2logs query top_recompile_causes      # ask one
      pt2logs query "SELECT cause, count(*) FROM recompiles GROUP BY 1"
    """


# ---------------------------------------------------------------------------- ingest


@main.command()
@click.argument("paths", nargs=-1, required=True)
@warehouse_option
@click.option("--run-id", help="Use this run id (the whole PATH is then one run) instead of one derived from the content.")
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Label the run(s), e.g. --tag model=llama --tag commit=abc123. Queryable: runs.tags->>'model'.")
@click.option("--format", "fmt", help="Skip detection: read every file as this format (see `pt2logs formats`).")
@click.option("--jobs", "-j", type=int, default=None, help="Parallel worker processes (default: all cores).")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="Where files are parsed: local processes, or Ray tasks (pip install 'pt2logs[ray]').")
@click.option("--address", help="Ray cluster address for --engine ray (e.g. auto, ray://head:10001); default: a local Ray.")
@click.option("--strict", is_flag=True, help="Exit with status 1 if any input could not be parsed (ingest errors).")
@click.option("--force", is_flag=True, help="Re-ingest runs even if their files did not change.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar, only the summary line.")
def ingest(paths: tuple[str, ...], warehouse: str, run_id: str | None, tags: tuple[str, ...], fmt: str | None,
           jobs: int | None, engine: str, address: str | None, strict: bool, force: bool, as_json: bool, quiet: bool) -> None:
    """Read logs under PATHS into the warehouse.

    PATHS may be log files, TORCH_TRACE folders (one file per rank) or folders of
    many runs, at any depth, plain or compressed (.gz, .zst, .bz2), local or URLs.
    Formats are detected by content; files that are not logs are skipped and listed.
    Re-ingesting is safe: unchanged runs are skipped, grown files replace their run.

    \b
    Examples:
      pt2logs ingest sample_traces/
      pt2logs ingest ./job42 --run-id job42 --tag model=llama --tag commit=abc123
      pt2logs ingest s3://bucket/traces/ --warehouse s3://bucket/wh/
      pt2logs ingest s3://bucket/traces/ -w s3://bucket/wh/ --engine ray --address auto
    """
    from pt2logs.discover import InputError
    from pt2logs.ingest import ingest as do_ingest
    from pt2logs.ingest.engines import make_engine
    from pt2logs.render import IngestProgress, print_ingest_result

    tag_map = parse_tags(tags)
    show = not quiet and not as_json and sys.stderr.isatty()
    prog = IngestProgress(enabled=show)
    try:
        with prog:
            res = do_ingest(list(paths), warehouse, run_id=run_id, tags=tag_map, fmt=fmt,
                            engine=make_engine(jobs, engine, address), progress=prog.update, force=force)
    except InputError as e:
        raise click.UsageError(str(e)) from None
    print_ingest_result(res, as_json=as_json)
    if strict and res.errors:
        sys.exit(1)


# ---------------------------------------------------------------------------- query layer


def filter_options(f: Any) -> Any:
    """--since / --until / --tag, shared by every command that reads runs."""
    f = click.option("--tag", "tag", metavar="KEY=VALUE", help="Only runs with this tag, e.g. --tag model=llama.")(f)
    f = click.option("--until", help="Only runs that started before this (7d, 12h, 2w or a date).")(f)
    f = click.option("--since", help="Only runs that started on/after this (7d, 12h, 2w or a date).")(f)
    return f


def _connect(warehouse: str) -> Any:
    from pt2logs.views import connect
    from pt2logs.warehouse import Warehouse

    wh = Warehouse(warehouse)
    if not wh.exists():
        raise click.UsageError(f"no warehouse at {warehouse}: create one with `pt2logs ingest PATH --warehouse {warehouse}`")
    return connect(wh)


def _query_error(e: Exception) -> click.ClickException:
    return click.ClickException(str(e))


@main.command()
@click.option("--verbose", "-v", is_flag=True, help="Also show each query's parameters and file.")
def queries(verbose: bool) -> None:
    """List the named queries (queries/*.sql) with the question each answers.

    \b
    Example:
      pt2logs queries
      pt2logs query graph_break_hotspots --since 7d
    """
    from pt2logs.queries import load_queries

    for q in load_queries().values():
        click.echo(f"{click.style(q.name, bold=True)}  {q.title}")
        click.echo(f"    {q.question}")
        if verbose:
            click.echo(f"    params: {', '.join(p.name for p in q.params) or 'none'}   ({q.path})")


@main.command()
@click.argument("query")
@warehouse_option
@click.option("-p", "--param", "params", nargs=2, multiple=True, metavar="NAME VALUE", help="Query parameter, e.g. -p run_id 3f2a -p limit 10.")
@filter_options
@click.option("--run", "run", help="Only this run (id, id prefix or name); same as -p run_id RUN.")
@click.option("--format", "-f", "fmt", default="table", show_default=True, type=click.Choice(sorted(__import__("pt2logs.outputs", fromlist=["x"]).OUTPUT_FORMATS)), help="Output format.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), help="Write to this file instead of stdout (needed for parquet on a terminal).")
def query(query: str, warehouse: str, params: tuple[tuple[str, str], ...], since: str | None, until: str | None,
          tag: str | None, run: str | None, fmt: str, output: str | None) -> None:
    """Run a named query, or SQL (QUERY with spaces, or - to read it from stdin).

    Every table is a view, so ad-hoc SQL just works. Named queries take
    parameters with -p; --since/--until/--tag/--run fill the standard ones.

    \b
    Examples:
      pt2logs query top_recompile_causes
      pt2logs query graph_break_hotspots --since 7d --tag model=llama -f markdown
      pt2logs query "SELECT cause, count(*) FROM recompiles GROUP BY 1"
      echo "SELECT * FROM runs" | pt2logs query - -f csv
    """
    from pt2logs.outputs import OUTPUT_FORMATS
    from pt2logs.queries import QueryError, bind, get_query, load_queries, run_sql

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
            raise _query_error(e) from None
        sql = named.sql
    else:
        sql, named = query, None
    con = _connect(warehouse)
    try:
        bound = bind(named, sql, given) if named else bind(None, sql, {k: v for k, v in given.items()})
        table = run_sql(con, sql, bound)
    except QueryError as e:
        raise _query_error(e) from None
    if fmt == "parquet" and output is None and sys.stdout.isatty():
        raise click.UsageError("parquet output is binary: give --output FILE or redirect stdout")
    if output:
        with open(output, "wb") as f:
            OUTPUT_FORMATS[fmt](table, f)
        click.echo(f"wrote {table.num_rows} rows to {output}", err=True)
    else:
        OUTPUT_FORMATS[fmt](table, sys.stdout.buffer)
        sys.stdout.flush()


@main.command()
@click.argument("run", required=False)
@warehouse_option
@click.option("--format", "-f", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--rows", default=10, show_default=True, help="Rows per section.")
def summary(run: str | None, warehouse: str, fmt: str, rows: int) -> None:
    """What happened in one run: compiles, time by phase, recompiles, breaks, kernels, caches.

    RUN is a run id, an id prefix or a run name; default: the newest run.

    \b
    Examples:
      pt2logs summary
      pt2logs summary ddp_2rank --format json
    """
    from pt2logs.queries import QueryError
    from pt2logs.render import print_summary
    from pt2logs.report import summary as build

    con = _connect(warehouse)
    try:
        s = build(con, run)
    except QueryError as e:
        raise _query_error(e) from None
    print_summary(s, as_json=fmt == "json", max_rows=rows)


@main.command()
@click.argument("run_a")
@click.argument("run_b")
@warehouse_option
@click.option("--format", "-f", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--fail-on-regression", "fail_pct", type=float, metavar="PCT",
              help="Exit with status 1 if total compile time grew by more than PCT %, or new graph-break sites appeared (for CI gates).")
def diff(run_a: str, run_b: str, warehouse: str, fmt: str, fail_pct: float | None) -> None:
    """What changed from RUN_A to RUN_B: compile time per function and phase, breaks, recompiles, kernels, caches.

    \b
    Examples:
      pt2logs diff nightly-1121 nightly-1122
      pt2logs diff 3f2a 9c1b --fail-on-regression 10
    """
    from pt2logs.queries import QueryError
    from pt2logs.render import print_diff
    from pt2logs.report import diff as build
    from pt2logs.report import regression

    con = _connect(warehouse)
    try:
        d = build(con, run_a, run_b)
    except QueryError as e:
        raise _query_error(e) from None
    print_diff(d, as_json=fmt == "json")
    if fail_pct is not None:
        why = regression(d, fail_pct)
        if why:
            click.echo("regression: " + "; ".join(why), err=True)
            sys.exit(1)


@main.command()
@click.argument("run", required=False)
@warehouse_option
@click.option("--format", "-f", "fmt", default="table", show_default=True, type=click.Choice(["table", "json", "csv", "markdown"]))
def ranks(run: str | None, warehouse: str, fmt: str) -> None:
    """Per-rank divergence in a multi-rank run: ranks whose compiles, recompiles,
    cache outcomes or graph breaks differ from the majority (a desync shows here first).

    \b
    Example:
      pt2logs ranks ddp_2rank
    """
    from pt2logs.outputs import OUTPUT_FORMATS
    from pt2logs.queries import QueryError, run_named
    from pt2logs.report import resolve_run

    con = _connect(warehouse)
    try:
        r = resolve_run(con, run)
        table = run_named(con, "rank_divergence", {"run_id": r.run_id})
    except QueryError as e:
        raise _query_error(e) from None
    if table.num_rows == 0:
        click.echo(f"{r.name} ({r.run_id}) has a single rank: nothing to compare")
        return
    differing = [x for x in table.to_pylist() if x["differs_in"]]
    if fmt == "table":
        click.echo(f"{r.name} ({r.run_id}): {len(differing)} of {table.num_rows} ranks differ from the majority")
        table = table.drop_columns(["run"])
    OUTPUT_FORMATS[fmt](table, sys.stdout.buffer)


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@warehouse_option
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Label the run, e.g. --tag model=llama.")
@click.option("--logs", "torch_logs", metavar="ARTIFACTS", help=f"TORCH_LOGS to capture (default: $TORCH_LOGS or {__import__('pt2logs.capture', fromlist=['x']).DEFAULT_TORCH_LOGS}).")
@click.option("--dir", "folder", type=click.Path(file_okay=False), help="Where to keep the capture (default: <warehouse>/_captures/).")
def run(command: tuple[str, ...], warehouse: str, tags: tuple[str, ...], torch_logs: str | None, folder: str | None) -> None:
    """Run COMMAND with TORCH_TRACE and TORCH_LOGS captured, then ingest it as one run.

    The command's stderr is still shown live; its exit code becomes pt2logs' exit
    code. The run records the command, exit code, wall time, host, tags and the git
    commit of the working directory.

    \b
    Examples:
      pt2logs run -- python train.py --epochs 1
      pt2logs run --tag model=llama -- torchrun --nproc-per-node 2 train.py
    """
    from pt2logs.capture import run_command
    from pt2logs.render import print_ingest_result

    cmd = list(command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    try:
        res = run_command(cmd, warehouse, tags=parse_tags(tags), folder=folder, torch_logs=torch_logs)
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    click.echo(f"pt2logs: `{' '.join(cmd)}` exited with {res.exit_code} after {res.wall_s:.1f} s; capture in {res.folder}", err=True)
    if res.ingest is not None:
        print_ingest_result(res.ingest)
    sys.exit(res.exit_code)


@main.command()
@warehouse_option
@click.option("--partition", "partitions", multiple=True, metavar="YYYY-MM-DD", help="Only these ingest_date partitions.")
@click.option("--json", "as_json", is_flag=True)
def compact(warehouse: str, partitions: tuple[str, ...], as_json: bool) -> None:
    """Merge each partition's small files into one per table and drop dead rows.

    Dead rows are those of runs ingested again later, and of ingests killed before
    their commit. Safe while ingests run: views see every run exactly once throughout.

    \b
    Example:
      pt2logs compact --warehouse s3://bucket/wh/
    """
    import orjson

    from pt2logs.compact import compact as do_compact
    from pt2logs.warehouse import Warehouse

    wh = Warehouse(warehouse)
    if not wh.exists():
        raise click.UsageError(f"no warehouse at {warehouse}")
    res = do_compact(wh, list(partitions) or None)
    if as_json:
        click.echo(orjson.dumps(res.__dict__).decode())
        return
    if not res.partitions:
        click.echo("nothing to compact: every partition has one file per table and no dead rows")
        return
    click.echo(f"compacted {len(res.partitions)} partition(s): {res.files_before} files -> {res.files_after}, "
               f"{res.rows_dropped:,} dead rows dropped, {res.rows_kept:,} rows kept")


@main.command()
def formats() -> None:
    """List the input formats pt2logs detects, in detection order."""
    from pt2logs.readers import FORMATS

    for f in FORMATS.values():
        click.echo(f"{f.name:16} {f.description}")


@main.command()
@click.argument("table", required=False)
def tables(table: str | None) -> None:
    """List the warehouse tables, or the columns of TABLE.

    \b
    Examples:
      pt2logs tables
      pt2logs tables recompiles
    """
    import pt2logs.tables  # noqa: F401
    from pt2logs.schema import TABLES

    if table is None:
        for t in TABLES.values():
            click.echo(f"{t.name:22} one row per {t.grain}")
        return
    if table not in TABLES:
        raise click.BadParameter(f"unknown table {table!r}; see `pt2logs tables`", param_hint="TABLE")
    t = TABLES[table]
    click.echo(f"{t.name} (schema v{t.version}): one row per {t.grain}\n{t.doc}\n")
    for c in t.columns:
        click.echo(f"  {c.name:44} {c.kind:10} {c.doc}")




from pt2logs.cli_dashboard import dashboard  # noqa: E402  (needs the helpers above)

main.add_command(dashboard)


if __name__ == "__main__":  # pragma: no cover
    main(prog_name=os.path.basename(sys.argv[0]))
