-- title: The non-overlapping stages of frame compiles
-- what: Each nested time of a compilation_metrics record clamped to the one that contains it, so the stages add up (backend within the whole, inductor within backend, codegen within inductor).
-- params: none
-- columns: run_id, rank, ingest_date, total (entire_frame_compile_time_s), backend, inductor, codegen (seconds, each at most the one that contains it)
CREATE OR REPLACE MACRO frame_compile_stages() AS TABLE
SELECT run_id, rank, ingest_date,
       coalesce(entire_frame_compile_time_s, 0) AS total,
       least(coalesce(backend_compile_time_s, 0), coalesce(entire_frame_compile_time_s, 0)) AS backend,
       least(coalesce(inductor_compile_time_s, 0), coalesce(backend_compile_time_s, 0)) AS inductor,
       least(coalesce(code_gen_time_s, 0), coalesce(inductor_compile_time_s, 0)) AS codegen
FROM compilation_metrics
WHERE kind = 'compilation_metrics';
