"""Torch-Spyre reader: the real excerpts, generated multi-kilobyte logs in the three line shapes,
half-assembled copies, sniffers, kernel specs, timing records, the named queries, and a
property test (arbitrary input never raises).

The logs are generated here from the shapes of the real excerpts (fixtures/spyre/issue_excerpts.txt);
every expected count and byte total is computed from what the generator wrote.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import pt2logs
import pt2logs.tables.spyre  # noqa: F401  (registers the tables before any connect)
from pt2logs.readers import FORMATS
from pt2logs.readers.kit import FileContext
from pt2logs.readers.spyre import (
    SPYRE_KERNEL_SPEC,
    SPYRE_LOG,
    SPYRE_TIMING,
    dtype_width,
    read_kernel_spec,
    read_spyre_log,
    read_timing,
    sniff_kernel_spec,
    sniff_spyre_log,
    sniff_timing,
    torch_dtype,
)

assert all(FORMATS[f.name] is f for f in (SPYRE_LOG, SPYRE_KERNEL_SPEC, SPYRE_TIMING))

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
SPYRE = FIXTURES / "spyre"
QUERIES = Path(__file__).resolve().parents[2] / "queries"
needs_fixtures = pytest.mark.skipif(not SPYRE.is_dir(), reason="shared fixtures not present")


def read(
    reader: Any, data: bytes, chunk: int | None = None, **ctx_kw: Any
) -> tuple[dict[str, list[dict]], FileContext]:
    ctx = FileContext(file="log.txt", path="/x/log.txt", **ctx_kw)
    chunks = [data] if not chunk else [data[i : i + chunk] for i in range(0, len(data), chunk)]
    out: dict[str, list[dict]] = {}
    for table, batch in reader(iter(chunks), ctx):
        assert isinstance(batch, pa.RecordBatch)
        out.setdefault(table, []).extend(batch.to_pylist())
    return out, ctx


# ----------------------------------------------------------------------------- generator

#: torch dtype -> (name in copy lines, host width, device dtype, device width, host DCI code, device DCI code)
DT = {
    "float16": ("Half", 2, "DataFormats.SEN169_FP16", 2, 15, 0),
    "bfloat16": ("BFloat16", 2, "DataFormats.SEN169_FP16", 2, 16, 0),
    "float32": ("Float", 4, "DataFormats.IEEE_FP32", 4, 6, 5),
}
C10 = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float"}
NOISE = [
    "/home/u/torch-spyre/torch_spyre/_inductor/customops.py:165: FallbackWarning: torch.ops.spyre.full is falling back to cpu",
    "INFO 08-14 07:08:11 [loader.py:123] Loading weights took 1.23 seconds",
    "(Worker pid=1419) INFO 08-14 07:08:12 [gpu_model_runner.py:1879] Model loading took 15.2 GiB",
    "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.20s/it]",
    "W0814 07:08:11.123000 1419 torch/_dynamo/convert_frame.py:1234] [0/0] torch._dynamo hit config.recompile_limit (8)",
    "Warning: FakeTensor(..., device='meta', size=(4, 8)) lacks spyre_dci; assuming generic stick layout",
    "[rank0]: Traceback (most recent call last):",
    "[INFO] [vllm.worker] a leveled line of another logger",
    "[ 25%] Building CXX object csrc/CMakeFiles/_C.dir/spyre_mem.cpp.o",
]
NOISE_INDENTED = [
    '  warn_fallback("torch.ops.spyre.full")',
    "",
    "    at torch_spyre/_inductor/passes.py:88",
]


def device_size(shape: list[int], width: int) -> list[int]:
    """The stick rule: the last dimension is padded to 128 bytes and split into sticks."""
    stick = 128 // width
    return list(shape[:-1]) + [math.ceil(shape[-1] / stick), stick]


def row_major(shape: list[int]) -> list[int]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return out[::-1]


class LogWriter:
    """Writes a Spyre log in one style and records what a correct reader must find."""

    def __init__(self, style: str, seed: int):
        self.style, self.rng = style, random.Random(seed)
        self.lines: list[str] = []
        self.transfers: list[dict] = []
        self.allocs: list[int] = []
        self.layouts = 0
        self.launches = 0
        self.messages = 0
        self.warnings = 0
        self.sec = 0

    # -- primitives
    def noise(self, p: float = 0.3, indented: bool = True) -> None:
        while self.rng.random() < p:
            pool = NOISE + (NOISE_INDENTED if indented else [])
            self.lines.append(self.rng.choice(pool))

    def spy(self, line: str) -> None:
        self.noise()
        self.lines.append(line)
        self.messages += 1

    def ts(self) -> str:
        self.sec += 1
        return f"2026-08-14 07:{8 + self.sec // 60:02d}:{self.sec % 60:02d}"

    def c(self, func: str, legacy: str, unified: str | None = None, force: bool = False) -> None:
        """A C++ line: legacy DEBUGINFO spacing, or unified logging (args concatenated). Unified
        captures also hold some legacy lines (both switched on, as in the constructed example)."""
        if self.style == "legacy" or unified is None or (not force and self.rng.random() < 0.25):
            self.spy(f"[ {func} ]  {legacy}")
        else:
            self.spy(f"[DEBUG] [spyre.runtime] {self.ts()} {func}: {unified}")

    def layout(self, dev: list[int], ddt: str, era: int) -> str:
        dims = ", ".join(map(str, dev))
        dim_map = ", ".join(map(str, list(range(len(dev) - 1)) + [len(dev) - 2]))
        smap = ", ".join(map(str, row_major(dev)))
        return [
            f"SpyreTensorLayout(device_size=[{dims}], device_strides=[{smap}], dim_map =[{dim_map}], num_stick_dims=1, format=StickFormat.Dense, device_dtype={ddt})",
            f"SpyreTensorLayout(device_size=[{dims}], dim_map =[{dim_map}], device_dtype={ddt})",
            f"SpyreTensorLayout(device_size=[{dims}], dim_map =[{dim_map}], stride_map =[{smap}], device_dtype={ddt})",
            f"SpyreTensorLayout(device_size=[{dims}], stride_map =[{smap}], device_dtype={ddt})",
        ][era % 4]

    def allocation(self, shape: list[int], dtype: str, era: int) -> None:
        """Tensor info, allocation and layout lines of a new device tensor."""
        _, hw, ddt, dw, _, _ = DT[dtype]
        dev = device_size(shape, dw)
        size, stride = ", ".join(map(str, shape)), ", ".join(map(str, row_major(shape)))
        self.c(
            "spyre_empty_strided",
            f"Tensor info on CPU (Size: [{size}] , Stride:  [{stride}] , dtype:  {C10[dtype]} ) to be mapped onto device  spyre:0",
            f"Tensor info on CPU (Size:[{size}], Stride:[{stride}], dtype:{C10[dtype]}) to be mapped onto devicespyre:0",
        )
        n = math.prod(dev) * dw
        self.c(
            "allocate",
            f"allocating  {n}  (bytes) on Spyre spyre:0",
            f"allocating {n} (bytes) on Spyrespyre:0",
        )
        if self.style == "unified":
            self.c(
                "allocate",
                "",
                force=True,
                unified=f"allocated CompositeAddress{{total_size={n}, num_chunks=1, owns=true, chunks=[Chunk{{addr=LogicalAddress{{region_id=0x7, offset={hex(0x1000 * len(self.allocs))}}}, size={n}, domain_id=0}}]}}",
            )
        self.allocs.append(n)
        lay = self.layout(dev, ddt, era)
        self.c("spyre_empty_strided", f"SpyreTensorLayout:  {lay}", f"SpyreTensorLayout: {lay}")
        self.layouts += 1

    def dci(
        self,
        h2d: bool,
        shape: list[int],
        dev: list[int],
        dtype: str,
        cut: int | None = None,
        one_line: bool = False,
    ) -> bool:
        """A DataConversionInfo block; returns whether both shape fields survived the cut."""
        _, _, _, _, hc, dc = DT[dtype]
        ins, outs = (shape[::-1], dev[::-1]) if h2d else (dev[::-1], shape[::-1])
        body = [
            '  "dsName_" : "DCI-Tensor-0",',
            f'  "isHostToSen_" : {int(h2d)},',
            f'  "dataformat_src_" : {hc if h2d else dc},',
            f'  "dataformat_dst_" : {dc if h2d else hc},',
            '  "dcOpName_" : 0,',
            '  "pre_expand_dcsi_" : [',
            "  ],",
            '  "pre_input_shape_" : [],',
            '  "dcsi_" : [',
            "    {",
            f'      "size_" : {outs},',
            '      "offset_src_" : 0,',
            f'      "stride_src_" : {row_major(ins)[::-1]},',
            '      "offset_dst_" : 0,',
            f'      "stride_dst_" : {row_major(outs)[::-1]}',
            "    }",
            "  ],",
            f'  "input_shape_" : {ins},',
            f'  "output_shape_" : {outs},',
            '  "post_slice_dcsi_" : [',
            "  ],",
            '  "useSpi_" : 0,',
            '  "spi_" :{',
            '    "valOrIdx_" : 0,',
            '    "numElems_" : 0',
            "  },",
            '  "usePca_" : 0',
            "}",
        ]
        if one_line:
            text = json.loads("{" + "\n".join(body))
            self.c(
                "generate_dci",
                "DataConversionInfo:  " + json.dumps(text),
                "DataConversionInfo: " + json.dumps(text),
            )
            return True
        self.c("generate_dci", "DataConversionInfo:  {", "DataConversionInfo: {")
        kept = body if cut is None else body[:cut]
        for ln in kept:
            if self.rng.random() < 0.05:
                self.lines.append(
                    self.rng.choice(NOISE[:6])
                )  # another thread writes inside the block
            self.lines.append(ln)
        if cut is not None:
            self.warnings += 1
        return cut is None or cut > 18

    def transfer(
        self,
        direction: str,
        dtype: str,
        shape: list[int],
        era: int = 3,
        cut: int | None = None,
        name: str | None = None,
    ) -> None:
        name_, hw, ddt, dw, _, _ = DT[dtype]
        dev = device_size(shape, dw)
        func = (
            self.rng.choice(["copyAsync", "spyre_copy_from"])
            if self.style == "legacy"
            else "copyAsync"
        )
        shapes_known = True
        if name is not None:
            self.spy(
                f"(Worker pid=1419) [DEBUG] [spyre.inductor.model_utils]   {name}: shape={shape} -> Spyre default layout"
            )
        if direction in ("host_to_device", "device_to_device"):
            self.allocation(shape, dtype, era)
        src, dst = {
            "host_to_device": ("cpu", "spyre:0"),
            "device_to_host": ("spyre:0", "cpu"),
            "device_to_device": ("spyre:0", "spyre:0"),
        }[direction]
        word = "self" if func == "spyre_copy_from" else "src"
        self.c(func, f"{word} ( {name_} ) is on: {src}", f"src ({name_}) is on:{src}")
        first = len(self.lines)
        self.c(func, f"dst ( {name_} ) on: {dst}", f"dst ({name_}) on:{dst}")
        if direction != "device_to_device":
            shapes_known = self.dci(
                direction == "host_to_device",
                shape,
                dev,
                dtype,
                cut,
                one_line=self.rng.random() < 0.2 and cut is None,
            )
        if direction == "device_to_host" and not shapes_known:
            host_bytes = device_bytes = None
        else:
            host_bytes, device_bytes = math.prod(shape) * hw, math.prod(dev) * dw
        self.transfers.append(
            {
                "line_no": first,
                "direction": direction,
                "dtype": dtype,
                "host_shape": shape,
                "host_bytes": host_bytes,
                "device_bytes": device_bytes,
                "name": name,
                "padding_bytes": None if host_bytes is None else device_bytes - host_bytes,
            }
        )

    def launch(self, kernel: str, d: str) -> None:
        if self.style == "legacy":
            self.spy(f"RUN: {kernel} {d}/g2.graph.cbor")
        else:
            self.spy(f"[INFO] [spyre.inductor.kernel_runner] RUN: {kernel} {d}")
        self.launches += 1

    def illustrative(self, direction: str, dtype: str, shape: list[int]) -> None:
        hw = DT[dtype][1]
        dev = device_size(shape, hw)
        verb = "copy_to_device" if direction == "host_to_device" else "copy_to_host"
        self.spy(f"[TORCH_SPYRE_DEBUG] {verb}: shape={shape} dtype={dtype}")
        first = len(self.lines)
        self.spy(
            f"  device_layout: SpyreTensorLayout(device_size={dev}, stride_map={row_major(dev)}, ...)"
        )
        self.layouts += 1
        self.spy("  transfer OK")
        self.transfers.append(
            {
                "line_no": first,
                "direction": direction,
                "dtype": dtype,
                "host_shape": shape,
                "name": None,
                "host_bytes": math.prod(shape) * hw,
                "device_bytes": math.prod(dev) * hw,
                "padding_bytes": (math.prod(dev) - math.prod(shape)) * hw,
            }
        )

    def text(self) -> bytes:
        return ("\n".join(self.lines) + "\n").encode()


def random_shape(rng: random.Random) -> list[int]:
    return [rng.choice([1, 2, 3, 8, 64, 65, 100, 128, 130, 4096])] + [
        rng.randint(1, 300) for _ in range(rng.randint(0, 2))
    ]


def build(style: str, seed: int = 1, n: int = 40) -> LogWriter:
    """A multi-kilobyte log: copies each way, kernel outputs, launches, foreign lines, truncated blocks."""
    w = LogWriter(style, seed)
    rng = w.rng
    w.lines += [rng.choice(NOISE) for _ in range(10)]  # unrelated output first
    weights = [f"model.layers.{i}.mlp.w" for i in range(3)]
    for i in range(n):
        if style == "python":
            w.spy(
                f"[INFO] [spyre.inductor.passes] elapsed     {i}ms  propagate_spyre_tensor_layouts"
            )
            w.spy(
                f"[INFO] [spyre.inductor.sdsc_compile] Generating /tmp/ti/inductor-spyre/k{i % 4}/sdsc_0.json"
            )
            w.launch(f"sdsc_fused_add_{i % 4}", f"/tmp/ti/inductor-spyre/k{i % 4}")
            w.illustrative(
                rng.choice(["host_to_device", "device_to_host"]),
                rng.choice(list(DT)),
                random_shape(rng),
            )
            continue
        dtype = rng.choice(list(DT))
        direction = rng.choice(
            ["host_to_device"] * 3 + ["device_to_host"] * 2 + ["device_to_device"]
        )
        cut = rng.choice([3, 12, 20]) if i in (7, 23) else None
        if (
            i == 23
        ):  # a device-to-host copy whose block is cut before its shapes: kept, bytes unknown
            direction, cut = "device_to_host", 12
        name = (
            weights[i % 3]
            if style == "unified" and direction == "host_to_device" and i % 4 == 0
            else None
        )
        shape = [64, 65] if name else random_shape(rng)
        w.transfer(direction, dtype, shape, era=i, cut=cut, name=name)
        if i % 5 == 0:  # a kernel output: allocated on device, never copied
            w.allocation(random_shape(rng), dtype, era=i)
            w.launch(f"sdsc_fused_mm_{i % 3}", f"/tmp/ti/inductor-spyre/mm{i % 3}")
    return w


# ----------------------------------------------------------------------------- the real excerpts


@needs_fixtures
def test_issue_excerpts() -> None:
    data = (SPYRE / "issue_excerpts.txt").read_bytes()
    assert sniff_spyre_log(data[:65536], "issue_excerpts.txt")  # first lines are comments
    out, ctx = read(read_spyre_log, data, chunk=97)
    xs = out["transfers"]
    assert [
        (
            x["func"],
            x["direction"],
            x["dtype"],
            x["host_shape"],
            x["host_bytes"],
            x["device_bytes"],
            x["padding_bytes"],
        )
        for x in xs
    ] == [
        ("spyre_copy_from", "host_to_device", "float16", [1, 3, 128], 768, 768, 0),
        ("copyAsync", "host_to_device", "float16", [64], 128, 128, 0),
        ("copyAsync", "host_to_device", "float16", [4096, 4096], 33554432, 33554432, 0),
        (
            "copy_to_device",
            "host_to_device",
            "float16",
            [65],
            130,
            256,
            126,
        ),  # the debugging guide's example
    ]
    a1, _, b1, guide = xs
    assert (
        a1["device_size"] == [3, 2, 1, 64]
        and a1["dim_map"] == [1, 2, 0, 2]
        and a1["stride_map"] == [128, 64, -1, 1]
    )
    assert (
        a1["device_dtype"] == "DataFormats.SEN169_FP16"
        and a1["alloc_bytes"] == 768
        and a1["host_strides"] == [384, 128, 1]
    )
    assert a1["parts"] == ["tensor_info", "alloc", "layout", "src", "dst", "dci"] and a1["complete"]
    assert (
        b1["tensor_name"] == "model.layers.25.self_attn.qkv_proj.q_weight"
        and b1["shape_from"] == "model_utils"
    )
    assert b1["address"] == "0x7:0x634a0000" and b1["ts"] is not None and a1["ts"] is None
    assert guide["device_size"] == [2, 64] and guide["status"] == "OK"
    assert [a["nbytes"] for a in out["spyre_allocations"]] == [768, 128, 33554432, 1024]
    assert (
        len(out["spyre_layouts"]) == 9
    )  # 3 allocations, 4 docs lines, 1 in an inductor error line, 1 illustrative
    assert [k["kernel_name"] for k in out["kernel_launches"]] == ["sdsc_fused_add_0"]
    errs = out["ingest_errors"]  # the three DataConversionInfo blocks are cut in the issue threads
    assert [e["kind"] for e in errs] == ["truncated_json"] * 3 and {
        e["severity"] for e in errs
    } == {"warning"}
    assert ctx.stats.errors == 0 and ctx.stats.warnings == 3 and ctx.stats.kinds["foreign"] > 50


@needs_fixtures
def test_constructed_examples() -> None:
    c = SPYRE / "constructed"
    out, _ = read(read_spyre_log, (c / "example_logs.txt").read_bytes(), chunk=13)
    h2d, d2h = out["transfers"]
    assert (h2d["direction"], h2d["host_bytes"], h2d["device_bytes"], h2d["alloc_bytes"]) == (
        "host_to_device",
        524288,
        524288,
        524288,
    )
    assert (
        d2h["direction"] == "device_to_host" and d2h["host_bytes"] is None and not d2h["complete"]
    )
    assert out["kernel_launches"][0]["code_dir"].endswith("3f9a1c2e_sdsc_fused_add_0_k2j4h6ab")
    assert {e["kind"] for e in out["ingest_errors"]} == {
        "bad_json"
    }  # placeholder text where the JSON would be
    specs = [
        read(read_kernel_spec, (c / f).read_bytes())[0]["kernels"]
        for f in ("sdsc_0.json", "sdsc_1.json")
    ]
    assert [
        (k["kernel_name"], k["kind"], k["num_cores"], k["data_format"], k["backend"])
        for s in specs
        for k in s
    ] == [
        ("add", "sfp", 4, "SEN169_FP16", "spyre"),
        ("batchmatmul", "pt", 4, "SEN169_FP16", "spyre"),
    ]
    rec = (c / "rec.12345.json").read_bytes()
    t, ctx = read(read_timing, rec)
    events = json.loads(rec)["events"]
    rows = t["spyre_timing"]
    assert len(rows) == len(events) == ctx.stats.events
    assert sum(r["self_ns"] for r in rows) == sum(e["self_ns"] for e in events)
    be = [r for r in rows if r["step"] == "backend_compile"]
    assert [r["kernel_name"] for r in be] == ["sdsc_fused_add_0", "sdsc_fused_mm_1"] and be[0][
        "kind"
    ] == "stage"
    top = rows[0]
    assert (
        top["depth"] == 0
        and rows[3]["depth"] == 2
        and rows[3]["parent_name"] == "pipeline:CustomPrePasses"
    )
    assert json.loads(rows[8]["counters"])["passes"] == 25 and top["pid"] == 12345


# ----------------------------------------------------------------------------- generated logs


def check(w: LogWriter, out: dict[str, list[dict]], ctx: FileContext) -> None:
    xs = out["transfers"]
    assert len(xs) == len(w.transfers)
    for got, exp in zip(xs, w.transfers, strict=True):
        assert (
            got["line_no"],
            got["direction"],
            got["dtype"],
            got["host_bytes"],
            got["device_bytes"],
            got["padding_bytes"],
        ) == (
            exp["line_no"],
            exp["direction"],
            exp["dtype"],
            exp["host_bytes"],
            exp["device_bytes"],
            exp["padding_bytes"],
        ), (got, exp)
        if exp["name"]:
            assert got["tensor_name"] == exp["name"]
    for d in ("host_to_device", "device_to_host", "device_to_device"):
        for col in ("host_bytes", "device_bytes", "padding_bytes"):
            assert sum(x[col] or 0 for x in xs if x["direction"] == d) == sum(
                e[col] or 0 for e in w.transfers if e["direction"] == d
            )
    assert [a["nbytes"] for a in out.get("spyre_allocations", [])] == w.allocs
    assert len(out["spyre_layouts"]) == w.layouts
    assert len(out.get("kernel_launches", [])) == w.launches
    # torch's own log lines in the capture are read by the TORCH_LOGS line reader (events of their own)
    torch_msgs = [r for r in out.get("log_lines", []) if not r["foreign"]]
    assert len(out["spyre_messages"]) == w.messages == ctx.stats.events - len(torch_msgs)
    assert len(out.get("recompiles", [])) == sum(
        "hit config.recompile_limit" in r["message"] for r in torch_msgs
    )
    assert ctx.stats.errors == 0 and ctx.stats.warnings == w.warnings == len(
        out.get("ingest_errors", [])
    )
    assert ctx.stats.lines == len(w.lines)


@pytest.mark.parametrize("style", ["legacy", "unified", "python"])
def test_generated_logs(style: str) -> None:
    w = build(style, seed={"legacy": 3, "unified": 4, "python": 5}[style])
    data = w.text()
    assert len(data) > 4000
    assert sniff_spyre_log(data[:65536], "stdout.txt")
    out, ctx = read(read_spyre_log, data, chunk=61)
    check(w, out, ctx)
    if style == "unified":
        assert all(
            x["ts"] is not None
            for x in out["transfers"]
            if w.lines[x["line_no"] - 1].startswith("[DEBUG]")
        )
        assert sum(x["ts"] is not None for x in out["transfers"]) > len(out["transfers"]) / 2
        assert all(a["address"] for a in out["spyre_allocations"])
        assert any(m["pid"] == 1419 and m["worker"] == "Worker" for m in out["spyre_messages"])
    if style == "legacy":
        assert {e["kind"] for e in out["ingest_errors"]} == {"truncated_json"}
        assert {
            tuple(x["parts"][-3:]) for x in out["transfers"] if x["direction"] == "host_to_device"
        } == {("src", "dst", "dci")}
    whole, _ = read(read_spyre_log, data)
    assert whole == out  # chunk boundaries do not matter


def test_batches_stay_small() -> None:
    w = build("legacy", seed=5, n=400)
    ctx = FileContext(file="big.txt", batch_rows=300)
    sizes = [b.num_rows for _, b in read_spyre_log([w.text()], ctx)]
    assert max(sizes) <= 300 and sum(sizes) > 1000


def test_half_assembled_copies_are_kept() -> None:
    log = "\n".join(
        [
            "[ copyAsync ]  dst ( Half ) on: cpu",  # the log starts mid-copy
            "[ spyre_empty_strided ]  Tensor info on CPU (Size: [65] , Stride:  [1] , dtype:  c10::Half ) to be mapped onto device  spyre:0",
            "[ allocate ]  allocating  256  (bytes) on Spyre spyre:0",
            "[ spyre_empty_strided ]  SpyreTensorLayout:  SpyreTensorLayout(device_size=[2, 64], stride_map =[64, 1], device_dtype=DataFormats.SEN169_FP16)",
            "[ copyAsync ]  src ( Half ) is on: cpu",  # its dst line is lost
            '[ generate_dci ]  DataConversionInfo:  {"isHostToSen_": 1, "dataformat_src_": 15, "dataformat_dst_": 0}',
            "[ copyAsync ]  src ( Float ) is on: spyre:0",
            "[ copyAsync ]  dst ( Float ) on: cpu",
            '[ generate_dci ]  DataConversionInfo:  {"dsName_": "DCI-Tensor-0", "isHostToSen_": 0, "dataformat_src_": 0, "dataformat_dst_": 6, "input_shape_": [64, 2], "output_shape_": [65]}',
            '[ generate_dci ]  DataConversionInfo:  {"dsName_": "DCI-Tensor-1", "isHostToSen_": 1, "input_shape_": [3], "output_shape_": [64, 1]}',
        ]
    ).encode()
    out, ctx = read(read_spyre_log, log)
    a, b, c, d = out["transfers"]
    assert (a["direction"], a["dtype"], a["host_shape"], a["parts"], a["complete"]) == (
        "device_to_host",
        "float16",
        None,
        ["dst"],
        False,
    )
    assert (b["direction"], b["host_bytes"], b["device_bytes"], b["padding_bytes"]) == (
        "host_to_device",
        130,
        256,
        126,
    )
    assert b["parts"] == ["tensor_info", "alloc", "layout", "src", "dci"]
    # fp32 on host, fp16 on device: the device format is learned from the DCI code of the earlier copy
    assert (c["direction"], c["host_shape"], c["device_size"], c["device_dtype"]) == (
        "device_to_host",
        [65],
        [2, 64],
        "DataFormats.SEN169_FP16",
    )
    assert (c["host_bytes"], c["device_bytes"], c["padding_bytes"], c["padded_elements"]) == (
        260,
        256,
        -4,
        63,
    )
    assert (d["direction"], d["dtype"], d["host_shape"], d["device_size"], d["parts"]) == (
        "host_to_device",
        None,
        [3],
        [1, 64],
        ["dci"],
    )
    assert ctx.stats.errors == ctx.stats.warnings == 0


def test_interleaved_and_unbound_tensors() -> None:
    """A tensor allocated for a kernel output is not taken by a later device-to-host copy."""
    log = "\n".join(
        [
            "[ spyre_empty_strided ]  Tensor info on CPU (Size: [8, 8] , Stride:  [8, 1] , dtype:  c10::Half ) to be mapped onto device  spyre:0",
            "some other program's output",
            "[ allocate ]  allocating  2048  (bytes) on Spyre spyre:0",
            "RUN: sdsc_fused_add_0 /tmp/x/g2.graph.cbor",
            "[ copyAsync ]  src ( Half ) is on: spyre:0",
            "[INFO] [vllm] unrelated",
            "[ copyAsync ]  dst ( Half ) on: cpu",
            "[ copyAsync ]  src ( Half ) is on: cpu",
            "[ copyAsync ]  dst ( Half ) on: spyre:0",
        ]
    ).encode()
    out, ctx = read(read_spyre_log, log)
    d2h, h2d = out["transfers"]
    assert d2h["host_shape"] is None and d2h["alloc_bytes"] is None
    assert h2d["host_shape"] == [8, 8] and h2d["alloc_bytes"] == 2048 and h2d["host_bytes"] == 128
    assert ctx.stats.kinds["foreign"] == 2 and out["kernel_launches"][0]["code_dir"] == "/tmp/x"


def test_dtype_widths() -> None:
    for names, width in [
        (["float16", "half", "c10::Half", "Half", "torch.float16", "DataFormats.SEN169_FP16"], 2),
        (["bfloat16", "BFloat16", "torch.bfloat16"], 2),
        (["float32", "float", "Float", "torch.float32", "DataFormats.IEEE_FP32"], 4),
        (["float64", "double", "Double"], 8),
        (["int8", "Char", "DataFormats.SEN143_FP8"], 1),
        (["uint8", "Byte"], 1),
        (["int16", "Short"], 2),
        (["int32", "Int"], 4),
        (["int64", "Long", "c10::Long"], 8),
        (["bool", "Bool"], 1),
    ]:
        for n in names:
            assert dtype_width(n) == width, n
    assert torch_dtype("c10::Half") == ("float16", 2) and torch_dtype("Char") == ("int8", 1)
    assert torch_dtype("weird") == ("weird", None) and dtype_width("DataFormats.MYSTERY") is None


# ----------------------------------------------------------------------------- sniffers


def _heads(folder: Path, patterns: tuple[str, ...]) -> list[tuple[str, bytes]]:
    return [
        (str(p), p.read_bytes()[:65536])
        for pat in patterns
        for p in sorted(folder.rglob(pat))
        if p.is_file()
    ]


@needs_fixtures
def test_sniffers_are_specific() -> None:
    others = _heads(FIXTURES / "tlparse", ("*.log", "*.txt")) + _heads(
        FIXTURES / "torch_logs", ("*.txt", "*.log", "*.json")
    )
    others += _heads(FIXTURES / "gpu", ("*.txt", "*.log", "*.json"))
    assert len(others) > 30
    for path, head in others:
        for sniff in (sniff_spyre_log, sniff_kernel_spec, sniff_timing):
            assert not sniff(head, Path(path).name), (sniff.__name__, path)
    c = SPYRE / "constructed"
    spec, rec = (c / "sdsc_0.json").read_bytes(), (c / "rec.12345.json").read_bytes()
    log = (c / "example_logs.txt").read_bytes()
    assert (
        sniff_kernel_spec(spec, "x")
        and not sniff_timing(spec, "x")
        and not sniff_spyre_log(spec, "x")
    )
    assert (
        sniff_timing(rec, "x") and not sniff_kernel_spec(rec, "x") and not sniff_spyre_log(rec, "x")
    )
    assert (
        sniff_spyre_log(log, "x") and not sniff_kernel_spec(log, "x") and not sniff_timing(log, "x")
    )


def test_sniffer_finds_spyre_lines_after_other_output() -> None:
    for style in ("legacy", "unified", "python"):
        head = ("\n".join(NOISE * 5) + "\n").encode() + build(style, n=3).text()
        assert sniff_spyre_log(head[:65536], "out.txt"), style
    assert not sniff_spyre_log(("\n".join(NOISE) + "\n").encode(), "out.txt")


# ----------------------------------------------------------------------------- warehouse + named queries


def _query(con: Any, name: str, run_id: str | None = None) -> list[tuple]:
    return con.execute((QUERIES / f"{name}.sql").read_text(), {"run_id": run_id}).fetchall()


def test_ingest_and_named_queries(tmp_path: Path) -> None:
    run = tmp_path / "job"
    run.mkdir()
    w = build("legacy", seed=11, n=30)
    w2 = LogWriter("legacy", 12)  # a tensor copied back and forth
    for _ in range(3):
        w2.transfer("host_to_device", "float16", [7, 65])
        w2.transfer("device_to_host", "float16", [7, 65])
    w.lines += w2.lines
    exp = w.transfers + w2.transfers
    (run / "spyre_stdout.txt").write_bytes(w.text())
    if SPYRE.is_dir():
        for f in ("sdsc_0.json", "sdsc_1.json", "rec.12345.json"):
            (run / f).write_bytes((SPYRE / "constructed" / f).read_bytes())
    res = pt2logs.ingest([str(run)], warehouse=str(tmp_path / "wh"))
    assert res.runs_new == 1 and res.errors == 0 and res.warnings == w.warnings
    con = pt2logs.connect(str(tmp_path / "wh"))
    fmts = dict(con.execute("SELECT relpath, format FROM files").fetchall())
    assert fmts.pop("spyre_stdout.txt") == "spyre_log"
    assert fmts == (
        {
            "sdsc_0.json": "spyre_kernel_spec",
            "sdsc_1.json": "spyre_kernel_spec",
            "rec.12345.json": "spyre_timing",
        }
        if SPYRE.is_dir()
        else {}
    )
    assert con.execute(
        "SELECT count(*) FROM ingest_errors WHERE kind = 'truncated_json'"
    ).fetchone() == (w.warnings,)
    assert con.execute("SELECT count(*), count(DISTINCT run_id) FROM transfers").fetchone() == (
        len(exp),
        1,
    )
    if SPYRE.is_dir():
        assert con.execute(
            "SELECT count(*) FROM kernels k JOIN (SELECT DISTINCT run_id FROM transfers) USING (run_id) "
            "WHERE backend = 'spyre'"
        ).fetchone() == (2,)
        assert con.execute("SELECT count(*) FROM spyre_timing").fetchone() == (54,)
    vol = {(d, t): (n, h, dv, p) for d, t, n, h, dv, p, _ in _query(con, "spyre_transfer_volume")}
    for (d, t), (n, h, dv, p) in vol.items():
        sel = [e for e in exp if e["direction"] == d and e["dtype"] == t]
        assert (
            n == len(sel)
            and (h or 0) == sum(e["host_bytes"] or 0 for e in sel)
            and (dv or 0) == sum(e["device_bytes"] or 0 for e in sel)
        )
        assert (p or 0) == sum(e["padding_bytes"] or 0 for e in sel)
    assert sum(v[0] for v in vol.values()) == len(exp)
    run_id = con.execute("SELECT any_value(run_id) FROM transfers").fetchone()[0]
    assert _query(con, "spyre_transfer_volume", run_id) == _query(con, "spyre_transfer_volume")
    assert _query(con, "spyre_transfer_volume", "no-such-run") == []
    waste = _query(con, "spyre_padding_waste")
    assert sum(r[8] for r in waste) == sum(
        e["padding_bytes"] for e in exp if (e["padding_bytes"] or 0) > 0
    )
    assert [r[8] for r in waste] == sorted((r[8] for r in waste), reverse=True)
    rep = {r[1]: r for r in _query(con, "spyre_repeated_copies")}
    keys: dict[tuple, list[dict]] = {}
    for e in exp:
        if e["host_bytes"] is not None:
            keys.setdefault((e["dtype"], tuple(e["host_shape"])), []).append(e)
    want = {k: v for k, v in keys.items() if len(v) > 1}
    assert len(rep) == len(want)
    back_and_forth = rep["float16 [7, 65]"]
    assert back_and_forth[4:7] == (
        len(want[("float16", (7, 65))]),
        sum(e["direction"] == "host_to_device" for e in want[("float16", (7, 65))]),
        sum(e["direction"] == "device_to_host" for e in want[("float16", (7, 65))]),
    )
    assert back_and_forth[5] >= 3 and back_and_forth[6] >= 3


def test_query_headers() -> None:
    for name in ("spyre_transfer_volume", "spyre_padding_waste", "spyre_repeated_copies"):
        head = (QUERIES / f"{name}.sql").read_text().splitlines()[:3]
        assert head[0].startswith("-- title: ") and head[1].startswith("-- question: ")
        assert head[2] == "-- params: run_id (optional, NULL = all runs)"


# ----------------------------------------------------------------------------- robustness

FRAGMENTS = [
    "[ copyAsync ]  src ( Half ) is on: cpu",
    "[ copyAsync ]  dst ( Half ) on: spyre:0",
    "[ generate_dci ]  DataConversionInfo:  {",
    '  "input_shape_" : [3, 4],',
    "}",
    "  ]",
    "[ allocate ]  allocating  x  (bytes) on Spyre",
    "[ allocate ]  allocated  junk{",
    "SpyreTensorLayout(device_size=[a, 2], stride_map =[",
    "SpyreTensorLayout(device_size=[99999999999, 99999999999, 99999999999])",
    "[DEBUG] [spyre.runtime] 2026-99-99 99:99:99 copyAsync: src (Weird) is on:",
    "(Worker pid=1) [INFO] [spyre.x] RUN:",
    "[TORCH_SPYRE_DEBUG] copy_to_device: shape=[-1] dtype=float16",
    "  transfer OK",
    "  device_layout: SpyreTensorLayout(",
    "RUN: k d",
    "Generating sdsc.json",
    "\x00\xff",
    "[ allocate ]  allocating  99999999999999999999999  (bytes) on Spyre spyre:0",
    "(Worker pid=99999999999999999999999) [INFO] [spyre.x] hi",
    "[ allocate ]  allocated  CompositeAddress{total_size=1, num_chunks=1, owns=true",
    "SpyreTensorLayout(device_size=[4294967296, 4294967296, 4294967296], device_dtype=DataFormats.SEN169_FP16)",
    '[ generate_dci ]  DataConversionInfo:  {"isHostToSen_": 0, "input_shape_": [18446744073709551615], "output_shape_": ["a"]}',
    "[ spyre_empty_strided ]  Tensor info on CPU (Size: [4294967296, 4294967296] , Stride:  [1, 1] , dtype:  c10::Double ) to be mapped onto device  spyre:0",
    "[ spyre_empty_strided ]  Tensor info on CPU (Size: [] , Stride:  [] , dtype:  c10::Half ) to be mapped onto device  spyre:0",
]


def _assert_sane(out: dict[str, list[dict]], ctx: FileContext) -> None:
    errs = out.get("ingest_errors", [])
    assert {e["severity"] for e in errs} <= {"error", "warning"}
    assert ctx.stats.errors + ctx.stats.warnings == len(errs)
    assert all(len(e["excerpt"] or "") <= 1024 for e in errs)
    assert len(out.get("spyre_messages", [])) == ctx.stats.events


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=40)), max_size=40),
    st.integers(1, 50),
)
# a blank line split from its neighbours by the chunks (b"" from iter_lines, not a run): it carried a Ray
# worker's empty prefix into collected_lines only when read in chunks (found by this test in CI's run)
@example(
    lines=[
        "(Worker pid=1) [INFO] [spyre.x] RUN:",
        "",
        "",
        "[ copyAsync ]  src ( Half ) is on: cpu",
    ],
    chunk=1,
)
def test_arbitrary_lines_never_raise(lines: list[str], chunk: int) -> None:
    data = "\n".join(lines).encode("utf-8", "surrogatepass")
    out, ctx = read(read_spyre_log, data, chunk=chunk)
    _assert_sane(out, ctx)
    assert read(read_spyre_log, data)[0] == out


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=600))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    for reader in (read_spyre_log, read_kernel_spec, read_timing):
        out, ctx = read(reader, data, chunk=7)
        if reader is read_spyre_log:
            _assert_sane(out, ctx)
    for sniff in (sniff_spyre_log, sniff_kernel_spec, sniff_timing):
        sniff(data, "x")


def test_bad_documents_become_error_rows() -> None:
    for reader in (read_kernel_spec, read_timing):
        for doc in (
            b"{not json",
            b"[1, 2]",
            b'{"0_add": 3}',
            b'{"meta": {}, "events": [1, {"name": 2}]}',
        ):
            out, ctx = read(reader, doc)
            assert ctx.stats.errors == len(out.get("ingest_errors", [])) >= 1, (reader, doc)
