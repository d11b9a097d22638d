"""Every warehouse table, declared with :func:`pt2logs.tables.schema.table`.

Importing this package registers all of them in :data:`pt2logs.tables.schema.TABLES`.
One module per family: ``core`` (runs, files, raw events, metrics, errors),
``compile`` (tables derived from compile events), ``shapes`` (dynamic shapes, CUDA graphs), ``text`` (TORCH_LOGS text,
counters), ``spyre`` (torch-spyre device logs), ``vllm`` (vLLM compile logs).
"""

from pt2logs.tables import compile, core, outcomes, shapes, spyre, text, vllm  # noqa: F401  (registration)
from pt2logs.tables.schema import TABLES

__all__ = ["TABLES"]
