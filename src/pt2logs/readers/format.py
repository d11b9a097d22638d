"""What a format is: every fact about one input format, stated in its :class:`Format` and read from
the registry (:data:`pt2logs.readers.ORDER`) by whoever needs it, never spelled again elsewhere.

The facts: how to recognise it (``sniff``, the first 64 KB and the file name), how it is read (``read``,
or for a text capture its chain of line readers, ``lines``), its :data:`ROLES` entry (a trace, a stderr
capture, a document read whole), whether it describes a run rather than makes one (``auxiliary``), the
``source`` value its rows carry and that source's rank among one run's sources, whether a big file of
it is cut into pieces read at once (``splits``), the switch or environment variable that makes torch
(or its neighbours) write it (``switch``), and what it says about folders (:class:`Layout`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import KW_ONLY, dataclass

from pt2logs.readers.kit import Batch, FileContext, LineReaderFactory, read_lines

Reader = Callable[[Iterable[bytes], FileContext], Iterator[Batch]]

#: a structured trace: one process's records of its compiles (the outcome rules' "trace files")
TRACE = "trace"
#: a capture of a process's stderr / stdout, read line by line (the outcome rules' "stderr captures")
CAPTURE = "capture"
#: a document read whole (a JSON dump, a kernel spec, a debug file, a record): damage has no line number
DOCUMENT = "document"
ROLES = (TRACE, CAPTURE, DOCUMENT)


@dataclass(frozen=True)
class Layout:
    """What a format says about how its files sit in folders; discovery asks, never hard-codes.

    * ``rank_files``: files whose names match are one run per folder, one file per rank (TORCH_TRACE's
      ``dedicated_log_torch_trace_*``);
    * ``run_folder``: given the file names of a folder, whether the folder is one run of this format
      (a tlparse output folder); ``rank_folder`` names its per-rank subfolders and ``parent_files`` the
      files beside them that belong to the run; ``read_first`` lists, in preference order, the files of
      such a folder that are read (the others belong to it and are not read on their own): the first
      one present wins when its format ranks better than this format's own, else the last;
      ``without_reads`` is the one message for such a folder that holds none of them (a tlparse report
      copied without its raw log);
    * ``anchor``: for an auxiliary file, the folder of the run it belongs to (the ``torch_compile_debug``
      folder above a graph file), given its folder and the input root; None when it has none.
    """

    rank_files: re.Pattern[str] | None = None
    run_folder: Callable[[set[str]], bool] | None = None
    rank_folder: re.Pattern[str] | None = None
    parent_files: re.Pattern[str] | None = None
    read_first: tuple[str, ...] = ()
    anchor: Callable[[str, str], str | None] | None = None
    #: what discovery says, once, of a run folder that holds none of the files it reads (``read_first``)
    without_reads: str = ""


@dataclass(frozen=True)
class Format:
    """One input format. ``read`` is the pure function that reads it; a text capture gives ``lines``
    instead (its chain of line readers, :func:`pt2logs.readers.kit.read_lines`) and its reader is that
    chain. ``source`` is the value its rows carry in ``source`` columns and ``source_rank`` that source's
    rank when one run has several (1 = best; None = rows that describe other things and are always kept)."""

    name: str
    description: str
    sniff: Callable[[bytes, str], bool]
    read: Reader = None  # type: ignore[assignment]  # set from ``lines`` when not given
    _: KW_ONLY
    #: one of :data:`ROLES`
    role: str
    #: a capture's line readers, in chain order (the last takes every line)
    lines: tuple[LineReaderFactory, ...] = ()
    #: auxiliary formats describe a run (stderr, counters) rather than make one
    auxiliary: bool = False
    source: str | None = None
    source_rank: int | None = None
    #: a large uncompressed local file is cut into pieces that several processes read at once
    #: (:mod:`pt2logs.ingestion.split`)
    splits: bool = False
    #: what makes it be written (a switch, an environment variable), for bug reports; None: nothing to say
    switch: str | None = None
    layout: Layout = Layout()

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"format {self.name}: role {self.role!r} is none of {ROLES}")
        if self.read is None:
            if not self.lines:
                raise ValueError(f"format {self.name}: give it a reader or its line readers")
            object.__setattr__(self, "read", functools.partial(read_lines, factories=self.lines))
