"""Housekeeping and reference commands: compact, formats, tables."""

from __future__ import annotations

import click

from pt2logs.cli.options import warehouse_option


@click.command()
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


@click.command()
def formats() -> None:
    """List the input formats pt2logs detects, in detection order."""
    from pt2logs.readers import FORMATS

    for f in FORMATS.values():
        click.echo(f"{f.name:16} {f.description}")


@click.command()
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
