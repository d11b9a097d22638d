"""The commands that put runs into the warehouse: ingest (logs already written) and run (capture, then ingest)."""

from __future__ import annotations

import sys
from typing import Any

import click

from pt2logs.cli.options import parse_tags, warehouse_option
from pt2logs.recording import DEFAULT_TORCH_LOGS


@click.command()
@click.argument("paths", nargs=-1, required=True)
@warehouse_option
@click.option(
    "--run-id",
    help="Use this run id (everything under PATHS is then one run, e.g. one file per rank) instead of one derived from the content.",
)
@click.option(
    "--tag",
    "tags",
    multiple=True,
    metavar="KEY=VALUE",
    help="Label the run(s), e.g. --tag model=llama --tag commit=abc123. Queryable: runs.tags->>'model'.",
)
@click.option(
    "--format",
    "fmt",
    help="Skip detection: read every file as this format (see `pt2logs formats`).",
)
@click.option(
    "--jobs", "-j", type=int, default=None, help="Parallel worker processes (default: all cores)."
)
@click.option(
    "--engine",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where files are parsed: local processes, or Ray tasks (pip install 'pt2logs[ray]').",
)
@click.option(
    "--address",
    help="Ray cluster address for --engine ray (e.g. auto, ray://head:10001); default: a local Ray.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Exit with status 1 if any input could not be parsed (ingest errors), "
    "or if PATHS held no log at all.",
)
@click.option("--force", is_flag=True, help="Re-ingest runs even if their files did not change.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar, only the summary line.")
def ingest(
    paths: tuple[str, ...],
    warehouse: str,
    run_id: str | None,
    tags: tuple[str, ...],
    fmt: str | None,
    jobs: int | None,
    engine: str,
    address: str | None,
    strict: bool,
    force: bool,
    as_json: bool,
    quiet: bool,
) -> None:
    """Read logs under PATHS into the warehouse.

    PATHS may be log files, TORCH_TRACE folders (one file per rank) or folders of
    many runs, at any depth, plain or compressed (.gz, .zst, .bz2), local or URLs.
    Formats are detected by content; files that are not logs are skipped and listed.
    Re-ingesting is safe: unchanged runs are skipped, grown files replace their run.

    It returns once everything is committed. A process it leaves in the background
    then writes the views file the next command opens, and another, after a
    commit of at most 4 runs, keeps their answers to summary, ranks, advise and
    diff; killing them loses nothing: the next command does that work itself.

    \b
    Examples:
      pt2logs ingest sample_traces/
      pt2logs ingest ./job42 --run-id job42 --tag model=llama --tag commit=abc123
      pt2logs ingest s3://bucket/traces/ --warehouse s3://bucket/wh/
      pt2logs ingest s3://bucket/traces/ -w s3://bucket/wh/ --engine ray --address auto
    """
    from pt2logs.cli.progress import IngestProgress, print_ingest_result
    from pt2logs.ingestion import ingest as do_ingest
    from pt2logs.ingestion.engines import make_engine
    from pt2logs.inputs.discover import InputError

    tag_map = parse_tags(tags)
    show = not quiet and not as_json and sys.stderr.isatty()
    prog = IngestProgress(enabled=show)
    try:
        with prog:
            res = do_ingest(
                list(paths),
                warehouse,
                run_id=run_id,
                tags=tag_map,
                fmt=fmt,
                engine=make_engine(jobs, engine, address),
                progress=prog.update,
                force=force,
                views_later=_program(engine),  # this process ends as soon as the data is committed
            )
    except InputError as e:
        raise click.UsageError(str(e)) from None
    print_ingest_result(res, as_json=as_json)
    if not (res.runs_new or res.runs_updated or res.runs_unchanged):
        click.echo(f"{'error' if strict else 'note'}: {nothing_read(paths, res)}", err=True)
        if strict:
            sys.exit(1)
    if strict and res.errors:
        sys.exit(1)
    _keep_answers_later(warehouse, engine, res)
    _end_process(engine)


#: ``pt2logs ingest`` keeps the answers about the runs of a commit of at most this many runs once it has committed
#: (the first command about them reads them); a larger commit's are kept lazily, for the runs read (~0.3 CPU s a run)
AT_COMMIT_RUNS = 4


def _keep_answers_later(warehouse: str, engine: str, res: Any) -> None:
    """The answers about the runs of a small commit (:data:`AT_COMMIT_RUNS` runs or fewer; each of at most
    kept_answers.MAX_BYTES of logs), kept by a process of its own that this one does not wait for (_fork.detached;
    answer_keeper.keep_answers): the first ``summary``, ``ranks``, ``advise`` or ``diff`` about them reads them. Only
    in the program (a host process never forks it). Nothing of DuckDB is imported here: the child does it."""
    runs = set(res.run_ids)
    if not _program(engine) or not runs or len(runs) > AT_COMMIT_RUNS:
        return
    from pt2logs._fork import detached
    from pt2logs.store.warehouse import Warehouse

    def work() -> None:
        from pt2logs.cli.options import cache_root
        from pt2logs.query import catalog
        from pt2logs.query.answer_keeper import keep_answers

        # (the snapshot's catalog the keep makes is the one the next command attaches: kept where the CLI keeps it)
        catalog.use_folder(cache_root() / "views")
        keep_answers(Warehouse(warehouse), None, runs=runs, most_runs=AT_COMMIT_RUNS)

    wh = Warehouse(warehouse)
    sys.stdout.flush()
    sys.stderr.flush()
    detached(work, None if wh.remote else wh.root)


def _end_process(engine: str) -> None:
    """End the `pt2logs ingest` process here, its output flushed, without the interpreter's finalization:
    everything is committed and closed by now (Parquet files, the views file, DuckDB, the pool's workers
    joined), and tearing down pyarrow, DuckDB, numpy and the readers' modules, with the collector walking
    every object, cost 0.05-0.08 s of CPU and 0.2-0.35 s of wall on a one-trace ingest (8 MB trace,
    loaded 2-core machine). Only when this process is the `pt2logs` program (its ``__main__``; never
    inside another program that called the command or ``main()``, a test's CliRunner say), and not with
    Ray, whose exit handler stops the local cluster."""
    import os

    if not _program(engine):
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _program(engine: str) -> bool:
    """Whether this process is the `pt2logs` program running a local ingest (see :func:`_end_process`); its
    views file is then written by a process of its own, not waited for (ingestion/views_file.py)."""
    from pt2logs.cli._env import is_program

    return engine == "local" and is_program()


def nothing_read(paths: tuple[str, ...], res: object) -> str:
    """What to say when PATHS held no log: what was there, and how formats are recognised."""
    from pt2logs.readers import FORMATS

    where = ", ".join(paths)
    skipped, problems = getattr(res, "skipped", []), getattr(res, "problems", [])
    if not skipped and not problems:
        what = f"no log found in {where}: there is no file in it"
    else:
        n = len(skipped)
        what = (
            f"no log found in {where}: {n} file{'s' if n != 1 else ''} skipped as not a recognised log format"
            f"{f', {len(problems)} could not be read' if problems else ''} (listed above)"
        )
    return (
        f"{what}. pt2logs recognises logs by their content: {', '.join(FORMATS)} (`pt2logs formats` says "
        "what each is); --format NAME reads every file as one format."
    )


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@warehouse_option
@click.option(
    "--tag",
    "tags",
    multiple=True,
    metavar="KEY=VALUE",
    help="Label the run, e.g. --tag model=llama.",
)
@click.option(
    "--logs",
    metavar="ARTIFACTS",
    help=f"TORCH_LOGS to capture (default: $TORCH_LOGS or {DEFAULT_TORCH_LOGS}).",
)
@click.option(
    "--dir",
    "folder",
    type=click.Path(file_okay=False),
    help="Where to keep the capture (default: <warehouse>/_captures/).",
)
@click.option("--name", help="Name the run (default: the capture folder's name).")
def run(
    command: tuple[str, ...],
    warehouse: str,
    tags: tuple[str, ...],
    logs: str | None,
    folder: str | None,
    name: str | None,
) -> None:
    """Run COMMAND with TORCH_TRACE and TORCH_LOGS captured, then ingest it as one run.

    The command's stderr is still shown live; its exit code becomes pt2logs' exit
    code (128 + N when a signal N ended it). The run records the command, exit code
    or signal, wall time, host, tags and the git commit of the working directory, and
    is kept whatever happened: a command that fails before compiling is still a run,
    its stderr kept as log lines. The secrets it is given (secret-named environment
    variables, --token X, -p X, URL passwords) are masked in all that is kept and
    printed (docs/secrets.md).

    \b
    Examples:
      pt2logs run -- python train.py --epochs 1
      pt2logs run --name nightly-ddp --tag model=llama -- torchrun --nproc-per-node 2 train.py
    """
    from pt2logs.cli.progress import print_ingest_result
    from pt2logs.recording.capture import run_command
    from pt2logs.redaction.masking import join

    cmd = list(command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    try:
        res = run_command(
            cmd, warehouse, tags=parse_tags(tags), folder=folder, torch_logs=logs, name=name
        )
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    how = f"was ended by {res.signal}" if res.signal else f"exited with {res.exit_code}"
    click.echo(
        f"pt2logs: `{join(res.command)}` {how} after {res.wall_s:.1f} s; capture in {res.folder}",
        err=True,
    )
    if res.ingest is not None:
        print_ingest_result(res.ingest)
    sys.exit(128 - res.exit_code if res.exit_code < 0 else res.exit_code)
