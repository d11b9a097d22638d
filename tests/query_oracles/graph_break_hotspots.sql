-- graph_break_hotspots as it was before run_facts() (it read the tables, not each run's kept facts); the oracle of queries/graph_break_hotspots.sql
-- (tests/test_run_facts.py).
SELECT coalesce(min(gb_id), '') AS gb_id,
       min(gb_type) AS gb_type,
       site_file || ':' || site_line AS location,
       library_frame,
       sum(occurrences)::BIGINT AS occurrences,
       count(DISTINCT run_id) AS runs,
       count(DISTINCT (run_id, compile_id)) AS compiles,
       min(co_name) AS function,
       min(explanation) AS explanation,
       site_break AS break_key
FROM graph_break_sites()
WHERE run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(ingest_date, $since)
GROUP BY site_break, site_file, site_line, library_frame
ORDER BY occurrences DESC, runs DESC, gb_type, location, library_frame
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 50);
