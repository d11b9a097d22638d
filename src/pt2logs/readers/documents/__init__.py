"""Whole-document formats and folders: counters dumps, tlparse output folders, TORCH_COMPILE_DEBUG dumps, run records."""
