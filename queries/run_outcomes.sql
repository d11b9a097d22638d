-- title: Run outcomes
-- question: How did each run end (completed, failed, crashed, hung, killed or unknown), because of which rank and which line, and which rank went silent first?
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), outcome (optional: only runs with this outcome)
-- The run-level rules of pt2logs.query.outcome_rules (docs/architecture.md, "Run outcomes"): a run hung
-- when any rank hung; else it ended as its root-cause rank did (the rank whose own failure, crash
-- or kill comes first in the capture); else as pt2logs run recorded; completed when every rank
-- completed. `evidence_file`:`evidence_line` is the deciding line; `silent_first_rank` the rank
-- whose last trace event came first, `silent_s` how long before the run's end.
SELECT o.run, o.outcome, o.why, o.root_rank, o.evidence_file, o.evidence_line, o.evidence,
       o.ranks, o.rank_outcomes, o.silent_first_rank, o.silent_first_at, o.silent_s, o.run_end, o.run_end_from,
       r.command, r.exit_code, r.wall_s, r.started_at, r.tags, o.run_id
FROM run_outcome_rows($run_id, $since, $until, $tag) o JOIN runs r USING (run_id)
WHERE $outcome IS NULL OR o.outcome = $outcome
ORDER BY r.started_at DESC NULLS LAST, o.run;
