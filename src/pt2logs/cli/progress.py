"""``pt2logs ingest``'s terminal output: the progress bar over bytes of input (rich, on a TTY) and the
result lines. Paths from the input are data: the bar shows them with markup off.
"""

from __future__ import annotations

from typing import Any

import click
import orjson

from pt2logs.ingestion import IngestResult
from pt2logs.tables.rows import safe_text


def _mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


class IngestProgress:
    """A progress bar over bytes of input, shown only on a TTY."""

    def __init__(self, enabled: bool, console: Any = None):
        self.enabled = enabled
        self._console = console  # default: stderr
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> IngestProgress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]ingest"),
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                TimeRemainingColumn(),
                TextColumn("{task.fields[note]}", markup=False),
                console=self._console or Console(stderr=True),
                transient=True,
            )
            self._progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)

    def update(self, event: str, info: dict[str, Any]) -> None:
        p = self._progress
        if p is None:
            return
        if event == "start":
            self._task = p.add_task("ingest", total=info["bytes"] or 1, note=f"{info['runs']} runs")
        elif event == "file" and self._task is not None:
            p.advance(self._task, info["bytes"])
            p.update(self._task, note=info["path"][-40:])


def _paths(header: str, items: list[tuple[str, str]], most: int = 10) -> None:
    """A header and the first ``most`` (path, why) pairs on stderr; nothing when there are none."""
    if not items:
        return
    click.echo(header, err=True)
    for path, why in items[:most]:
        click.echo(f"  {safe_text(path)}: {why}", err=True)
    if len(items) > most:
        click.echo(f"  ... and {len(items) - most} more", err=True)


def print_ingest_result(res: IngestResult, as_json: bool = False) -> None:
    if as_json:
        click.echo(orjson.dumps(res.as_dict(), option=orjson.OPT_INDENT_2).decode())
        return
    runs = res.runs_new + res.runs_updated
    parts = [f"{runs} run{'s' if runs != 1 else ''} ingested"]
    if res.runs_updated:
        parts[0] += f" ({res.runs_updated} updated)"
    if res.runs_unchanged:
        parts.append(f"{res.runs_unchanged} unchanged")
    parts.append(f"{res.files} files")
    parts.append(f"{res.events:,} events")
    parts.append(f"{res.errors} errors")
    if res.warnings:
        parts.append(f"{res.warnings} warnings")
    parts.append(f"{_mb(res.content_bytes)} in {res.seconds:.1f} s ({res.mb_per_s:,.0f} MB/s)")
    click.echo(", ".join(parts))
    click.echo(f"warehouse: {res.warehouse}")
    _paths(f"skipped {len(res.skipped)} file(s) that are not logs:", res.skipped)
    _paths(f"could not read {len(res.problems)} input(s) outside any run (errors):", res.problems)
    if res.errors or res.warnings:
        click.echo(
            'details: pt2logs query "SELECT path, line_no, kind, message FROM ingest_errors"',
            err=True,
        )
    for note in res.notes:
        click.echo(f"note: {note}", err=True)
