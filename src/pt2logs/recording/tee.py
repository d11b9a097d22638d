"""The tee of ``pt2logs run``: a small process between the command's stderr and the capture file.

``python -m pt2logs.recording.tee FILE RECORD RUN_PID`` reads the command's stderr on stdin, writes it to ``FILE``
(secrets masked as ``pt2logs run`` masks them: learnt from its environment and argv, and
the shapes; flushed as it comes) and passes it on unchanged on stdout, to ``pt2logs run``,
which shows it live. It is its own process so that the command outlives a ``pt2logs run`` killed
with SIGKILL: its stderr pipe stays open (no SIGPIPE, no EPIPE at its next write), the capture file
still gets every line; only the live echo stops. It ignores SIGINT and SIGHUP (a Ctrl-C is the
command's to handle) and ends when the command and its children have closed their stderr. Then, when
``pt2logs run`` is gone (killed: the record is still the one written at the start), it notes in the
record whether the stderr is the record's to read (no format recognises it), as ``pt2logs run``
does when it ends.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

#: the command's argv, as JSON, in the tee's environment: its secrets are learnt as ``pt2logs run`` learns them
TEE_ARGV = "PT2LOGS_TEE_ARGV"


def tee(src: int, path: str, echo: int) -> None:
    from pt2logs.redaction.masking import Learnt
    from pt2logs.redaction.redact import LineRedactor

    argv = json.loads(os.environ.pop(TEE_ARGV, "[]"))
    learnt = Learnt().learn_env(os.environ).learn_argv(argv)
    keep = LineRedactor(learnt.data)
    live = True
    with open(path, "ab") as log:
        while chunk := os.read(src, 65536):
            log.write(keep.feed(chunk))
            log.flush()
            if live:
                try:
                    _write_all(echo, chunk)
                except OSError:  # pt2logs run is gone: keep the file going
                    live = False
        log.write(keep.flush())


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def stderr_read_by(err: Path) -> str | None:
    """``"run_record"`` when the record's reader reads the stderr ``err``: it holds text that no format
    recognises (a command that died before torch logged); None when a format does, or it is empty."""
    from pt2logs.readers import detect
    from pt2logs.readers.documents.run_record import FORMAT as RUN_RECORD

    head = b""
    if err.is_file():
        with open(err, "rb") as fh:
            head = fh.read(64 << 10)
    return RUN_RECORD.name if head.strip() and detect(head, err.name) is None else None


def claim_stderr(log: str, record: str) -> None:
    """An unfinished record (``pt2logs run`` was killed): its stderr is the record's to read when no
    format recognises it (``stderr_read_by``, as :func:`pt2logs.recording.record.write_record` sets it)."""
    try:
        rec = json.loads(Path(record).read_text())
        read_by = stderr_read_by(Path(log))
    except (OSError, ValueError):
        return
    if (
        not isinstance(rec, dict)
        or rec.get("exit_code") is not None
        or rec.get("ended_at") is not None
    ):
        return
    rec["stderr_read_by"] = read_by
    tmp = Path(record).with_name(f".{Path(record).name}.tee.tmp")
    tmp.write_text(json.dumps(rec, indent=1) + "\n")
    os.replace(tmp, record)


def main() -> None:
    for s in (signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
    log, record, run_pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
    tee(0, log, 1)
    if os.getppid() != run_pid:  # pt2logs run is gone (this process was given to another parent)
        claim_stderr(log, record)


if __name__ == "__main__":
    main()
