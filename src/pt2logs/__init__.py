"""pt2logs: PyTorch 2 compiler logs → a Parquet warehouse you can query and chart.

Python API (the CLI is a thin layer over it)::

    import pt2logs
    result = pt2logs.ingest(["./traces"], "./pt2logs_warehouse", tags={"model": "llama"})
    con = pt2logs.connect("./pt2logs_warehouse")          # DuckDB, every table a view
    con.sql("SELECT cause, count(*) FROM recompiles GROUP BY 1").show()
    lf = pt2logs.table("graph_breaks", "./pt2logs_warehouse")  # polars LazyFrame
"""

from pt2logs import _alloc  # noqa: F401  (Arrow's allocator, before pyarrow loads)
from pt2logs.version import __version__

__all__ = ["__version__", "capture", "connect", "ingest", "table"]


def __getattr__(name: str):  # lazy: `pt2logs --help` should not pay for pyarrow and DuckDB
    if name in ("capture", "connect", "ingest", "table"):
        from pt2logs import api

        return getattr(api, name)
    raise AttributeError(f"module 'pt2logs' has no attribute {name!r}")
