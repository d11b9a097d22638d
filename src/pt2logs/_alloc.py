"""Arrow's allocator for pt2logs' own processes.

Arrow's default in Linux wheels (mimalloc) keeps the pages of freed batches: an ingest of the 213 MB
bench trace peaked 50 MB higher with it than with jemalloc, for the same CPU (bench/RESULTS.md). Arrow
reads ``ARROW_DEFAULT_MEMORY_POOL`` once, when pyarrow loads, so this runs when pt2logs is imported; a
user's own setting, or a pyarrow loaded before pt2logs, wins. Commands that pt2logs runs for the user
(``pt2logs run``) get the environment without it (:data:`USER_ARROW_POOL` is what the user had).
"""

import os
import sys

#: the user's ARROW_DEFAULT_MEMORY_POOL (None: pt2logs may have set its own, not for the user's commands)
USER_ARROW_POOL = os.environ.get("ARROW_DEFAULT_MEMORY_POOL")

if sys.platform == "linux" and "pyarrow" not in sys.modules:
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
