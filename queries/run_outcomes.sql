-- title: Run outcomes
-- question: How did each run end (completed, failed, crashed, hung, killed or unknown), because of which rank and which line, and which rank went silent first?
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), outcome (optional: only runs with this outcome)
-- A run hung when any rank hung; else it ended as its root-cause rank did (the rank whose own
-- failure, crash or kill comes first in the capture, ChildFailedError's root cause on a tie); else as
-- pt2logs run recorded; completed when every rank completed. `silent_first_rank` is the rank whose
-- last trace event came first, `silent_s` how long before the run's end.
WITH ro AS (SELECT * FROM rank_outcomes($run_id, $since, $until, $tag)),
per_run AS (
  SELECT run_id, any_value(run) AS run, count(*) AS ranks,
         bool_or(outcome = 'hung') AS any_hung,
         count(*) FILTER (WHERE outcome = 'completed') AS completed_ranks,
         arg_min(rank, epoch(last_event_at)) AS silent_first_rank,
         min(last_event_at) AS silent_first_at,
         max(run_end) AS run_end, any_value(run_end_from) AS run_end_from,
         string_agg(outcome || ' ' || coalesce(rank::VARCHAR, '-'), ', ' ORDER BY rank) AS rank_outcomes,
         arg_min({'rank': rank, 'outcome': outcome, 'why': why, 'file': evidence_file, 'line': evidence_line, 'text': evidence},
                 CASE WHEN outcome = 'hung' AND rule = 'timeout' THEN 0 WHEN outcome = 'hung' THEN 1 ELSE 2 END * 1e15
                 + coalesce(first_own_line, 1e12) * 10 + CASE WHEN root_cause THEN 0 ELSE 1 END)
           FILTER (WHERE outcome = 'hung' OR (outcome IN ('crashed', 'failed', 'killed') AND first_own_line IS NOT NULL)) AS root,
         arg_min({'rank': rank, 'outcome': outcome, 'why': why, 'file': evidence_file, 'line': evidence_line, 'text': evidence},
                 CASE outcome WHEN 'killed' THEN 0 WHEN 'failed' THEN 1 WHEN 'crashed' THEN 2 ELSE 3 END) AS other
  FROM ro GROUP BY run_id),
rec AS (
  SELECT run_id, arg_max(means, line_no) AS record_means, arg_max(text, line_no) AS record_text,
         arg_max(file, line_no) AS record_file
  FROM outcome_evidence WHERE kind = 'exit_status' AND run_id IN (SELECT run_id FROM per_run) GROUP BY run_id),
decided AS (
  SELECT p.*, x.record_means, x.record_text, x.record_file,
         CASE WHEN x.record_means = 'completed' THEN 'completed'
              WHEN p.any_hung THEN 'hung'
              WHEN p.root IS NOT NULL THEN p.root.outcome
              WHEN x.record_means IS NOT NULL AND x.record_means <> 'info' THEN x.record_means
              WHEN p.completed_ranks = p.ranks THEN 'completed'
              WHEN p.other.outcome IN ('killed', 'failed', 'crashed') THEN p.other.outcome
              ELSE 'unknown' END AS outcome
  FROM per_run p LEFT JOIN rec x USING (run_id))
SELECT d.run, d.outcome,
       CASE WHEN d.outcome = 'completed' AND d.record_means = 'completed' THEN 'pt2logs run recorded exit status 0'
            WHEN d.root IS NOT NULL AND d.outcome = d.root.outcome
              THEN concat(CASE WHEN d.root.rank IS NOT NULL THEN concat('rank ', d.root.rank, ': ') ELSE '' END, d.root.why)
            WHEN d.record_text IS NOT NULL THEN d.record_text
            WHEN d.outcome = 'completed' THEN 'every rank completed'
            WHEN d.other.outcome = d.outcome AND d.outcome IN ('killed', 'failed', 'crashed') THEN concat(CASE WHEN d.other.rank IS NOT NULL THEN concat('rank ', d.other.rank, ': ') ELSE '' END, d.other.why)
            ELSE 'no exit status in the logs' END AS why,
       CASE WHEN d.root IS NOT NULL AND d.outcome = d.root.outcome THEN d.root.rank END AS root_rank,
       coalesce(CASE WHEN d.root IS NOT NULL AND d.outcome = d.root.outcome THEN d.root.file END, d.record_file) AS evidence_file,
       CASE WHEN d.root IS NOT NULL AND d.outcome = d.root.outcome THEN d.root.line WHEN d.record_file IS NOT NULL THEN 1 END AS evidence_line,
       coalesce(CASE WHEN d.root IS NOT NULL AND d.outcome = d.root.outcome THEN d.root.text END, d.record_text) AS evidence,
       d.ranks, d.rank_outcomes, d.silent_first_rank, d.silent_first_at,
       round(epoch(d.run_end) - epoch(d.silent_first_at), 1) AS silent_s, d.run_end, d.run_end_from,
       r.command, r.exit_code, r.wall_s, r.started_at, r.tags, d.run_id
FROM decided d JOIN runs r USING (run_id)
WHERE $outcome IS NULL OR d.outcome = $outcome
ORDER BY r.started_at DESC NULLS LAST, d.run;
