-- title: Why a cache missed
-- question: For each cache lookup that missed or was bypassed, why? Compared with the same lookup (same function and nth compile of it, rank, cache and lookup number) in the run before it with the same tags — or in the run given as base — is the key the same (the entry was not in this run's cache: cache folder not kept, another machine, evicted) or did components of the key differ (torch version, config, graph, inputs, device…), and which?
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), base (optional: the run to compare with; default: for each run, the newest run started before it with the same tags that made the same lookup)
-- `why` says it in a sentence; `differs`: the kinds of the components whose hashes differ (graph, inputs, config, torch_version,
-- device, settings, custom_passes, other); `components`: their names (up to 6; `pt2logs query
-- cache_key_diff` lists each with both values). A key without components (AOTAutograd in recent torch
-- logs them only with its logger at DEBUG) can only say that the key differs. The rules:
-- queries/macros/cache_pairs.sql and cache_pair_diffs.sql.
WITH paired AS MATERIALIZED (  -- each pair, with its differing components in words (NULL for a pair with none)
  SELECT *,
         CASE WHEN len(diffs) > 0 THEN nullif(array_to_string(list_sort(list_distinct(list_transform(diffs, lambda x: x.kind))), ', '), '')
              END AS differs,
         CASE WHEN len(diffs) > 0 THEN array_to_string(list_sort(list_transform(diffs, lambda x: x.component), 'ASC', 'NULLS LAST')[1:6], ', ')
           || CASE WHEN len(diffs) > 6 THEN ' (+' || (len(diffs) - 6) || ')' ELSE '' END END AS components
  FROM cache_pair_diffs($run_id, $since, $until, $tag, $base)),
per_compile AS (  -- what differs in a compile's keys that have components (for a cache that logged none)
  SELECT run_id, rank, compile_id, string_agg(DISTINCT differs, ', ' ORDER BY differs) AS differs  -- in a defined order
  FROM paired WHERE len(diffs) > 0
  GROUP BY ALL)
SELECT p.run, p.rank, p.compile_id, p.co_name AS function, p.cache, p.lookup, p.outcome, p.base_run, p.base_outcome,
       CASE WHEN p.outcome = 'bypass' THEN 'bypass: ' || coalesce(p.reason, 'no reason logged')
            WHEN p.base_run IS NULL THEN 'no earlier run made this lookup: a cold start'
            WHEN p.key IS NULL OR p.base_key IS NULL THEN 'a key is missing: cannot compare'
            WHEN p.key = p.base_key THEN 'same key as ' || p.base_run || ' (' || coalesce(p.base_outcome, '?')
                 || '): the entry was not in the cache (cache folder not kept, another machine, or evicted)'
            WHEN p.n_components = 0 OR p.base_components = 0 THEN 'key differs; torch logged no components for this cache'
                 || coalesce(' (this compile''s other keys differ in ' || pc.differs || ')', '')
            ELSE 'key differs in ' || coalesce(p.differs || ': ' || p.components, '?') END AS why,
       p.differs, p.components,
       p.key, p.base_key, p.file, p.line_no
FROM paired p
LEFT JOIN per_compile pc ON pc.run_id = p.run_id AND pc.rank IS NOT DISTINCT FROM p.rank AND pc.compile_id IS NOT DISTINCT FROM p.compile_id
ORDER BY p.started_at, p.run, p.rank, p.line_no;
