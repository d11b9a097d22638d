"""Options and helpers that several commands share: the warehouse, run filters, tags.

Command modules import from here, never from each other or from the package ``__init__``,
so the CLI has no import cycles.
"""

from __future__ import annotations

import sys
from typing import Any

import click

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


def filter_options(f: Any) -> Any:
    """--since / --until / --tag, shared by every command that reads runs."""
    f = click.option("--tag", "tag", metavar="KEY=VALUE", help="Only runs with this tag, e.g. --tag model=llama.")(f)
    f = click.option("--until", help="Only runs that started before this (7d, 12h, 2w or a date).")(f)
    f = click.option("--since", help="Only runs that started on/after this (7d, 12h, 2w or a date).")(f)
    return f


def connect_warehouse(warehouse: str) -> Any:
    """A DuckDB connection to an existing warehouse, or a usage error saying how to make one."""
    from pt2logs.views import connect
    from pt2logs.warehouse import Warehouse

    wh = Warehouse(warehouse)
    if not wh.exists():
        raise click.UsageError(f"no warehouse at {warehouse}: create one with `pt2logs ingest PATH --warehouse {warehouse}`")
    return connect(wh)


def query_error(e: Exception) -> click.ClickException:
    return click.ClickException(str(e))


# ---------------------------------------------------------------------------- output


class FormatChoice(click.Choice):
    """A --format choice; ``text`` is still accepted for ``table`` (summary and diff called it that)."""

    ALIASES = {"text": "table"}

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return super().convert(self.ALIASES.get(value, value), param, ctx)


def format_option(capability: str = "rows") -> Any:
    """The one ``--format/-f`` option: every output format that can write ``capability``
    (``rows`` for a result table, ``report`` for a summary or diff), from the registry."""
    from pt2logs.cli.outputs import formats_that

    names = formats_that(capability)
    what = "table is for people" if capability == "rows" else "table is for people, json for machines"
    return click.option("--format", "-f", "fmt", type=FormatChoice(names), default="table", show_default=True,
                        help=f"Output format ({what}).")


def output_option(f: Any) -> Any:
    return click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True),
                        help="Write to this file instead of stdout (needed for parquet on a terminal).")(f)


def write_rows(table: Any, fmt: str, output: str | None) -> None:
    """Write a result table in format ``fmt`` to ``output`` or stdout."""
    from pt2logs.cli.outputs import OUTPUT_FORMATS

    writer = OUTPUT_FORMATS[fmt]
    if output:
        with open(output, "wb") as f:
            writer(table, f)
        click.echo(f"wrote {table.num_rows} rows to {output}", err=True)
        return
    if writer.binary and sys.stdout.isatty():
        raise click.UsageError(f"{fmt} output is binary: give --output FILE or redirect stdout")
    writer(table, sys.stdout.buffer)
    sys.stdout.flush()
