-- title: Spyre transfer volume
-- question: How many bytes went each way, in which dtypes?
-- params: run_id (optional, NULL = all runs)
SELECT
    coalesce(direction, 'unknown')              AS direction,
    coalesce(dtype, 'unknown')                  AS dtype,
    count(*)                                    AS transfers,
    sum(host_bytes)                             AS host_bytes,
    sum(device_bytes)                           AS device_bytes,
    sum(padding_bytes)                          AS padding_bytes,
    count(*) FILTER (WHERE NOT complete)        AS incomplete_transfers
FROM transfers
WHERE ($run_id IS NULL OR run_id = $run_id)
GROUP BY ALL
ORDER BY host_bytes DESC NULLS LAST, direction, dtype
