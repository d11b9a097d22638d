"""Options and helpers that several commands share: the warehouse, run filters, tags.

Command modules import from here, never from each other or from the package ``__init__``,
so the CLI has no import cycles.
"""

from __future__ import annotations

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
