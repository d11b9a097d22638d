"""Handlers for TORCH_TRACE event kinds, one small module per event family: basics (string table, frame,
torch version), metrics (``compilation_metrics``), phases (chromium events → ``compile_phases``),
compile_facts (recompiles, graph breaks, failures, guards, kernels), caches, vllm. Which handler takes
which record is the table in :mod:`pt2logs.readers.trace.handlers`.
"""
