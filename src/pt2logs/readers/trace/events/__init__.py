"""Handlers for TORCH_TRACE event kinds, one small module per family.

Importing this package registers every handler in
:data:`pt2logs.readers.trace.state.HANDLERS` / ``ARTIFACT_HANDLERS``.
``finish_file`` runs the end-of-file step of each module (closing open spans,
emitting per-compile rows).
"""

from pt2logs.readers.trace.events import basics, caches, compile_facts, metrics, phases, vllm
from pt2logs.readers.trace.state import TraceState

_FINISHERS = [phases.finish, compile_facts.finish, vllm.finish]


def finish_file(st: TraceState) -> None:
    for fn in _FINISHERS:
        fn(st)


__all__ = ["basics", "caches", "compile_facts", "metrics", "phases", "vllm", "finish_file"]
