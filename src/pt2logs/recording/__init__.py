"""Recording a run while it happens: `pt2logs run -- CMD`, `pt2logs.capture()` and the stderr tee."""

#: the TORCH_LOGS `pt2logs run` and `pt2logs.capture()` turn on unless told (here, not in capture.py: the CLI
#: states it at `--help` without importing ingestion)
DEFAULT_TORCH_LOGS = "recompiles,graph_breaks"
