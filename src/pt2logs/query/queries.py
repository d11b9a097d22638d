"""Named queries: one question per ``queries/*.sql`` file, with a header that documents it.

A query file starts with comment lines::

    -- title: Top recompile causes
    -- question: Which recompile causes cost the most, fleet-wide or in one run?
    -- params: run_id (optional: a run id, id prefix or name), since (optional: 7d, 2w or a date)

then one SQL statement over the warehouse views. Parameters are DuckDB named
parameters (``$run_id``). Optional parameters default to NULL; write filters as
``run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag))``
(a macro: ``queries/macros/selected_runs.sql``, :mod:`pt2logs.query.macros`) so every query filters runs the same way.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from pt2logs.query import answer_schemas
from pt2logs.query.sql_files import Param, parse_params, query_dirs, read_header

_REF = re.compile(r"\$([A-Za-z_]\w*)")
_SINCE = re.compile(r"^(\d+)\s*([hdw])$")


class QueryError(Exception):
    """A user-facing problem with a query: unknown name, missing parameter, SQL error."""


@dataclass
class NamedQuery:
    name: str
    title: str
    question: str
    params: list[Param]
    sql: str
    path: Path
    meta: dict[str, str] = field(default_factory=dict)

    @property
    def referenced(self) -> set[str]:
        return set(_REF.findall(_strip_comments(self.sql)))


def _strip_comments(sql: str) -> str:
    return "\n".join(ln for ln in sql.splitlines() if not ln.lstrip().startswith("--"))


def parse_query_file(path: Path) -> NamedQuery:
    text = path.read_text()
    meta = read_header(text)
    params = parse_params(meta.get("params", ""))
    return NamedQuery(
        path.stem, meta.get("title", path.stem), meta.get("question", ""), params, text, path, meta
    )


_catalogue: dict[str, NamedQuery] | None = None


def load_queries(*, reload: bool = False) -> dict[str, NamedQuery]:
    """Every named query by name. The files are read once per process (a dashboard asks for a
    query dozens of times); ``reload=True`` reads them again (after editing one, in a test)."""
    global _catalogue
    if _catalogue is None or reload:
        out: dict[str, NamedQuery] = {}
        for d in query_dirs():
            for p in sorted(d.glob("*.sql")):
                out.setdefault(p.stem, parse_query_file(p))
        _catalogue = out
    return dict(_catalogue)  # a copy: a caller that edits it cannot change the catalogue


def get_query(name: str) -> NamedQuery:
    qs = _catalogue if _catalogue is not None else load_queries()
    if name in qs:
        return qs[name]
    close = difflib.get_close_matches(name, list(qs), n=3)
    hint = f" Did you mean: {', '.join(close)}?" if close else " List them with `pt2logs queries`."
    raise QueryError(f"no named query {name!r}.{hint}")


def parse_since(value: str | None, now: dt.datetime | None = None) -> dt.datetime | None:
    """``7d`` / ``12h`` / ``2w`` (ago) or an ISO date/time, as an aware UTC datetime."""
    if value is None or value == "":
        return None
    now = now or dt.datetime.now(dt.timezone.utc)
    m = _SINCE.match(value.strip())
    if m:
        n, unit = int(m.group(1)), m.group(2)
        return (
            now
            - {"h": dt.timedelta(hours=n), "d": dt.timedelta(days=n), "w": dt.timedelta(weeks=n)}[
                unit
            ]
        )
    try:
        t = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        raise QueryError(
            f"cannot read {value!r} as a time: use 7d, 12h, 2w or a date like 2026-11-01"
        ) from None
    return t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)


TIME_PARAMS = ("since", "until")


def bind(q: NamedQuery | None, sql: str, given: dict[str, Any]) -> dict[str, Any]:
    """The parameters to pass for ``sql``: every referenced one, given or NULL if optional."""
    refs = set(_REF.findall(_strip_comments(sql)))
    declared = {p.name: p for p in q.params} if q else {}
    unknown = [k for k in given if k not in refs and k not in declared]
    if unknown and q is not None:
        raise QueryError(
            f"query {q.name!r} takes no parameter {', '.join(map(repr, unknown))}; "
            f"it takes: {', '.join(declared) or 'none'}"
        )
    out: dict[str, Any] = {}
    for r in sorted(refs):
        if r in given and given[r] is not None:
            v = given[r]
            out[r] = parse_since(v) if r in TIME_PARAMS and isinstance(v, str) else v
        elif r in declared and not declared[r].optional:
            raise QueryError(
                f"query {q.name!r} needs -p {r} VALUE ({declared[r].doc or 'required'})"
            )
        else:
            out[r] = None
    return out


def run_sql(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None = None) -> Any:
    """Execute and return a pyarrow Table; DuckDB errors become QueryErrors with their position."""
    from pt2logs.query.views import arrow_table

    try:
        return arrow_table(con, sql, params or None)
    except duckdb.Error as e:
        raise query_error_of(e) from None


def stream_sql(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    params: dict[str, Any] | None = None,
    batch_rows: int = 2048,
) -> Any:
    """:func:`run_sql` as a pyarrow RecordBatchReader (memory bounded by a batch, not by the result;
    :func:`pt2logs.query.views.arrow_reader`). An error before the first rows is a QueryError; one
    later is a duckdb.Error raised by the reader (see :func:`query_error_of`)."""
    from pt2logs.query.views import arrow_reader

    try:
        return arrow_reader(con, sql, params or None, batch_rows)
    except duckdb.Error as e:
        raise query_error_of(e) from None


def query_error_of(e: Exception) -> QueryError:
    """A DuckDB error as the QueryError that names it."""
    return QueryError(f"{type(e).__name__.replace('Exception', ' error')}: {e}")


#: per connection: what answers a named query from rows kept for it (``hook(name, bound params)``: a pyarrow Table,
#: or None to ask DuckDB), set inside a run scope whose runs have kept answers (pt2logs.query.kept_answers)
ANSWERS: weakref.WeakKeyDictionary[
    duckdb.DuckDBPyConnection, Callable[[str, dict[str, Any]], Any]
] = weakref.WeakKeyDictionary()


#: per connection: the named queries' answers asked since a run scope began (pt2logs.query.run_scope: its copies do
#: not change until it ends), by (name, bound parameters): a page that asks one twice (the run page's summary
#: section and its outcome both ask ``first_divergence``, ~35 ms at 10,000 runs) runs it once
ASKED: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, dict[tuple[str, str], Any]] = (
    weakref.WeakKeyDictionary()
)
#: per connection inside a run scope: the named queries whose answer there is provably empty
#: (pt2logs.query.empty_answers), answered by an empty table of their answer's columns once DuckDB gave them
EMPTY: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, frozenset[str]] = (
    weakref.WeakKeyDictionary()
)


def run_named(
    con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None
) -> Any:
    q = get_query(name)
    bound = bind(q, q.sql, params or {})
    hook = ANSWERS.get(con)
    if hook is not None and (kept := hook(name, bound)) is not None:
        return kept
    asked = ASKED.get(con)
    if asked is None:
        return run_sql(con, q.sql, bound)
    key = (name, repr(sorted(bound.items())))
    if key not in asked:
        asked[key] = _asked(con, name, q.sql, bound)
    return asked[key]


def _asked(con: duckdb.DuckDBPyConnection, name: str, sql: str, bound: dict[str, Any]) -> Any:
    """DuckDB's answer (a pyarrow Table: read, never changed), or an empty one of its columns where the run scope
    found it empty (:data:`EMPTY`) and DuckDB's answer's columns with parameters of those types are known (asked once,
    kept for the process and in the cache folder: :mod:`pt2logs.query.answer_schemas`)."""
    empty = EMPTY.get(con)
    if empty is None or name not in empty:
        return run_sql(con, sql, bound)
    k = answer_schemas.key(con, name, bound)
    schema = answer_schemas.known(k)
    if schema is not None:
        return schema.empty_table()
    got = run_sql(con, sql, bound)
    answer_schemas.keep(k, got.schema)
    return got


def named_rows(
    con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """A named query's rows as dicts, DuckDB's own Python values where it is asked (no pyarrow): for what a command
    reads itself (which run a reference names: its id, name, ranks), never for what it prints or writes
    (:func:`run_named`: every output sees Arrow's values)."""
    q = get_query(name)
    bound = bind(q, q.sql, params or {})
    hook = ANSWERS.get(con)
    if hook is not None and (kept := hook(name, bound)) is not None:
        return kept.to_pylist()
    return sql_rows(con, q.sql, bound)


def sql_rows(
    con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """:func:`run_sql`'s rows as dicts of DuckDB's own Python values (no pyarrow; see :func:`named_rows`)."""
    from pt2logs.query.views import python_rows

    try:
        return python_rows(con, sql, params or None)
    except duckdb.Error as e:
        raise query_error_of(e) from None


def iter_named(
    con: duckdb.DuckDBPyConnection,
    name: str,
    params: dict[str, Any] | None = None,
    batch_rows: int = 50_000,
) -> Any:
    """A named query's result as a stream of pyarrow RecordBatches (memory bounded by ``batch_rows``),
    for results too big to hold (``pt2logs export``): :func:`stream_sql`."""
    q = get_query(name)
    return stream_sql(con, q.sql, bind(q, q.sql, params or {}), batch_rows)
