"""The TORCH_TRACE record splitter with its inner loop in native code (``pt2logs._native._records``).

:func:`iter_records_native` takes and yields exactly what :func:`~pt2logs.readers.trace.records.iter_records`
does (the pure-Python splitter, which stays as the fallback and as the oracle the tests compare
against): the chunk assembly is the same code (:class:`~pt2logs.readers.trace.records.WholeLines`); what changes is the per-buffer loop, done in C
in one pass over the bytes (record boundaries, glog prefix, envelope slice, payload TAB stripping), then
the buffer's payload md5s together (eight at a time), each riding along as its record's ``md5`` field so
nothing hashes it again.

:func:`split_records` is what readers call: the native splitter when the extension is built and
``PT2LOGS_NATIVE`` is not ``0``, else the Python one. :func:`native_status` says which, and why.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from pt2logs.readers.kit import EXCERPT
from pt2logs.readers.trace import records
from pt2logs.readers.trace.records import ErrorSink, Record, WholeLines, iter_records

#: the version of the extension's interface these readers call (``ABI`` in ``_native/records.c``); a build
#: from other sources (an in-place build not redone after a pull) is not used at all, rather than failing
#: halfway through a read on a function it lacks or whose arguments changed
ABI = 2

try:
    from pt2logs._native import _records as _ext
except (
    ImportError
) as e:  # no compiler when the package was built: the Python splitter does the work
    _ext = None
    _WHY = f"the native splitter is not built ({e}); TORCH_TRACE files are split in pure Python (slower)"
else:
    _WHY = ""
    if getattr(_ext, "ABI", 1) != ABI:
        _WHY = (
            f"the native splitter was built from other sources (interface {getattr(_ext, 'ABI', 1)}, these readers "
            f"need {ABI}; rebuild it: `python hatch_build.py`, or reinstall pt2logs); TORCH_TRACE files are split "
            "in pure Python (slower)"
        )
        _ext = None


def native_status() -> tuple[bool, str]:
    """(whether the native splitter is in use, and if not, why in one sentence)."""
    if _ext is None:
        return False, _WHY
    if os.environ.get("PT2LOGS_NATIVE", "1") == "0":
        return False, "PT2LOGS_NATIVE=0: TORCH_TRACE files are split in pure Python"
    return True, ""


def split_components(items: object) -> tuple | None:
    """A cache artifact's ``components`` list as Arrow string buffers, by the C pass (``_native/components.c``):
    ``(n, name_offsets, names, hash_offsets, hashes, value_offsets, values, backward)``; None when the
    native code is off or missing, or the list needs :func:`~pt2logs.analysis.cache_keys.parse_components`."""
    if type(items) is not list or not native_status()[0]:
        return None
    return _ext.split_components(items)  # type: ignore[union-attr]


def split_records(
    chunks: Iterable[bytes], on_error: ErrorSink, first_line: int = 1
) -> Iterator[Record]:
    """The records of a trace: natively when it can, in Python otherwise (same records, same errors)."""
    if native_status()[0]:
        return iter_records_native(chunks, on_error, first_line)
    return iter_records(chunks, on_error, first_line)


def _errors(items: list, on_error: ErrorSink) -> Iterator[Record]:
    for it in items:
        if type(it) is tuple:
            kind, line, n, excerpt = it
            if kind == "orphan_payload":
                on_error(
                    kind, line, f"{n} payload line(s) with no header before them; skipped", excerpt
                )
            elif kind == "orphan_payload_after_bad_line":
                on_error(
                    "orphan_payload", line, "payload line(s) after a bad line; skipped", excerpt
                )
            elif kind == "bad_prefix":
                on_error(
                    kind,
                    line,
                    "line is neither a payload line (TAB) nor a glog header; skipped",
                    excerpt,
                )
            else:
                records._too_large(on_error, line, n)
        else:
            yield it


def iter_records_native(
    chunks: Iterable[bytes], on_error: ErrorSink, first_line: int = 1
) -> Iterator[Record]:
    """:func:`~pt2logs.readers.trace.records.iter_records` with the per-buffer loop in C (same contract)."""
    for group in iter_record_groups(chunks, on_error, first_line):
        yield from group


def iter_record_groups(
    chunks: Iterable[bytes], on_error: ErrorSink, first_line: int = 1
) -> Iterator[list[Record]]:
    """The records of :func:`iter_records_native` as they leave the C pass, a list per buffer; an error is
    reported where it falls (between the lists before and after it), so nothing is reordered."""
    assert _ext is not None
    sc = _ext.Scanner(Record, records.MAX_PAYLOAD, EXCERPT)
    lines = WholeLines(chunks, on_error, first_line)
    for buf, last_nl in lines:
        items, lines.line_at, has_errors = sc.feed(
            buf, last_nl + 1, bool(lines.crlf), lines.line_at
        )
        yield from (_groups(items, on_error) if has_errors else (items,))
    yield from _groups(sc.finish(), on_error)
    if not lines.ended_with_newline:
        on_error(
            "truncated",
            lines.line_at - 1,
            "the file does not end with a newline: it was cut mid-line (the last record may be incomplete)",
            b"",
        )


def _groups(items: list, on_error: ErrorSink) -> Iterator[list[Record]]:
    group: list[Record] = []
    for it in items:
        if type(it) is tuple:
            if group:
                yield group
                group = []
            yield from _errors([it], on_error)
        else:
            group.append(it)
    if group:
        yield group
