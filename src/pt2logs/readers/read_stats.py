"""What a reader saw in one file (or one piece of it): :class:`ReadStats`, merged in one place
(:meth:`ReadStats.merge`) for the pieces of a file and the files of a run; the ingest layer puts it in
``files`` and ``runs``. Also where a run's torch version is read, best source first (:data:`TORCH_SOURCES`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

#: where a run's torch version can be read, best first: torch's own ``torch_version`` artifact (trace), the
#: ``# torch version:`` line torch's repro writer puts in ``fx_graph_runnable`` payloads and files,
#: ``compilation_metrics.pytorch_version``, the counters dump's ``torch``, the torch installed where
#: ``pt2logs run`` ran the command
TORCH_SOURCES = (
    "torch_version_artifact",
    "repro_payload",
    "compilation_metrics",
    "counters",
    "pt2logs_run",
)
_TORCH_RANK = {s: i for i, s in enumerate(TORCH_SOURCES)}
#: torch/_dynamo/repro/after_aot.py (and repro/aoti.py), torch 2.0+: ``# torch version: {torch.version.__version__}``
_REPRO_TORCH = re.compile(rb"^\t?# torch version: ([^\s#]+)", re.M)


def repro_torch_version(data: bytes) -> str | None:
    """The version in a repro script's ``# torch version:`` line (fx_graph_runnable), else None."""
    m = _REPRO_TORCH.search(data)
    return m.group(1).decode("utf-8", "replace") if m else None


@dataclass
class ReadStats:
    """What a reader saw in one file (or one piece of it); the ingest layer puts it in ``files`` and ``runs``."""

    lines: int = 0
    events: int = 0
    errors: int = 0
    warnings: int = 0
    unknown: int = 0
    first_ts: int | None = None
    last_ts: int | None = None
    ranks: set[int] = field(default_factory=set)
    #: the torch version the logs name, and where it was read (a :data:`TORCH_SOURCES` name)
    torch_version: str | None = None
    torch_from: str | None = None
    kinds: dict[str, int] = field(default_factory=dict)
    #: the Python version the logs name (compilation_metrics), else the one their paths show
    python_version: str | None = None
    python_from_paths: str | None = None
    #: the smallest and largest folder of user code seen: their common prefix is the run's root
    user_dir_lo: str | None = None
    user_dir_hi: str | None = None
    #: ``runs`` fields a run's own record gives (``pt2logs_run.json``: command, exit code, wall time...)
    run_fields: dict[str, Any] = field(default_factory=dict)

    def note_torch(self, version: str | None, source: str) -> None:
        """Keep ``version`` when ``source`` ranks better than where the current one came from
        (:data:`TORCH_SOURCES`, best first); the first seen wins among equals."""
        version = version.strip() if isinstance(version, str) else None
        if not version:
            return
        if self.torch_version is None or _TORCH_RANK.get(source, 99) < _TORCH_RANK.get(
            self.torch_from or "", 99
        ):
            self.torch_version, self.torch_from = version[:200], source

    def note_user_dir(self, lo: str | None, hi: str | None = None) -> None:
        hi = hi or lo
        if lo is not None and (self.user_dir_lo is None or lo < self.user_dir_lo):
            self.user_dir_lo = lo
        if hi is not None and (self.user_dir_hi is None or hi > self.user_dir_hi):
            self.user_dir_hi = hi

    def merge_ts(self, lo: int | None, hi: int | None) -> None:
        if lo is not None and (self.first_ts is None or lo < self.first_ts):
            self.first_ts = lo
        if hi is not None and (self.last_ts is None or hi > self.last_ts):
            self.last_ts = hi

    def merge(self, other: ReadStats) -> ReadStats:
        """Add ``other`` (another piece of the same file, or another file) into this one; returns self.
        ``lines`` is the larger of the two: pieces number their lines from the start of the file."""
        self.lines = max(self.lines, other.lines)
        self.events += other.events
        self.errors += other.errors
        self.warnings += other.warnings
        self.unknown += other.unknown
        self.merge_ts(other.first_ts, other.last_ts)
        self.ranks |= other.ranks
        self.note_torch(other.torch_version, other.torch_from or "")
        self.python_version = self.python_version or other.python_version
        self.python_from_paths = self.python_from_paths or other.python_from_paths
        self.note_user_dir(other.user_dir_lo, other.user_dir_hi)
        for k, v in other.kinds.items():
            self.kinds[k] = self.kinds.get(k, 0) + v
        self.run_fields = {**other.run_fields, **self.run_fields}
        return self
