"""The formulations some named queries had before they were rewritten for speed, kept as oracles:
the rewritten query must give the very rows these give (tests/test_query_rewrites.py,
tests/test_advice.py, tests/test_cache_misses.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from pt2logs.query.advice import DEFAULT_LIMIT, load_rules, match_sql
from pt2logs.query.queries import bind, get_query, run_sql

HERE = Path(__file__).parent


def add_advice_oracle(con: duckdb.DuckDBPyConnection) -> None:
    """``advice_items_oracle(run, since, until, tag)``: the macro as it was, completed as items_macro does."""
    sql = (HERE / "advice_items.sql").read_text().replace("{DEFAULT_LIMIT}", str(DEFAULT_LIMIT))
    for k, v in match_sql(load_rules()).items():
        sql = sql.replace("{" + k + "}", v)
    con.execute(sql.replace("MACRO advice_items(", "MACRO advice_items_oracle(", 1))


def add_cache_oracle(con: duckdb.DuckDBPyConnection) -> None:
    """``cache_component_diffs_oracle(...)``: the macro as it was (it makes the pairs itself)."""
    con.execute((HERE / "cache_component_diffs.sql").read_text())


def oracle_sql(name: str) -> str:
    """A named query as it was (tests/query_oracles/NAME.sql)."""
    return (HERE / f"{name}.sql").read_text()


def rows(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any]) -> list[dict]:
    return run_sql(con, sql, bind(None, sql, params)).to_pylist()


def named_sql(name: str) -> str:
    return get_query(name).sql


def canonical(rs: list[dict]) -> list[tuple]:
    """Rows in an order of their own, lists sorted (aggregated lists have no order of their own)."""

    def norm(v: Any) -> Any:
        return (
            tuple(sorted((norm(x) for x in v), key=repr))
            if isinstance(v, list)
            else tuple(sorted((k, norm(x)) for k, x in v.items()))
            if isinstance(v, dict)
            else v
        )

    return sorted((tuple((k, norm(v)) for k, v in r.items()) for r in rs), key=repr)
