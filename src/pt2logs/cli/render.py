"""Terminal output: progress bars and result tables (rich). Only the CLI uses this module.

Log text is full of square brackets (``[rank0]:``, ``File [/home/x.py]``, run folders named
anything), which rich would read as markup: every value from the data goes to rich as a
:class:`rich.text.Text` (``outputs.plain``) or through :func:`rich.markup.escape`.
"""

from __future__ import annotations

from typing import Any

import click
import orjson
from rich.markup import escape

from pt2logs.cli.outputs import plain, short
from pt2logs.ingestion import IngestResult
from pt2logs.schema import safe_text


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

            self._progress = Progress(TextColumn("[bold]ingest"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                                      TimeRemainingColumn(), TextColumn("{task.fields[note]}", markup=False),
                                      console=self._console or Console(stderr=True), transient=True)
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
    if res.skipped:
        click.echo(f"skipped {len(res.skipped)} file(s) that are not logs:", err=True)
        for path, why in res.skipped[:10]:
            click.echo(f"  {safe_text(path)}: {why}", err=True)
        if len(res.skipped) > 10:
            click.echo(f"  ... and {len(res.skipped) - 10} more", err=True)
    if res.errors or res.warnings:
        click.echo("details: pt2logs query \"SELECT path, line_no, kind, message FROM ingest_errors\"", err=True)
    for note in res.notes:
        click.echo(f"note: {note}", err=True)


# ---------------------------------------------------------------------------- reports

SUMMARY_COLUMNS: dict[str, list[str]] = {
    "phases": ["phase", "seconds", "pct"],
    "functions": ["function", "location", "compiles", "compile_s"],
    "recompiles": ["rank", "compile_id", "function", "cause", "guarded_on", "reason"],
    "graph_breaks": ["gb_type", "location", "occurrences", "compiles"],
    "kernels": ["backend", "kind", "kernels", "from_cache"],
    "caches": ["cache", "lookups", "hits", "hit_pct", "saved_s"],
    "failures": ["what", "fail_type", "reason", "count"],
    "ranks": ["rank", "compiles", "recompiles", "graph_breaks", "differs_in"],
    "outcomes": ["rank", "outcome", "why", "evidence_file", "evidence_line", "last_event_at", "silent_s"],
    "divergence": ["step", "what", "compile_id", "ranks_a", "side_a", "ranks_b", "side_b"],
    "errors": ["severity", "kind", "count", "example"],
}
EMPTY_NOTE = {
    "recompiles": "no recompiles",
    "graph_breaks": "no graph breaks",
    "kernels": "no generated kernels (no output code in these logs)",
    "caches": "no cache lookups logged",
    "failures": "no failed compiles or restarts",
    "errors": "every line was read",
    "phases": "no compilation metrics",
    "functions": "no compilation metrics",
    "divergence": "the ranks compiled the same frames, graphs and collectives in the same order",
}


def _rich_table(rows: list[dict[str, Any]], cols: list[str], title: str | None = None, width: int = 38) -> Any:
    from rich.table import Table

    t = Table(title=title, title_justify="left", title_style="bold", header_style="bold", show_edge=False, pad_edge=False, box=None)
    for c in cols:
        numeric = any(isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool) for r in rows)
        t.add_column(plain(c), justify="right" if numeric else "left", no_wrap=True, overflow="ellipsis",
                     min_width=min(len(c), 14))
    for r in rows:
        t.add_row(*[plain(r.get(c), width) for c in cols])
    return t


def _console() -> Any:
    import shutil

    from rich.console import Console

    return Console(width=max(80, min(140, shutil.get_terminal_size((100, 24)).columns)), highlight=False, soft_wrap=False,
                   emoji=False)


def _print_json(report: Any) -> None:
    click.echo(orjson.dumps(report.as_dict(), default=str, option=orjson.OPT_INDENT_2).decode())


def print_summary(s: Any, fmt: str = "table", max_rows: int = 10) -> None:
    """Print a summary in one of the formats that write reports (``formats_that("report")``)."""
    if fmt == "json":
        return _print_json(s)
    if fmt != "table":
        raise ValueError(f"no report writer for format {fmt!r}")
    c = _console()
    o = {k: escape(v) if isinstance(v, str) else v for k, v in s.overview.items()}
    started = o["started_at"].strftime("%Y-%m-%d %H:%M:%S UTC") if o.get("started_at") else "unknown"
    c.print(f"[bold]{o['run']}[/bold]  run {o['run_id']}, torch {o['torch'] or '?'}")
    _print_outcome(c, s.outcome)
    c.print(f"  started    {started}, wall {short(o['wall_s'])} s, {o['ranks'] or 1} rank(s)")
    c.print(f"  read       {o['files']} file(s), {o['events']:,} events, {o['errors']} errors, {o['warnings']} warnings")
    bwd = f" + {o['bwd_compiles']} lazy backward ({o['bwd_compile_s']:.2f} s)" if o["bwd_compiles"] else ""
    c.print(f"  compiles   [bold]{o['compiles']}[/bold] of {o['frames']} frames, [bold]{o['compile_s']:.2f} s[/bold]{bwd}; "
            f"{o['failures']} failed")
    limit = f", {o['limit_hits']} hit the recompile limit" if o["limit_hits"] else ""
    c.print(f"  recompiles [bold]{o['recompiles']}[/bold]{limit}")
    c.print(f"  breaks     [bold]{o['graph_breaks']}[/bold] graph breaks at {o['break_sites']} sites")
    c.print(f"  kernels    {o['kernels']}, cache hits {o['cache_hits']} of {o['cache_lookups']} lookups")
    for key, title, table in s.sections:
        rows = table.to_pylist()
        c.print()
        if not rows:
            c.print(f"[bold]{title}[/bold]: {EMPTY_NOTE.get(key, 'nothing')}")
            continue
        cols = [x for x in SUMMARY_COLUMNS.get(key, table.column_names) if x in table.column_names]
        if key == "recompiles" and all(r.get("rank") is None for r in rows):
            cols.remove("rank")
        c.print(_rich_table(rows[:max_rows], cols, title=f"{title} ({len(rows)})" if len(rows) > max_rows else title))
        if len(rows) > max_rows:
            c.print(f"  … {len(rows) - max_rows} more: pt2logs query {_query_of(key)} -p run_id {escape(s.run.run_id)}")


def _print_outcome(c: Any, outcome: Any) -> None:
    """The outcome line (and pt2logs run's command line) at the top of a summary."""
    from pt2logs.outcomes import BAD, command_line, outcome_line, silence_line

    if outcome is None:
        return
    style = "bold red" if outcome.outcome in BAD else "bold"
    c.print(f"  outcome    [{style}]{escape(outcome.outcome)}[/{style}]{escape(outcome_line(outcome)[len(outcome.outcome):])}")
    for label, line in (("silence", silence_line(outcome)), ("command", command_line(outcome))):
        if line:
            c.print(f"  {label:<10} {escape(line)}")


def print_ranks_header(run: Any, rows: list[dict[str, Any]], outcome: Any) -> None:
    """What ``pt2logs ranks`` prints above its table: how many ranks differ (in their compiles, at the
    first divergence, or in how they ended), the run's outcome and the first divergence."""
    from pt2logs.outcomes import (
        differing_ranks,
        divergence_line,
        hung_ranks,
        outcome_line,
        rank_lines,
        silence_line,
    )

    differ = differing_ranks(rows, outcome)
    hung = hung_ranks(outcome)
    note = f" (hung: rank{'s' if len(hung) > 1 else ''} {', '.join(map(str, hung))})" if hung else ""
    click.echo(f"{run.name} ({run.run_id}): {len(differ)} of {len(rows)} ranks differ from the majority{note}")
    if outcome is not None:
        click.echo(f"  outcome: {outcome_line(outcome)}")
        if silence_line(outcome):
            click.echo(f"  silence: {silence_line(outcome)}")
        for d in outcome.divergence:
            click.echo(f"  first divergence: {divergence_line(d)}")
        for line in rank_lines(outcome):
            click.echo(f"  {line}")


def _query_of(section: str) -> str:
    from pt2logs.report import SUMMARY_SECTIONS

    return next(q for k, _, q, _ in SUMMARY_SECTIONS if k == section)


def print_diff(d: Any, fmt: str = "table", max_rows: int = 10) -> None:
    """Print a diff in one of the formats that write reports (``formats_that("report")``)."""
    if fmt == "json":
        return _print_json(d)
    if fmt != "table":
        raise ValueError(f"no report writer for format {fmt!r}")
    c = _console()
    a, b = (f"{escape(r.name)} ({escape(r.run_id)})" for r in (d.a, d.b))
    c.print(f"[bold]A[/bold] {a}  →  [bold]B[/bold] {b}")
    c.print(_rich_table(d.headline, ["metric", "a", "b", "delta", "pct"], title="Headline"))
    for _key, title, rows in d.sections:
        changed = [r for r in rows if r["status"] != "same"]
        c.print()
        if not changed:
            c.print(f"[bold]{title}[/bold]: no change" if rows else f"[bold]{title}[/bold]: none in either run")
            continue
        keycols = [k for k in rows[0] if k not in ("a", "b", "delta", "pct", "status")]
        c.print(_rich_table(changed[:max_rows], keycols + ["a", "b", "delta", "status"], title=title, width=32))
        if len(changed) > max_rows:
            c.print(f"  … {len(changed) - max_rows} more (--format json for all)")
