-- title: The stack of every compile
-- question: From where in the program did each compile start: the stack of its dynamo_start record, outermost frame first, as tlparse's stack trie shows it?
-- params: run_id (optional: id, id prefix, name or name prefix; default: the newest run), rank (optional: one rank)
-- One row per frame of each dynamo_start record (`depth` 0 is the outermost); a file logged as an index
-- of the trace's string table is looked up in that table (the `str` records of the same file).
WITH sel AS (SELECT run_id FROM selected_runs_or_newest($run_id, NULL, NULL, NULL)),
starts AS (
    SELECT run_id, rank, file, line_no, compile_id, envelope -> '$.dynamo_start.stack' AS stack
    FROM events
    WHERE event_type = 'dynamo_start' AND run_id IN (SELECT run_id FROM sel)
      AND ($rank IS NULL OR rank = TRY_CAST($rank AS INTEGER))),
frames AS (
    SELECT s.*, d.depth, s.stack -> ('$[' || d.depth || ']') AS f
    FROM starts s, LATERAL (SELECT unnest(range(coalesce(json_array_length(s.stack), 0)::BIGINT)) AS depth) d),
strs AS (
    SELECT run_id, rank, file, (envelope -> '$.str[1]')::BIGINT AS idx, envelope ->> '$.str[0]' AS path
    FROM events
    WHERE event_type = 'str' AND run_id IN (SELECT run_id FROM sel) AND ($rank IS NULL OR rank = TRY_CAST($rank AS INTEGER)))
SELECT r.name AS run, f.rank, f.compile_id, f.depth,
       coalesce(s.path, CASE WHEN json_type(f.f -> '$.filename') = 'VARCHAR' THEN f.f ->> '$.filename' END) AS filename,
       (f.f ->> '$.line')::BIGINT AS line, f.f ->> '$.name' AS function, f.f ->> '$.loc' AS code,
       f.file, f.line_no, f.run_id
FROM frames f JOIN runs r USING (run_id)
LEFT JOIN strs s ON s.run_id = f.run_id AND s.rank IS NOT DISTINCT FROM f.rank AND s.file = f.file
     AND json_type(f.f -> '$.filename') IN ('BIGINT', 'UBIGINT') AND s.idx = (f.f ->> '$.filename')::BIGINT
ORDER BY f.run_id, f.rank NULLS FIRST, f.line_no, f.depth;
