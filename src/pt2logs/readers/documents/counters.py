"""Counter dumps and ``compile_times()`` text → ``counters`` and ``compile_times``.

``torch._dynamo.utils.counters`` (a ``defaultdict[str, Counter[str]]``) has no standard file
format; dumps are JSON, either ``{"counters": {group: {key: n}}, "compile_times": "...", ...}``
(the fixtures, ``pt2logs run``; extra keys such as ``scenario``, ``torch``, ``wall_s``, ``rank``)
or a bare ``{group: {key: n}}``. Keys of ``graph_break`` / ``unimplemented`` are full multi-line
reasons and are kept whole. A top-level ``rank`` is the rank of every row; other top-level keys are
``dump_info`` rows; string values that are compile_times() tables become ``compile_times`` rows.

``compile_times(repr="str")`` prints ``TorchDynamo compilation metrics:`` then a ``Function |
Runtimes (s)`` table, with tabulate (a dashes line under the header; the runtimes column starts
where the second run of dashes starts) or without (``Function, Runtimes (s)`` then
``name, v1, v2, ...``). ``call_index`` is the position in the comma-separated list. A standalone
text file may hold several tables, ``# comment`` lines, and the ``repr="csv"`` output dumped as
JSON (``{"headers": [...], "values": [...]}``, layout ``csv``). Both documents are small and read
whole (at most :data:`~pt2logs.readers.kit.MAX_JSON_DOC` / :data:`~pt2logs.readers.kit.MAX_DOC` bytes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from pt2logs.readers.format import DOCUMENT, Format
from pt2logs.readers.kit import (
    EXCERPT,
    MAX_JSON_DOC,
    Batch,
    FileContext,
    RowSink,
    decode,
    read_document,
)

HEADER = "TorchDynamo compilation metrics:"
KNOWN_GROUPS = (
    "frames",
    "stats",
    "graph_break",
    "unimplemented",
    "aot_autograd",
    "inductor",
    "aten_mm_info",
    "resumes",
    "compiled_autograd",
    "recompiles",
    "graph_break_reasons",
    "cudagraph",
    "dynamo",
    "export",
)


# ----------------------------------------------------------------------------- compile_times text


@dataclass
class TimesTable:
    """One ``TorchDynamo compilation metrics:`` table."""

    line_no: int  # 1-based line of the header line within the text
    layout: str  # tabulate, plain or csv
    rows: list[tuple[int, str, list[float]]] = field(
        default_factory=list
    )  # (line_no, function, seconds)
    bad: list[tuple[int, str]] = field(
        default_factory=list
    )  # (line_no, text) rows that did not parse


_DASHES = re.compile(r"^(-+)(\s+)(-+)\s*$")
_PLAIN_HEAD = re.compile(r"^Function\s*,\s*Runtimes \(s\)\s*$")
_TAB_HEAD = re.compile(r"^Function\s+Runtimes \(s\)\s*$")


def _floats(text: str) -> list[float] | None:
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            out.append(float(part))
        except ValueError:
            return None
    return out


def parse_compile_times(text: str) -> list[TimesTable]:
    """Every compile_times() table in ``text`` (both layouts, and repr="csv" JSON). Never raises."""
    lines = text.split("\n")
    tables: list[TimesTable] = []
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i].rstrip("\r")
        if line.strip() == HEADER:
            t, i = _table(lines, i)
            tables.append(t)
            continue
        if line.startswith("{"):
            t, i = _csv_block(lines, i)
            if t is not None:
                tables.append(t)
                continue
        i += 1
    return tables


def _table(lines: list[str], i: int) -> tuple[TimesTable, int]:
    start = i
    i += 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    head = lines[i].rstrip("\r") if i < len(lines) else ""
    t = TimesTable(start + 1, "plain")
    boundary = None
    if _PLAIN_HEAD.match(head):
        i += 1
    elif _TAB_HEAD.match(head.strip()):
        t.layout = "tabulate"
        i += 1
        dashes = _DASHES.match(lines[i].rstrip("\r")) if i < len(lines) else None
        if dashes:
            boundary = dashes.start(3)
            i += 1
    else:
        return t, i  # a header line with no table under it
    while i < len(lines):
        line = lines[i].rstrip("\r")
        if not line.strip() or line.strip() == HEADER or line.startswith(("#", "{")):
            break
        if t.layout == "plain":
            func, _, rest = line.partition(",")
        elif boundary is not None and line[boundary - 1 : boundary].isspace():
            func, rest = line[:boundary], line[boundary:]
        else:  # no dashes line, or a name wider than the column: split at the first run of 2+ spaces
            parts = re.split(r"\s{2,}", line.strip(), maxsplit=1)
            func, rest = parts[0], parts[1] if len(parts) > 1 else ""
        values = _floats(rest)
        if values is None or not func.strip():
            t.bad.append((i + 1, line))
        else:
            t.rows.append((i + 1, func.strip(), values))
        i += 1
    return t, i


def _csv_block(lines: list[str], i: int) -> tuple[TimesTable | None, int]:
    """``{"headers": [...], "values": [...]}`` (repr="csv" dumped as JSON), from a line ``{`` to ``}``."""
    for j in range(i, min(len(lines), i + 200_000)):
        if lines[j].rstrip("\r") == "}":
            try:
                d = orjson.loads("\n".join(lines[i : j + 1]))
            except orjson.JSONDecodeError:
                return None, i + 1
            hs, vs = (d.get("headers"), d.get("values")) if isinstance(d, dict) else (None, None)
            if not (isinstance(hs, list) and isinstance(vs, list) and len(hs) == len(vs)):
                return None, i + 1
            t = TimesTable(i + 1, "csv")
            for k, (h, v) in enumerate(zip(hs, vs, strict=True)):
                values = (
                    _floats(v)
                    if isinstance(v, str)
                    else ([float(v)] if isinstance(v, (int, float)) else None)
                )
                if values is None:
                    t.bad.append((i + 1, f"{h}: {v}"))
                else:
                    t.rows.append((i + 2 + k, str(h), values))
            return t, j + 1
    return None, i + 1


# ----------------------------------------------------------------------------- readers


class _Out(RowSink):
    """The reader's sink, plus how a compile_times() table becomes rows."""

    def times(self, text: str, source_key: str, rank: int | None, first_line: int = 1) -> int:
        tables = parse_compile_times(text)
        rows = self.table("compile_times")
        for idx, t in enumerate(tables):
            for line_no, func, values in t.rows:
                for call, sec in enumerate(values):
                    rows.add(
                        {
                            "file": self.ctx.file,
                            "line_no": line_no + first_line - 1,
                            "source_key": source_key,
                            "table_index": idx,
                            "layout": t.layout,
                            "function": func,
                            "call_index": call,
                            "seconds": sec,
                            "rank": rank,
                        }
                    )
            for line_no, bad in t.bad:
                self.error(
                    "bad_compile_times_row",
                    line_no + first_line - 1,
                    "a row of a compile_times table is not `function, seconds, ...`; skipped",
                    bad,
                    "warning",
                )
        self.ctx.stats.events += sum(len(t.rows) for t in tables)
        return len(tables)


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v if -(1 << 63) <= v < (1 << 63) else None
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**63:
        return int(v)
    return None


def _text(v: Any) -> str | None:
    if v is None or isinstance(v, str):
        return v
    return orjson.dumps(v, default=str).decode()


def dump_document(
    counters: dict[str, Any], compile_times: str | None, torch: str | None
) -> dict[str, Any]:
    """A counters dump as this format reads it (what ``pt2logs.capture()`` writes to ``counters.json``)."""
    return {"counters": counters, "compile_times": compile_times, "torch": torch}


def read_counters_json(chunks: Iterable[bytes], ctx: FileContext) -> Iterator[Batch]:
    """A JSON dump of ``torch._dynamo.utils.counters`` (wrapped or bare) → ``counters`` (+ compile_times)."""
    out = _Out(ctx)
    data = read_document(chunks, out, "counters JSON", MAX_JSON_DOC)
    if data is None:
        yield from out.flush()
        return
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        out.error("bad_json", None, f"not valid JSON ({e}); nothing read", data[:EXCERPT])
        yield from out.flush()
        return
    if not isinstance(doc, dict):
        out.error(
            "not_an_object",
            None,
            f"the JSON document is a {type(doc).__name__}, not an object of counter groups",
            data[:EXCERPT],
        )
        yield from out.flush()
        return
    rank = doc.get("rank")
    rank = (
        rank
        if isinstance(rank, int) and not isinstance(rank, bool) and 0 <= rank < (1 << 20)
        else ctx.rank
    )
    if rank is not None:
        ctx.stats.ranks.add(rank)
    if isinstance(doc.get("torch"), str):
        ctx.stats.note_torch(doc["torch"], "counters")
    wrapped = isinstance(doc.get("counters"), dict)
    groups = doc["counters"] if wrapped else {k: v for k, v in doc.items() if isinstance(v, dict)}
    extras = {
        k: v for k, v in doc.items() if (k != "counters" if wrapped else not isinstance(v, dict))
    }
    rows = out.table("counters")
    for group, counter in groups.items():
        if not isinstance(counter, dict):
            out.error(
                "bad_counter_group",
                None,
                f"counter group {group!r} is not an object; kept as dump_info",
                _text(counter) or "",
                "warning",
            )
            extras[group] = counter
            continue
        for name, value in counter.items():
            v = _int(value)
            rows.add(
                {
                    "file": ctx.file,
                    "category": str(group),
                    "name": str(name),
                    "value": v,
                    "text": None if v is not None else _text(value),
                    "rank": rank,
                }
            )
            out.n += 1
            ctx.stats.events += 1
            if v is None:
                out.error(
                    "non_integer_counter",
                    None,
                    f"counter {group}/{name[:80]!r} is not an integer; kept in `text`",
                    _text(value) or "",
                    "warning",
                )
            if (
                out.full()
            ):  # rows leave in batches: a document of a million counters holds 50k rows at a time
                yield from out.flush()
    for key, value in extras.items():
        if isinstance(value, str) and value.lstrip().startswith(HEADER):
            out.times(value, key, rank)
            continue
        v = _int(value) if not isinstance(value, bool) else None
        rows.add(
            {
                "file": ctx.file,
                "category": "dump_info",
                "name": str(key),
                "value": v,
                "text": None if v is not None else _text(value),
                "rank": rank,
            }
        )
    yield from out.flush()


def read_compile_times(chunks: Iterable[bytes], ctx: FileContext) -> Iterator[Batch]:
    """A text file holding ``compile_times()`` output → ``compile_times``."""
    out = _Out(ctx)
    data = read_document(chunks, out, "compile_times() text", keep_head=True)
    if data is not None:
        text = decode(data, None, out)
        if out.times(text, "text", ctx.rank) == 0:
            out.error("no_table", None, f"no `{HEADER}` table found", data[:EXCERPT])
    yield from out.flush()


# ----------------------------------------------------------------------------- sniffing

_WRAPPED = re.compile(rb'"counters"\s*:\s*\{')
_GROUP = re.compile(rb'"(' + b"|".join(g.encode() for g in KNOWN_GROUPS) + rb')"\s*:\s*\{')


def sniff_counters_json(head: bytes, name: str) -> bool:
    """A JSON object with a ``"counters": {`` key, or with two known counter groups (``"frames": {``, ...)."""
    h = head.lstrip()
    if not h.startswith(b"{"):
        return False
    if _WRAPPED.search(h):
        return True
    return len(set(_GROUP.findall(h))) >= 2


def sniff_compile_times(head: bytes, name: str) -> bool:
    """``TorchDynamo compilation metrics:`` among the first 20 lines that are not ``#`` comments."""
    if head.lstrip().startswith((b"{", b"[")):
        return False
    seen = 0
    for line in head.split(b"\n", 400)[:400]:
        s = line.strip()
        if not s or s.startswith(b"#"):
            continue
        if s == HEADER.encode():
            return True
        seen += 1
        if seen >= 20:
            break
    return False


COUNTERS_JSON = Format(
    "counters_json",
    "torch._dynamo counters dumped as JSON (+ compile_times text)",
    sniff_counters_json,
    read_counters_json,
    role=DOCUMENT,
    auxiliary=True,
)
COMPILE_TIMES = Format(
    "compile_times",
    "torch._dynamo.utils.compile_times() text",
    sniff_compile_times,
    read_compile_times,
    role=DOCUMENT,
    auxiliary=True,
)
