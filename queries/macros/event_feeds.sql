-- title: What each TORCH_TRACE event kind and artifact feeds
-- what: the trace engine's handler table (src/pt2logs/readers/trace/handlers.py: HANDLERS, ARTIFACT_HANDLERS, FEEDS) and what it keeps raw on purpose (readers/trace/kept_raw.py), one row each (docs/events.md); an artifact may be a pattern (`*` for a part torch makes at run time: match with GLOB).
-- params: none
-- fills: event_feeds_rows
-- columns: kind (the event key), artifact (an artifact's name or pattern; NULL for a kind), tables (the tables it feeds, comma-separated; '' when kept raw), kept_raw_why (why it is kept raw; NULL when interpreted)
CREATE OR REPLACE MACRO event_feeds() AS TABLE
SELECT * FROM (VALUES {{event_feeds_rows}}) t(kind, artifact, tables, kept_raw_why);
