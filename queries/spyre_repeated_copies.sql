-- title: Spyre tensors copied more than once
-- question: Which tensors were copied between host and device more than once (back and forth)?
-- params: run_id (optional, NULL = all runs)
SELECT
    run_id,
    -- the logs carry no tensor identity: a tensor is its name when a model_utils line gave one,
    -- else its dtype and host shape (so same-shaped unnamed tensors are counted together)
    coalesce(tensor_name, dtype || ' ' || CAST(host_shape AS VARCHAR)) AS tensor,
    dtype,
    host_shape,
    count(*)                                                    AS copies,
    count(*) FILTER (WHERE direction = 'host_to_device')        AS to_device,
    count(*) FILTER (WHERE direction = 'device_to_host')        AS to_host,
    count(*) FILTER (WHERE direction = 'device_to_device')      AS on_device,
    sum(host_bytes)                                             AS host_bytes,
    min(line_no)                                                AS first_line,
    max(line_no)                                                AS last_line
FROM transfers
WHERE ($run_id IS NULL OR run_id = $run_id)
  AND host_shape IS NOT NULL
GROUP BY run_id, tensor_name, dtype, host_shape
HAVING count(*) > 1
ORDER BY copies DESC, host_bytes DESC NULLS LAST, tensor
