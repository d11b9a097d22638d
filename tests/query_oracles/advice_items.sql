-- advice_items() as src/pt2logs/query/advice_sql.py (now queries/macros/advice_items.sql) had it before the rewrite for speed: every fact matched
-- against the rules one by one, every compile's dynamo config parsed. The oracle of the macro
-- (tests/test_query_rewrites.py), completed with pt2logs.query.advice.match_sql ({RULE_CASE} ...).
CREATE OR REPLACE MACRO advice_items(p_run, p_since, p_until, p_tag) AS TABLE
WITH sel AS (SELECT run_id FROM selected_runs(p_run, p_since, p_until, p_tag)),
ru AS (SELECT * FROM advice_rules()),
cm AS (
  SELECT run_id, rank, compile_id, regexp_extract(compile_id, '(\d+)/\d+$', 1) AS frame_no,
         co_name, function_file(co_file, co_filename) AS ffile, function_line(co_file_kind, co_firstlineno) AS fline,
         coalesce(entire_frame_compile_time_s, 0) AS s
  FROM compilation_metrics
  WHERE kind = 'compilation_metrics' AND run_id IN (SELECT run_id FROM sel) AND since_partition(ingest_date, p_since)),
cmc AS (SELECT run_id, rank, compile_id, sum(s) AS s FROM cm GROUP BY ALL),
fr AS (
  SELECT run_id, rank, frame_no, max(co_name) AS co_name, max(ffile) AS ffile, max(fline) AS fline,
         count(*) AS compiles, sum(s) AS frame_s
  FROM cm GROUP BY ALL),
rc AS (
  SELECT 'recompiles' AS facts, run_id, rank, compile_id, ts, co_name, function_file(co_file, co_filename) AS ffile,
         function_line(co_file_kind, co_firstlineno) AS fline, cause, guard_kind,
         coalesce(guard_source, guard_subject) AS subject0, guard_expected AS v1, guard_actual AS v2,
         coalesce(is_limit_hit, false) AS limit_hit, NULL::VARCHAR AS gb_id, NULL::VARCHAR AS exc_type,
         coalesce(reason, '') AS text, NULL::VARCHAR AS location,
         -- a Python guard is followed by "# <its source line>  # <file:line in fn>" (torch 2.1+)
         nullif(trim(regexp_extract(reason, '#\s*(.*?)\s+#\s*\S+:\d+', 1)), '') AS code,
         NULL::VARCHAR AS detail0, 1::BIGINT AS n
  FROM recompiles WHERE run_id IN (SELECT run_id FROM sel) AND since_partition(ingest_date, p_since)),
gb AS (
  SELECT 'graph_breaks' AS facts, run_id, rank, compile_id, ts, co_name, function_file(co_file, co_filename) AS ffile,
         function_line(co_file_kind, co_firstlineno) AS fline, gb_id, concat_ws(chr(10), gb_type, reason, explanation) AS text,
         site_file || ':' || site_line AS location,
         -- data-dependent branching explains itself with "# File F, line N, in fn, code: <line>" (2.7+)
         nullif(trim(regexp_extract(reason, 'code: ([^\n]*)', 1)), '') AS code, coalesce(occurrences, 1)::BIGINT AS n
  FROM graph_break_sites() WHERE run_id IN (SELECT run_id FROM sel) AND since_partition(ingest_date, p_since)),
fl AS (
  SELECT 'failures' AS facts, run_id, rank, compile_id, ts, co_name, function_file(co_file, co_filename) AS ffile,
         function_line(co_file_kind, co_firstlineno) AS fline, coalesce(exc_type, fail_type) AS exc_type,
         coalesce(exc_type, fail_type) AS subject0, coalesce(exc_message, fail_reason, '') AS text,
         frame_file || ':' || frame_line AS location, left(message_line(coalesce(exc_message, fail_reason, '')), 200) AS detail0,
         1::BIGINT AS n
  FROM failures WHERE NOT coalesce(is_restart, false) AND run_id IN (SELECT run_id FROM sel) AND since_partition(ingest_date, p_since)),
ce AS (
  SELECT 'cache_events' AS facts, run_id, rank, compile_id, ts, outcome, cache AS subject0, coalesce(reason, '') AS text,
         nullif(left(trim(split_part(reason, chr(10), 1)), 200), '') AS detail0, 1::BIGINT AS n
  FROM cache_events WHERE {CACHE_FILTER} AND run_id IN (SELECT run_id FROM sel) AND since_partition(ingest_date, p_since)),
facts AS (
  SELECT row_number() OVER () AS fid, f.* REPLACE (coalesce(f.co_name, fr.co_name) AS co_name, coalesce(f.ffile, fr.ffile) AS ffile,
         coalesce(f.fline, fr.fline) AS fline), regexp_extract(f.compile_id, '(\d+)/\d+$', 1) AS frame_no
  FROM (SELECT * FROM rc UNION ALL BY NAME SELECT * FROM gb UNION ALL BY NAME SELECT * FROM fl UNION ALL BY NAME SELECT * FROM ce) f
  LEFT JOIN fr ON fr.run_id = f.run_id AND fr.rank IS NOT DISTINCT FROM f.rank
       AND fr.frame_no = regexp_extract(f.compile_id, '(\d+)/\d+$', 1)),
m AS (  -- each fact to the first rule that matches it (advice.toml's order), with its subject and detail
  SELECT * FROM (
    SELECT f.*, {RULE_CASE} AS rule_id,
           coalesce(f.co_name, '?') || coalesce(' (' || f.ffile || coalesce(':' || f.fline, '') || ')', '') AS frame
    FROM facts f) f
  JOIN ru USING (rule_id)),
ms AS (
  SELECT m.* EXCLUDE (subject0),
         coalesce({SUBJECT_CASE}, m.subject0, m.subject_default) AS subject,
         coalesce({DETAIL_CASE}, m.detail0) AS detail
  FROM m),
hit_runs AS (SELECT DISTINCT run_id FROM m WHERE limit_hit),
cfg_frames AS (  -- the frames whose config an item shows: those of matched recompiles, every frame of a run with a limit hit
  SELECT DISTINCT run_id, rank, frame_no FROM m WHERE facts = 'recompiles'
  UNION SELECT run_id, rank, frame_no FROM fr WHERE run_id IN (SELECT run_id FROM hit_runs)),
cfg AS (  -- the dynamo config they were compiled under (one JSON parse per compile, several paths at once)
  SELECT run_id, rank, frame_no, max(coalesce(TRY_CAST(v[3] AS INTEGER), TRY_CAST(v[4] AS INTEGER))) AS cfg_limit,
         bool_or(v[1] = 'false') AS auto_off, bool_or(v[1] = 'true') AS auto_on, bool_or(v[2] = 'false') AS dyn_true
  FROM (SELECT c.run_id, c.rank, c.frame_no, TRY(json_extract_string(c.dynamo_config, ['$.automatic_dynamic_shapes',
               '$.assume_static_by_default', '$.recompile_limit', '$.cache_size_limit'])) AS v
        FROM (SELECT run_id, rank, regexp_extract(compile_id, '(\d+)/\d+$', 1) AS frame_no, dynamo_config
              FROM compilation_metrics
              WHERE kind = 'compilation_metrics' AND dynamo_config IS NOT NULL AND since_partition(ingest_date, p_since)
                AND run_id IN (SELECT run_id FROM cfg_frames)) c
        SEMI JOIN cfg_frames f ON f.run_id = c.run_id AND f.rank IS NOT DISTINCT FROM c.rank AND f.frame_no = c.frame_no)
  GROUP BY ALL),
lim_c AS (
  SELECT run_id, compile_id, max(n) AS text_limit FROM (
    SELECT run_id, compile_id, TRY_CAST(regexp_extract(message, 'hit config\.\w*(?:recompile|cache_size)_limit \((\d+)\)', 1) AS INTEGER) AS n
    FROM log_lines WHERE run_id IN (SELECT run_id FROM hit_runs) AND since_partition(ingest_date, p_since)
      AND level = 'W' AND message LIKE '%hit config.%limit (%'
    UNION ALL
    SELECT run_id, compile_id, TRY_CAST(regexp_extract(exc_message, 'currently set to (\d+)', 1) AS INTEGER)
    FROM failures WHERE run_id IN (SELECT run_id FROM hit_runs) AND since_partition(ingest_date, p_since)
      AND exc_message LIKE '%currently set to %')
  GROUP BY ALL),
lim AS (SELECT run_id, max(text_limit) AS text_limit FROM lim_c GROUP BY run_id),
keyed AS (SELECT *, CASE facts WHEN 'graph_breaks' THEN coalesce(location, frame) WHEN 'cache_events' THEN coalesce(detail, '')
                        ELSE frame END AS item_key FROM ms),
items0 AS (
  SELECT rule_id, any_value(rule_order) AS rule_order, run_id, item_key, subject,
         any_value(finding) AS finding, any_value(evidence_tpl) AS tpl, any_value(advice) AS advice,
         any_value(cost) AS cost, any_value(min_events) AS min_events, any_value(min_values) AS min_values, any_value(facts) AS facts,
         sum(n)::BIGINT AS n, list_sort(list_distinct(list(frame))) AS frames, min(location) AS location, min(code) AS code,
         min(detail) AS detail, list_distinct(list(rank) FILTER (WHERE rank IS NOT NULL)) AS ranks,
         string_agg(DISTINCT compile_id, ', ' ORDER BY compile_id) AS compile_ids,
         flatten(list([v1, v2] ORDER BY ts, compile_id)) AS vals_seen,
         max(TRY_CAST(regexp_extract(compile_id, '/(\d+)$', 1) AS INTEGER)) FILTER (WHERE limit_hit) AS limit_compiles,
         string_agg(DISTINCT compile_id, ', ' ORDER BY compile_id) FILTER (WHERE limit_hit) AS limit_cids,
         list_distinct(list({'rank': rank, 'frame_no': frame_no})) AS frame_keys,
         list_distinct(list({'rank': rank, 'compile_id': compile_id})) AS compile_keys,
         min(ts) AS first_ts
  FROM keyed GROUP BY rule_id, run_id, item_key, subject),
per_rank AS (SELECT rule_id, run_id, item_key, subject, rank, sum(n)::BIGINT AS rn FROM keyed GROUP BY ALL),
items AS (  -- min_events on one rank; {times}: the count per rank
  SELECT i.*, CASE WHEN p.k <= 1 THEN times_of(i.n) WHEN p.lo = p.hi THEN times_of(p.hi) || ' on each of ' || p.k || ' ranks'
                   ELSE p.by_rank END AS times_text
  FROM items0 i JOIN (SELECT rule_id, run_id, item_key, subject, count(*) AS k, min(rn) AS lo, max(rn) AS hi,
                             string_agg(times_of(rn) || ' on rank ' || rank, ', ' ORDER BY rank) AS by_rank
                      FROM per_rank GROUP BY ALL) p
    ON p.rule_id = i.rule_id AND p.run_id = i.run_id AND p.item_key IS NOT DISTINCT FROM i.item_key AND p.subject IS NOT DISTINCT FROM i.subject
  WHERE p.hi >= i.min_events),
ifr AS (  -- the frames of each item, with their compiles and config
  SELECT i.rule_id, i.run_id, i.item_key, i.subject, sum(fr.frame_s) AS frame_s, max(c.cfg_limit) AS cfg_limit,
         bool_or(c.auto_off) AS auto_off, bool_or(c.auto_on) AS auto_on, bool_or(c.dyn_true) AS dyn_true,
         max(fr.compiles) AS compiles
  FROM (SELECT rule_id, run_id, item_key, subject, unnest(frame_keys) AS k FROM items) i
  JOIN fr ON fr.run_id = i.run_id AND fr.rank IS NOT DISTINCT FROM i.k.rank AND fr.frame_no = i.k.frame_no
  LEFT JOIN cfg c ON c.run_id = fr.run_id AND c.rank IS NOT DISTINCT FROM fr.rank AND c.frame_no = fr.frame_no
  GROUP BY ALL),
ics AS (  -- the compile time of each item's compiles
  SELECT i.rule_id, i.run_id, i.item_key, i.subject, sum(c.s) AS matched_s
  FROM (SELECT rule_id, run_id, item_key, subject, unnest(compile_keys) AS k FROM items) i
  JOIN cmc c ON c.run_id = i.run_id AND c.rank IS NOT DISTINCT FROM i.k.rank AND c.compile_id = i.k.compile_id
  GROUP BY ALL),
frc AS (  -- recompiles per frame (every cause): what a recompile-limit hit wasted
  SELECT run_id, rank, frame_no, count(*) AS recompiles FROM facts
  WHERE facts = 'recompiles' AND run_id IN (SELECT run_id FROM hit_runs) GROUP BY ALL),
ifrc AS (
  SELECT i.rule_id, i.run_id, i.item_key, i.subject, sum(c.recompiles)::BIGINT AS frame_recompiles
  FROM (SELECT rule_id, run_id, item_key, subject, unnest(frame_keys) AS k FROM items) i
  JOIN frc c ON c.run_id = i.run_id AND c.rank IS NOT DISTINCT FROM i.k.rank AND c.frame_no = i.k.frame_no
  GROUP BY ALL),
hit_frames AS (SELECT DISTINCT run_id, rank, frame_no FROM m WHERE limit_hit),
near AS (  -- the other frames of a run, by compiles: how close they are to the limit
  SELECT fr.run_id, string_agg(coalesce(fr.co_name, '?') || ' ' || fr.compiles || ' of ' || coalesce(fr.cfg_limit, l.text_limit, {DEFAULT_LIMIT}),
                               ', ' ORDER BY fr.compiles DESC, fr.co_name) AS closest
  FROM (SELECT run_id, co_name, compiles, cfg_limit, row_number() OVER (PARTITION BY run_id ORDER BY compiles DESC, co_name) AS k
        FROM (SELECT fr.run_id, fr.co_name, max(fr.compiles) AS compiles, max(c.cfg_limit) AS cfg_limit
              FROM fr ANTI JOIN hit_frames h ON h.run_id = fr.run_id AND h.rank IS NOT DISTINCT FROM fr.rank AND h.frame_no = fr.frame_no
              LEFT JOIN cfg c ON c.run_id = fr.run_id AND c.rank IS NOT DISTINCT FROM fr.rank AND c.frame_no = fr.frame_no
              WHERE fr.compiles > 1 AND fr.run_id IN (SELECT run_id FROM hit_runs) GROUP BY ALL)) fr
  LEFT JOIN lim l USING (run_id)
  WHERE fr.k <= 3 GROUP BY fr.run_id),
sorted AS (
  SELECT i.*, CASE WHEN len(list_filter(i.vals, lambda x: TRY_CAST(x AS DOUBLE) IS NULL)) = 0  -- numbers: in order; else as seen
                   THEN list_transform(list_sort(list_transform(i.vals, lambda x: {'n': TRY_CAST(x AS DOUBLE), 's': x})), lambda x: x.s)
                   ELSE i.vals END AS vs,
         f.frame_s, f.auto_off, f.auto_on, f.dyn_true, f.compiles AS frame_compiles,
         coalesce(f.cfg_limit, (SELECT max(c.text_limit) FROM lim_c c WHERE c.run_id = i.run_id
                                AND list_contains(string_split(i.limit_cids, ', '), c.compile_id)), l.text_limit) AS known_limit, s.matched_s, rcn.frame_recompiles, nr.closest
  FROM (SELECT *, list_filter(list_filter(vals_seen, lambda x: x IS NOT NULL),
                              lambda x, j: list_position(list_filter(vals_seen, lambda y: y IS NOT NULL), x) = j) AS vals FROM items) i
  LEFT JOIN ifr f USING (rule_id, run_id, item_key, subject)
  LEFT JOIN ics s USING (rule_id, run_id, item_key, subject)
  LEFT JOIN ifrc rcn USING (rule_id, run_id, item_key, subject)
  LEFT JOIN lim l USING (run_id)
  LEFT JOIN near nr USING (run_id)),
filled AS (
  SELECT *,
    CASE WHEN len(vs) = 0 THEN '?' WHEN len(vs) > 6 THEN array_to_string(vs[1:3], ', ') || ' … ' || vs[len(vs)] || ', ' || len(vs) || ' values'
         ELSE array_to_string(vs, ', ') END AS values_text,
    regexp_replace(regexp_replace(coalesce(subject, '?'), '\.size\(\)\[(\d+)\]$', ' dim \1'), '\.stride\(\)\[(\d+)\]$', ' stride \1') AS subject_text,
    CASE WHEN auto_off THEN '; compiled with automatic dynamic shapes off (dynamic=False or config.automatic_dynamic_shapes=False)'
         WHEN dyn_true THEN '; compiled with dynamic=True'
         WHEN auto_on THEN '; automatic dynamic shapes were on' ELSE '' END AS dynamic_text
  FROM sorted WHERE coalesce(len(vs), 0) >= min_values)
SELECT r.name AS run, f.run_id, f.rule_id AS id, f.finding,
       replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(f.tpl,
         '{subject}', f.subject_text), '{values}', f.values_text), '{n}', f.n::VARCHAR), '{times}', f.times_text), '{frame}', array_to_string(f.frames, ', ')),
         '{location}', coalesce(f.location, '?')), '{code}', coalesce(': `' || f.code || '`', '')), '{detail}', coalesce(f.detail, '?')),
         '{compile_ids}', coalesce(f.compile_ids, '?')),
         '{limit}', coalesce(f.known_limit::VARCHAR, '{DEFAULT_LIMIT}, the default')),
         '{compiles}', coalesce(', after ' || f.limit_compiles || ' compiles (refused: ' || f.limit_cids || ')', '')),
         '{closest}', coalesce(f.closest, CASE WHEN f.run_id IN (SELECT run_id FROM fr) THEN 'none (no other frame compiled more than once)'
                                              ELSE 'not known (these logs have no compile records)' END)), '{dynamic}', f.dynamic_text) AS evidence,
       f.frames, f.subject, f.location,
       round(coalesce(CASE WHEN f.cost = 'frame' THEN f.frame_s ELSE f.matched_s END, 0), 3) AS compile_s,
       CASE WHEN f.facts <> 'recompiles' THEN 0 WHEN f.cost = 'frame' THEN coalesce(f.frame_recompiles, f.n) ELSE f.n END AS recompiles,
       CASE WHEN f.facts = 'graph_breaks' THEN f.n ELSE 0 END AS breaks,
       CASE WHEN f.facts = 'failures' THEN f.n ELSE 0 END AS failures,
       f.advice, f.cost, f.ranks, f.compile_ids, f.rule_order, f.first_ts
FROM filled f JOIN runs r USING (run_id)
