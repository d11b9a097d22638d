"""``pt2logs export``: runs written in other tools' formats (``perfetto``: the Chrome trace JSON)."""

from __future__ import annotations

import os
import sys

import click

from pt2logs.cli.options import connect_warehouse, filter_options, query_error, warehouse_option


@click.group()
def export() -> None:
    """Write runs in another tool's format.

    \b
    Example:
      pt2logs export perfetto my_run -o trace.json     # then open it in https://ui.perfetto.dev
    """


@export.command()
@click.argument("run", required=False)
@warehouse_option
@filter_options
@click.option(
    "--output",
    "-o",
    default="trace.json",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="The JSON file to write ('-' for stdout).",
)
def perfetto(
    run: str | None,
    warehouse: str,
    since: str | None,
    until: str | None,
    tag: str | None,
    output: str,
) -> None:
    """A run (or a selection of runs) as a timeline for ui.perfetto.dev / chrome://tracing.

    Writes the Chrome Trace Event Format: one process per run and rank; in each, a
    thread of compile phases (nested spans), a thread per frame with its compiles as
    spans and its graph breaks, recompiles and cache lookups as instant events
    carrying their reason (click one to see it). Times are µs since each run's first
    event. RUN is an id, id prefix or name; without RUN, --since/--until/--tag select
    runs, and with neither the newest run is written.

    \b
    Examples:
      pt2logs export perfetto                          # the newest run → trace.json
      pt2logs export perfetto ddp_2rank -o ddp.json
      pt2logs export perfetto --since 7d --tag model=llama -o week.json
    Then open https://ui.perfetto.dev and drag the file in (or chrome://tracing → Load).
    """
    from pt2logs.query.queries import QueryError
    from pt2logs.reports.runs import check_selection, require_runs, resolve_run
    from pt2logs.reports.trace_export import ExportStats, chrome_trace

    con = connect_warehouse(warehouse)
    try:
        check_selection(con, None, tag)  # a tag no run has: a usage error naming the closest tags
        if run is not None:
            run = resolve_run(
                con, run
            ).run_id  # one run, or an error naming the runs a prefix matches
        elif since is None and until is None and tag is None:
            require_runs(con)  # the query picks the newest run; an empty warehouse says so
        params = {"run_id": run, "since": since, "until": until, "tag": tag}
        stats = ExportStats()
        if output == "-":
            for piece in chrome_trace(con, params, stats):
                sys.stdout.buffer.write(piece)
            sys.stdout.flush()
        else:
            tmp = f"{output}.tmp"
            try:
                with open(tmp, "wb") as f:
                    for piece in chrome_trace(con, params, stats):
                        f.write(piece)
                if not stats.runs:
                    raise click.ClickException(
                        "no run matches the selection, or the selected runs have no timed "
                        "events (compiles, phases, breaks, recompiles, cache lookups)"
                    )
                os.replace(tmp, output)
            finally:
                if os.path.exists(tmp):
                    os.remove(tmp)
    except QueryError as e:
        raise query_error(e) from None
    inst = ", ".join(f"{n} {k}" for k, n in sorted(stats.instants.items())) or "none"
    click.echo(
        f"wrote {stats.events:,} events of {len(stats.runs)} run(s), {stats.processes} process(es) "
        f"(run × rank), {stats.threads} thread(s): {stats.spans:,} spans; instants: {inst}"
        f"{'' if output == '-' else f' to {output}'}. Open it in https://ui.perfetto.dev",
        err=True,
    )
