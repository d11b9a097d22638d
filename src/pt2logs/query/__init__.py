"""The query side: DuckDB views over the warehouse, named queries, and the SQL macros rules are written in."""
