"""Secrets out of what pt2logs stores and prints: values learnt from a run's command and environment, secret shapes."""
