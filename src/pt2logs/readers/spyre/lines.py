"""Spyre log lines → ``transfers``, ``spyre_allocations``, ``spyre_layouts``, ``kernel_launches``,
``spyre_messages``.

Messages are matched on their content (:mod:`.patterns`); a transfer is assembled by a small state
machine (:class:`SpyreLines`; the rows it makes: :mod:`.transfers`, line prefixes: :mod:`.prefixes`) from the lines that
describe it: tensor info, allocation, layout, the
copy's source and destination, the DataConversionInfo block, the illustrative format's status line.
"""

from __future__ import annotations

import posixpath
from typing import Any

from pt2logs.readers.kit import EXCERPT, RowSink
from pt2logs.readers.spyre import patterns as P
from pt2logs.readers.spyre.dtypes import int64, int_list, torch_dtype
from pt2logs.readers.spyre.prefixes import Prefixes
from pt2logs.readers.spyre.transfers import (
    MAX_MESSAGE,
    dci_fields,
    layout_row,
    layout_sizes,
    new_tensor,
    transfer_row,
)

MAX_BLOCK_LINES = 20_000


class SpyreLines:
    """The Spyre line reader (:class:`~pt2logs.readers.kit.LineReader`). Per-file state: the tensor
    being allocated (``tensor``: tensor info, allocation, layout), the copy being assembled (``xfer``),
    the allocation awaiting its address, an open DataConversionInfo block."""

    def __init__(self, out: RowSink):
        self.out, self.kinds = out, out.stats.kinds
        self.tensor: dict[str, Any] | None = None
        self.xfer: dict[str, Any] | None = None
        self.alloc: dict[str, Any] | None = None
        self.block: dict[str, Any] | None = None
        self.name: dict[str, Any] = {}  # tensor named by a model_utils line, not yet allocated
        self.illus = False  # the last Spyre line was the illustrative format
        self.codes: dict[
            int, str
        ] = {}  # DCI dataformat code -> device dtype, learned from this log
        self.launches: dict[str, int] = {}
        self.prefixes = Prefixes()

    def take(self, no: int, text: str) -> bool:
        """Read a Spyre line (True); leave any other line to the next reader (False), after taking the
        layout a foreign line may print."""
        p = self.prefixes.parse(text, self.out.carried)
        if (b := self.block) is not None:
            if p is None and (not text or text[0] in " \t}]") and len(b["lines"]) < MAX_BLOCK_LINES:
                b["lines"].append(text)
                b["depth"] += self._depth(text)
                if b["depth"] <= 0:
                    self._end_block(truncated=False)
                return True
            if p is not None or len(b["lines"]) >= MAX_BLOCK_LINES:
                self._end_block(truncated=True)  # a foreign line inside a block does not end it
        if p is None and self.illus and (m := P.ILLUS_CONT.match(text)):
            p = ("illustrative", None, None, None, None, None, None, m.group(1) + ": " + m.group(2))
        if p is not None:
            self._spyre(no, p)
            return True
        if "SpyreTensorLayout(" in text:
            self._layout({"line_no": no, "ts": None, "func": None}, text, "embedded")
        return False

    def _spyre(self, no: int, p: tuple) -> None:
        shape, level, comp, func, ts, worker, pid, msg = p
        self.out.stats.events += 1
        self.illus = shape == "illustrative"
        row = {
            "source": "spyre",
            "line_no": no,
            "n_lines": 1,
            "ts": ts,
            "shape": shape,
            "level": level,
            "component": comp,
            "func": func,
            "worker": worker,
            "pid": int64(pid),
            "message": msg[:MAX_MESSAGE],
        }
        kind = row["kind"] = self._message(
            {"line_no": no, "ts": ts, "func": func}, comp, shape, msg, row
        )
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        self.out.stats.unknown += kind == "other"
        if kind not in ("allocate", "allocated"):
            self._close_alloc()
        if kind != "dci":  # a block's row leaves with the block
            self.out.add("spyre_messages", row)

    def _message(self, at: dict, comp: str | None, shape: str, msg: str, row: dict) -> str:
        if shape == "illustrative":
            return self._illustrative(at, msg)
        if msg.startswith("RUN:") and (m := P.RUN.match(msg)):
            self._launch(at, m.group(1), m.group(2), row["level"])
            return "run"
        if msg.startswith("Generating "):
            return "generating"
        if (
            msg.startswith("elapsed")
            and comp
            and comp.endswith("passes")
            and (m := P.PASS_ELAPSED.match(msg))
        ):
            self.out.add(
                "spyre_timing",
                {
                    "source": "spyre",
                    "line_no": at["line_no"],
                    "pid": int64(row["pid"]),
                    "name": f"pass:{m.group(2)}",
                    "kind": "pass",
                    "step": m.group(2),
                    "depth": 0,
                    "inclusive_ns": int64(int(m.group(1)) * 1_000_000),
                },
            )
            return "pass_time"
        if m := P.SRC.match(msg):
            self._copy_line(at, "src", m.group(1), m.group(2))
            return "copy_src"
        if m := P.DST.match(msg):
            self._copy_line(at, "dst", m.group(1), m.group(2))
            return "copy_dst"
        if m := P.DCI.search(msg):
            rest = m.group(1).strip()
            row["kind"] = "dci"
            self.block = {
                **at,
                "lines": [rest],
                "depth": self._depth(rest),
                "row": row,
                "json": rest.startswith("{"),
            }
            if self.block["depth"] <= 0 or not self.block["json"]:
                self._end_block(truncated=False)
            return "dci"
        if m := P.TENSOR_INFO.search(msg):
            self._close_alloc()
            self.tensor = new_tensor(
                at,
                dtype=torch_dtype(m.group(3))[0],
                host_shape=int_list(m.group(1)),
                host_strides=int_list(m.group(2)),
                device=m.group(4) or None,
                parts=["tensor_info"],
                **self._take_name(),
            )
            return "tensor_info"
        if m := (P.ALLOCATING.match(msg) or P.ALLOCATED_N.match(msg)):
            self._allocating(at, int(m.group(1)), m.group(2) if m.re is P.ALLOCATING else None)
            return "allocate"
        if m := P.ALLOCATED.match(msg):
            self._allocated(at, m.group(1))
            return "allocated"
        if "SpyreTensorLayout(" in msg:
            return "layout" if self._layout(at, msg, "allocation") else "other"
        if comp and (m := P.MODEL_TENSOR.match(msg)):
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
            t = self.tensor = new_tensor(at, device=device, **self._take_name())
        t["alloc"] = self.alloc = {
            "source": "spyre",
            **at,
            "nbytes": nbytes,
            "device": device or t["device"],
            "dtype": t["dtype"],
            "host_shape": t["host_shape"],
        }
        t["parts"].append("alloc")

    def _allocated(self, at: dict, text: str) -> None:
        a = self.alloc if self.alloc is not None else {"source": "spyre", **at}
        chunks = [
            {
                "region_id": c[0],
                "offset": c[1],
                "size": int(c[2]),
                "domain_id": int(c[3]) if c[3] else None,
            }
            for c in P.CHUNK.findall(text)
        ]
        if total := P.TOTAL.search(text):
            a["total_size"] = int(total.group(1))
            a.setdefault("nbytes", a["total_size"])
            a["num_chunks"] = int(n.group(1)) if (n := P.NCHUNKS.search(text)) else len(chunks)
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
        lay = layout_row(at, text, origin)
        if lay is None:
            return None
        owner = self.xfer if origin == "illustrative" else None
        if origin == "allocation":
            if self.tensor is None or self.tensor["layout"] is not None:
                self.tensor = new_tensor(at, **self._take_name())
            owner = self.tensor
        if owner is not None:
            owner["layout"] = lay
            owner["parts"].append("layout")
            lay["dtype"] = owner.get("dtype") or torch_dtype(owner.get("raw_dtype"))[0]
            lay["host_shape"] = (
                owner.get("host_shape") or owner.get("name_shape") or owner.get("illus_shape")
            )
        self.out.add("spyre_layouts", layout_sizes(lay))
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
        if (
            side == "src"
            or x is None
            or side in x["parts"]
            or "dci" in x["parts"]
            or x.get("status")
        ):
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
        if (
            t is None
            or x.get("bound")
            or (t["dtype"] is not None and want is not None and t["dtype"] != want)
        ):
            return
        x["bound"], self.tensor = True, None
        for k in (
            "host_shape",
            "host_strides",
            "device",
            "layout",
            "alloc",
            "tensor_name",
            "name_shape",
        ):
            if t.get(k) is not None:
                x.setdefault(k, t[k])
        x["parts"] = t["parts"] + x["parts"]

    def _illustrative(self, at: dict, msg: str) -> str:
        func, x = at["func"], self.xfer
        if func and P.ILLUS_COPY.match(func):
            x = self._new_xfer(at)
            x["direction"] = (
                "host_to_device"
                if func in ("copy_to_device", "copy_from_host", "copy_from_cpu")
                else "device_to_host"
            )
            m, d = P.KV_SHAPE.search(msg), P.KV_DTYPE.search(msg)
            x["illus_shape"], x["raw_dtype"] = (
                (int_list(m.group(1)) if m else None),
                (d.group(1) if d else None),
            )
            x["parts"].append("copy")
            self._touch(x, at)
            return "copy"
        key, _, rest = msg.partition(": ")
        at = {**at, "func": key or None}
        if x is None or "copy" not in x["parts"]:
            return (
                "layout"
                if "SpyreTensorLayout(" in msg and self._layout(at, msg, "embedded")
                else "other"
            )
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
        if x is not None:
            self.out.add("transfers", transfer_row(x, self.codes))

    # -- DataConversionInfo blocks ----------------------------------------------------------
    @staticmethod
    def _depth(text: str) -> int:
        s = (
            P.JSON_STR.sub("", text)
            if '"' in text and ("[" in text or "{" in text or "}" in text or "]" in text)
            else text
        )
        return s.count("{") + s.count("[") - s.count("}") - s.count("]")

    def _end_block(self, truncated: bool) -> None:
        b, self.block = self.block, None
        if b is None:
            return
        text, n = "\n".join(b["lines"]), len(b["lines"])
        fields, problem = dci_fields(text, n, b["json"], truncated)
        if problem is not None:
            self.out.warn(
                "truncated_json" if truncated else "bad_json", b["line_no"], problem, text
            )
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
        code_dir = (
            (posixpath.dirname(arg) or arg)
            if arg and "." in posixpath.basename(arg.rstrip("/"))
            else arg
        )
        self.out.add(
            "kernel_launches",
            {
                "source": "spyre",
                "line_no": at["line_no"],
                "ts": at["ts"],
                "kernel_name": kernel,
                "code_dir": code_dir,
                "launch_arg": arg,
                "launch_index": n,
                "level": level,
            },
        )

    def finish(self) -> None:
        self._end_block(truncated=True)
        self._close_alloc()
        self._finish_xfer()
