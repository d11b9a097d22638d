-- title: Advice
-- question: What should we do about it? One row per advice item (docs/advice.md): a finding of the advice table matched in a run's recompiles, graph breaks and failures, with the run's own evidence, the frames it applies to, what to do, and the cost at stake (compile seconds of the compiles involved, recompiles, breaks, failures; every rank added up). Most costly first.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), limit (optional, default 50)
-- The matching is the advice_items() macro (queries/macros/advice_items.sql, filled from src/pt2logs/query/advice.toml).
SELECT run, id, finding, evidence, array_to_string(frames, '; ') AS frames, compile_s, recompiles, breaks, failures,
       advice, subject, location, compile_ids, run_id
FROM advice_items($run_id, $since, $until, $tag)
ORDER BY compile_s DESC, recompiles + breaks + failures DESC, rule_order, run, evidence
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 50);
