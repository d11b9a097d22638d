"""Every warehouse table, declared with :func:`pt2logs.schema.table`.

Importing this package registers all of them in :data:`pt2logs.schema.TABLES`.
One module per family: ``core`` (runs, files, raw events, metrics, errors),
``compile`` (tables derived from compile events), ``text`` (TORCH_LOGS text,
counters), ``spyre`` (torch-spyre device logs), ``vllm`` (vLLM compile logs).
"""

from pt2logs.schema import TABLES
from pt2logs.tables import compile, core, outcomes, spyre, text, vllm  # noqa: F401  (registration)

__all__ = ["TABLES"]
