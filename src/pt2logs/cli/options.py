"""Options and helpers that several commands share: the warehouse, the run filters
(--since/--until/--tag/--run), tags, and the one --format option (from the output registry).

Command modules import from here, never from each other or from the package ``__init__``,
so the CLI has no import cycles.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from pathlib import Path
from typing import Any

import click

from pt2logs.cli.outputs import OUTPUT_FORMATS, formats_that
from pt2logs.store import DEFAULT_WAREHOUSE

WAREHOUSE_HELP = "Warehouse folder or URL (s3://, gs://, ...). Default: $PT2LOGS_WAREHOUSE or ./pt2logs_warehouse."


def warehouse_option(f: Any) -> Any:
    return click.option(
        "--warehouse",
        "-w",
        envvar="PT2LOGS_WAREHOUSE",
        default=DEFAULT_WAREHOUSE,
        show_default=True,
        help=WAREHOUSE_HELP,
    )(f)


TAG_HINT = "expected KEY=VALUE, e.g. --tag model=llama"


def parse_tag(value: str) -> tuple[str, str]:
    """``KEY=VALUE`` → (key, value), split at the first ``=`` (``k=a=b`` is key k, value a=b)."""
    key, eq, val = value.partition("=")
    if not eq:
        raise click.BadParameter(f"{value!r} has no '=': {TAG_HINT}", param_hint="'--tag'")
    if not key.strip():
        raise click.BadParameter(
            f"{value!r} has no KEY before '=': {TAG_HINT}", param_hint="'--tag'"
        )
    return key.strip(), val.strip()


def parse_tags(values: tuple[str, ...]) -> dict[str, str]:
    return dict(parse_tag(v) for v in values)


# ---------------------------------------------------------------------------- run filters


def _tag_filter(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    key, val = parse_tag(value)
    return f"{key}={val}"  # the form the queries' tag_match() splits at the first '='


def _time_filter(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Check that --since/--until read as times, and, once both are known, that since < until."""
    from pt2logs.query.queries import QueryError, parse_since

    if value is None:
        return None
    now = ctx.meta.setdefault("pt2logs.now", dt.datetime.now(dt.timezone.utc))
    try:
        parse_since(value, now)
    except QueryError as e:
        raise click.BadParameter(str(e), ctx, param) from None
    since, until = (
        (value, ctx.params.get("until"))
        if param.name == "since"
        else (ctx.params.get("since"), value)
    )
    t0, t1 = parse_since(since, now), parse_since(until, now)
    if t0 is not None and t1 is not None and t0 >= t1:
        raise click.UsageError(
            f"--since {since} ({t0:%Y-%m-%d %H:%M} UTC) is not before --until {until} ({t1:%Y-%m-%d %H:%M} UTC), "
            f"so no run can match. --since is the older end: e.g. --since 14d --until 7d.",
            ctx,
        )
    return value


def filter_options(f: Any) -> Any:
    """--since / --until / --tag, shared by every command that reads runs; bad values are usage errors."""
    f = click.option(
        "--tag",
        "tag",
        metavar="KEY=VALUE",
        callback=_tag_filter,
        help="Only runs with this tag, e.g. --tag model=llama (a tag no run has is a usage error).",
    )(f)
    f = click.option(
        "--until",
        callback=_time_filter,
        help="Only runs that started before this (7d, 12h, 2w or a date).",
    )(f)
    f = click.option(
        "--since",
        callback=_time_filter,
        help="Only runs that started on/after this (7d, 12h, 2w or a date).",
    )(f)
    return f


def run_option(f: Any) -> Any:
    return click.option(
        "--run",
        "run",
        help="Only this run (id, id prefix or name; naming no run is a usage error that "
        "names the closest); same as -p run_id RUN.",
    )(f)


def cache_root() -> Path:
    """``$PT2LOGS_CACHE``, default ``~/.cache/pt2logs`` (or under ``$XDG_CACHE_HOME``): what the CLI keeps."""
    return Path(
        os.environ.get("PT2LOGS_CACHE")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pt2logs"
    )


def connect_warehouse(warehouse: str, track: bool = False) -> Any:
    """A DuckDB connection to an existing warehouse, or a usage error saying how to make one. With ``track``, the
    transactions its run scopes find without kept answers are noted (pt2logs.query.kept_answers.track)."""
    from pt2logs.query import catalog
    from pt2logs.query.views import connect
    from pt2logs.store.warehouse import Warehouse

    # the snapshot's views made once and attached by the next command (pt2logs.query.catalog)
    catalog.use_folder(cache_root() / "views")
    wh = Warehouse(warehouse)
    if not wh.exists():
        raise click.UsageError(
            f"no warehouse at {warehouse}: create one with `pt2logs ingest PATH --warehouse {warehouse}`"
        )
    con = connect(wh)
    if track:
        from pt2logs.query.kept_answers import as_rows
        from pt2logs.query.kept_answers import track as track_unkept

        track_unkept(con)
        as_rows(
            con
        )  # (its kept answers read without pyarrow: what the commands about one run print from)
    say_warnings(con)  # files left out of this snapshot: the answers lack their rows
    return con


#: per connection: the warnings said already
_SAID: Any = None


def say_warnings(con: Any) -> None:
    """Say on stderr what the connection's snapshot leaves out and was not said yet (a query can find more:
    a kept rows file that did not read, pt2logs.query.kept_rows)."""
    import weakref

    from pt2logs.query.views import read_warnings

    global _SAID
    if _SAID is None:
        _SAID = weakref.WeakKeyDictionary()
    said = _SAID.setdefault(con, set())
    for w in read_warnings(con):
        if w not in said:
            said.add(w)
            click.echo(f"warning: {w}", err=True)


def query_error(e: Exception) -> click.ClickException:
    """A QueryError as the CLI says it: a selection that names no run (report.NoMatch) is a usage
    error (status 2) naming the closest runs; any other problem, an error (status 1)."""
    from pt2logs.reports.runs import NoMatch

    if isinstance(e, NoMatch):
        return click.UsageError(str(e), click.get_current_context(silent=True))
    return click.ClickException(str(e))


def check_selection(con: Any, run: str | None, tag: str | None) -> None:
    """A usage error when --run / --tag (or RUN) match no run in the warehouse: see report.check_selection."""
    from pt2logs.query.queries import QueryError
    from pt2logs.reports.runs import check_selection as check

    try:
        check(con, run, tag)
    except QueryError as e:
        raise query_error(e) from None


# ---------------------------------------------------------------------------- output


class FormatChoice(click.Choice):
    """A --format choice; ``text`` is still accepted for ``table`` (summary and diff called it that)."""

    ALIASES = {"text": "table"}

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return super().convert(self.ALIASES.get(value, value), param, ctx)


def format_option(capability: str = "rows") -> Any:
    """The one ``--format/-f`` option: every output format that can write ``capability``
    (``rows`` for a result table, ``report`` for a summary or diff), from the registry."""
    names = formats_that(capability)
    what = (
        "table is for people" if capability == "rows" else "table is for people, json for machines"
    )
    return click.option(
        "--format",
        "-f",
        "fmt",
        type=FormatChoice(names),
        default="table",
        show_default=True,
        help=f"Output format ({what}).",
    )


def output_option(f: Any) -> Any:
    return click.option(
        "--output",
        "-o",
        type=click.Path(dir_okay=False, writable=True),
        help="Write to this file instead of stdout (needed for parquet on a terminal).",
    )(f)


def wide_option(f: Any) -> Any:
    return click.option(
        "--wide",
        is_flag=True,
        help="Table format: show every column and every cell in full, however wide "
        "(by default a table fits the terminal and names what it hid or shortened).",
    )(f)


def write_rows(table: Any, fmt: str, output: str | None, wide: bool = False) -> None:
    """Write a result (a pyarrow Table, or a RecordBatchReader that every format streams: memory does
    not grow with its rows) in format ``fmt`` to ``output`` or stdout (``wide``: see :func:`wide_option`).
    A DuckDB error from the stream's later batches is a clear error; what was written stays."""
    import duckdb

    from pt2logs.query.queries import query_error_of

    writer = OUTPUT_FORMATS[fmt]
    if hasattr(table, "to_arrow") and fmt != "table":  # (kept rows: pt2logs.query.answer_rows.Rows)
        table = table.to_arrow()
    if not output and writer.binary and sys.stdout.isatty():
        raise click.UsageError(f"{fmt} output is binary: give --output FILE or redirect stdout")
    try:
        if output:
            with open(output, "wb") as f:
                n = writer(table, f, wide)
            click.echo(f"wrote {n} rows to {output}", err=True)
            return
        writer(table, sys.stdout.buffer, wide)
        sys.stdout.flush()
    except duckdb.Error as e:
        raise query_error(query_error_of(e)) from None
