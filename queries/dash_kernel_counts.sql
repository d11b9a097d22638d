-- title: Kernels by backend and kind
-- question: How many kernels do the selected runs generate, per backend and kind, and how many came from the FX-graph cache? Counts and seconds add up every rank of every selected run.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
-- Like kernel_counts, summed over runs (one row per backend and kind, however many runs).
-- each run's kernels counted by backend and kind: run_facts() (kept per commit)
SELECT backend, kernel_kind AS kind,
       sum(n)::BIGINT AS kernels,
       sum(fresh)::BIGINT AS fresh,
       sum(from_cache)::BIGINT AS from_cache,
       count(DISTINCT run_id) AS runs,
       sum(kernel_compiles)::BIGINT AS compiles
FROM run_facts($run_id, $since, $until, $tag)
WHERE what = 'kernel'
GROUP BY backend, kernel_kind
ORDER BY kernels DESC, backend, kind;
