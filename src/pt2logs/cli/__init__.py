"""The ``pt2logs`` command line: parse options, call the library, print.

This package is the only code that writes to the terminal; the core never imports it.

    __init__.py    the ``main`` group (the console script) and the command order
    _env.py        process settings made before numpy loads (imported first)
    options.py     shared options: warehouse, run filters, tags, output format
    ingest.py      ingest, run
    read.py        queries, query, summary, advise, diff, ranks
    bugreport.py   bundle (a bug report: Markdown or .zip)
    dashboard.py   dashboard
    serve.py       serve (the local web app)
    export.py      export perfetto
    admin.py       compact, formats, tables
    render.py      report pages on the terminal: summary, ranks (as reports/*.toml say), diff
    progress.py    ingest's progress bar and result lines
    advice_view.py advise's terminal blocks and Markdown document
    outputs.py     the output-format registry (table, csv, json, ...) for query results

Every command has ``--help`` with an example. A command imports what it needs inside its body: `pt2logs --help`
and `pt2logs CMD --help` load click and these modules only, never pyarrow, DuckDB, polars, torch or altair
(tests/cli/test_start.py checks).
"""

from __future__ import annotations

import errno
import os
import sys

import click

from pt2logs.cli import (
    _env,  # noqa: F401  (first: settings numpy reads as it loads)
    admin,
    bugreport,
    dashboard,
    export,
    ingest,
    read,
    serve,
)
from pt2logs.version import __version__

ORDER = [
    "ingest",
    "run",
    "summary",
    "advise",
    "query",
    "queries",
    "diff",
    "ranks",
    "bundle",
    "dashboard",
    "serve",
    "export",
    "compact",
    "check",
    "repair",
    "tables",
    "formats",
]


class Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        cmds = super().list_commands(ctx)
        return [c for c in ORDER if c in cmds] + [c for c in cmds if c not in ORDER]

    def invoke(self, ctx: click.Context) -> object:
        """An unexpected failure is one clear line (secrets redacted), not a traceback; PT2LOGS_DEBUG=1
        shows the traceback."""
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as e:  # noqa: BLE001 - the one place that turns any failure into a message
            if _reader_gone(e):
                _quiet_exit()
            if os.environ.get("PT2LOGS_DEBUG"):
                raise
            raise click.ClickException(describe_failure(e)) from None


#: the exit status of a command whose reader went away: 1, as Python's own recipe and rich (which draws the
#: terminal tables and ends a closed pipe so itself) give
READER_GONE_EXIT = 1


def _reader_gone(e: BaseException) -> bool:
    """``e`` is a write to stdout whose reader closed it (``pt2logs query ... | head``)."""
    if not (isinstance(e, OSError) and e.errno == errno.EPIPE):  # (BrokenPipeError is one)
        return False
    try:  # (no real stdout, as under a test's CliRunner or in a notebook: an error like any other)
        sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return True


def _quiet_exit() -> None:
    """End as other Unix tools do when the command reading their output stops (``| head``): no message,
    status :data:`READER_GONE_EXIT`. Whatever is still buffered for stdout goes nowhere (Python's flush of it
    at exit would raise again)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    raise click.exceptions.Exit(READER_GONE_EXIT)


def describe_failure(e: BaseException) -> str:
    """One sentence for a failure: what happened, and what to do."""
    if isinstance(e, OSError) and e.errno == errno.ENOSPC:
        where = f" writing {e.filename}" if e.filename else ""
        if isinstance(getattr(e, "written", None), int):
            where += (
                f" ({e.written / 1e6:,.2f} MB of this writer's files written, none of it committed)"
            )
        return (
            f"no space left on the device{where}. Free some space and run the command again: "
            "what was committed before is intact, and an interrupted ingest is completed by the next one."
        )
    if isinstance(e, MemoryError):
        return "out of memory. Try --jobs 1, or ingest fewer inputs at a time."
    from pt2logs.redaction.redact import redact

    text = redact(str(e)) or "(no message)"
    if type(e).__name__ == "WarehouseError":  # says what is wrong and what to do already
        return text
    return f"{type(e).__name__}: {text} (set PT2LOGS_DEBUG=1 to see the traceback)"


@click.group(
    cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(__version__, prog_name="pt2logs")
def main() -> None:
    """pt2logs: PyTorch 2 compiler logs → a Parquet warehouse you can query and chart.

    \b
    Start here:
      pt2logs ingest ./traces                 # TORCH_TRACE dirs, stderr captures, ... → ./pt2logs_warehouse
      pt2logs summary                         # what happened in the latest run
      pt2logs advise                          # what to do about it, with the run's evidence
      pt2logs queries                         # the named questions you can ask
      pt2logs query top_recompile_causes      # ask one
      pt2logs query "SELECT cause, count(*) FROM recompiles GROUP BY 1"
    """


for _cmd in (
    ingest.ingest,
    ingest.run,
    read.summary,
    read.advise,
    read.query,
    read.queries,
    read.diff,
    read.ranks,
    bugreport.bundle,
    dashboard.dashboard,
    serve.serve,
    export.export,
    admin.compact,
    admin.check,
    admin.repair,
    admin.tables,
    admin.formats,
):
    main.add_command(_cmd)
del _cmd
