"""Terminal output: progress bars and result tables (rich). Only the CLI uses this module.

Log text is full of square brackets (``[rank0]:``, ``File [/home/x.py]``, run folders named
anything), which rich would read as markup: every value from the data goes to rich as a
:class:`rich.text.Text` (tables: :func:`pt2logs.cli.layout.rich_table`) or through
:func:`rich.markup.escape`. Tables fit the terminal and name what they hid or shortened
(:mod:`pt2logs.cli.layout`).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import click
import orjson
from rich.markup import escape

from pt2logs.cli.outputs import cell
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
        click.echo("details: pt2logs query \"SELECT path, line_no, kind, message FROM ingest_errors\"", err=True)
    for note in res.notes:
        click.echo(f"note: {note}", err=True)


# ---------------------------------------------------------------------------- reports

SUMMARY_COLUMNS: dict[str, list[str]] = {
    "spyre_failures": ["category", "exc_type", "reason", "reports", "kernels", "raised_at", "device_seen"],
    "advice": ["id", "evidence", "compile_s", "recompiles", "breaks"],
    "phases": ["rank", "phase", "seconds", "pct"],
    "functions": ["function", "location", "compiles", "compile_s"],
    "recompiles": ["rank", "compile_id", "function", "cause", "guarded_on", "reason"],
    "graph_breaks": ["gb_type", "location", "occurrences", "compiles"],
    "kernels": ["rank", "backend", "kind", "kernels", "from_cache"],
    "caches": ["cache", "lookups", "hits", "hit_pct", "saved_s"],
    "failures": ["what", "fail_type", "reason", "count"],
    "ranks": ["rank", "compiles", "recompiles", "graph_breaks", "differs_in"],
    "outcomes": ["rank", "outcome", "why", "evidence_file", "evidence_line", "last_event_at", "silent_s"],
    "divergence": ["step", "what", "compile_id", "ranks_a", "side_a", "ranks_b", "side_b"],
    "errors": ["severity", "kind", "count", "example"],
    "vllm": ["start", "cold_start_s", "dynamo_s", "compile_s", "ranges_compiled", "cache_load_s", "ranges_loaded", "cudagraph_s"],
    "vllm_ranges": ["rank", "process", "how", "compile_range", "seconds"],
}
EMPTY_NOTE = {
    "advice": "nothing in the advice table (docs/advice.md) matched this run",
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


class _Tables:
    """Draws the tables of one report on one console: fitted to the terminal (or ``wide``: in full),
    each followed by a note naming what it hid or shortened."""

    def __init__(self, wide: bool, more: str):
        from rich.console import Console

        from pt2logs.cli.layout import terminal_width

        self.width, self.wide, self.more = terminal_width(), wide, more
        # wide: as wide as the widest table needs (lines are not wrapped or cropped)
        self.console = Console(width=100_000 if wide else self.width, highlight=False, soft_wrap=False, emoji=False)

    def print(self, *args: Any, **kw: Any) -> None:
        self.console.print(*args, **kw)

    def table(self, rows: list[dict[str, Any]], cols: list[str], title: str | None = None) -> None:
        from pt2logs.cli.layout import fit, notes, rich_table

        def kind(c: str) -> tuple[bool, bool]:  # (number, never shortened)
            vals = [r.get(c) for r in rows if r.get(c) is not None]
            num = bool(vals) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)
            return num, num or all(isinstance(v, (bool, dt.datetime)) for v in vals)

        kinds = {c: kind(c) for c in cols}
        layout = fit(rows, cols, self.width, fixed=[c for c in cols if kinds[c][1]], wide=self.wide, cell=cell)
        self.console.print(rich_table(layout, [c for c in cols if kinds[c][0]], title=title))
        for line in notes(layout, self.width, self.more):
            self.console.print(f"  {line}", markup=False)


def _print_json(report: Any) -> None:
    click.echo(orjson.dumps(report.as_dict(), default=str, option=orjson.OPT_INDENT_2).decode())


def print_summary(s: Any, fmt: str = "table", max_rows: int = 10, wide: bool = False) -> None:
    """Print a summary in one of the formats that write reports (``formats_that("report")``);
    ``wide``: every column of each section's query, every cell in full."""
    if fmt == "json":
        return _print_json(s)
    if fmt != "table":
        raise ValueError(f"no report writer for format {fmt!r}")
    c = _Tables(wide, "--wide or -f json")
    o = {k: escape(v) if isinstance(v, str) else v for k, v in s.overview.items()}
    started = o["started_at"].strftime("%Y-%m-%d %H:%M:%S UTC") if o.get("started_at") else "unknown"
    ranks = max(1, o["ranks"] or 1)
    c.print(f"[bold]{o['run']}[/bold]  run {o['run_id']}, torch {o['torch'] or '?'}{_torch_from(o.get('torch_from'))}")
    _print_outcome(c, s.outcome)
    c.print(f"  started    {started}, wall {cell(o['wall_s'])} s, {ranks} rank{'s' if ranks > 1 else ''}")
    c.print(f"  read       {o['files']} file(s), {o['events']:,} events, {o['errors']} errors, {o['warnings']} warnings")
    bwd = f" + {o['bwd_compiles']} lazy backward ({o['bwd_compile_s']:.2f} s)" if o["bwd_compiles"] else ""
    c.print(f"  compiles   [bold]{o['compiles']}[/bold] of {o['frames']} frame{'s' if o['frames'] != 1 else ''}, "
            f"[bold]{o['compile_s']:.2f} s[/bold]{bwd}; {o['failures']} failed")
    if ranks > 1:
        c.print(f"  per rank   at most {o['compiles_per_rank_max']} compiles, {o['compile_s_per_rank_max']:.2f} s "
                f"(the counts here add up all {ranks} ranks)")
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
        # the run is the summary's: its column would repeat it; rank only where the run has ranks
        cols = [x for x in (table.column_names if wide else SUMMARY_COLUMNS.get(key, table.column_names))
                if x in table.column_names and x != "run"]
        if "rank" in cols and all(r.get("rank") is None for r in rows):
            cols.remove("rank")
        if ranks > 1 and "rank" not in table.column_names and key not in ("errors", "ranks"):
            title += f", all {ranks} ranks added up"
        c.table(rows[:max_rows], cols, title=f"{title} ({len(rows)})" if len(rows) > max_rows else title)
        if key == "advice":
            c.print(f"  what to do about each: pt2logs advise {escape(s.run.run_id)}")
        if len(rows) > max_rows:
            c.print(f"  … {len(rows) - max_rows} more: pt2logs query {_query_of(key)} -p run_id {escape(s.run.run_id)}")
    if not wide:
        c.print()
        c.print("Sections show some query columns: --wide shows all, --format json everything.")


def _print_outcome(c: Any, outcome: Any) -> None:
    """The outcome line (and pt2logs run's command line) at the top of a summary."""
    from pt2logs.reports.outcomes import BAD, command_line, outcome_line, silence_line

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
    from pt2logs.reports.outcomes import (
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
    from pt2logs.reports.compose import SUMMARY_SECTIONS

    return next(q for k, _, q, _ in SUMMARY_SECTIONS if k == section)


def _torch_from(source: str | None) -> str:
    """`` (from its compilation_metrics)``: where the torch version was read (runs.torch_version_from)."""
    return f" (from {escape(source.replace('_', ' '))})" if source else ""


def _versions_line(v: dict[str, Any]) -> str:
    """``torch X, Python Y → torch X2, Python Y2`` and whether they differ (sites are matched across them)."""
    def one(r: dict[str, Any]) -> str:
        return f"torch {escape(r.get('torch') or '?')}, Python {escape(r.get('python') or '?')}"

    if not v:
        return ""
    differ = v.get("differ") or []
    note = (f"  ({' and '.join(differ)} differ: sites and functions are matched by identity)" if differ
            else "  (same versions)")
    return f"  {one(v['a'])}  →  {one(v['b'])}{note}"


def _run_label(r: Any) -> str:
    return f"{escape(r.name)} ({escape(r.run_id)}, torch {escape(r.torch or '?')})"


def print_diff(d: Any, fmt: str = "table", max_rows: int = 10, wide: bool = False) -> None:
    """Print a diff in one of the formats that write reports (``formats_that("report")``);
    ``wide``: every cell in full."""
    if fmt == "json":
        return _print_json(d)
    if fmt != "table":
        raise ValueError(f"no report writer for format {fmt!r}")
    c = _Tables(wide, "--wide or -f json")
    c.print(f"[bold]A[/bold] {_run_label(d.a)}  →  [bold]B[/bold] {_run_label(d.b)}")
    c.print(_versions_line(d.versions))
    if d.a.ranks > 1 or d.b.ranks > 1:
        c.print(f"Counts and times add up every rank of a run (A has {d.a.ranks}, B {d.b.ranks}).")
    c.table(d.headline, ["metric", "a", "b", "delta", "pct"], title="Headline")
    for _key, title, rows in d.sections:
        changed = [r for r in rows if r["status"] != "same"]
        c.print()
        if not changed:
            c.print(f"[bold]{title}[/bold]: no change" if rows else f"[bold]{title}[/bold]: none in either run")
            continue
        keycols = [k for k in rows[0] if k not in ("a", "b", "delta", "pct", "status")]
        c.table(changed[:max_rows], keycols + ["a", "b", "delta", "pct", "status"], title=title)
        if len(changed) > max_rows:
            c.print(f"  … {len(changed) - max_rows} more (--format json for all)")
    if d.cache_misses:
        c.print()
        c.table(d.cache_misses[:max_rows], ["function", "compile_id", "cache", "lookup", "outcome", "why"],
                title="Why B's caches missed where A made the same lookup")
        if len(d.cache_misses) > max_rows:
            c.print(f"  … {len(d.cache_misses) - max_rows} more (pt2logs query cache_misses --run B -p base A)")


# ---------------------------------------------------------------------------- advice


def _cost(r: dict[str, Any]) -> str:
    parts = [f"{r['compile_s']:.2f} s of compile time"]
    for k, word in (("recompiles", "recompile"), ("breaks", "graph break"), ("failures", "failed compile")):
        if r.get(k):
            parts.append(f"{r[k]} {word}{'s' if r[k] != 1 else ''}")
    return ", ".join(parts)


_CODE_SPAN = re.compile(r"(`[^`\n]*`)")


def md_text(s: str) -> str:
    """Log text in Markdown prose: one line; outside code spans ``&``, ``<``, ``*``, ``_``, ``[`` and ``\\``
    escaped (no HTML, emphasis or link can start); code spans are shown as written (GitHub renders
    nothing inside them)."""
    parts = _CODE_SPAN.split(s.replace("\r", " ").replace("\n", " "))
    esc = str.maketrans({"&": "&amp;", "<": "&lt;", "*": "\\*", "_": "\\_", "[": "\\[", "\\": "\\\\"})
    return "".join(p if i % 2 else p.translate(esc) for i, p in enumerate(parts))


def _md_code(s: str) -> str:
    return f"`` {s} ``" if "`" in s else f"`{s}`"


def advice_markdown(run: Any, rows: list[dict[str, Any]]) -> str:
    """``pt2logs advise --format markdown``: one section per item, to paste into an issue or a PR."""
    out = [f"# Advice for {md_text(run.name)} (run {md_text(run.run_id)})", ""]
    if not rows:
        out.append("Nothing in the advice table (docs/advice.md) matched this run.")
    for i, r in enumerate(rows, 1):
        frames = "; ".join(_md_code(f) for f in (r["frames"] or "?").split("; "))
        out += [f"## {i}. {md_text(r['finding'])}", "",
                f"- **Evidence:** {md_text(r['evidence'])}",
                f"- **Frames:** {frames}",
                f"- **At stake:** {_cost(r)}",
                f"- **What to do:** {r['advice']}", ""]
    return "\n".join(out).rstrip() + "\n"


def print_advice(run: Any, rows: list[dict[str, Any]]) -> None:
    """``pt2logs advise``: each item as a block, most costly first."""
    from rich.console import Console
    from rich.text import Text

    from pt2logs.cli.layout import terminal_width

    c = Console(width=terminal_width(), highlight=False, emoji=False)
    c.print(Text(f"{run.name} ({run.run_id}): {len(rows)} advice item{'s' if len(rows) != 1 else ''}", style="bold"))
    if not rows:
        c.print("nothing in the advice table (docs/advice.md) matched this run")
    for i, r in enumerate(rows, 1):
        c.print()
        c.print(Text(f"{i}. {r['finding']}  [{r['id']}]", style="bold"))
        for label, value in (("evidence", r["evidence"]), ("frames", r["frames"] or "?"), ("at stake", _cost(r)),
                             ("do", r["advice"])):
            line = Text(f"  {label:<9} ")
            line.append(value)
            c.print(line)
