"""The TORCH_TRACE engine: record splitting (native and Python), the event loops, per-file state and the event handlers."""
