"""A corpus of damaged real inputs: what a killed job, a full disk or a bad copy leaves behind.

Every format the readers know (the real example of each in tests/readers/test_format_contract.py's
EXAMPLES) cut at several offsets, mid-line and mid-JSON, one cut with invalid UTF-8 glued in, the JSON
ones also whole with every value of another type; a real
torch 2.13 trace cut inside a payload at several offsets; a 2-rank DDP run with rank 0 cut inside a record's header; a
run folder (trace, TORCH_LOGS capture, counters) every file of which is cut, the trace's .gz too; and a
trace holding one record of every event kind torch 2.13 emits with each payload cut in half, given the
wrong JSON shape (an array, a string, a number where an object was expected; strings where numbers
were expected) or invalid UTF-8. Each damaged input is a folder of its own, so each is one run named
after its folder (a trace file is renamed after it too: cuts of one file share the head a run id is
derived from): ``build(dest)`` writes them and returns the folders' names.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import SAMPLES, fixture_path
from tests.readers.test_format_contract import EXAMPLES

from pt2logs.readers import FORMATS, detect

#: where each format's example is cut, as fractions of its length (moved off a line start: mid-line)
CUTS = (0.31, 0.62, 0.93)
#: train_step's trace (1.7 MB uncompressed) cut at these bytes: each one inside a JSON payload
TRACE_CUTS = (150_000, 500_000, 1_200_000)
BAD_UTF8 = b"\xff\xfe\xc3("
#: the formats whose example is JSON: also written whole with every value of the wrong type
WRONG_TYPES = ("spyre_kernel_spec", "spyre_timing", "spyre_ffdc", "tlparse_dir", "counters_json")


def _mid_line(data: bytes, at: int) -> int:
    """``at`` moved forward past a line start and a record header's first bytes: the cut falls inside a line."""
    at = max(1, min(at, len(data) - 1))
    while at < len(data) - 1 and data[at - 1 : at] in (b"\n", b"\t"):
        at += 1
    return at + 3 if at + 3 < len(data) else at


def _write(folder: Path, files: dict[str, bytes]) -> str:
    for rel, data in files.items():
        p = folder / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return folder.name


def _examples(dest: Path, scratch: Path) -> Iterator[str]:
    for name, make in EXAMPLES.items():
        fname, data, siblings = make(scratch / name)
        # tlparse's own copy of the log would be read instead of its damaged raw.jsonl
        kept = {rel: b for rel, b in siblings.items() if rel != "raw.log"}
        for i, frac in enumerate(CUTS):
            cut = data[: _mid_line(data, int(len(data) * frac))]
            if i == 1:  # invalid UTF-8 in the middle of a line, then cut
                at = _mid_line(cut, len(cut) // 2)
                cut = cut[:at] + BAD_UTF8 + cut[at:]
            run = f"{name}-cut{int(frac * 100)}"
            renamed = (
                f"{run}{Path(fname).suffix}"  # a big file read alone, its format told by content
            )
            if (
                len(data) > 65536
                and not siblings
                and detect(data[:65536], renamed) is FORMATS[name]
            ):
                fname = renamed
            yield _write(dest / run, {fname: cut, **kept})
        if (
            name in WRONG_TYPES
        ):  # whole, valid JSON, every value of another type than its reader expects
            try:
                wrong = json.dumps(_swap(json.loads(data))).encode()
            except ValueError:  # JSON lines
                wrong = b"".join(
                    json.dumps(_swap(json.loads(ln), i)).encode() + b"\n"
                    for i, ln in enumerate(data.splitlines())
                    if ln.strip()
                )
            assert detect(wrong[:65536], fname) is FORMATS[name], (
                f"{name}: its sniffer refuses the swapped types"
            )
            yield _write(dest / f"{name}-wrong_types", {fname: wrong, **kept})


def _swap(v: object, i: int = 0) -> object:
    """``v`` with every leaf of another JSON type: strings become numbers or objects, numbers strings or
    arrays, booleans and nulls arrays or strings; keys kept."""
    if isinstance(v, dict):
        return {k: _swap(x, i + j) for j, (k, x) in enumerate(v.items())}
    if isinstance(v, list):
        return [_swap(x, i + j) for j, x in enumerate(v)]
    if isinstance(v, bool) or v is None:
        return [v] if i % 2 else "yes"
    if isinstance(v, (int, float)):
        return f"{v}x" if i % 2 else [v]
    return len(v) if i % 2 else {"text": v}


def _records(text: bytes) -> list[tuple[bytes, bytes]]:
    """A trace's records: (header line, payload lines)."""
    out: list[tuple[bytes, bytes]] = []
    for line in text.splitlines(keepends=True):
        if line.startswith(b"\t") and out:
            out[-1] = (out[-1][0], out[-1][1] + line)
        else:
            out.append((line, b""))
    return out


def _payload(header: bytes, body: bytes) -> bytes:
    """A record with ``body`` (JSON text) as its payload, its header's md5 made to match."""
    md5 = hashlib.md5(body).hexdigest().encode()
    header = re.sub(rb'"has_payload": "[0-9a-f]*"', b'"has_payload": "' + md5 + b'"', header)
    return header + b"".join(b"\t" + ln + b"\n" for ln in body.split(b"\n"))


#: payloads of the wrong shape, in turn: an array, a string, a number, an object whose usual fields
#: have the wrong types, an object with arrays where strings are expected, invalid UTF-8, JSON cut short
WRONG = (
    b"[1, 2, 3]",
    b'"a string"',
    b"42",
    b'{"name": 5, "ph": [1], "ts": "x", "args": "y", "pid": "p", "tid": {}}',
    b'{"name": ["a"], "ph": {"B": 1}, "ts": [], "args": [1, 2], "compile_id": 7, "cat": 3}',
    b'{"name": "inductor_compile", "ph": "B", "ts": 1.5, "args": {"compile_id": "'
    + BAD_UTF8
    + b'"}}',
    b'{"name": "inductor_compile", "ph": "B", "ts": 17',
)


#: values of the wrong type or range for a record header's fields, in turn
ODD_VALUES = (1e300, -1, "12abc", [1, "a"], {"x": None}, "", 2**70, -1e-300, True, None)


def _odd_header(head: bytes, i: int) -> bytes:
    """The header with every field of its event's metadata given an odd value (has_payload kept)."""
    prefix, _, envelope = head.rstrip(b"\n").partition(b"] ")
    try:
        env = json.loads(envelope)
    except ValueError:
        return head
    for key, meta in env.items():
        if isinstance(meta, dict):
            env[key] = {k: ODD_VALUES[(i + j) % len(ODD_VALUES)] for j, k in enumerate(meta)}
    return prefix + b"] " + json.dumps(env).encode() + b"\n"


def _every_kind(dest: Path) -> Iterator[str]:
    recs = _records(fixture_path("torch_logs", "trace_one_per_kind.log").read_bytes())
    halved, wrong, odd = [], [], []
    for i, (head, body) in enumerate(recs):
        odd.append(_odd_header(head, i) + body)
        if not body:
            halved.append(head)
            wrong.append(head)
            continue
        text = b"\n".join(ln[1:] for ln in body.rstrip(b"\n").split(b"\n"))
        halved.append(_payload(head, text[: len(text) // 2]))
        wrong.append(_payload(head, WRONG[i % len(WRONG)]))
    # two ranks of one run: the queries that compare ranks (first_divergence, rank_divergence) read them
    yield _write(
        dest / "every_kind-2ranks",
        {
            "dedicated_log_torch_trace_rank_0_halved.log": b"".join(halved),
            "dedicated_log_torch_trace_rank_1_wrong.log": b"".join(wrong),
        },
    )
    yield _write(
        dest / "every_kind-payloads_halved", {"every_kind-payloads_halved.log": b"".join(halved)}
    )
    yield _write(dest / "every_kind-wrong_shapes", {"every_kind-wrong_shapes.log": b"".join(wrong)})
    yield _write(
        dest / "every_kind-odd_header_values", {"every_kind-odd_header_values.log": b"".join(odd)}
    )


def _sample(*parts: str) -> bytes:
    return gzip.decompress((SAMPLES.joinpath(*parts)).read_bytes())


def _traces(dest: Path) -> Iterator[str]:
    (trace,) = (SAMPLES / "train_step" / "trace").glob("*.log.gz")
    data = gzip.decompress(trace.read_bytes())
    for n in TRACE_CUTS:
        yield _write(dest / f"train_step-cut{n}", {trace.name[:-3]: data[:n]})
    # a 2-rank DDP run, rank 0 killed inside a record's header (rank 1 whole), with the job's stderr and counters
    ddp = SAMPLES / "ddp_2rank"
    files = {}
    for p in sorted((ddp / "trace").glob("*.log.gz")):
        d = gzip.decompress(p.read_bytes())
        files["trace/" + p.name[:-3]] = (
            d[: d.index(b"] {", len(d) * 2 // 3) + 20] if "rank_0" in p.name else d
        )
    files["torch_logs.txt"] = gzip.decompress((ddp / "torch_logs.txt.gz").read_bytes())
    files.update({p.name: p.read_bytes() for p in ddp.glob("counters*.json")})
    yield _write(dest / "ddp_2rank-rank0_cut", files)
    # 3 ranks logging their collective schedules, rank 0 cut inside its last one (a JSON list cut short)
    sched = {
        p.name: p.read_bytes() for p in fixture_path("tlparse", "multi_rank_schedule").glob("*.log")
    }
    (r0,) = (n for n in sched if "rank_0" in n)
    at = sched[r0].rindex(b"inductor_collective_schedule")
    sched[r0] = sched[r0][: sched[r0].index(b"\n\t", at) + 40]
    yield _write(dest / "multi_rank_schedule-rank0_cut", sched)
    # a run folder every file of which is cut: the trace (still gzip: a cut .gz), its capture and counters
    cf = SAMPLES / "compile_failure"
    (t,) = (cf / "trace").glob("*.log.gz")
    tz, logs, counters = (
        t.read_bytes(),
        _sample("compile_failure", "torch_logs.txt.gz"),
        (cf / "counters.json").read_bytes(),
    )
    yield _write(
        dest / "compile_failure-all_cut",
        {
            "trace/" + t.name: tz[: len(tz) * 3 // 4],
            "torch_logs.txt": logs[: _mid_line(logs, len(logs) // 2)],
            "counters.json": counters[: len(counters) // 2],
        },
    )


#: the damaged inputs' folders (= their runs' names), in the order build() writes them
FOLDERS = (
    *(
        n
        for name in EXAMPLES
        for n in (
            *(f"{name}-cut{int(frac * 100)}" for frac in CUTS),
            *([f"{name}-wrong_types"] if name in WRONG_TYPES else []),
        )
    ),
    *(
        f"every_kind-{k}"
        for k in ("2ranks", "payloads_halved", "wrong_shapes", "odd_header_values")
    ),
    *(f"train_step-cut{n}" for n in TRACE_CUTS),
    "ddp_2rank-rank0_cut",
    "multi_rank_schedule-rank0_cut",
    "compile_failure-all_cut",
)


def build(dest: Path, scratch: Path) -> list[str]:
    """Write the damaged corpus under ``dest`` (one folder per run); the run names, in order."""
    folders = [*_examples(dest, scratch), *_every_kind(dest), *_traces(dest)]
    assert tuple(folders) == FOLDERS
    return folders
