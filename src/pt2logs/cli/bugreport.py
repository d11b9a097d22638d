"""bundle: a bug report for one run, as Markdown for a GitHub issue (or a .zip with the excerpts)."""

from __future__ import annotations

import click

from pt2logs.cli.options import connect_warehouse, query_error, warehouse_option


@click.command()
@click.argument("run", required=False)
@warehouse_option
@click.option(
    "--compile",
    "compile_id",
    metavar="F/C",
    help="The compile to describe (default: the run's first failed compile, else its first).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write to this file: .md (the report) or .zip (the report and every excerpt in full). Default: print the Markdown.",
)
@click.option(
    "--no-redact",
    is_flag=True,
    help="Keep home folders, user names, host names and secret-looking values (redacted by default).",
)
@click.option(
    "--compare",
    metavar="RUN",
    help="Spyre: the run of the other backend (sendnn vs spyre) to compare with (default: the run with the same tags but `backend`).",
)
def bundle(
    run: str | None,
    warehouse: str,
    compile_id: str | None,
    output: str | None,
    no_redact: bool,
    compare: str | None,
) -> None:
    """A bug report for RUN, ready to paste into a GitHub issue: versions, command and debug
    environment, the failing compile's exception, stack, Dynamo graph, FX graphs and output code,
    guard failures, AOTInductor compiles, where the ranks disagree and kernel provenance (where
    present), Spyre transfer log and kernel spec, and the minifier command to try next.

    RUN is a run id, an id prefix or a run name; default: the newest run. Home folders, user
    names, host names and secret-looking values are redacted unless --no-redact.

    \b
    Examples:
      pt2logs bundle nightly-1122 -o report.md
      pt2logs bundle 3f2a --compile 1/0 -o report.zip
      pt2logs bundle spyre-run --compare sendnn-run | pbcopy
    """
    from pt2logs.bugreport import bug_report
    from pt2logs.query.queries import QueryError

    con = connect_warehouse(warehouse)
    try:
        rep = bug_report(con, run, compile_id, redact=not no_redact, compare=compare)
    except QueryError as e:
        raise query_error(e) from None
    if output is None:
        click.echo(rep.markdown, nl=False)
        return
    if output.endswith(".zip"):
        import zipfile

        with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as z:
            for name, text in rep.files.items():
                z.writestr(name, text)
        what = f"the report and {len(rep.files) - 1} excerpts"
    else:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(rep.markdown)
        what = "the report"
    click.echo(
        f"wrote {what} for run {rep.run.name} ({rep.run.run_id}), compile {rep.compile_id or '-'}, to {output}",
        err=True,
    )
