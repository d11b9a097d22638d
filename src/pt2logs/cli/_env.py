"""Process settings of the ``pt2logs`` command, made before any other import (numpy reads them when it loads),
and whether this process is the ``pt2logs`` program (:func:`is_program`).

pt2logs does no linear algebra, but numpy's OpenBLAS starts a thread per core when it loads, and those
threads spin: ~1.5 % of an ingest's CPU in ``perf``, on cores the parse workers need. A value the user
set is kept."""

import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def is_program() -> bool:
    """Whether this process is the ``pt2logs`` program (``python -m pt2logs`` or the script pip installs), not
    another program that called a command or ``main()`` (a test's CliRunner, a notebook): only the program ends
    without finalization and leaves work to processes it forks and does not wait for (the views file, kept
    answers), which a host process must not have forked from it."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return (spec is not None and spec.name == "pt2logs.__main__") or os.path.basename(
        getattr(main, "__file__", None) or ""
    ) == "pt2logs"
