"""Report pages on the terminal (rich): ``summary``, ``ranks`` and ``diff``. Only the CLI uses this module.

The pages' sections come as data (:mod:`pt2logs.reports.compose`): each section's title, columns,
empty note and hint are its section file's (``reports/*.toml``); this module only draws them.
Log text is full of square brackets (``[rank0]:``, ``File [/home/x.py]``, run folders named
anything), which rich would read as markup: every value from the data goes to rich as a
:class:`rich.text.Text` (tables: :func:`pt2logs.cli.layout.rich_table`), through
:func:`rich.markup.escape`, or printed with markup off. Tables fit the terminal and name what they
hid or shortened (:mod:`pt2logs.cli.layout`).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import click
import orjson
from rich.markup import escape

from pt2logs.cli.options import write_rows
from pt2logs.cli.outputs import cell


class _Tables:
    """Draws the tables of one report on one console: fitted to the terminal (or ``wide``: in full),
    each followed by a note naming what it hid or shortened."""

    def __init__(self, wide: bool, more: str):
        from rich.console import Console

        from pt2logs.cli.layout import terminal_width

        self.width, self.wide, self.more = terminal_width(), wide, more
        # wide: as wide as the widest table needs (lines are not wrapped or cropped)
        self.console = Console(
            width=100_000 if wide else self.width, highlight=False, soft_wrap=False, emoji=False
        )

    def print(self, *args: Any, **kw: Any) -> None:
        self.console.print(*args, **kw)

    def table(self, rows: list[dict[str, Any]], cols: list[str], title: str | None = None) -> None:
        from pt2logs.cli.layout import fit, notes, rich_table

        def kind(c: str) -> tuple[bool, bool]:  # (number, never shortened)
            vals = [r.get(c) for r in rows if r.get(c) is not None]
            num = bool(vals) and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals
            )
            return num, num or all(isinstance(v, (bool, dt.datetime)) for v in vals)

        kinds = {c: kind(c) for c in cols}
        layout = fit(
            rows,
            cols,
            self.width,
            fixed=[c for c in cols if kinds[c][1]],
            wide=self.wide,
            cell=cell,
        )
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
    started = (
        o["started_at"].strftime("%Y-%m-%d %H:%M:%S UTC") if o.get("started_at") else "unknown"
    )
    ranks = max(1, o["ranks"] or 1)
    c.print(
        f"[bold]{o['run']}[/bold]  run {o['run_id']}, torch {o['torch'] or '?'}{_torch_from(o.get('torch_from'))}"
    )
    _print_outcome(c, s.outcome)
    c.print(
        f"  started    {started}, wall {cell(o['wall_s'])} s, {ranks} rank{'s' if ranks > 1 else ''}"
    )
    c.print(
        f"  read       {o['files']} file(s), {o['events']:,} events, {o['errors']} errors, {o['warnings']} warnings"
    )
    bwd = (
        f" + {o['bwd_compiles']} lazy backward ({o['bwd_compile_s']:.2f} s)"
        if o["bwd_compiles"]
        else ""
    )
    c.print(
        f"  compiles   [bold]{o['compiles']}[/bold] of {o['frames']} frame{'s' if o['frames'] != 1 else ''}, "
        f"[bold]{o['compile_s']:.2f} s[/bold]{bwd}; {o['failures']} failed"
    )
    if ranks > 1:
        c.print(
            f"  per rank   at most {o['compiles_per_rank_max']} compiles, {o['compile_s_per_rank_max']:.2f} s "
            f"(the counts here add up all {ranks} ranks)"
        )
    limit = f", {o['limit_hits']} hit the recompile limit" if o["limit_hits"] else ""
    c.print(f"  recompiles [bold]{o['recompiles']}[/bold]{limit}")
    c.print(
        f"  breaks     [bold]{o['graph_breaks']}[/bold] graph breaks at {o['break_sites']} sites"
    )
    c.print(
        f"  kernels    {o['kernels']}, cache hits {o['cache_hits']} of {o['cache_lookups']} lookups"
    )
    for key, _title, table in s.sections:
        print_section(c, s, s.page[key], table, max_rows, wide, ranks)
    if not wide:
        c.print()
        c.print("Sections show some query columns: --wide shows all, --format json everything.")


def fill(template: str, run: Any) -> str:
    """A section's empty note or hint with ``{run}`` (the run's name) and ``{run_id}`` filled in."""
    return template.format(run=run.name, run_id=run.run_id)


def print_section(
    c: _Tables, report: Any, section: Any, table: Any, max_rows: int, wide: bool, ranks: int
) -> None:
    """One section of a report page as a terminal table (``section``: its
    :class:`~pt2logs.reports.pages.Section`): its columns (``wide``: all), the run's column left out
    (it is the page's), rank only where the run has ranks; its empty note when it has no rows."""
    from rich.text import Text

    rows = table.to_pylist()
    title = section.title
    c.print()
    if not rows:
        c.print(Text.assemble((title, "bold"), f": {fill(section.empty, report.run)}"))
        return
    cols = [
        x
        for x in (section.columns if section.columns and not wide else table.column_names)
        if x in table.column_names and x != "run"
    ]
    if "rank" in cols and all(r.get("rank") is None for r in rows):
        cols.remove("rank")
    if ranks > 1 and "rank" not in table.column_names and section.added_up:
        title += f", all {ranks} ranks added up"
    c.table(
        rows[:max_rows], cols, title=f"{title} ({len(rows)})" if len(rows) > max_rows else title
    )
    if section.hint:
        c.print(f"  {fill(section.hint, report.run)}", markup=False)
    if len(rows) > max_rows:
        c.print(
            f"  … {len(rows) - max_rows} more: pt2logs query {section.query} -p run_id {report.run.run_id}",
            markup=False,
        )


def _print_outcome(c: Any, outcome: Any) -> None:
    """The outcome line (and pt2logs run's command line) at the top of a summary."""
    from pt2logs.reports.outcomes import BAD, command_line, outcome_line, silence_line

    if outcome is None:
        return
    style = "bold red" if outcome.outcome in BAD else "bold"
    c.print(
        f"  outcome    [{style}]{escape(outcome.outcome)}[/{style}]{escape(outcome_line(outcome)[len(outcome.outcome) :])}"
    )
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
    note = (
        f" (hung: rank{'s' if len(hung) > 1 else ''} {', '.join(map(str, hung))})" if hung else ""
    )
    click.echo(
        f"{run.name} ({run.run_id}): {len(differ)} of {len(rows)} ranks differ from the majority{note}"
    )
    if outcome is not None:
        click.echo(f"  outcome: {outcome_line(outcome)}")
        if silence_line(outcome):
            click.echo(f"  silence: {silence_line(outcome)}")
        for d in outcome.divergence:
            click.echo(f"  first divergence: {divergence_line(d)}")
        for line in rank_lines(outcome):
            click.echo(f"  {line}")


def print_ranks(report: Any, fmt: str, output: str | None, wide: bool) -> None:
    """``pt2logs ranks``: the page's one section in any --format; in the table format, above it, how many
    ranks differ, the run's outcome and first divergence (:func:`print_ranks_header`), the run's column
    left out, or the section's empty note when it has no rows (a run of one rank)."""
    ((key, _title, table),) = report.sections
    section = report.page[key]
    if fmt == "table":
        if table.num_rows == 0:
            click.echo(fill(section.empty, report.run))
            return
        print_ranks_header(report.run, table.to_pylist(), report.outcome)
        table = table.select([c for c in (section.columns or table.column_names) if c != "run"])
    write_rows(table, fmt, output, wide)


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
    note = (
        f"  ({' and '.join(differ)} differ: sites and functions are matched by identity)"
        if differ
        else "  (same versions)"
    )
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
            c.print(
                f"[bold]{title}[/bold]: no change"
                if rows
                else f"[bold]{title}[/bold]: none in either run"
            )
            continue
        keycols = [k for k in rows[0] if k not in ("a", "b", "delta", "pct", "status")]
        c.table(changed[:max_rows], keycols + ["a", "b", "delta", "pct", "status"], title=title)
        if len(changed) > max_rows:
            c.print(f"  … {len(changed) - max_rows} more (--format json for all)")
    if d.cache_misses:
        c.print()
        c.table(
            d.cache_misses[:max_rows],
            ["function", "compile_id", "cache", "lookup", "outcome", "why"],
            title="Why B's caches missed where A made the same lookup",
        )
        if len(d.cache_misses) > max_rows:
            c.print(
                f"  … {len(d.cache_misses) - max_rows} more (pt2logs query cache_misses --run B -p base A)"
            )
