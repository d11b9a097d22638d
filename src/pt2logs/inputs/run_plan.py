"""What discovery hands to ingestion: :class:`InputFile` (one file found, its format, rank, head and where it
belongs) and :class:`RunPlan` (one run: its root, name, files and id).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from pt2logs.inputs.sources import COMPRESSED_SUFFIXES
from pt2logs.readers import Format


@dataclass
class InputFile:
    path: str  # path within the filesystem (no protocol)
    url: str  # what users see (local path or URL)
    relpath: str  # relative to the run root
    size: int
    mtime: float | None
    token: str | None = (
        None  # change token (pt2logs.inputs.listing): local ctime, object version or ETag
    )
    fmt: Format | None = None
    compression: str = "none"
    rank: int | None = None
    head: bytes = b""
    #: the head was cut to HEAD_KEPT bytes once discovery had read it (format, rank): a fleet's heads held
    #: together were 64 KiB a file (1.4 GB at 10,000 runs); the content run id reads it again
    head_cut: bool = False
    known_run: str | None = None  # run id in the warehouse, for a file that has not changed
    group: str | None = (
        None  # folder whose run this file belongs to, whatever its format (tlparse output)
    )
    anchor: str | None = (
        None  # folder an auxiliary file describes, when not its own (torch_compile_debug)
    )
    folder_rank: int | None = (
        None  # the rank its folder names (tlparse's rank_N/), when name and head say none
    )

    @property
    def stem(self) -> str:
        name = posixpath.basename(self.path)
        for suf in COMPRESSED_SUFFIXES:
            if name.endswith(suf):
                return name[: -len(suf)]
        return name


@dataclass
class RunPlan:
    root: str  # path of the run's folder or file (as shown to users)
    name: str
    source: str  # the input path it was found under
    files: list[InputFile]
    run_id: str = ""
    #: (path, why): entries under the run's folder that could not be read (ingest_errors rows of the run)
    problems: list[tuple[str, str]] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)
