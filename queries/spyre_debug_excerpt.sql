-- title: Spyre debug log excerpt and kernel specs
-- question: For a Spyre run, what did the TORCH_SPYRE_DEBUG log say about the last copies and kernel launches (the lines as logged), and which kernel specs (sdsc json files) belong to the kernels launched?
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), limit (optional, default 60: log lines per file)
-- Rows of two kinds: `part` = log (the last `limit` Spyre lines of each log file about tensors, allocations,
-- layouts, copies and launches, and its warnings and errors, in file order) and `part` = spec (each sdsc
-- json kernel spec, with `path` to read it from, `launched`: the kernel launches whose name names one of
-- its ops, and `last_launch`: where the last of them is logged; the spec launched last comes first).
WITH sel AS (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)),
logs AS (
  SELECT run_id, file, line_no, n_lines, kind, message,
         row_number() OVER (PARTITION BY run_id, file ORDER BY line_no DESC) AS from_end
  FROM spyre_messages
  WHERE run_id IN (SELECT run_id FROM sel)
    AND (kind IN ('tensor_info', 'allocate', 'allocated', 'layout', 'copy_src', 'copy_dst', 'dci', 'run', 'generating', 'copy', 'status')
         OR level IN ('WARNING', 'ERROR', 'CRITICAL', 'FATAL'))),
launches AS (SELECT run_id, kernel_name, count(*) AS n, max(file || ':' || lpad(line_no::VARCHAR, 12, '0')) AS last_at
             FROM kernel_launches WHERE run_id IN (SELECT run_id FROM sel) GROUP BY ALL),
specs AS (
  SELECT k.run_id, k.file, min(k.line_no) AS line_no, string_agg(DISTINCT k.kernel_name, ', ') AS kernels,
         flatten(list(k.fused_ops)) AS ops
  FROM kernels k WHERE k.backend = 'spyre' AND k.run_id IN (SELECT run_id FROM sel) GROUP BY ALL)
SELECT r.name AS run, 'log' AS part, l.file, l.line_no, l.n_lines, l.kind, l.message AS text, NULL AS path, NULL AS launched,
       NULL AS last_launch
FROM logs l JOIN runs r USING (run_id)
WHERE l.from_end <= coalesce(TRY_CAST($limit AS INTEGER), 60)
UNION ALL
SELECT r.name, 'spec', s.file, s.line_no, NULL, NULL, s.kernels, f.path,
       string_agg(la.kernel_name || ' ×' || la.n, ', ' ORDER BY la.kernel_name), max(la.last_at)
FROM specs s JOIN runs r USING (run_id) LEFT JOIN files f ON f.run_id = s.run_id AND f.relpath = s.file
LEFT JOIN launches la ON la.run_id = s.run_id
     AND len(list_intersect(s.ops, string_split(regexp_replace(la.kernel_name, '^sdsc_(fused_)?|_\d+$', '', 'g'), '_'))) > 0
GROUP BY r.name, s.file, s.line_no, s.kernels, f.path
ORDER BY run, part, last_launch DESC NULLS LAST, file, line_no;
