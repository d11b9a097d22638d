-- title: Spyre stick padding waste
-- question: Which tensor shapes waste the most device bytes on stick padding?
-- params: run_id (optional, NULL = all runs)
SELECT
    dtype,
    host_shape,
    device_size,
    device_dtype,
    count(*)                                            AS transfers,
    min(host_bytes)                               AS host_bytes_each,
    min(device_bytes)                             AS device_bytes_each,
    min(padding_bytes)                            AS padding_bytes_each,
    sum(padding_bytes)                                  AS padding_bytes_total,
    round(100.0 * sum(padding_bytes) / nullif(sum(device_bytes), 0), 1) AS padding_pct
FROM transfers
WHERE ($run_id IS NULL OR run_id = $run_id)
  AND padding_bytes > 0
GROUP BY dtype, host_shape, device_size, device_dtype
ORDER BY padding_bytes_total DESC, transfers DESC, dtype
LIMIT 100
