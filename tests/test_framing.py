"""The unwrapping layer (pt2logs.readers.lines.framing): every framing and prefix on lines written as
the collector or launcher writes them (tests/framing_writers.py, each cited to the program's code), and
real TORCH_LOGS captures wrapped line by line coming back exactly."""

from __future__ import annotations

import pytest
from conftest import fixture_path
from framing_writers import WRITERS, lines_of
from hypothesis import given, settings
from hypothesis import strategies as st

from pt2logs.readers import detect as sniff
from pt2logs.readers.lines import framing as F
from pt2logs.readers.lines.framing_patterns import (
    FRAMINGS,
    PREFIXES,
    RAY_REPEAT,
    RAY_REPEAT_EXAMPLE,
)

CAPTURES = [
    "gpu/graph_breaks/torch_logs.txt",
    "gpu/compile_failure/torch_logs.txt",
    "gpu/recompile_causes/torch_logs.txt",
    "torch_logs/recompiles.txt",
    "torch_logs/output_code.txt",
    "torch_logs/dist_rank_recompiles.txt",
]


def unwrap_file(data: bytes) -> tuple[F.Found | None, list[tuple[int, str, F.Carried]]]:
    found = F.detect(data[:65536])
    lines = lines_of(data)
    if found is None:
        return None, [(i + 1, t, F.Carried()) for i, t in enumerate(lines)]
    u = F.Unwrap(found)
    out = []
    for i, t in enumerate(lines):
        out.extend(u.feed(i + 1, t))
    out.extend(u.finish())
    return found, out


@pytest.fixture(scope="module", params=CAPTURES)
def capture(request: pytest.FixtureRequest) -> list[str]:
    return lines_of(fixture_path(*request.param.split("/")).read_bytes())


# ----------------------------------------------------------------------------- the table


def test_every_entry_reads_its_own_example() -> None:
    """Each framing's and prefix's example line (as its program writes it) is recognised and unwrapped to
    the program's line."""
    for f in FRAMINGS:
        found = F.detect((f.example + "\n").encode() * 3)
        assert found is not None and found.framing is f, f.name
        [(_, inner, c)] = F.Unwrap(found).feed(1, f.example)
        assert inner.startswith(("[rank0]:W1126", "INFO ")), (f.name, inner)
        assert c.via == f.name and c.ts is not None or f.name == "journald" and c.time
    for p in PREFIXES:
        found = F.detect((p.example + "\n").encode() * 3)
        assert found is not None and p in found.prefixes, p.name
        [(_, inner, c)] = F.Unwrap(found).feed(1, p.example)
        assert inner.startswith(("[rank0]:W1126", "INFO 11-26")), (p.name, inner)
    assert RAY_REPEAT.search(RAY_REPEAT_EXAMPLE).group("repeat") == "7"


def test_carried_fields() -> None:
    ex = {f.name: f.example for f in FRAMINGS}
    c = F.Unwrap(F.detect(ex["cri"].encode())).feed(1, ex["cri"])[0][2]
    assert (c.stream, c.ts) == ("stderr", 1795714589939238)
    c = F.Unwrap(F.detect(ex["gcp_logentry"].encode())).feed(1, ex["gcp_logentry"])[0][2]
    assert (c.pod, c.container, c.stream) == ("trainer-0", "trainer", "stderr")
    c = F.Unwrap(F.detect(ex["journald"].encode())).feed(1, ex["journald"])[0][2]
    assert (c.host, c.worker, c.pid, c.ts) == ("gpu-node-3", "python3", 1234, 1795714589000000)
    c = F.Unwrap(F.detect(ex["cloudwatch_json"].encode())).feed(1, ex["cloudwatch_json"])[0][2]
    assert c.ts == 1795714589939000


# ----------------------------------------------------------------------------- prefixes (issue 33 case 2, 3)


@pytest.mark.parametrize(
    ("line", "inner", "fields"),
    [
        # srun --label with 16 tasks pads to two digits (Slurm _build_label "%*d: ")
        (" 3: I1126 x", "I1126 x", {"rank": 3}),
        ("trainer-1  | I1126 x", "I1126 x", {"container": "trainer-1"}),
        (
            "(RayTrainWorker pid=123, ip=10.0.0.5) I1126 x",
            "I1126 x",
            {"worker": "RayTrainWorker", "pid": 123, "host": "10.0.0.5"},
        ),
        ("(EngineCore_DP0 pid=2507) I1126 x", "I1126 x", {"worker": "EngineCore_DP0", "pid": 2507}),
        (
            "(Worker_TP3_EP3 pid=4155527) I1126 x",
            "I1126 x",
            {"worker": "Worker_TP3_EP3", "pid": 4155527},
        ),
        (
            "\x1b[1;36m(VllmWorker rank=2 pid=88)\x1b[0;0m I1126 x",
            "I1126 x",
            {"worker": "VllmWorker rank=2", "rank": 2},
        ),
        ("(pid=77) I1126 x", "I1126 x", {"pid": 77}),
        ("(raylet, ip=10.0.0.7) I1126 x", "I1126 x", {"worker": "raylet", "host": "10.0.0.7"}),
        (
            "[actor=<root>.‹…VLLMGenerator generator{'gpus': 0/4}>] I1126 x",
            "I1126 x",
            {"worker": "<root>.‹…VLLMGenerator generator{'gpus': 0/4}>"},
        ),
        ("[default3]:[rank3]:I1126 x", "[rank3]:I1126 x", {"local_rank": 3}),
        (
            "0: (EngineCore_0 pid=132079) (RayWorkerWrapper pid=132266) I1126 x",
            "I1126 x",
            {
                "rank": 0,
                "worker": "EngineCore_0",
                "pid": 132079,
                "via": "srun_label+process_tag+process_tag",
            },
        ),
        # Ray's dedup: the suffix (green, the explanation the first time) is the count of lines not printed
        (
            "(RayTrainWorker pid=9) init took 7.154 s\x1b[32m [repeated 7x across cluster] (Ray deduplicates logs by default. "
            "Set RAY_DEDUP_LOGS=0 to disable log deduplication, or see https://docs.ray.io/en/master/ray-observability/"
            "user-guides/configure-logging.html#log-deduplication for more options.)\x1b[0m",
            "init took 7.154 s",
            {"repeat": 7},
        ),
    ],
)
def test_prefixes(line: str, inner: str, fields: dict) -> None:
    found = F.detect((line + "\n").encode() * 2)
    assert found is not None
    [(_, got, c)] = F.Unwrap(found).feed(1, line)
    assert got == inner
    for k, v in fields.items():
        assert getattr(c, k) == v, k


def test_rank_prefix_of_torch_is_not_a_launcher_prefix() -> None:
    """``[rank0]:`` is torch's own prefix (LogLines reads it): never stripped as torchrun's ``[default0]:``."""
    line = "[rank0]:W1126 17:36:29.939000 1234 torch/_dynamo/convert_frame.py:1016] msg"
    assert F.detect((line + "\n").encode() * 5) is None


# ----------------------------------------------------------------------------- real captures, wrapped


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_wrapped_capture_unwraps_exactly(capture: list[str], name: str) -> None:
    """A real TORCH_LOGS capture written by each collector / launcher unwraps to exactly its lines."""
    data = WRITERS[name](capture)
    found, out = unwrap_file(data)
    assert found is not None, name
    assert [t for _, t, _ in out] == capture
    assert all(c.via for _, _, c in out), name
    head = "\n".join(t for _, t, _ in out).encode()[:65536]
    assert (
        sniff(head, "stderr.log").name
        == sniff("\n".join(capture).encode()[:65536], "stderr.log").name
    )


@pytest.mark.parametrize("name", ["cri", "docker_json"])
def test_long_lines_come_back_joined(capture: list[str], name: str) -> None:
    """Lines split in parts (CRI P tags, Docker logs without \\n; 64-byte parts here so that every capture has
    many) are joined again; stdout and stderr parts interleaved are joined each on its own."""
    data = WRITERS[name](capture, max_len=64)
    _, out = unwrap_file(data)
    assert [t for _, t, _ in out] == capture
    other = WRITERS[name](["stdout line that goes on " * 8], stream="stdout", max_len=64)
    err = WRITERS[name](capture[:3], max_len=64)
    mixed = b"".join(
        a + b for a, b in zip(err.splitlines(keepends=True), other.splitlines(keepends=True))
    )
    mixed += b"".join(err.splitlines(keepends=True)[len(other.splitlines()) :])
    _, out = unwrap_file(mixed)
    assert sorted(t for _, t, _ in out) == sorted(capture[:3] + ["stdout line that goes on " * 8])
    assert {c.stream for _, _, c in out} == {"stderr", "stdout"}


def test_stacked_and_mixed(capture: list[str]) -> None:
    """srun around Ray around vLLM inside a Kubernetes node log; a file that concatenates two framings."""
    inner = lines_of(WRITERS["vllm_process"](capture))
    inner = lines_of(WRITERS["ray"](inner, worker="RayWorkerWrapper", pid=132266, ip=None))
    inner = lines_of(WRITERS["srun_label"](inner, task=5, width=2))
    _, out = unwrap_file(WRITERS["cri"](inner))
    assert [t for _, t, _ in out] == capture
    c = out[0][2]
    assert (c.via, c.rank, c.worker, c.pid) == (
        "cri+srun_label+process_tag+process_tag",
        5,
        "RayWorkerWrapper",
        132266,
    )
    half = len(capture) // 2
    _, out = unwrap_file(WRITERS["cri"](capture[:half]) + WRITERS["docker_json"](capture[half:]))
    assert [t for _, t, _ in out] == capture


def test_open_partial_at_end_and_bounded() -> None:
    data = WRITERS["cri"](["x" * 200], max_len=64)
    data = (
        data[: data.rfind(b" F ")].rsplit(b"\n", 1)[0] + b"\n"
    )  # the F part lost: the file ends inside the line
    _, out = unwrap_file(data)
    assert [t for _, t, _ in out] == ["x" * 192]
    errors = []
    u = F.Unwrap(
        F.detect(WRITERS["cri"](["y"])),
        errors.append and (lambda *a: errors.append(a)),
        max_line=100,
    )
    lines = lines_of(WRITERS["cri"](["y" * 500], max_len=64))
    got = [x for i, t in enumerate(lines) for x in u.feed(i + 1, t)]
    assert [t for _, t, _ in got] == ["y" * 100] and errors and errors[0][0] == "line_too_long"


# ----------------------------------------------------------------------------- what is not framed


def test_plain_captures_are_not_framed() -> None:
    """Every shared TORCH_LOGS capture and public paste is read as it is (no per-line cost): detect() is None."""
    for path in sorted(fixture_path("torch_logs").rglob("*.txt")) + sorted(
        fixture_path("gpu").rglob("*.txt")
    ):
        assert F.detect(path.read_bytes()[:65536]) is None, path


def test_framed_foreign_text_stays_foreign() -> None:
    """A collector-framed file of non-torch output unwraps to that output, which no text format takes."""
    foreign = [
        "Epoch 1/10",
        "loss=0.53 acc=0.81",
        "saving checkpoint to /ckpt/step_100",
        "",
        "done in 3.2 s",
    ] * 20
    for name in ("cri", "docker_json", "journald", "loki_jsonl", "srun_label", "compose"):
        data = WRITERS[name](foreign)
        found, out = unwrap_file(data)
        assert found is not None and [t for _, t, _ in out] == foreign, name
        assert sniff("\n".join(t for _, t, _ in out).encode(), "stderr.log") is None, name


def test_open_parts_are_bounded() -> None:
    """Docker parts (no trailing \\n) of many made-up streams: at most MAX_OPEN held, the oldest handed over, none lost."""
    lines = ['{"log":"whole\\n","stream":"stderr","time":"2026-11-26T17:36:29Z"}']
    lines += [
        f'{{"log":"part{i}","stream":"s{i}","time":"2026-11-26T17:36:29Z"}}' for i in range(40)
    ]
    u = F.Unwrap(F.detect(("\n".join(lines) + "\n").encode()))
    out = [x for i, t in enumerate(lines) for x in u.feed(i + 1, t)]
    assert len(u.open) == F.MAX_OPEN
    out += u.finish()
    assert [t for _, t, _ in out] == ["whole"] + [f"part{i}" for i in range(40)]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(
                [f.example for f in FRAMINGS]
                + [p.example for p in PREFIXES]
                + [
                    '{"log":"part","stream":"stderr","time":"x"}',
                    '{"MESSAGE":[1,2,255]}',
                    '{"line":3}',
                    "2026-11-26T17:36:29Z stderr P ",
                    "0: (x pid=1) [repeated 99999999999x across cluster]",
                    '{"message":"{\\"log\\":1}"}',
                ]
            ),
            st.text(max_size=60),
        ),
        max_size=30,
    ),
    st.binary(max_size=200),
)
def test_arbitrary_lines_never_raise(lines: list[str], junk: bytes) -> None:
    """Whatever the head and the lines, the layer hands lines over and never raises (bad JSON, odd types, huge counts)."""
    data = ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass") + junk
    found, out = unwrap_file(data)
    assert all(isinstance(t, str) for _, t, _ in out)
    F.detect(junk)


def _read_capture(data: bytes) -> dict[str, list[dict]]:
    from pt2logs.readers.kit import FileContext
    from pt2logs.readers.lines.torch_logs import read_torch_logs

    ctx = FileContext(file="0.log", mtime=1.76e9)
    out: dict[str, list[dict]] = {}
    for table, batch in read_torch_logs(
        [data[i : i + 65536] for i in range(0, len(data), 65536)], ctx
    ):
        out.setdefault(table, []).extend(batch.to_pylist())
    return out


@pytest.mark.parametrize("name", ["cri", "docker_json", "journald"])
def test_a_framing_that_starts_after_the_head_is_unwrapped_from_its_first_line(name: str) -> None:
    """A log a collector appended to or rotated into: 370 KB of plain TORCH_LOGS lines (past the 64 KB the
    framing is detected from), then a real GPU capture as the collector writes it. The framed part reads as
    the same capture unframed: the same recompiles, graph breaks, failures and messages, and its lines have
    what the wrapping carried."""
    plain = fixture_path("torch_logs", "output_code.txt").read_bytes()
    assert len(plain) > 100_000
    capture = lines_of(fixture_path("gpu", "compile_failure", "torch_logs.txt").read_bytes())
    capture += lines_of(fixture_path("gpu", "recompile_causes", "torch_logs.txt").read_bytes())
    raw = _read_capture(plain + ("\n".join(capture) + "\n").encode())
    mixed = _read_capture(plain + WRITERS[name](capture))

    def facts(t: dict[str, list[dict]]) -> dict[str, object]:
        return {
            "recompiles": sorted(
                ((r["compile_id"], r["reason"]) for r in t.get("recompiles", [])), key=repr
            ),
            "graph_breaks": sorted(
                ((r["compile_id"], r["reason"]) for r in t.get("graph_breaks", [])), key=repr
            ),
            "failures": sorted(
                ((r["compile_id"], r["exc_type"]) for r in t.get("failures", [])), key=repr
            ),
            "messages": sorted(
                (
                    (r["compile_id"], r["artifact"], r["message"])
                    for r in t["log_lines"]
                    if not r["foreign"]
                ),
                key=repr,
            ),
        }

    want = facts(raw)
    assert want["recompiles"] and want["graph_breaks"] and want["failures"]
    assert facts(mixed) == want
    carried = mixed.get("collected_lines", [])
    assert carried and {r["wrapped"] for r in carried} == {name}
    first = min(r["line_no"] for r in carried)
    assert first == plain.count(b"\n") + 1  # from the first framed line on, none before
