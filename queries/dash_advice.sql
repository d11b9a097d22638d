-- title: Advice costing the most compile time this week
-- question: Which advice items (docs/advice.md) cost the most compile time in the runs of the last 7 days, and in which runs? One row per finding and subject on one frame or break site (the same item in several runs is one row), with its compile seconds, recompiles and breaks added up over the runs affected.
-- params: until (optional: end of "this week", default now), tag (optional: key=value), limit (optional, default 10)
-- The items of the advice query (advice_items(), src/pt2logs/query/advice.toml) of the runs that started in
-- the 7 days before `until`; `example` is the evidence of its most costly run; `some_runs` up to three
-- run names, most costly first.
SELECT id, any_value(finding) AS finding, subject,
       arg_max(evidence, compile_s) AS example,
       round(sum(compile_s), 3) AS compile_s,
       sum(recompiles)::BIGINT AS recompiles, sum(breaks)::BIGINT AS breaks, sum(failures)::BIGINT AS failures,
       count(DISTINCT run_id) AS runs,
       array_to_string(list_slice(list(run ORDER BY compile_s DESC, run), 1, 3), ', ') AS some_runs,
       any_value(advice) AS advice
FROM advice_items(NULL, coalesce($until, now()) - INTERVAL 7 DAY, coalesce($until, now()), $tag)
GROUP BY id, subject, array_to_string(frames, '; ')
ORDER BY sum(compile_s) DESC, sum(recompiles + breaks + failures) DESC, id, subject
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 10);
