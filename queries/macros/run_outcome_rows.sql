-- title: How each run ended
-- what: One row per selected run, from rank_outcomes(): a run hung when any rank hung; else it ended as its root-cause rank did (the first own failure, crash or kill in the capture; ChildFailedError's root cause on a tie); else as `pt2logs run` recorded; completed when every rank completed; else unknown. `pt2logs run`'s exit status 0 wins over all (pt2logs.query.outcome_rules).
-- params: p_run (a run id, id prefix, name or name prefix; NULL: every run), p_since (runs started at or after; NULL: no bound), p_until (runs started before; NULL: no bound), p_tag (KEY=VALUE; NULL: any)
-- columns: run_id, run, outcome, why, root_rank (the rank whose end decided), evidence_file, evidence_line, evidence, ranks, rank_outcomes (each rank's outcome), silent_first_rank, silent_first_at (the rank that went silent first, and when), silent_s, run_end, run_end_from
CREATE OR REPLACE MACRO run_outcome_rows(p_run, p_since, p_until, p_tag) AS TABLE
WITH ro AS (SELECT * FROM rank_outcomes(p_run, p_since, p_until, p_tag)),
per_run AS (
  SELECT run_id, any_value(run) AS run, count(*) AS ranks,
         bool_or(outcome = 'hung') AS any_hung,
         count(*) FILTER (WHERE outcome = 'completed') AS completed_ranks,
         arg_min(rank, epoch(last_event_at)) AS silent_first_rank,
         min(last_event_at) AS silent_first_at,
         max(run_end) AS run_end, any_value(run_end_from) AS run_end_from,
         string_agg(outcome || ' ' || coalesce(rank::VARCHAR, '-'), ', ' ORDER BY rank) AS rank_outcomes,
         arg_min({'rank': rank, 'outcome': outcome, 'why': why, 'file': evidence_file, 'line': evidence_line, 'text': evidence},
                 [CASE WHEN outcome = 'hung' AND rule = 'timeout' THEN 0 WHEN outcome = 'hung' THEN 1 ELSE 2 END,
                  coalesce(first_own_line, 1e12), CASE WHEN root_cause THEN 0 ELSE 1 END, coalesce(epoch(last_event_at), 0)])
           FILTER (WHERE outcome = 'hung' OR (outcome IN ('crashed', 'failed', 'killed') AND first_own_line IS NOT NULL)) AS root,
         arg_min({'rank': rank, 'outcome': outcome, 'why': why, 'file': evidence_file, 'line': evidence_line, 'text': evidence},
                 CASE outcome WHEN 'killed' THEN 0 WHEN 'failed' THEN 1 WHEN 'crashed' THEN 2 ELSE 3 END) AS other,
         arg_min({'rank': rank, 'why': why}, coalesce(rank, -1)) FILTER (WHERE rule = 'none' AND open_compiles > 0) AS open_end
  FROM ro GROUP BY run_id),
rec AS (
  SELECT run_id, arg_max(means, line_no) FILTER (WHERE kind = 'exit_status') AS record_means,
         arg_max(text, line_no) FILTER (WHERE kind = 'exit_status') AS record_text,
         arg_max(file, line_no) FILTER (WHERE kind = 'exit_status') AS record_file,
         arg_min({'file': file, 'line': line_no, 'text': text}, line_no)
           FILTER (WHERE kind <> 'exit_status' AND rank IS NULL AND means = 'killed' AND NOT coalesce(secondary, false)) AS outside
  FROM outcome_evidence WHERE run_id IN (SELECT run_id FROM per_run) GROUP BY run_id),
decided AS (
  SELECT p.*, x.record_means, x.record_text, x.record_file, x.outside,
         CASE WHEN x.record_means = 'completed' THEN 'completed'
              WHEN p.any_hung THEN 'hung'
              WHEN p.root IS NOT NULL THEN p.root.outcome
              WHEN x.record_means IS NOT NULL AND x.record_means <> 'info' THEN x.record_means
              WHEN x.outside IS NOT NULL THEN 'killed'
              WHEN p.completed_ranks = p.ranks THEN 'completed'
              WHEN p.other.outcome IN ('killed', 'failed', 'crashed') THEN p.other.outcome
              ELSE 'unknown' END AS outcome
  FROM per_run p LEFT JOIN rec x USING (run_id))
SELECT d.run_id, d.run, d.outcome,
       CASE WHEN d.outcome = 'completed' AND d.record_means = 'completed' THEN 'pt2logs run recorded exit status 0'
            WHEN d.root IS NOT NULL AND d.outcome = d.root.outcome
              THEN concat(CASE WHEN d.root.rank IS NOT NULL THEN concat('rank ', d.root.rank, ': ') ELSE '' END, d.root.why)
            WHEN d.record_text IS NOT NULL THEN d.record_text
            WHEN d.outside IS NOT NULL AND d.outcome = 'killed' THEN 'the job was stopped from outside: the launcher got a signal'
            WHEN d.outcome = 'completed' THEN 'every rank completed'
            WHEN d.other.outcome = d.outcome AND d.outcome IN ('killed', 'failed', 'crashed')
              THEN concat(CASE WHEN d.other.rank IS NOT NULL THEN concat('rank ', d.other.rank, ': ') ELSE '' END, d.other.why)
            WHEN d.outcome = 'unknown' AND d.open_end IS NOT NULL
              THEN concat(CASE WHEN d.open_end.rank IS NOT NULL THEN concat('rank ', d.open_end.rank, ': ') ELSE '' END, d.open_end.why)
            ELSE 'no exit status in the logs' END AS why,
       CASE WHEN d.root IS NOT NULL AND d.outcome = d.root.outcome THEN d.root.rank END AS root_rank,
       coalesce(CASE WHEN d.root IS NOT NULL AND d.outcome = d.root.outcome THEN d.root.file END, d.record_file,
                CASE WHEN d.outcome = 'killed' THEN d.outside.file END) AS evidence_file,
       CASE WHEN d.root IS NOT NULL AND d.outcome = d.root.outcome THEN d.root.line WHEN d.record_file IS NOT NULL THEN 1
            WHEN d.outcome = 'killed' THEN d.outside.line END AS evidence_line,
       coalesce(CASE WHEN d.root IS NOT NULL AND d.outcome = d.root.outcome THEN d.root.text END, d.record_text,
                CASE WHEN d.outcome = 'killed' THEN d.outside.text END) AS evidence,
       d.ranks, d.rank_outcomes, d.silent_first_rank, d.silent_first_at,
       round(epoch(d.run_end) - epoch(d.silent_first_at), 1) AS silent_s, d.run_end, d.run_end_from
FROM decided d;
