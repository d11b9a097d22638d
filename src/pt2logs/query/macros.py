"""SQL macros: one ``queries/macros/*.sql`` file each, with a header that documents it.

The rules named queries share (selecting runs, identities, outcomes, advice, cache pairs, a vLLM cold
start) are DuckDB macros. Each file starts with comment lines, like a named query's::

    -- title: How each rank ended
    -- what: what it decides and from which tables
    -- params: p_run (a run id ...), p_since (...), p_until (...), p_tag (...)
    -- fills: stderr_formats, trace_formats
    -- columns: run_id, run, rank, outcome (completed, failed, ...), ...     (a table macro)
    -- returns: BOOLEAN                                                       (a scalar macro)

then one ``CREATE OR REPLACE MACRO <the file's name>(<params>) AS ...`` statement. They live beside the
named queries (``queries/macros/``; installed as ``pt2logs/_data/queries/macros``) and are read once per
process.

**Fills.** Some SQL is made from Python facts: which formats are stderr captures, the source ranks, the
advice table. A macro says ``{{name}}`` where such text goes and lists the names in its ``fills`` line;
:data:`FILLS` is the one list of them (what each is, the function that makes its SQL), and
:func:`fill` the one rule that puts them in: a fill the header does not list, or one :data:`FILLS`
lacks, is an error.

**Order.** DuckDB binds a macro's body when it is made, so a macro comes after those it calls, and a
table macro after the views it reads: scalar macros are made before the views (which use
``run_relative`` and ``source_rank``), table macros after them (:func:`statements`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pt2logs.query import outcome_rules
from pt2logs.query.advice import DEFAULT_LIMIT, load_rules, match_sql, rule_rows
from pt2logs.query.kept_files import kept_texts
from pt2logs.query.sql_files import Param, query_dirs, read_header, split_items
from pt2logs.query.sql_text import literal as _sq

_STATEMENT = re.compile(r"^CREATE OR REPLACE MACRO (\w+)\(([^)]*)\) AS\b(\s+TABLE\b)?", re.M)
_FILL = re.compile(r"\{\{(\w+)\}\}")


class MacroError(ValueError):
    """A macro file that breaks the rules above (a test keeps the shipped ones valid)."""


@dataclass(frozen=True)
class Macro:
    name: str
    title: str
    what: str
    params: list[Param]
    #: a table macro's columns (``NAME.*`` / ``NAME().*``: every column of that view / macro)
    columns: list[Param]
    #: a scalar macro's result
    returns: str
    #: the fills it takes (:data:`FILLS`)
    fills: tuple[str, ...]
    #: the statement, as written (fills not yet put in)
    sql: str
    path: Path
    meta: dict[str, str] = field(default_factory=dict)

    @property
    def table(self) -> bool:
        return bool(self.columns)

    @property
    def signature(self) -> str:
        return f"{self.name}({', '.join(p.name for p in self.params)})"


def _in_list(values: tuple[str, ...]) -> str:
    return "(" + ", ".join(_sq(v) for v in values) + ")"


@functools.cache
def _advice() -> dict[str, str]:
    return match_sql(load_rules())


def _feeds_rows() -> str:
    # the readers are imported where a fill is made (a snapshot's catalog), never by a command that attaches a kept one
    from pt2logs.readers.trace.handlers import coverage_rows

    def v(x: str | None) -> str:
        return "NULL" if x is None else _sq(x)

    return ", ".join(f"({v(k)}, {v(a)}, {v(t)}, {v(why)})" for k, a, t, why in coverage_rows())


def _ranks(key: Callable[[str, str], str]) -> str:
    from pt2logs.readers import source_ranks

    return " ".join(
        f"WHEN {_sq(key(src, fmt))} THEN {rank}" for src, (fmt, rank) in source_ranks().items()
    )


#: every fill: its name -> (what it is, the function that makes its SQL text)
FILLS: dict[str, tuple[str, Callable[[], str]]] = {
    "stderr_formats": (
        "the formats whose files are stderr captures, an IN list (`outcome_rules.stderr_formats()`)",
        lambda: _in_list(outcome_rules.stderr_formats()),
    ),
    "trace_formats": (
        "the formats whose files are traces, an IN list (`outcome_rules.trace_formats()`)",
        lambda: _in_list(outcome_rules.trace_formats()),
    ),
    "source_ranks": (
        "`WHEN source THEN rank` for every ranked source (`readers.source_ranks()`)",
        lambda: _ranks(lambda src, fmt: src),
    ),
    "format_ranks": (
        "`WHEN format THEN rank`: the rank of the source each format yields (`readers.source_ranks()`)",
        lambda: _ranks(lambda src, fmt: fmt),
    ),
    "advice_rule_rows": (
        "advice.toml's rules as VALUES rows (`advice.rule_rows`)",
        lambda: rule_rows(load_rules()),
    ),
    "rule_case": (
        "the id of the first rule a fact matches, a CASE (`advice.match_sql`)",
        lambda: _advice()["RULE_CASE"],
    ),
    "subject_case": (
        "a rule's subject pattern applied to the fact's text (`advice.match_sql`)",
        lambda: _advice()["SUBJECT_CASE"],
    ),
    "detail_case": (
        "a rule's detail pattern applied to the fact's text (`advice.match_sql`)",
        lambda: _advice()["DETAIL_CASE"],
    ),
    "cache_filter": (
        "the cache lookups some rule can match (`advice.match_sql`)",
        lambda: _advice()["CACHE_FILTER"],
    ),
    "kind_columns": (
        "the columns rules read: a kind of fact (`advice.MATCH_COLUMNS`)",
        lambda: _advice()["KIND_COLUMNS"],
    ),
    "kind_join": (
        "a fact joined to its kind (`advice.MATCH_COLUMNS`)",
        lambda: _advice()["KIND_JOIN"],
    ),
    "event_feeds_rows": (
        "every handled or kept-raw event kind / artifact with the tables it feeds, VALUES rows "
        "(`readers.trace.handlers.coverage_rows`)",
        _feeds_rows,
    ),
    "default_limit": (
        "torch's recompile limit when the logs do not say (`advice.DEFAULT_LIMIT`)",
        lambda: str(DEFAULT_LIMIT),
    ),
}


def macro_dirs() -> list[Path]:
    """Where the macros live: ``macros/`` in each folder of named queries (the repo's, or the installed copy)."""
    return [d / "macros" for d in query_dirs() if (d / "macros").is_dir()]


def parse_macro_file(path: Path) -> Macro:
    """A macro file, checked: its header, one statement named after the file, its params as declared."""
    text = path.read_text()
    meta = read_header(text)
    m = _STATEMENT.search(text)
    at = f"{path.name}"
    if m is None or m.group(1) != path.stem:
        raise MacroError(
            f"{at}: needs one `CREATE OR REPLACE MACRO {path.stem}(...) AS ...` statement"
        )
    missing = [k for k in ("title", "what", "params") if not meta.get(k)]
    table = m.group(3) is not None
    if not meta.get("columns" if table else "returns"):
        missing.append("columns" if table else "returns")
    if missing:
        raise MacroError(f"{at}: its header needs {', '.join(missing)}")
    params = split_items(meta["params"])
    written = [p.strip() for p in m.group(2).split(",") if p.strip()]
    if [p.name for p in params] != written:
        raise MacroError(
            f"{at}: its header's params ({', '.join(p.name for p in params) or 'none'}) are not the macro's "
            f"({', '.join(written) or 'none'})"
        )
    fills = tuple(f.name for f in split_items(meta.get("fills", "")))
    used = set(_FILL.findall(text))
    if used != set(fills) or not set(fills) <= set(FILLS):
        raise MacroError(
            f"{at}: fills listed {sorted(fills)}, used {sorted(used)}, known {sorted(FILLS)}"
        )
    return Macro(
        path.stem,
        meta["title"],
        meta["what"],
        params,
        split_items(meta.get("columns", "")) if table else [],
        "" if table else meta["returns"],
        fills,
        text[m.start() :].strip(),
        path,
        meta,
    )


_catalogue: dict[str, Macro] | None = None


def load_macros(*, reload: bool = False) -> dict[str, Macro]:
    """Every macro by name, read once per process (``reload=True``: read again)."""
    global _catalogue
    if _catalogue is None or reload:
        out: dict[str, Macro] = {}
        for d in macro_dirs():
            for p in sorted(d.glob("*.sql")):
                out.setdefault(p.stem, parse_macro_file(p))
        _catalogue = out
    return dict(_catalogue)


def fill(m: Macro, values: dict[str, str] | None = None) -> str:
    """``m``'s statement with its fills put in (``values``: instead of :data:`FILLS`' own, e.g. other advice rules)."""

    def one(x: re.Match[str]) -> str:
        name = x.group(1)
        if name not in m.fills:
            raise MacroError(f"{m.path.name}: fill {name!r} is not in its header")
        return values[name] if values and name in values else fill_texts()[name]

    return _FILL.sub(one, m.sql)


@functools.cache
def fill_texts() -> dict[str, str]:
    """Every fill's text, made once per code (:func:`pt2logs.query.kept_files.kept_texts`: the CLI reads them back
    from its cache folder): the facts behind them (the format registry, the advice table) are imported only
    when the code changed, never by a command whose catalog and fills are kept (tests/test_lazy_registry.py)."""
    return kept_texts("fills", lambda: {name: make() for name, (_, make) in FILLS.items()})


def calls(m: Macro, names: set[str]) -> set[str]:
    """The other macros ``m`` calls (of ``names``)."""
    return {n for n in names if n != m.name and re.search(rf"\b{n}\s*\(", m.sql)}


def ordered(macros: dict[str, Macro]) -> list[Macro]:
    """Scalar macros, then table macros; each after the macros it calls (else by name)."""
    done: list[str] = []

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in done:
            return
        if name in path:
            raise MacroError(f"macros call each other: {' -> '.join(path + (name,))}")
        for dep in sorted(calls(macros[name], set(macros))):
            visit(dep, path + (name,))
        done.append(name)

    for name in sorted(macros, key=lambda n: (macros[n].table, n)):
        visit(name, ())
    scalar_after_table = [
        n
        for n in done
        if not macros[n].table and any(macros[d].table for d in calls(macros[n], set(macros)))
    ]
    if scalar_after_table:
        raise MacroError(
            f"a scalar macro cannot call a table macro: {', '.join(scalar_after_table)}"
        )
    return [macros[n] for n in done]


@functools.cache
def statements() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The statements that make every macro, filled: (made before the views, made after them)."""
    ms = ordered(load_macros())
    return tuple(fill(m) for m in ms if not m.table), tuple(fill(m) for m in ms if m.table)


def macro_sql(name: str) -> str:
    """One macro's statement, filled."""
    return fill(load_macros()[name])
