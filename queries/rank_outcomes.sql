-- title: Rank outcomes
-- question: How did each rank of a run end (completed, failed, crashed, hung, killed or unknown), which line says so, and when did it go silent?
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
-- One row per rank (one row with rank NULL for a run without ranks), decided by the rules of
-- pt2logs.query.outcome_rules (docs/architecture.md, "Run outcomes"): `why` in words, the deciding line
-- (`evidence_file`:`evidence_line`, its text), the rank's last trace event and its silence before the
-- run's end (`silence_order` 1 = the rank that went silent first), compiles begun and never finished;
-- `gap_s` its rhythm (its largest gap between trace events or stderr lines), `quiet_s` its silence counting
-- its stderr lines too, `threshold_s` the silence that makes it hung (10 x its rhythm, at least 60 s).
SELECT run, rank, outcome, why, evidence_file, evidence_line, evidence_kind, evidence,
       exit_code, signal, last_event_at, silent_s, quiet_s, gap_s, threshold_s, run_end, run_end_from,
       compiles, open_compiles, open_compile_ids, open_phase,
       silence_order, run_id
FROM (SELECT *, CASE WHEN last_event_at IS NOT NULL
                     THEN row_number() OVER (PARTITION BY run_id ORDER BY last_event_at NULLS LAST, rank) END AS silence_order
      FROM rank_outcomes($run_id, $since, $until, $tag))
ORDER BY run, run_id, rank NULLS FIRST;
