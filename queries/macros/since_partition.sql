-- title: Partition pruning by --since
-- what: A run is always ingested after it started, so ingest_date >= since keeps them all: queries filter on it so DuckDB reads only the partitions that can hold the selected runs.
-- params: ingest_date (a view's ingest_date column), since (the since parameter; NULL: no bound)
-- returns: BOOLEAN: the partition can hold runs started at or after since
CREATE OR REPLACE MACRO since_partition(ingest_date, since) AS
since IS NULL OR ingest_date >= strftime(CAST(since AS TIMESTAMPTZ) AT TIME ZONE 'UTC', '%Y-%m-%d');
