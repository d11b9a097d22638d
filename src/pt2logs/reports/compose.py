"""The report pages of one run (``pt2logs summary``, ``pt2logs ranks``), composed from their section
files (``reports/*.toml``, :mod:`pt2logs.reports.pages`), and the advice items (``pt2logs advise``).

Every number here comes from a named query in ``queries/`` (so it matches ``pt2logs query NAME``);
this module only picks the run, runs each section's query and decides which sections are shown. It
returns data (pyarrow Tables, plain rows); :mod:`pt2logs.cli.render` draws it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import duckdb

from pt2logs.query.queries import run_named
from pt2logs.reports.outcomes import QUERIES as OUTCOME_QUERIES
from pt2logs.reports.outcomes import RunOutcome, merge_outcomes, run_outcome
from pt2logs.reports.pages import Page, PageError, Section, get_page
from pt2logs.reports.runs import Run, resolve_run

if (
    TYPE_CHECKING
):  # (a section's rows: a pyarrow Table, or the kept rows read without it: answer_rows.Rows)
    import pyarrow as pa


@dataclass
class Report:
    """One page for one run: the run, its overview (``run_overview``; the summary's), how it ended,
    and the rows of each section shown, in the page's order."""

    run: Run
    page: Page
    overview: dict[str, Any] | None = None
    #: how the run ended (pt2logs.reports.outcomes)
    outcome: RunOutcome | None = None
    #: (key, title, rows) of each section shown
    sections: list[tuple[str, str, pa.Table]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        d = {"run": self.overview, **{key: t.to_pylist() for key, _, t in self.sections}}
        if self.outcome is not None:
            d["outcome"] = self.outcome.run
        return d


def page_queries(name: str) -> tuple[str, ...]:
    """Every named query the page ``name`` (summary, ranks) runs for one run: its sections', the run's overview,
    outcome and resolution (``runs``). A run scope copies only the tables these read
    (:func:`pt2logs.reports.runs.scoped_to`)."""
    sections = tuple(dict.fromkeys(s.query for s in get_page(name).sections))
    return (*sections, "run_overview", "runs", *OUTCOME_QUERIES)


def section_rows(
    con: duckdb.DuckDBPyConnection,
    section: Section,
    run_id: str,
    ranks: int,
    outcome: RunOutcome | None,
) -> pa.Table | None:
    """A section's rows for run ``run_id`` (an exact id) of ``ranks`` ranks; None when the section is
    not shown for it (its ``when``: a single-rank run, no rows)."""
    if section.when == "ranks" and ranks < 2:
        return None
    t = run_named(con, section.query, {"run_id": run_id, **section.params})
    if section.outcomes:
        t = merge_outcomes(t, outcome.ranks if outcome else [])
    if section.when == "rows" and t.num_rows == 0:
        return None
    return t


def compose(
    con: duckdb.DuckDBPyConnection, page: Page, run: Run, overview: dict[str, Any] | None = None
) -> Report:
    """``page`` for ``run``: its outcome and the rows of every section shown (the run's rank count is the
    overview's when there is one, else ``runs.n_ranks``)."""
    report = Report(run, page, overview, run_outcome(con, run.run_id))
    ranks = (overview.get("ranks") or 0) if overview is not None else run.ranks
    for s in page.sections:
        t = section_rows(con, s, run.run_id, ranks, report.outcome)
        if t is not None:
            report.sections.append((s.key, s.title, t))
    return report


def summary(con: duckdb.DuckDBPyConnection, ref: str | None = None) -> Report:
    """``pt2logs summary``: the run's overview, outcome and the sections of ``reports/summary.toml``."""
    run = resolve_run(con, ref)
    overview = run_named(con, "run_overview", {"run_id": run.run_id}).to_pylist()[0]
    return compose(con, get_page("summary"), run, overview)


def ranks(con: duckdb.DuckDBPyConnection, ref: str | None = None) -> Report:
    """``pt2logs ranks``: the run's outcome and the one section of ``reports/ranks.toml`` (a row per rank,
    written in any --format)."""
    page = get_page("ranks")
    if len(page.sections) != 1 or page.sections[0].when is not None:
        raise PageError(
            f"{page.path.name}: `pt2logs ranks` writes one table in any --format: one section, always shown"
        )
    return compose(con, page, resolve_run(con, ref))


def advise(
    con: duckdb.DuckDBPyConnection, ref: str | None = None, limit: int = 50
) -> tuple[Run, list[dict[str, Any]]]:
    """The advice items of one run (the named query ``advice``), most costly first."""
    run = resolve_run(con, ref)
    return run, run_named(con, "advice", {"run_id": run.run_id, "limit": limit}).to_pylist()
