"""Torch-Spyre logs → ``transfers``, ``spyre_allocations``, ``spyre_layouts``, ``kernel_launches``,
``spyre_messages``; kernel specs (``sdsc_*.json``) → ``kernels``; TORCH_SPYRE_TIMING records → ``spyre_timing``.

Three line shapes (see docs/spyre.md), each optionally behind a vLLM ``(Worker pid=N) `` prefix:
legacy ``[ func ]  arg arg`` (C++ DEBUGINFO), unified logging ``[DEBUG] [spyre.runtime] <date> func: msg``
(C++) and Python loggers ``[INFO] [spyre.x] msg``; plus plain prints (``RUN: k dir``, ``Generating
path``), the debugging guide's illustrative ``[TORCH_SPYRE_DEBUG] copy_to_device: ...`` and
``DataConversionInfo: {`` JSON blocks. Messages are matched on their content with whitespace-tolerant
patterns (each shape spaces the same message differently). A transfer is assembled by a small state
machine (:class:`_LogState`). Any other line is foreign: counted in ``stats.kinds['foreign']``.
"""

from __future__ import annotations

import calendar
import math
import posixpath
import re
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

import pt2logs.tables.spyre  # noqa: F401  (registers the tables)
from pt2logs.readers import Format  # pt2logs.readers registers these formats after defining Format
from pt2logs.readers.errors import EXCERPT, Batch, add_error
from pt2logs.readers.torch_trace import FileContext
from pt2logs.schema import Rows

MAX_LINE = 64 << 20
MAX_DOC = 256 << 20  # JSON documents (specs, timing records) are read whole
MAX_BLOCK_LINES = 20_000
MAX_MESSAGE = 64 << 10
_I64 = 1 << 63

# ----------------------------------------------------------------------------- dtypes

_TORCH_DTYPES = {k: (name, w) for name, w, keys in [
    ("float16", 2, "float16 half fp16"), ("bfloat16", 2, "bfloat16 bf16"), ("float32", 4, "float32 float fp32"),
    ("float64", 8, "float64 double"), ("int8", 1, "int8 char"), ("uint8", 1, "uint8 byte"), ("int16", 2, "int16 short"),
    ("uint16", 2, "uint16"), ("int32", 4, "int32 int"), ("uint32", 4, "uint32"), ("int64", 8, "int64 long"),
    ("uint64", 8, "uint64"), ("bool", 1, "bool"), ("complex32", 4, "complex32 complexhalf chalf"),
    ("complex64", 8, "complex64 complexfloat cfloat"), ("complex128", 16, "complex128 complexdouble cdouble"),
] for k in keys.split()}
_DTYPE_PREFIX = re.compile(r"^(?:torch\.|c10::|at::|scalartype::)+")
_DEVICE_BITS = re.compile(r"(?:^|[_.])(?:B?FP|BF|U?INT|F|I|U)(8|16|32|64)(?:$|[_.A-Z])")


def torch_dtype(raw: str | None) -> tuple[str | None, int | None]:
    """(torch name, width in bytes) of a dtype as logged: Half, c10::Half, torch.float16, ...; (raw, None) if unknown."""
    if not raw:
        return None, None
    key = _DTYPE_PREFIX.sub("", raw.strip().lower())
    if key in _TORCH_DTYPES:
        return _TORCH_DTYPES[key]
    return (key, 1) if key.startswith("float8") else (raw.strip(), None)


def dtype_width(raw: str | None) -> int | None:
    """Element width in bytes of a torch dtype or a device data format (DataFormats.SEN169_FP16 → 2)."""
    if not raw:
        return None
    width = torch_dtype(raw.rsplit(".", 1)[-1] if raw.startswith("DataFormats.") else raw)[1]
    if width is None and (m := _DEVICE_BITS.search(raw.upper())):
        width = int(m.group(1)) // 8
    return width


def _int(v: Any) -> int | None:
    """An integer that fits a BIGINT column, else None (logs and JSON can hold anything)."""
    return v if type(v) is int and -_I64 <= v < _I64 else None


def _ints(v: Any) -> list[int] | None:
    return v if isinstance(v, list) and all(_int(x) is not None for x in v) else None


def int_list(text: str) -> list[int] | None:
    try:
        return _ints([int(x) for x in text.split(",") if x.strip()])
    except ValueError:
        return None


def _nbytes(shape: list[int] | None, width: int | None) -> int | None:
    return _int(math.prod(shape) * width) if shape is not None and width else None


def _loads(data: bytes | str) -> Any:
    """Parsed JSON, or the exception when it is not JSON."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        return e


# ----------------------------------------------------------------------------- patterns

_WORKER = re.compile(r"^\(([^()]*?)\s*pid=(\d{1,18})\)\s+")
_LEGACY = re.compile(r"^\[ ([A-Za-z_~][\w:~<>]*) \]\s+(.*)$")
_LEVELED = re.compile(r"^\[(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|TRACE)\] \[([\w.-]*spyre[\w.-]*)\] ?(.*)$", re.I)
_DATE = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))? (.*)$")
_CFUNC = re.compile(r"^([A-Za-z_~][\w:~<>]*): ?(.*)$")
_ILLUS = re.compile(r"^\[TORCH_SPYRE_DEBUG\] (?:([A-Za-z_]\w*): ?)?(.*)$")
_ILLUS_CONT = re.compile(r"^\s+(device_layout|host_layout|layout|transfer|status)\b:?\s*(.*)$")
_ILLUS_COPY = re.compile(r"^copy_(?:to|from)_(?:device|host|cpu)$")
_RUN = re.compile(r"^RUN:\s*(\S+)(?:\s+(\S+))?\s*$")
_GENERATING = re.compile(r"^Generating\s+(\S+\.(?:json|mlir)|\S*spyre\S*)\s*$")
_TENSOR_INFO = re.compile(
    r"Tensor info on CPU\s*\(\s*Size:\s*\[([^\]]*)\]\s*,\s*Stride:\s*\[([^\]]*)\]\s*,\s*dtype:\s*([^)]*?)\s*\)"
    r"\s*to be mapped onto device\s*(\S*)")
_ALLOCATING = re.compile(r"^allocating\s*(\d{1,18})\s*\(bytes\)(?:\s*on\s*Spyre\s*(\S*))?")
_ALLOCATED_N = re.compile(r"^Allocated\s+(\d{1,18})\s*bytes", re.I)
_ALLOCATED = re.compile(r"^allocated\s*(.*)$")
_SRC = re.compile(r"^(?:src|self)\s*\(\s*([^)]*?)\s*\)\s*is\s*on:?\s*(\S+)")
_DST = re.compile(r"^dst\s*\(\s*([^)]*?)\s*\)\s*(?:is\s*)?on:?\s*(\S+)")
_DCI = re.compile(r"DataConversionInfo:\s*(.*)$")
_MODEL_TENSOR = re.compile(r"^\s*([\w.\[\]/-]+):\s*shape=\[([^\]]*)\]\s*->\s*(.*)$")
_KV_SHAPE = re.compile(r"shape=\[([^\]]*)\]")
_KV_DTYPE = re.compile(r"dtype=([\w.:]+)")
_LAYOUT = re.compile(r"SpyreTensorLayout\(((?:[^()]|\([^()]*\))*)\)?")  # one level of nested parentheses; may be cut
_LAYOUT_KV = re.compile(r"(\w+)\s*=\s*(\[[^\]]*\]|[^,]*)")
_TOTAL = re.compile(r"total_size=(\d{1,18})")
_NCHUNKS = re.compile(r"num_chunks=(\d{1,9})")
_CHUNK = re.compile(r"Chunk\{addr=LogicalAddress\{region_id=(\w+),\s*offset=(\w+)\},\s*size=(\d{1,18})(?:,\s*domain_id=(\d{1,9}))?")
_JSON_STR = re.compile(r'"(?:[^"\\]|\\.)*"')
_JSON_KEY = re.compile(r'"(\w+)"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+|\[[^\[\]{}]*\])')
_DCI_KEYS = ("dsName_", "isHostToSen_", "dataformat_src_", "dataformat_dst_", "input_shape_", "output_shape_", "dcsi_")


def parse_layout(text: str) -> tuple[dict[str, Any], str] | None:
    """Fields of the first ``SpyreTensorLayout(...)`` in ``text`` (key=[...] / key=value, generically), and its text."""
    lay = _LAYOUT.search(text)
    if lay is None:
        return None
    fields: dict[str, Any] = {}
    for m in _LAYOUT_KV.finditer(lay.group(1)):
        v = m.group(2).strip()
        if v.startswith("["):
            fields[m.group(1)] = int_list(v[1:-1]) or [x.strip() for x in v[1:-1].split(",") if x.strip()]
        else:
            fields[m.group(1)] = _int(int(v)) if v.lstrip("-").isdigit() and len(v) < 19 else v
    return fields, lay.group(0)


class _Out:
    """Row buffers of one file, and its error rows."""

    def __init__(self, ctx: FileContext):
        self.ctx, self.stats = ctx, ctx.stats
        self.rows: dict[str, Rows] = {}
        self.limit = max(1, min(ctx.batch_rows, 4096))
        self.n = 0

    def add(self, table: str, row: dict[str, Any]) -> None:
        if table not in self.rows:
            self.rows[table] = Rows(table)
        row.setdefault("file", self.ctx.file)
        self.rows[table].add(row)
        self.n += 1
        if (ts := row.get("ts")) is not None:
            self.stats.merge_ts(ts, ts)

    def error(self, kind: str, line_no: int | None, message: str, excerpt: str | bytes = "", warning: bool = False) -> None:
        if "ingest_errors" not in self.rows:
            self.rows["ingest_errors"] = Rows("ingest_errors")
        add_error(self.rows["ingest_errors"], self.ctx, kind, line_no, message, excerpt, "warning" if warning else "error")
        self.n += 1

    def flush(self) -> Iterator[Batch]:
        for name, r in self.rows.items():
            if len(r):
                yield name, r.take()
        self.n = 0


def iter_lines(chunks: Iterable[bytes], out: _Out) -> Iterator[tuple[int, bytes]]:
    """Numbered lines (no newline, no trailing CR) of a stream cut anywhere; over-long lines are reported and skipped."""
    buf, no, skipping = b"", 0, False
    for chunk in chunks:
        buf = buf + chunk if buf else chunk
        parts = buf.split(b"\n")
        buf = parts.pop()
        for p in parts:
            no += 1
            if skipping:
                skipping = False
                continue
            yield no, p[:-1] if p.endswith(b"\r") else p
        if len(buf) > MAX_LINE:
            if not skipping:
                out.error("line_too_long", no + 1, f"a line longer than {MAX_LINE >> 20} MiB; skipped", buf[:EXCERPT])
            buf, skipping = b"", True
    if buf or skipping:
        no += 1
        if not skipping:
            yield no, buf[:-1] if buf.endswith(b"\r") else buf


def _new_tensor(at: dict, **kw: Any) -> dict[str, Any]:
    return {**at, "dtype": None, "host_shape": None, "host_strides": None, "device": None, "alloc": None,
            "layout": None, "parts": [], **kw}


class _LogState:
    """Per-file state: the tensor being allocated (``tensor``: tensor info, allocation, layout), the copy
    being assembled (``xfer``), the allocation awaiting its address, an open DataConversionInfo block."""

    def __init__(self, out: _Out):
        self.out, self.kinds = out, out.stats.kinds
        self.tensor: dict[str, Any] | None = None
        self.xfer: dict[str, Any] | None = None
        self.alloc: dict[str, Any] | None = None
        self.block: dict[str, Any] | None = None
        self.name: dict[str, Any] = {}  # tensor named by a model_utils line, not yet allocated
        self.illus = False  # the last Spyre line was the illustrative format
        self.codes: dict[int, str] = {}  # DCI dataformat code -> device dtype, learned from this log
        self.launches: dict[str, int] = {}
        self._date: tuple[str, int | None] = ("", None)

    def line(self, no: int, raw: bytes) -> None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            self.out.error("decode_error", no, f"invalid UTF-8 at byte {e.start}; read with U+FFFD replacements", raw, warning=True)
            text = raw.decode("utf-8", "replace")
        p = self._prefix(text)
        if (b := self.block) is not None:
            if p is None and (not text or text[0] in " \t}]") and len(b["lines"]) < MAX_BLOCK_LINES:
                b["lines"].append(text)
                b["depth"] += self._depth(text)
                if b["depth"] <= 0:
                    self._end_block(truncated=False)
                return
            if p is not None or len(b["lines"]) >= MAX_BLOCK_LINES:
                self._end_block(truncated=True)  # a foreign line inside a block does not end it
        if p is None and self.illus and (m := _ILLUS_CONT.match(text)):
            p = ("illustrative", None, None, None, None, None, None, m.group(1) + ": " + m.group(2))
        if p is not None:
            return self._spyre(no, p)
        self.kinds["foreign"] = self.kinds.get("foreign", 0) + 1
        if "SpyreTensorLayout(" in text:
            self._layout({"line_no": no, "ts": None, "func": None}, text, "embedded")

    def _prefix(self, text: str) -> tuple | None:
        """(shape, level, component, func, ts, worker, pid, message) of a Spyre line, else None."""
        worker = pid = None
        body = text
        if text.startswith("(") and (m := _WORKER.match(text)):
            worker, pid, body = m.group(1) or None, int(m.group(2)), text[m.end():]
        c = body[:1]
        if c == "[":
            if m := _LEGACY.match(body):
                return ("legacy", None, None, m.group(1), None, worker, pid, m.group(2).strip())
            if m := _LEVELED.match(body):
                level, comp, msg = m.group(1).upper(), m.group(2), m.group(3)
                if d := _DATE.match(msg):
                    f = _CFUNC.match(d.group(8))
                    func, msg = (f.group(1), f.group(2)) if f else (None, d.group(8))
                    return ("unified", level, comp, func, self._ts(d), worker, pid, msg.strip())
                return ("python", level, comp, None, None, worker, pid, msg.strip())
            if m := _ILLUS.match(body):
                return ("illustrative", None, None, m.group(1), None, worker, pid, m.group(2).strip())
        elif (c == "R" and _RUN.match(body)) or (c == "G" and _GENERATING.match(body)):
            return ("print", None, None, None, None, worker, pid, body.strip())
        return None

    def _ts(self, d: re.Match) -> int | None:
        """Epoch µs of a unified-logging date, read as UTC (the log does not say its zone)."""
        if self._date[0] != d.group(0)[:19]:
            try:
                us = calendar.timegm(tuple(int(d.group(i)) for i in range(1, 7)) + (0, 0, 0)) * 1_000_000
            except (ValueError, OverflowError):
                us = None
            self._date = (d.group(0)[:19], us)
        base, frac = self._date[1], d.group(7)
        return _int(base + (int(frac.ljust(6, "0")) if frac else 0)) if base is not None else None

    def _spyre(self, no: int, p: tuple) -> None:
        shape, level, comp, func, ts, worker, pid, msg = p
        self.out.stats.events += 1
        self.illus = shape == "illustrative"
        row = {"source": "spyre", "line_no": no, "n_lines": 1, "ts": ts, "shape": shape, "level": level, "component": comp,
               "func": func, "worker": worker, "pid": _int(pid), "message": msg[:MAX_MESSAGE]}
        kind = row["kind"] = self._message({"line_no": no, "ts": ts, "func": func}, comp, shape, msg, row)
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        self.out.stats.unknown += kind == "other"
        if kind not in ("allocate", "allocated"):
            self._close_alloc()
        if kind != "dci":  # a block's row leaves with the block
            self.out.add("spyre_messages", row)

    def _message(self, at: dict, comp: str | None, shape: str, msg: str, row: dict) -> str:
        if shape == "illustrative":
            return self._illustrative(at, msg)
        if msg.startswith("RUN:") and (m := _RUN.match(msg)):
            self._launch(at, m.group(1), m.group(2), row["level"])
            return "run"
        if msg.startswith("Generating "):
            return "generating"
        if m := _SRC.match(msg):
            self._copy_line(at, "src", m.group(1), m.group(2))
            return "copy_src"
        if m := _DST.match(msg):
            self._copy_line(at, "dst", m.group(1), m.group(2))
            return "copy_dst"
        if m := _DCI.search(msg):
            rest = m.group(1).strip()
            row["kind"] = "dci"
            self.block = {**at, "lines": [rest], "depth": self._depth(rest), "row": row, "json": rest.startswith("{")}
            if self.block["depth"] <= 0 or not self.block["json"]:
                self._end_block(truncated=False)
            return "dci"
        if m := _TENSOR_INFO.search(msg):
            self._close_alloc()
            self.tensor = _new_tensor(at, dtype=torch_dtype(m.group(3))[0], host_shape=int_list(m.group(1)),
                                      host_strides=int_list(m.group(2)), device=m.group(4) or None, parts=["tensor_info"], **self._take_name())
            return "tensor_info"
        if m := (_ALLOCATING.match(msg) or _ALLOCATED_N.match(msg)):
            self._allocating(at, int(m.group(1)), m.group(2) if m.re is _ALLOCATING else None)
            return "allocate"
        if m := _ALLOCATED.match(msg):
            self._allocated(at, m.group(1))
            return "allocated"
        if "SpyreTensorLayout(" in msg:
            return "layout" if self._layout(at, msg, "allocation") else "other"
        if comp and (m := _MODEL_TENSOR.match(msg)):
            self.name = {"tensor_name": m.group(1), "name_shape": int_list(m.group(2))}
            return "tensor_name"
        return "other"

    def _take_name(self) -> dict[str, Any]:
        name, self.name = self.name, {}
        return name

    # -- allocations and layouts -----------------------------------------------------------
    def _allocating(self, at: dict, nbytes: int, device: str | None) -> None:
        self._close_alloc()
        t = self.tensor
        if t is None or t["alloc"] is not None or t["layout"] is not None:
            t = self.tensor = _new_tensor(at, device=device, **self._take_name())
        t["alloc"] = self.alloc = {"source": "spyre", **at, "nbytes": nbytes, "device": device or t["device"],
                                   "dtype": t["dtype"], "host_shape": t["host_shape"]}
        t["parts"].append("alloc")

    def _allocated(self, at: dict, text: str) -> None:
        a = self.alloc if self.alloc is not None else {"source": "spyre", **at}
        chunks = [{"region_id": c[0], "offset": c[1], "size": int(c[2]), "domain_id": int(c[3]) if c[3] else None}
                  for c in _CHUNK.findall(text)]
        if total := _TOTAL.search(text):
            a["total_size"] = int(total.group(1))
            a.setdefault("nbytes", a["total_size"])
            a["num_chunks"] = int(n.group(1)) if (n := _NCHUNKS.search(text)) else len(chunks)
        if chunks:
            a["chunks"], a["address"] = chunks, f"{chunks[0]['region_id']}:{chunks[0]['offset']}"
        if not total and not chunks:
            a["address_text"] = text[:EXCERPT]
        self.alloc = a
        self._close_alloc()

    def _close_alloc(self) -> None:
        if self.alloc is not None:
            self.out.add("spyre_allocations", self.alloc)
            self.alloc = None

    def _layout(self, at: dict, text: str, origin: str) -> dict[str, Any] | None:
        parsed = parse_layout(text)
        if parsed is None:
            return None
        f, raw = parsed
        lay = {"source": "spyre", **at, "origin": origin, "layout_text": raw[:MAX_MESSAGE],
               **{k: _ints(f.pop(k, None)) for k in ("device_size", "dim_map", "stride_map")}}
        dd = f.pop("device_dtype", None)
        lay["device_dtype"], lay["fields"] = (str(dd) if dd is not None else None), (f or None)
        owner = self.xfer if origin == "illustrative" else None
        if origin == "allocation":
            if self.tensor is None or self.tensor["layout"] is not None:
                self.tensor = _new_tensor(at, **self._take_name())
            owner = self.tensor
        if owner is not None:
            owner["layout"] = lay
            owner["parts"].append("layout")
            lay["dtype"] = owner.get("dtype") or torch_dtype(owner.get("raw_dtype"))[0]
            lay["host_shape"] = owner.get("host_shape") or owner.get("name_shape") or owner.get("illus_shape")
        lay["device_bytes"] = _nbytes(lay["device_size"], dtype_width(lay["device_dtype"]) or dtype_width(lay.get("dtype")))
        lay["host_bytes"] = _nbytes(lay.get("host_shape"), dtype_width(lay.get("dtype")))
        if lay["host_bytes"] is not None and lay["device_bytes"] is not None:
            lay["padding_bytes"] = lay["device_bytes"] - lay["host_bytes"]
        self.out.add("spyre_layouts", lay)
        return lay

    # -- transfers ---------------------------------------------------------------------------
    def _new_xfer(self, at: dict) -> dict[str, Any]:
        self._finish_xfer()
        self.xfer = {**at, "end_line_no": at["line_no"], "parts": [], "n_lines": 0}
        return self.xfer

    @staticmethod
    def _touch(x: dict, at: dict, n: int = 1) -> None:
        x["end_line_no"] = max(x["end_line_no"], at["line_no"] + n - 1)
        x["n_lines"] += n
        x["ts"] = x["ts"] if x["ts"] is not None else at["ts"]

    def _copy_line(self, at: dict, side: str, dtype: str, device: str) -> None:
        x = self.xfer
        if side == "src" or x is None or side in x["parts"] or "dci" in x["parts"] or x.get("status"):
            x = self._new_xfer(at)
        x["parts"].append(side)
        x[side] = device
        x.setdefault("raw_dtype", dtype)
        x["func"] = x["func"] or at["func"]
        self._touch(x, at)
        if (side == "src") == device.startswith("cpu"):  # host source, or device destination
            self._bind(x, dtype)

    def _bind(self, x: dict, dtype: str | None) -> None:
        """Give a copy to the device the tensor allocated just before it (tensor info, allocation, layout)."""
        t, want = self.tensor, torch_dtype(dtype)[0]
        if t is None or x.get("bound") or (t["dtype"] is not None and want is not None and t["dtype"] != want):
            return
        x["bound"], self.tensor = True, None
        for k in ("host_shape", "host_strides", "device", "layout", "alloc", "tensor_name", "name_shape"):
            if t.get(k) is not None:
                x.setdefault(k, t[k])
        x["parts"] = t["parts"] + x["parts"]

    def _illustrative(self, at: dict, msg: str) -> str:
        func, x = at["func"], self.xfer
        if func and _ILLUS_COPY.match(func):
            x = self._new_xfer(at)
            x["direction"] = "host_to_device" if func in ("copy_to_device", "copy_from_host", "copy_from_cpu") else "device_to_host"
            m, d = _KV_SHAPE.search(msg), _KV_DTYPE.search(msg)
            x["illus_shape"], x["raw_dtype"] = (int_list(m.group(1)) if m else None), (d.group(1) if d else None)
            x["parts"].append("copy")
            self._touch(x, at)
            return "copy"
        key, _, rest = msg.partition(": ")
        at = {**at, "func": key or None}
        if x is None or "copy" not in x["parts"]:
            return "layout" if "SpyreTensorLayout(" in msg and self._layout(at, msg, "embedded") else "other"
        self._touch(x, at)
        if "SpyreTensorLayout(" in msg:
            return "layout" if self._layout(at, msg, "illustrative") else "other"
        if key.startswith("transfer") or key == "status":
            x["status"] = (rest or msg.split(None, 1)[-1]).strip()
            x["parts"].append("status")
            self._finish_xfer()
            return "status"
        return "other"

    def _finish_xfer(self) -> None:
        x, self.xfer = self.xfer, None
        if x is None:
            return
        dci, lay, alloc = x.get("dci") or {}, x.get("layout") or {}, x.get("alloc") or {}
        src, dst, direction = x.get("src"), x.get("dst"), x.get("direction")
        side = {None: None, True: "host", False: "device"}
        s, d = side[src.startswith("cpu") if src else None], side[dst.startswith("cpu") if dst else None]
        if direction is None and (s, d) != (None, None):
            direction = f"{s}_to_{d}" if s and d else "host_to_device" if s == "host" else "device_to_host" if d == "host" else None
        if direction is None and dci.get("isHostToSen_") in (0, 1):
            direction = "host_to_device" if dci["isHostToSen_"] == 1 else "device_to_host"
        dtype, width = torch_dtype(x.get("raw_dtype"))
        to_dev = direction != "device_to_host"
        host_key, dev_key = ("input_shape_", "output_shape_") if to_dev else ("output_shape_", "input_shape_")
        shape_from, host_shape = next(((k, v) for k, v in (
            ("tensor_info", x.get("host_shape")), ("model_utils", x.get("name_shape")), ("illustrative", x.get("illus_shape")),
            ("dci", _ints(dci.get(host_key)) if direction != "device_to_device" else None)) if v is not None), (None, None))
        device_size = lay.get("device_size") or (v[::-1] if (v := _ints(dci.get(dev_key))) is not None else None)
        if host_shape is not None and shape_from == "dci":
            host_shape = host_shape[::-1]
        device_dtype, code = lay.get("device_dtype"), _int(dci.get("dataformat_dst_" if to_dev else "dataformat_src_"))
        if device_dtype is not None and code is not None:
            self.codes[code] = device_dtype
        elif device_dtype is None and code is not None:
            device_dtype = self.codes.get(code)
        host_bytes, device_bytes = _nbytes(host_shape, width), _nbytes(device_size, dtype_width(device_dtype) or width)
        both = host_bytes is not None and device_bytes is not None
        self.out.add("transfers", {
            "source": "spyre", "line_no": x["line_no"], "end_line_no": x["end_line_no"], "ts": x["ts"], "func": x["func"],
            "direction": direction, "dtype": dtype, "host_shape": host_shape, "host_strides": x.get("host_strides"),
            "device": x.get("device") or (dst if d == "device" else src if s == "device" else None) or alloc.get("device"),
            "host_bytes": host_bytes, "device_size": device_size, "device_dtype": device_dtype, "device_bytes": device_bytes,
            "padding_bytes": device_bytes - host_bytes if both else None,  # type: ignore[operator]
            "padded_elements": _int(math.prod(device_size) - math.prod(host_shape)) if host_shape is not None and device_size is not None else None,
            "stride_map": lay.get("stride_map"), "dim_map": lay.get("dim_map"), "alloc_bytes": alloc.get("nbytes"),
            "address": alloc.get("address"), "tensor_name": x.get("tensor_name"), "shape_from": shape_from,
            "dci_name": dci.get("dsName_") if isinstance(dci.get("dsName_"), str) else None,
            "dci": {k: dci[k] for k in _DCI_KEYS if k in dci} or None, "parts": x["parts"],
            "complete": direction is not None and both, "status": x.get("status"), "alloc_line_no": alloc.get("line_no"),
            "layout_line_no": lay.get("line_no"), "n_lines": x["n_lines"],
        })

    # -- DataConversionInfo blocks ----------------------------------------------------------
    @staticmethod
    def _depth(text: str) -> int:
        s = _JSON_STR.sub("", text) if '"' in text and ("[" in text or "{" in text or "}" in text or "]" in text) else text
        return s.count("{") + s.count("[") - s.count("}") - s.count("]")

    def _end_block(self, truncated: bool) -> None:
        b, self.block = self.block, None
        if b is None:
            return
        text, n = "\n".join(b["lines"]), len(b["lines"])
        fields = _loads(text) if b["json"] and not truncated else None
        if not isinstance(fields, dict):  # salvage the simple fields that are there
            fields = {}
            for m in _JSON_KEY.finditer(text):
                if m.group(1) in _DCI_KEYS and m.group(1) not in fields and not isinstance(v := _loads(m.group(2)), Exception):
                    fields[m.group(1)] = v
            found = ", ".join(fields) or "none"
            msg = ("DataConversionInfo is not followed by JSON; the copy is kept without it" if not b["json"] else
                   f"DataConversionInfo block cut after {n} line(s); fields before the cut kept ({found})" if truncated else
                   f"DataConversionInfo block of {n} line(s) is not valid JSON; fields found by pattern kept ({found})")
            self.out.error("truncated_json" if truncated else "bad_json", b["line_no"], msg, text, warning=True)
        row = b["row"]
        row["n_lines"] = n
        if n > 1:
            row["message"] = (row["message"] + "\n" + "\n".join(b["lines"][1:]))[:MAX_MESSAGE]
        self.out.add("spyre_messages", row)
        x = self.xfer
        if x is None or "dci" in x["parts"] or x.get("status"):
            x = self._new_xfer({"line_no": b["line_no"], "ts": b["ts"], "func": b["func"]})
        x["parts"].append("dci")
        x["dci"] = fields
        self._touch(x, b, n)
        self._finish_xfer()

    def _launch(self, at: dict, kernel: str, arg: str | None, level: str | None) -> None:
        n = self.launches[kernel] = self.launches.get(kernel, 0) + 1
        code_dir = (posixpath.dirname(arg) or arg) if arg and "." in posixpath.basename(arg.rstrip("/")) else arg
        self.out.add("kernel_launches", {"source": "spyre", "line_no": at["line_no"], "ts": at["ts"], "kernel_name": kernel,
                                         "code_dir": code_dir, "launch_arg": arg, "launch_index": n, "level": level})

    def finish(self) -> None:
        self._end_block(truncated=True)
        self._close_alloc()
        self._finish_xfer()


# ----------------------------------------------------------------------------- readers


def read_spyre_log(chunks: Iterable[bytes], ctx: FileContext) -> Iterator[Batch]:
    """A Spyre text log (any mix of the line shapes, with other components' lines) → rows, in batches."""
    out = _Out(ctx)
    st = _LogState(out)
    n = 0
    for n, raw in iter_lines(chunks, out):
        st.line(n, raw)
        if out.n >= out.limit:
            yield from out.flush()
    st.finish()
    ctx.stats.lines = n
    yield from out.flush()


def _document(chunks: Iterable[bytes], out: _Out, what: str) -> tuple[Any, bytes]:
    """A whole JSON document (bounded in size): (parsed, or None when it cannot be read; its bytes)."""
    parts, size = [], 0
    for c in chunks:
        size += len(c)
        if size > MAX_DOC:
            out.error("too_large", None, f"{what} larger than {MAX_DOC >> 20} MiB; not read")
            return None, b""
        parts.append(c)
    data = b"".join(parts)
    out.stats.lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    if isinstance(doc := _loads(data), Exception):
        out.error("bad_json", None, f"{what} is not valid JSON ({doc})", data)
        return None, data
    return doc, data


def read_kernel_spec(chunks: Iterable[bytes], ctx: FileContext) -> Iterator[Batch]:
    """``sdsc_<N>.json`` / ``sdsc.json`` (top key ``<idx>_<opfunc>``) → one ``kernels`` row per compute op."""
    out = _Out(ctx)
    doc, data = _document(chunks, out, "kernel spec")
    if doc is not None and not isinstance(doc, dict):
        out.error("not_an_object", None, f"kernel spec is JSON {type(doc).__name__}, not an object", data)
        doc = None
    for key, spec in (doc or {}).items():
        if not isinstance(spec, dict):
            out.error("bad_spec", None, f"kernel spec entry {key!r} is not an object", str(spec))
            continue
        ops: list[tuple[dict, Any, Any]] = []  # (compute op, cores, data format of its first labeled tensor)
        for dsc in spec.get("dscs_") if isinstance(spec.get("dscs_"), list) else []:
            for opname, body in dsc.items() if isinstance(dsc, dict) else ():
                if isinstance(body, dict):
                    lds = body.get("labeledDs_") if isinstance(body.get("labeledDs_"), list) else []
                    fmt = next((d.get("dataFormat_") for d in lds if isinstance(d, dict)), None)
                    cops = body.get("computeOp_") if isinstance(body.get("computeOp_"), list) else []
                    ops += [(op, body.get("numCoresUsed_", spec.get("numCoresUsed_")), fmt) for op in cops or [{"opFuncName": opname}]
                            if isinstance(op, dict)]
        ops = ops or [({"opFuncName": key.split("_", 1)[-1]}, spec.get("numCoresUsed_"), None)]
        at = data.find(orjson.dumps(key))
        names = [op["opFuncName"] for op, _, _ in ops if isinstance(op.get("opFuncName"), str)]
        for op, cores, fmt in ops:
            attrs = op.get("attributes_") if isinstance(op.get("attributes_"), dict) else {}
            fmt = attrs.get("dataFormat_") or fmt
            out.add("kernels", {"source": "spyre", "line_no": data.count(b"\n", 0, at) + 1 if at >= 0 else None,
                                "kernel_name": str(op.get("opFuncName") or key), "backend": "spyre", "kind": op.get("exUnit"),
                                "fused_ops": names, "num_cores": _int(cores), "data_format": fmt if isinstance(fmt, str) else None})
            ctx.stats.events += 1
    yield from out.flush()


def read_timing(chunks: Iterable[bytes], ctx: FileContext) -> Iterator[Batch]:
    """TORCH_SPYRE_TIMING ``rec.<pid>.json`` → one ``spyre_timing`` row per event."""
    out = _Out(ctx)
    doc, data = _document(chunks, out, "timing record")
    events = doc.get("events") if isinstance(doc, dict) else None
    if doc is not None and not isinstance(events, list):
        out.error("not_a_timing_record", None, "no events list in the timing record", data)
    meta = doc["meta"] if isinstance(doc, dict) and isinstance(doc.get("meta"), dict) else {}
    names: dict[Any, str] = {}
    depth: dict[Any, int] = {}
    for i, ev in enumerate(events if isinstance(events, list) else []):
        if not isinstance(ev, dict) or not isinstance(ev.get("name"), str):
            out.error("bad_event", 1, f"timing event #{i} is not an object with a name", str(ev))
            continue
        name, ordinal, parent = ev["name"], _int(ev.get("ordinal")), _int(ev.get("parent_ordinal"))
        kind, _, rest = name.partition(":")
        scope, _, step = rest.partition(":")
        names[ordinal] = name
        depth[ordinal] = depth.get(parent, -1) + 1 if parent is not None else 0
        m = ev.get("meta") if isinstance(ev.get("meta"), dict) else None
        err = ev.get("error")
        out.add("spyre_timing", {
            "source": "spyre", "line_no": 1, "pid": _int(meta.get("pid")), "name": name, "kind": kind if rest else None,
            "scope": scope or None, "step": step or None, "ordinal": ordinal, "parent_ordinal": parent,
            "parent_name": names.get(parent) if parent is not None else None, "depth": depth[ordinal],
            **{k: _int(ev.get(k)) for k in ("t_start_ns", "t_end_ns", "inclusive_ns", "self_ns")},
            "kernel_name": m.get("kernel") if m and isinstance(m.get("kernel"), str) else None, "counters": m,
            "open": ev.get("open") if isinstance(ev.get("open"), bool) else None,
            "error": err if err is None or isinstance(err, str) else orjson.dumps(err, default=str).decode(),
            "torch_spyre_version": meta.get("torch_spyre_version"), "git_sha": meta.get("git_sha"),
        })
        ctx.stats.events += 1
        if out.n >= out.limit:
            yield from out.flush()
    yield from out.flush()


# ----------------------------------------------------------------------------- sniffers

_SNIFF_LEVELED = re.compile(rb"^(?:\([^()\n]*pid=\d+\) )?\[(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|TRACE)\] \[[\w.-]*spyre[\w.-]*\] ", re.M | re.I)
_SNIFF_LEGACY = re.compile(rb"^(?:\([^()\n]*pid=\d+\) )?\[ [A-Za-z_~][\w:~<>]* \]  \S", re.M)
_SNIFF_OTHER = re.compile(rb"^(?:\[TORCH_SPYRE_DEBUG\] \w+:|RUN: sdsc_\S+ \S|Generating \S*(?:sdsc|inductor-spyre)\S*)", re.M)
_SNIFF_SPEC = re.compile(rb'^\s*\{\s*"\d+_[A-Za-z_]\w*"\s*:\s*\{')
_SPEC_KEYS = (b'"numCoresUsed_"', b'"dscs_"', b'"sdscFolds_"', b'"coreFoldProp_"', b'"sdscFoldProps_"')


def sniff_spyre_log(head: bytes, name: str) -> bool:
    """A Spyre log: a `[LEVEL] [spyre.x]`, `[TORCH_SPYRE_DEBUG]`, `RUN: sdsc_` or `Generating ...sdsc` line anywhere
    in the head, or legacy `[ func ]  ` lines (two of them, or one in a head that mentions Spyre)."""
    head = head[: 64 << 10]
    if _SNIFF_LEVELED.search(head) or _SNIFF_OTHER.search(head):
        return True
    legacy = _SNIFF_LEGACY.findall(head, 0)
    return len(legacy) >= 2 or (len(legacy) == 1 and b"pyre" in head)


def sniff_kernel_spec(head: bytes, name: str) -> bool:
    """A kernel spec: a JSON object keyed `<idx>_<opfunc>` holding SuperDSC fields."""
    return bool(_SNIFF_SPEC.match(head[: 64 << 10])) and any(k in head for k in _SPEC_KEYS)


def sniff_timing(head: bytes, name: str) -> bool:
    """A TORCH_SPYRE_TIMING record: one JSON object with meta.recorder_version and events."""
    h = head[: 64 << 10].lstrip()
    return h.startswith(b"{") and b'"recorder_version"' in h and (b'"events"' in h or b'"clock"' in h)


SPYRE_LOG = Format("spyre_log", "torch-spyre debug log (TORCH_SPYRE_DEBUG=1, TORCH_LOGS=+torch_spyre)", sniff_spyre_log, read_spyre_log, False)
SPYRE_KERNEL_SPEC = Format("spyre_kernel_spec", "torch-spyre kernel spec (sdsc_<N>.json, sdsc.json)", sniff_kernel_spec, read_kernel_spec, True)
SPYRE_TIMING = Format("spyre_timing", "TORCH_SPYRE_TIMING record (rec.<pid>.json)", sniff_timing, read_timing, True)
FORMATS = (SPYRE_LOG, SPYRE_KERNEL_SPEC, SPYRE_TIMING)
