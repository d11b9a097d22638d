"""The warehouse on disk or object store: transactions, Parquet writers, the payload store, commit records, recovery, compaction."""
