"""The warehouse on disk or object store: transactions, Parquet writers, the payload store, commit records, recovery, compaction."""

#: where the commands and the API keep the warehouse unless told (here, not in warehouse.py: the CLI
#: states it at `--help` without importing the store)
DEFAULT_WAREHOUSE = "./pt2logs_warehouse"
