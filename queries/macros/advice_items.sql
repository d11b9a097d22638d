-- title: Advice items
-- what: advice.toml's rules matched against the selected runs' facts (pt2logs.query.advice; docs/advice.md). One row per item: a rule, a run, a frame or break site (cache lookups: a reason), a subject. Steps: facts (every recompile, graph break, failed compile, cache lookup and CUDA-graph skip in one shape); each distinct kind of fact (advice.MATCH_COLUMNS) to the first rule whose conditions hold (one CASE of constant patterns: DuckDB compiles each once); items grouped, those with fewer than min_events facts on one rank dropped, the evidence template filled in, the frames' compile time and the dynamo config in force (each distinct config text parsed once, found again by its hash) joined. The recompile limit in force is the config's, else the one the warning names (log_lines), else the one gb0039's explanation names, else torch's default.
-- params: p_run (a run id, id prefix, name or name prefix; NULL: every run), p_since (runs started at or after; NULL: no bound), p_until (runs started before; NULL: no bound), p_tag (KEY=VALUE; NULL: any)
-- fills: rule_case, subject_case, detail_case, cache_filter, kind_columns, kind_join, default_limit
-- columns: run, run_id, id (the rule), finding, evidence (the template filled in), frames, subject, location, compile_s (the cost: compile seconds of the compiles involved, or of their frames), recompiles, breaks, failures, advice, cost, ranks, compile_ids, rule_order, first_ts
-- Why the config's hash, not its text: a compile's config is a ~5 KB text that every compile repeats (the
-- bench's 10,000 runs: 86,000 compiles, 4 distinct texts); hashed as it is read, the text goes no further.
-- Joining the compiles to the distinct texts by the text itself, or reading only the compiles of the frames
-- an item shows (which waits for the facts to be matched), took `advice` from 0.7 s to 0.85-1.3 s there.
-- Facts repeat (the same break in every run of a program): the patterns run once per distinct kind of fact.
-- A run whose live transaction's items were kept after its commit (_advice_items_kept) is read from them.
CREATE OR REPLACE MACRO advice_items(p_run, p_since, p_until, p_tag) AS TABLE
WITH sel0 AS (SELECT run_id FROM selected_runs(p_run, p_since, p_until, p_tag)),
-- the items kept for a run's live transaction (pt2logs.query.kept_rows; a row with id NULL per run matched) are
-- read; the other runs are matched here
kept AS (SELECT * EXCLUDE (txn) FROM _advice_items_kept WHERE run_id IN (SELECT run_id FROM sel0)),
sel AS (SELECT run_id FROM sel0 WHERE run_id NOT IN (SELECT run_id FROM kept)),
ru AS (SELECT * FROM advice_rules()),
cm AS (
  SELECT run_id, rank, compile_id, frame_id AS frame_no,
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
  SELECT 'recompiles' AS facts, run_id, rank, compile_id, frame_id AS frame_no, frame_compile_id, ts, co_name, function_file(co_file, co_filename) AS ffile,
         function_line(co_file_kind, co_firstlineno) AS fline, cause, guard_kind,
         coalesce(guard_source, guard_subject) AS subject0, guard_expected AS v1, guard_actual AS v2,
         coalesce(is_limit_hit, false) AS limit_hit, NULL::VARCHAR AS gb_id, NULL::VARCHAR AS exc_type,
         coalesce(reason, '') AS text, NULL::VARCHAR AS location,
         -- a Python guard is followed by "# <its source line>  # <file:line in fn>" (torch 2.1+)
         nullif(trim(regexp_extract(reason, '#\s*(.*?)\s+#\s*\S+:\d+', 1)), '') AS code,
         NULL::VARCHAR AS detail0, 1::BIGINT AS n
  FROM recompiles WHERE run_id IN (SELECT run_id FROM sel) AND since_partition(ingest_date, p_since)),
gb AS (
  SELECT 'graph_breaks' AS facts, run_id, rank, compile_id, frame_id AS frame_no, ts, co_name, function_file(co_file, co_filename) AS ffile,
         function_line(co_file_kind, co_firstlineno) AS fline, gb_id, concat_ws(chr(10), gb_type, reason, explanation) AS text,
         site_file || ':' || site_line AS location,
         -- data-dependent branching explains itself with "# File F, line N, in fn, code: <line>" (2.7+)
         nullif(trim(regexp_extract(reason, 'code: ([^\n]*)', 1)), '') AS code, coalesce(occurrences, 1)::BIGINT AS n
  FROM graph_break_sites() WHERE run_id IN (SELECT run_id FROM sel) AND since_partition(ingest_date, p_since)),
fl AS (
  SELECT 'failures' AS facts, run_id, rank, compile_id, frame_id AS frame_no, ts, co_name, function_file(co_file, co_filename) AS ffile,
         function_line(co_file_kind, co_firstlineno) AS fline, coalesce(exc_type, fail_type) AS exc_type,
         coalesce(exc_type, fail_type) AS subject0, coalesce(exc_message, fail_reason, '') AS text,
         frame_file || ':' || frame_line AS location, left(message_line(coalesce(exc_message, fail_reason, '')), 200) AS detail0,
         1::BIGINT AS n
  FROM failures WHERE NOT coalesce(is_restart, false) AND run_id IN (SELECT run_id FROM sel) AND since_partition(ingest_date, p_since)),
ce AS (
  SELECT 'cache_events' AS facts, run_id, rank, compile_id, frame_id AS frame_no, ts, outcome, cache AS subject0, coalesce(reason, '') AS text,
         nullif(left(trim(split_part(reason, chr(10), 1)), 200), '') AS detail0, 1::BIGINT AS n
  FROM cache_events WHERE {{cache_filter}} AND run_id IN (SELECT run_id FROM sel) AND since_partition(ingest_date, p_since)),
cg AS (  -- CUDA-graph skips: text = event, reason kind and reason on three lines (rules match reason kinds)
  SELECT 'cudagraph_skips' AS facts, run_id, rank, compile_id, frame_id AS frame_no, ts, coalesce(co_name, function) AS co_name,
         reason_kind AS subject0, concat_ws(chr(10), event, reason_kind, reason) AS text,
         frame_file || ':' || frame_line AS location, left(reason, 200) AS detail0, 1::BIGINT AS n
  FROM cudagraph_skips WHERE run_id IN (SELECT run_id FROM sel) AND since_partition(ingest_date, p_since)),
facts AS (
  SELECT row_number() OVER () AS fid, f.* REPLACE (coalesce(f.co_name, fr.co_name) AS co_name, coalesce(f.ffile, fr.ffile) AS ffile,
         coalesce(f.fline, fr.fline) AS fline)
  FROM (SELECT * FROM rc UNION ALL BY NAME SELECT * FROM gb UNION ALL BY NAME SELECT * FROM fl UNION ALL BY NAME SELECT * FROM ce
        UNION ALL BY NAME SELECT * FROM cg) f
  LEFT JOIN fr ON fr.run_id = f.run_id AND fr.rank IS NOT DISTINCT FROM f.rank
       AND fr.frame_no = f.frame_no),
kinds AS (  -- the first rule (advice.toml's order) each distinct kind of fact matches: facts repeat (the same
            -- break in every run of a program), so the patterns are tried once per kind
  SELECT f.*, {{rule_case}} AS rule_id
  FROM (SELECT DISTINCT {{kind_columns}} FROM facts) f),
ruled AS (  -- and the rule's subject and detail patterns applied to its text
  SELECT m.* EXCLUDE (text), {{subject_case}} AS subject_found, {{detail_case}} AS detail_found, m.text FROM kinds m),
m AS (  -- each fact to its rule (its text stays behind: matched once above)
  SELECT * FROM (
    SELECT f.* EXCLUDE (text), r.rule_id, r.subject_found, r.detail_found,
           coalesce(f.co_name, '?') || coalesce(' (' || f.ffile || coalesce(':' || f.fline, '') || ')', '') AS frame
    FROM facts f JOIN ruled r ON {{kind_join}}) f
  JOIN (SELECT rule_id, subject_default FROM ru) USING (rule_id)),  -- the rule's texts join its items, below
ms AS (
  SELECT m.* EXCLUDE (subject0, subject_found, detail_found),
         coalesce(m.subject_found, m.subject0, m.subject_default) AS subject, coalesce(m.detail_found, m.detail0) AS detail
  FROM m),
hit_runs AS (SELECT DISTINCT run_id FROM m WHERE limit_hit),
cfg_frames AS (  -- the frames whose config an item shows: those of matched recompiles, every frame of a run with a limit hit
  SELECT DISTINCT run_id, rank, frame_no FROM m WHERE facts = 'recompiles'
  UNION SELECT run_id, rank, frame_no FROM fr WHERE run_id IN (SELECT run_id FROM hit_runs)),
cm_cfg AS MATERIALIZED (  -- the compiles with a config: its hash (hashed as it is read, the text goes no further;
                          -- every compile of the selection: read while the facts are matched, see above)
  SELECT run_id, rank, frame_id AS frame_no, hash(dynamo_config) AS h
  FROM compilation_metrics
  WHERE kind = 'compilation_metrics' AND dynamo_config IS NOT NULL AND since_partition(ingest_date, p_since)
    AND run_id IN (SELECT run_id FROM sel)),
cfg_text AS (  -- each distinct config parsed once (compiles repeat theirs); several paths at once
  SELECT hash(t) AS h, count(*) OVER (PARTITION BY hash(t)) = 1 AS sole, TRY(json_extract_string(t, ['$.automatic_dynamic_shapes', '$.assume_static_by_default', '$.recompile_limit',
                          '$.cache_size_limit'])) AS v
  FROM (SELECT DISTINCT dynamo_config AS t FROM compilation_metrics
        WHERE kind = 'compilation_metrics' AND dynamo_config IS NOT NULL AND since_partition(ingest_date, p_since)
          AND run_id IN (SELECT run_id FROM sel))),
cfg AS (  -- the dynamo config they were compiled under
  SELECT c.run_id, c.rank, c.frame_no, max(coalesce(TRY_CAST(v[3] AS INTEGER), TRY_CAST(v[4] AS INTEGER))) AS cfg_limit,
         bool_or(v[1] = 'false') AS auto_off, bool_or(v[1] = 'true') AS auto_on, bool_or(v[2] = 'false') AS dyn_true
  FROM (SELECT c.run_id, c.rank, c.frame_no, t.v FROM cm_cfg c JOIN cfg_text t ON t.h = c.h AND t.sole
        UNION ALL  -- two configs of one hash: those compiles' configs parsed one by one
        SELECT run_id, rank, frame_id, TRY(json_extract_string(dynamo_config, ['$.automatic_dynamic_shapes', '$.assume_static_by_default', '$.recompile_limit',
                                         '$.cache_size_limit']))
        FROM compilation_metrics
        WHERE kind = 'compilation_metrics' AND dynamo_config IS NOT NULL AND since_partition(ingest_date, p_since)
          AND run_id IN (SELECT run_id FROM cfg_frames) AND hash(dynamo_config) IN (SELECT h FROM cfg_text WHERE NOT sole)) c
  SEMI JOIN cfg_frames f ON f.run_id = c.run_id AND f.rank IS NOT DISTINCT FROM c.rank AND f.frame_no = c.frame_no
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
rank_n AS (  -- each item's count per rank: min_events holds on one rank; {times} says it per rank
  SELECT rule_id, run_id, item_key, subject, max(rn) AS max_rank_n, count(*) AS n_ranks,
         min(rn) = max(rn) AS same_n, string_agg(times_of(rn) || ' on rank ' || rank, ', ' ORDER BY rank) AS times_by_rank
  FROM (SELECT rule_id, run_id, item_key, subject, rank, sum(n)::BIGINT AS rn FROM keyed GROUP BY ALL)
  GROUP BY ALL),
items AS (
  SELECT i.rule_id, ru.rule_order, i.* EXCLUDE (rule_id), ru.finding, ru.evidence_tpl AS tpl, ru.advice, ru.cost, ru.min_values,
         CASE WHEN rank_n.n_ranks <= 1 THEN times_of(i.n) WHEN rank_n.same_n
              THEN times_of(rank_n.max_rank_n) || ' on each of ' || rank_n.n_ranks || ' ranks' ELSE rank_n.times_by_rank END AS times_text
  FROM (
  SELECT rule_id, run_id, item_key, subject, any_value(facts) AS facts,
         sum(n)::BIGINT AS n, list_sort(list_distinct(list(frame))) AS frames, min(location) AS location, min(code) AS code,
         min(detail) AS detail, list_distinct(list(rank) FILTER (WHERE rank IS NOT NULL)) AS ranks,
         string_agg(DISTINCT compile_id, ', ' ORDER BY compile_id) AS compile_ids,
         flatten(list([v1, v2] ORDER BY ts, compile_id)) AS vals_seen,
         max(frame_compile_id) FILTER (WHERE limit_hit) AS limit_compiles,
         string_agg(DISTINCT compile_id, ', ' ORDER BY compile_id) FILTER (WHERE limit_hit) AS limit_cids,
         min(ts) AS first_ts
  FROM keyed GROUP BY rule_id, run_id, item_key, subject) i
  JOIN ru USING (rule_id)
  JOIN rank_n ON rank_n.rule_id = i.rule_id AND rank_n.run_id = i.run_id AND rank_n.item_key IS NOT DISTINCT FROM i.item_key
       AND rank_n.subject IS NOT DISTINCT FROM i.subject
  WHERE rank_n.max_rank_n >= ru.min_events),
item_frames AS (SELECT DISTINCT rule_id, run_id, item_key, subject, rank, frame_no FROM keyed),
ifr AS (  -- the frames of each item, with their compiles and config
  SELECT i.rule_id, i.run_id, i.item_key, i.subject, sum(fr.frame_s) AS frame_s, max(c.cfg_limit) AS cfg_limit,
         bool_or(c.auto_off) AS auto_off, bool_or(c.auto_on) AS auto_on, bool_or(c.dyn_true) AS dyn_true,
         max(fr.compiles) AS compiles
  FROM item_frames i JOIN fr ON fr.run_id = i.run_id AND fr.rank IS NOT DISTINCT FROM i.rank AND fr.frame_no = i.frame_no
  LEFT JOIN cfg c ON c.run_id = fr.run_id AND c.rank IS NOT DISTINCT FROM fr.rank AND c.frame_no = fr.frame_no
  GROUP BY ALL),
ics AS (  -- the compile time of each item's compiles
  SELECT i.rule_id, i.run_id, i.item_key, i.subject, sum(c.s) AS matched_s
  FROM (SELECT DISTINCT rule_id, run_id, item_key, subject, rank, compile_id FROM keyed) i
  JOIN cmc c ON c.run_id = i.run_id AND c.rank IS NOT DISTINCT FROM i.rank AND c.compile_id = i.compile_id
  GROUP BY ALL),
frc AS (  -- recompiles per frame (every cause): what a recompile-limit hit wasted
  SELECT run_id, rank, frame_no, count(*) AS recompiles FROM facts
  WHERE facts = 'recompiles' AND run_id IN (SELECT run_id FROM hit_runs) GROUP BY ALL),
ifrc AS (
  SELECT i.rule_id, i.run_id, i.item_key, i.subject, sum(c.recompiles)::BIGINT AS frame_recompiles
  FROM item_frames i JOIN frc c ON c.run_id = i.run_id AND c.rank IS NOT DISTINCT FROM i.rank AND c.frame_no = i.frame_no
  GROUP BY ALL),
hit_frames AS (SELECT DISTINCT run_id, rank, frame_no FROM m WHERE limit_hit),
near AS (  -- the other frames of a run, by compiles: how close they are to the limit
  SELECT fr.run_id, string_agg(coalesce(fr.co_name, '?') || ' ' || fr.compiles || ' of ' || coalesce(fr.cfg_limit, l.text_limit, {{default_limit}}),
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
         '{limit}', coalesce(f.known_limit::VARCHAR, '{{default_limit}}, the default')),
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
UNION ALL BY NAME
SELECT * FROM kept WHERE id IS NOT NULL;
