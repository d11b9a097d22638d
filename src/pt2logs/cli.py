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
@click.option("--strict", is_flag=True, help="Exit with status 1 if any input could not be parsed (ingest errors).")
@click.option("--force", is_flag=True, help="Re-ingest runs even if their files did not change.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar, only the summary line.")
def ingest(paths: tuple[str, ...], warehouse: str, run_id: str | None, tags: tuple[str, ...], fmt: str | None,
           jobs: int | None, strict: bool, force: bool, as_json: bool, quiet: bool) -> None:
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
    """
    from pt2logs.discover import InputError
    from pt2logs.engines import make_engine
    from pt2logs.ingest import ingest as do_ingest
    from pt2logs.render import IngestProgress, print_ingest_result

    tag_map = parse_tags(tags)
    show = not quiet and not as_json and sys.stderr.isatty()
    prog = IngestProgress(enabled=show)
    try:
        with prog:
            res = do_ingest(list(paths), warehouse, run_id=run_id, tags=tag_map, fmt=fmt,
                            engine=make_engine(jobs), progress=prog.update, force=force)
    except InputError as e:
        raise click.UsageError(str(e)) from None
    print_ingest_result(res, as_json=as_json)
    if strict and res.errors:
        sys.exit(1)


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


if __name__ == "__main__":  # pragma: no cover
    main(prog_name=os.path.basename(sys.argv[0]))
