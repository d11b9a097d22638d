"""Recording a run while it happens: `pt2logs run -- CMD`, `pt2logs.capture()` and the stderr tee."""
