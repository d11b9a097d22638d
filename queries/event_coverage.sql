-- title: Event coverage
-- question: Which TORCH_TRACE event kinds and artifacts does the selection hold, how many of each, and which tables does each feed? Tables empty: kept raw on purpose (kept_raw says why; the record is still in `events`); status unknown: a kind or artifact this pt2logs neither interprets nor lists (a newer torch?).
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
WITH seen AS (
  SELECT e.event_type AS kind,
         CASE WHEN e.event_type = 'artifact' THEN e.artifact_name END AS artifact,
         count(*) AS records,
         count(DISTINCT e.run_id) AS runs,
         sum(e.payload_bytes) AS payload_bytes
  FROM events e
  WHERE e.run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(e.ingest_date, $since)
    AND e.event_type IS NOT NULL
  GROUP BY ALL
)
SELECT s.kind, coalesce(s.artifact, '') AS artifact, s.records, s.runs, s.payload_bytes,
       CASE WHEN f.kind IS NULL THEN 'unknown' WHEN f.kept_raw_why IS NULL THEN 'interpreted' ELSE 'kept raw' END AS status,
       coalesce(f.tables, '') AS tables,
       coalesce(f.kept_raw_why, '') AS kept_raw_why
FROM seen s
LEFT JOIN LATERAL (
  SELECT * FROM event_feeds() f
  WHERE f.kind = s.kind
    AND ((s.artifact IS NULL AND f.artifact IS NULL) OR (s.artifact IS NOT NULL AND s.artifact GLOB f.artifact))
  ORDER BY f.artifact = s.artifact DESC NULLS LAST
  LIMIT 1
) f ON true
ORDER BY s.records DESC, s.kind, artifact;
