"""Shared test helpers: where the real fixtures are, and small warehouse utilities."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("PT2LOGS_FIXTURES", ROOT.parent / "shared" / "fixtures"))
SAMPLES = ROOT / "sample_traces"


def fixture_path(*parts: str) -> Path:
    p = FIXTURES.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"fixture {p} not available (set PT2LOGS_FIXTURES)")
    return p


@pytest.fixture(scope="session")
def sample_ingest(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    """The bundled sample traces ingested once per session: (warehouse, IngestResult). Tests only read it."""
    import pt2logs

    wh = str(tmp_path_factory.mktemp("samples") / "wh")
    return wh, pt2logs.ingest([str(SAMPLES)], wh)


@pytest.fixture(scope="session")
def sample_wh(sample_ingest: tuple) -> str:
    return sample_ingest[0]


@pytest.fixture
def wh(tmp_path: Path) -> str:
    return str(tmp_path / "wh")


def table_rows(warehouse: str, table: str, drop: tuple[str, ...] = ("txn", "ingest_date")) -> list[tuple]:
    """All live rows of a table, without the columns that differ between equivalent ingests, sorted."""
    import pt2logs

    con = pt2logs.connect(warehouse)
    from pt2logs.query.views import arrow_table

    cols = [c for c in arrow_table(con, f'SELECT * FROM "{table}" LIMIT 0').schema.names if c not in drop]
    sel = ", ".join(f'"{c}"' for c in cols)
    rows = con.execute(f'SELECT {sel} FROM "{table}"').fetchall()
    con.close()
    return sorted(rows, key=repr)


def scalar(warehouse: str | Path, sql: str) -> object:
    """The one value ``sql`` gives over a fresh connection to ``warehouse``."""
    import pt2logs

    con = pt2logs.connect(str(warehouse))
    try:
        return con.execute(sql).fetchone()[0]
    finally:
        con.close()
