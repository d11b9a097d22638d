"""Every warehouse table, declared with :func:`pt2logs.tables.schema.table`.

Importing this package registers all of them in :data:`pt2logs.tables.schema.TABLES`.
One module per family: ``core`` (runs, files, raw events, metrics, errors),
``compile`` (tables derived from compile events), ``shapes`` (dynamic shapes, CUDA graphs), ``text`` (TORCH_LOGS text,
counters), ``spyre`` (torch-spyre device logs), ``vllm`` (vLLM compile logs).
"""

from pt2logs.tables import (  # noqa: F401  (registration)
    codegen,
    collectives,
    compile,
    core,
    outcomes,
    shapes,
    spyre,
    text,
    vllm,
)
from pt2logs.tables.schema import TABLES

__all__ = ["TABLES"]
