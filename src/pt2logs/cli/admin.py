"""Housekeeping and reference commands: compact, check, repair, formats, tables."""

from __future__ import annotations

import click

from pt2logs.cli.options import warehouse_option


@click.command()
@warehouse_option
@click.option(
    "--partition",
    "partitions",
    multiple=True,
    metavar="YYYY-MM-DD",
    help="Only these ingest_date partitions.",
)
@click.option("--json", "as_json", is_flag=True)
def compact(warehouse: str, partitions: tuple[str, ...], as_json: bool) -> None:
    """Merge each partition's small files into one per table and drop dead rows.

    Dead rows are those of runs ingested again later, and of ingests killed before
    their commit. A partition holding a file written before frame_id / frame_compile_id
    is rewritten with them (see `pt2logs check`). Safe while ingests run: views see every run exactly once throughout.
    A partition with a missing or damaged file is left as it is (see `pt2logs check`).
    Then every run whose outcome is not kept yet (a compacted partition's runs, a warehouse
    written before outcomes were kept, rules that changed) has it decided and kept.

    \b
    Example:
      pt2logs compact --warehouse s3://bucket/wh/
    """
    import orjson

    from pt2logs.store.compact import compact as do_compact
    from pt2logs.store.warehouse import Warehouse

    wh = Warehouse(warehouse)
    if not wh.exists():
        raise click.UsageError(f"no warehouse at {warehouse}")
    res = do_compact(wh, list(partitions) or None)
    kept = _keep_apart(warehouse)
    if as_json:
        click.echo(
            orjson.dumps(
                {
                    **res.__dict__,
                    "outcomes_kept_runs": kept.runs,
                    "advice_kept_runs": kept.advice_runs,
                }
            ).decode()
        )
        return
    if kept.runs:
        click.echo(
            f"kept the outcomes of {kept.runs:,} run(s) (decided once, read by every outcome query)"
        )
    for txn, why in kept.skipped:
        click.echo(
            f"warning: the outcomes of transaction {txn} are decided when asked: {why}", err=True
        )
    for part, why in res.skipped:
        click.echo(f"warning: partition {part} not compacted: {why}", err=True)
    if not res.partitions:
        click.echo(
            "nothing compacted: see the warnings above"
            if res.skipped
            else "nothing to compact: every partition has one file per table and no dead rows"
        )
        return
    click.echo(
        f"compacted {len(res.partitions)} partition(s): {res.files_before} files -> {res.files_after}, "
        f"{res.rows_dropped:,} dead rows dropped, {res.rows_kept:,} rows kept"
    )
    if res.frames_upgraded:
        click.echo(
            f"{res.frames_upgraded} file(s) written before frame_id / frame_compile_id rewritten with them"
        )


#: the keep, in a process of its own: it prints what it kept as JSON
_KEEP = (
    "import sys, orjson; from pt2logs.query.kept_cache import keep; "
    "sys.stdout.write(orjson.dumps(keep(sys.argv[1]).__dict__).decode())"
)


def _keep_apart(warehouse: str) -> object:
    """The outcomes and advice items kept (pt2logs.query.kept_cache.keep) in a fresh process: the compaction's copy left this
    one at ~210 MB (500 real-shaped runs) and DuckDB's working memory for the rules added ~80 MB on top, past the
    300 MB bound; apart, the keep costs what it costs alone (bench/RESULTS.md). In this process when that one
    cannot start or answer."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import orjson

    import pt2logs
    from pt2logs.query.kept_cache import Kept, keep

    here = str(Path(pt2logs.__file__).resolve().parents[1])
    path = os.pathsep.join([here, *filter(None, [os.environ.get("PYTHONPATH")])])
    try:
        out = subprocess.run(
            [sys.executable, "-c", _KEEP, warehouse],
            capture_output=True,
            env={**os.environ, "PYTHONPATH": path},
            check=True,
        ).stdout
        got = orjson.loads(out)
        return Kept(**{**got, "skipped": [tuple(x) for x in got["skipped"]]})
    except (OSError, subprocess.CalledProcessError, ValueError, TypeError, KeyError):
        return keep(warehouse)


def _existing(warehouse: str) -> object:
    from pt2logs.store.warehouse import Warehouse

    wh = Warehouse(warehouse)
    if not wh.exists():
        raise click.UsageError(f"no warehouse at {warehouse}")
    return wh


@click.command()
@warehouse_option
@click.option(
    "--quick",
    is_flag=True,
    help="Presence and sizes only (what every read checks), not checksums and footers.",
)
@click.option("--json", "as_json", is_flag=True)
def check(warehouse: str, quick: bool, as_json: bool) -> None:
    """Verify every committed file against its commit record; exit 1 when something is damaged.

    Each file a commit lists must be there with its recorded size, checksum (XXH3 locally, the
    ETag on an object store), a readable Parquet footer and its recorded rows. Says which runs a
    damaged file held; `pt2logs repair` then restores them. Also names the files written before
    frame_id / frame_compile_id (not damage: `pt2logs compact` rewrites them with the columns).

    \b
    Examples:
      pt2logs check
      pt2logs check -w s3://bucket/wh/ --json
    """
    import orjson

    from pt2logs.store.repair import check as do_check

    res = do_check(_existing(warehouse), full=not quick)
    if as_json:
        click.echo(orjson.dumps(res.as_dict()).decode())
    else:
        if res.meta_error:
            click.echo(f"damaged: {res.meta_error}")
        for f in res.damaged:
            runs = f" (runs {', '.join(f.runs)})" if f.runs else ""
            click.echo(f"damaged: {f.path}: {f.why}{runs}")
        for rel, rec in sorted(res.quarantined.items()):
            click.echo(f"quarantined by repair: {rel}: {rec.get('why')}")
        for rel in res.strays:
            click.echo(f"not read: {rel} (no commit names it)")
        if res.without_frame_ids:
            from pt2logs.store.frame_upgrade import HOW

            click.echo(
                f"{len(res.without_frame_ids)} file(s) written before frame_id / frame_compile_id: "
                + HOW.format(wh=warehouse)
            )
        n = len(res.damaged) + bool(res.meta_error)
        click.echo(
            f"{res.files_checked} files checked: "
            + (
                "all as recorded"
                if res.ok
                else f"{n} damaged; `pt2logs repair -w {warehouse}` quarantines them and ingests their runs again"
            )
        )
    if not res.ok:
        raise SystemExit(1)


@click.command()
@warehouse_option
@click.option("--json", "as_json", is_flag=True)
def repair(warehouse: str, as_json: bool) -> None:
    """Move damaged files to _quarantine/ and ingest their runs again from their sources.

    Runs whose sources are gone keep what is left; the loss stays recorded (reads and
    `pt2logs check` name it). A damaged _meta.json is written anew.

    \b
    Example:
      pt2logs check || pt2logs repair
    """
    import orjson

    from pt2logs.store.repair import repair as do_repair

    res = do_repair(_existing(warehouse))
    if as_json:
        d = {**res.__dict__, "remaining": [f.__dict__ for f in res.remaining]}
        click.echo(orjson.dumps(d).decode())
        return
    if res.meta_rewritten:
        click.echo("_meta.json written anew")
    for rel in res.quarantined:
        click.echo(f"quarantined: {rel}")
    for run_id in res.reingested:
        click.echo(f"ingested again: {run_id}")
    for run_id in res.restored:
        click.echo(f"restored: {run_id} (its earlier commit, unchanged sources)")
    for run_id, why in res.lost.items():
        click.echo(f"not restored: {run_id}: {why}")
    if not (res.meta_rewritten or res.quarantined or res.lost):
        click.echo("nothing to repair: every file is as recorded")
    if res.remaining:
        raise click.ClickException(
            f"{len(res.remaining)} file(s) still damaged: see `pt2logs check -w {warehouse}`"
        )


@click.command()
def formats() -> None:
    """List the input formats pt2logs detects, in detection order, then the collectors' framings and the
    launchers' prefixes a text capture is read through (docs/inputs.md "Logs as collected")."""
    from pt2logs.readers import FORMATS
    from pt2logs.readers.lines.framing_patterns import FRAMINGS, PREFIXES

    for f in FORMATS.values():
        click.echo(f"{f.name:16} {f.description}")
    click.echo("\nframings (a text capture as a collector wrote it: its lines are read inside):")
    for fr in FRAMINGS:
        click.echo(f"{fr.name:16} {fr.writer}")
    click.echo("\nprefixes (a launcher's label before each line, any number stacked):")
    for p in PREFIXES:
        click.echo(f"{p.name:16} {p.writer}")


@click.command()
@click.argument("table", required=False)
def tables(table: str | None) -> None:
    """List the warehouse tables, or the columns of TABLE.

    \b
    Examples:
      pt2logs tables
      pt2logs tables recompiles
    """
    from pt2logs.tables import TABLES

    if table is None:
        for t in TABLES.values():
            click.echo(f"{t.name:22} one row per {t.grain}")
        return
    if table not in TABLES:
        raise click.BadParameter(
            f"unknown table {table!r}; see `pt2logs tables`", param_hint="TABLE"
        )
    t = TABLES[table]
    click.echo(f"{t.name} (schema v{t.version}): one row per {t.grain}\n{t.doc}\n")
    for c in t.columns:
        click.echo(f"  {c.name:44} {c.kind:10} {c.doc}")
