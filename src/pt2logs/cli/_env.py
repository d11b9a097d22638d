"""Process settings of the ``pt2logs`` command, made before any other import (numpy reads them when it loads).

pt2logs does no linear algebra, but numpy's OpenBLAS starts a thread per core when it loads, and those
threads spin: ~1.5 % of an ingest's CPU in ``perf``, on cores the parse workers need. A value the user
set is kept."""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
