"""pt2logs: PyTorch 2 compiler logs → a Parquet warehouse you can query and chart.

Python API (the CLI is a thin layer over it)::

    import pt2logs
    result = pt2logs.ingest(["./traces"], "./pt2logs_warehouse", tags={"model": "llama"})
    con = pt2logs.connect("./pt2logs_warehouse")          # DuckDB, every table a view
    con.sql("SELECT cause, count(*) FROM recompiles GROUP BY 1").show()
    lf = pt2logs.table("graph_breaks", "./pt2logs_warehouse")  # polars LazyFrame
"""

__version__ = "0.1.0"

from pt2logs.api import capture, connect, ingest, table  # noqa: E402

__all__ = ["__version__", "capture", "connect", "ingest", "table"]
