"""Line readers of text captures (TORCH_LOGS, job stderr, vLLM logs): each takes the lines it knows, LogLines the rest."""
