"""The in-process engine: every chunk runs here, one after the other (small inputs, ``--jobs 1``).

Engines decide *where* chunks of tasks run; they import only :mod:`pt2logs.ingestion.worker` and hand
each chunk's outcomes to ``on_done`` as soon as it is parsed. They know nothing of plans or commits.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from pt2logs.ingestion.worker import FileOutcome, FileTask, memory_pool, new_writer, parse_file
from pt2logs.store.warehouse import TxnInfo


class Engine:
    """Runs chunks in this process, into one writer for the transaction (one Parquet file per table);
    the base of the other engines (see pt2logs.ingestion.engines)."""

    #: how many chunks can run at once (the planner cuts big files into this many pieces)
    jobs = 1
    #: True: a worker keeps one writer for all the chunks of a transaction it parses, so chunks can be
    #: small (the planner cuts tasks into many, handed out as workers free up); False (Ray): every
    #: chunk writes files of its own, so the planner makes a few large balanced ones
    keeps_writer = True

    def begin(self, paths: list[str]) -> None:
        """Called once an ingest knows its input paths, before it opens DuckDB or starts a thread (a pool
        forks its workers here, or not at all when the inputs are too small for it)."""

    def has_processes(self) -> bool:
        """Whether this engine runs processes of its own (a fork of the ingest would inherit their pipes)."""
        return False

    def map(
        self,
        info: TxnInfo,
        chunks: list[list[FileTask]],
        on_done: Callable[[list[FileOutcome]], None],
    ) -> None:
        memory_pool()
        writer = new_writer(info, f"p{os.getpid()}")
        try:
            for chunk in chunks:
                on_done([parse_file(info, t, writer) for t in chunk])
        except BaseException:
            writer.discard()
            raise
        writer.close()

    def close(self) -> None:
        pass
