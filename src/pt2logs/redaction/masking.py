"""Secrets a run was given, masked wherever they show up later; secret shapes masked in stored rows.

Two halves:

* :class:`Learnt`: when ``pt2logs run`` / ``pt2logs.capture()`` starts, the values of environment
  variables named like a secret (``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*_KEY``, ``*AUTH*``,
  ``*CREDENTIAL*``…) and of the arguments after secret-looking options (``--token X``, ``--auth=X``,
  ``-p X``, ``-u user:X``, a URL's password) are learnt, in memory only. They are masked in the
  command, the environment kept in the record, the captured stderr as it is written, and — before
  ingest reads them — in every file of the capture folder (:func:`scrub_folder`: trace records get their
  ``has_payload`` md5 recomputed, so they still read as intact). The secrets themselves are never
  written anywhere, so a later ``pt2logs ingest`` of the folder reads files that no longer hold them.
* :func:`scrub_batches`: every string column of every row pt2logs writes (log lines, commands, error
  messages, payloads: graphs, guards, output code) goes through :func:`pt2logs.redaction.redact.redact` when a
  cheap vectorised prefilter (one RE2 pass per column) says a secret shape could be in it.

Limits: a learnt value shorter than :data:`MIN_LEN` characters, or a common word, is not learnt (masking
it everywhere would mangle the logs); a secret the program transforms (hashes, base64, splits) is not
recognised; files the program writes outside the capture folder are not touched; a ``pt2logs run``
killed before its scrub leaves the capture's trace as torch wrote it (stderr is masked as it is written).
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import os
import re
import shlex
import urllib.parse
from collections.abc import Iterable, Mapping
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from pt2logs.redaction.redact import _NAME, MASK, PREFILTER, redact

#: values shorter than this are not learnt: masking "abc" everywhere would mangle the logs
MIN_LEN = 6
#: an environment variable whose name says it holds a secret
SECRET_ENV = re.compile(
    r"(?i)token|secret|passw|(?:^|_)pass(?:$|_)|(?:^|_)(?:api|access|private|secret)?_?key(?:$|_)|"
    r"apikey|auth(?!or)|credential|signature|cookie"
)
#: an option whose next argument (or ``=value``) is a secret; ``-p`` (mysql, sshpass) and ``-u user:pw`` too
_FLAG = re.compile(rf"(?i)^--?{_NAME}$|^-p$|^--pass$")
_FLAG_EQ = re.compile(rf"(?i)^(--?{_NAME}=)(.+)$")
_USER_FLAG = re.compile(r"^(?:-u|--user)$")
_URL_PW = re.compile(r"\b[a-zA-Z][\w+.-]*://[^/\s:@]+:([^\s@]+)@")
_DULL = frozenset({"true", "false", "none", "null", "yes", "no", "on", "off", "default", "auto"})


class Learnt:
    """Secret values of one run, kept in memory only; :meth:`text` / :meth:`data` mask them."""

    def __init__(self) -> None:
        self.values: set[str] = set()
        self._sorted: list[str] = []

    def add(self, value: str) -> None:
        v = value.strip().strip("'\"")
        if len(v) < MIN_LEN or v.lower() in _DULL or v.isdigit() or v == MASK:
            return
        # the forms it is written in: as is, as torch's fx_graph_runnable writes it (' → "), JSON-escaped, URL-quoted
        for form in (
            v,
            v.replace("'", '"'),
            json.dumps(v)[1:-1],
            urllib.parse.quote(v, safe=""),
            urllib.parse.quote_plus(v),
        ):
            if len(form) >= MIN_LEN:
                self.values.add(form)
        self._sorted = sorted(self.values, key=len, reverse=True)

    def learn_env(self, env: Mapping[str, str]) -> Learnt:
        for k, v in env.items():
            if SECRET_ENV.search(k):
                self.add(v)
            for m in _URL_PW.finditer(v):
                self.add(m.group(1))
        return self

    def learn_argv(self, argv: Iterable[str]) -> Learnt:
        args = list(argv)
        for i, a in enumerate(args):
            nxt = args[i + 1] if i + 1 < len(args) else None
            if (
                nxt is not None and _FLAG.match(a) and not (a == "-p" and nxt[:1] in "/.~")
            ):  # mkdir -p DIR
                self.add(nxt)
            elif nxt is not None and _USER_FLAG.match(a) and ":" in nxt:
                self.add(nxt.split(":", 1)[1])
            elif m := _FLAG_EQ.match(a):
                self.add(m.group(2))
            for m in _URL_PW.finditer(a):
                self.add(m.group(1))
        return self

    @property
    def longest(self) -> int:
        return len(self._sorted[0].encode()) if self._sorted else 0

    def text(self, s: str) -> str:
        for v in self._sorted:
            if v in s:
                s = s.replace(v, MASK)
        return s

    def data(self, b: bytes) -> bytes:
        for v in self._sorted:
            e = v.encode("utf-8", "surrogateescape")
            if e in b:
                b = b.replace(e, MASK.encode())
        return b

    def found_in(self, b: bytes) -> bool:
        return any(v.encode("utf-8", "surrogateescape") in b for v in self._sorted)

    def argv(self, argv: Iterable[str]) -> list[str]:
        """``argv`` with learnt values, values after secret options and secret shapes masked (for
        ``runs.command`` and what ``pt2logs run`` prints)."""
        out: list[str] = []
        hide = False
        for a in argv:
            if hide:
                out.append(MASK)
                hide = False
                continue
            if _USER_FLAG.match(a) or _FLAG.match(a):
                hide = not _USER_FLAG.match(a)
            elif out and _USER_FLAG.match(out[-1]) and ":" in a:
                a = a.split(":", 1)[0] + ":" + MASK
            out.append(redact(self.text(a)))
        return out


def join(argv: Iterable[str]) -> str:
    """A command line as ``shlex.join`` writes it, but ``***`` left bare (``--token=***``, not ``'--token=***'``)."""
    return " ".join(a if _BARE.fullmatch(a) else shlex.quote(a) for a in argv)


_BARE = re.compile(r"[\w@%+=:,./*-]+")


# ---------------------------------------------------------------- the capture folder, before ingest

_RECORD_START = re.compile(rb"\n(?=[^\t])")
_HAS_PAYLOAD = re.compile(rb'("has_payload"\s*:\s*")([0-9a-f]{32})(")')
_CHUNK = 8 << 20


def scrub_folder(folder: Path, learnt: Learnt) -> list[str]:
    """Mask ``learnt`` in every file of a capture folder (in place); the files rewritten, relative."""
    if not learnt.values:
        return []
    changed = []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if (
            p.is_file()
            and not p.is_symlink()
            and not any(part.startswith(".") for part in rel.parts)
            and _scrub_file(p, learnt)
        ):
            changed.append(str(rel))
    return changed


def _scrub_file(path: Path, learnt: Learnt) -> bool:
    """Rewrite ``path`` with ``learnt`` masked, when it holds one: chunk by chunk, each cut where a
    trace record (a line not starting with TAB) starts, so a record and its md5 are fixed together."""
    keep = max(learnt.longest - 1, 0)
    with open(path, "rb") as fh:  # first a cheap look (most files hold no secret)
        tail = b""
        while chunk := fh.read(_CHUNK):
            if learnt.found_in(tail + chunk):
                break
            tail = chunk[-keep:] if keep else b""
        else:
            return False
    tmp = path.with_name(path.name + ".pt2logs-scrub")
    with open(path, "rb") as src, open(tmp, "wb") as dst:
        rest = b""
        while True:
            chunk = src.read(_CHUNK)
            data = rest + chunk
            if not chunk:
                dst.write(_scrub_records(data, learnt))
                break
            cut = _last_record_start(data)
            if cut == 0 and len(data) > 8 * _CHUNK:  # no record starts: a text file without lines
                cut = len(data)
            rest = data[cut:]
            dst.write(_scrub_records(data[:cut], learnt))
    os.replace(tmp, path)
    return True


def _last_record_start(data: bytes) -> int:
    """Where the last record of ``data`` starts (after a newline, not a payload line); 0 if none."""
    i = len(data) - 1
    while (i := data.rfind(b"\n", 0, i)) >= 0:
        if i + 1 < len(data) and data[i + 1 : i + 2] != b"\t":
            return i + 1
    return 0


def _scrub_records(data: bytes, learnt: Learnt) -> bytes:
    if not learnt.found_in(data):
        return data
    out = []
    for rec in _RECORD_START.split(data):
        if learnt.found_in(rec):
            rec = _fix_md5(rec, learnt.data(rec))
        out.append(rec)
    return b"\n".join(out)


def _fix_md5(old: bytes, new: bytes) -> bytes:
    """A trace record whose payload changed gets the md5 of its new payload in ``has_payload``."""
    head, nl, body = new.partition(b"\n")
    m = _HAS_PAYLOAD.search(head)
    if m is None or not body.startswith(b"\t"):
        return new
    payload = _payload_of(new)
    if hashlib.md5(_payload_of(old)).hexdigest().encode() != m.group(2):
        return new  # it did not match before: leave it mismatched
    head = head[: m.start(2)] + hashlib.md5(payload).hexdigest().encode() + head[m.end(2) :]
    return head + nl + body


def _payload_of(rec: bytes) -> bytes:
    lines = rec.partition(b"\n")[2].split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return b"\n".join(line[1:] if line.startswith(b"\t") else line for line in lines)


# ---------------------------------------------------------------- every stored row

#: string columns that are identities, not text: never rewritten (a path is how a file is found again)
_KEEP = frozenset(
    {
        "run_id",
        "txn",
        "source",
        "file",
        "path",
        "relpath",
        "root",
        "format",
        "compression",
        "content_hash",
        "change_token",
        "payload_md5",
        "compile_id",
        "key",
        "hash",
        "git_commit",
        "failure_key",
        "break_key",
        "frame_key",
        "payload_key",
        "args_key",
        "tags",
        "user_root",
        "cwd",
    }
)


def scrub_batches(batches: list[pa.RecordBatch], skip: Iterable[str] = ()) -> list[pa.RecordBatch]:
    """``batches`` with secret shapes masked in their text columns; a batch with no value that could
    hold one is returned as it is (the same object); columns ``skip`` are left alone. One RE2 pass
    over all their text columns at once (the writer scrubs a row group's batches together: compiling
    the pattern costs more than scanning a small batch), each distinct value of a column whose values
    repeat (cache-key components, inductor configs) scanned once; then the Python rules on the few
    values it finds."""
    skip = set(skip)
    pieces: list[tuple[int, int, pa.Array]] = []  # (batch, column, what is scanned)
    for b, batch in enumerate(batches):
        for i, f in enumerate(batch.schema):
            if (
                batch.num_rows
                and f.name not in _KEEP
                and f.name not in skip
                and (pa.types.is_string(f.type) or pa.types.is_large_string(f.type))
            ):
                pieces.append((b, i, _distinct_when_repeated(batch.column(i))))
    if not pieces:
        return batches
    scanned = [s.dictionary if isinstance(s, pa.DictionaryArray) else s for _, _, s in pieces]
    every = pa.concat_arrays([s.cast(pa.large_string()) for s in scanned])
    hit = pc.match_substring_regex(every, PREFILTER)
    if not pc.any(hit).as_py():
        return batches
    changed: dict[tuple[int, int], dict[int, str]] = {}
    starts = list(itertools.accumulate((len(s) for s in scanned), initial=0))
    for j, v in zip(
        pc.indices_nonzero(hit).to_pylist(), pc.filter(every, hit).to_pylist(), strict=True
    ):
        if (r := redact(v)) == v:
            continue
        k = bisect.bisect_right(starts, j) - 1
        b, i, s = pieces[k]
        rows = [j - starts[k]]
        if isinstance(s, pa.DictionaryArray):  # every row holding that distinct value
            rows = pc.indices_nonzero(pc.equal(s.indices, rows[0])).to_pylist()
        changed.setdefault((b, i), {}).update(dict.fromkeys(rows, r))
    out = list(batches)
    for (b, i), rows in changed.items():
        values = out[b].column(i).to_pylist()
        for j, r in rows.items():
            values[j] = r
        out[b] = out[b].set_column(
            i, out[b].schema.field(i), pa.array(values, out[b].schema.field(i).type)
        )
    return out


#: a column is scanned by its distinct values when its first rows hold at most one distinct value in this many
REPEATS = 4


def _distinct_when_repeated(col: pa.Array) -> pa.Array:
    """``col``, or its dictionary encoding when its values repeat (judged on its first 256 rows):
    hashing a value is cheaper than scanning it again."""
    if len(col) < 64 or len(pc.unique(col.slice(0, 256))) * REPEATS > min(len(col), 256):
        return col
    return pc.dictionary_encode(col)
