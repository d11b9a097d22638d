"""TORCH_COMPILE_DEBUG=1 graph folders → ``debug_artifacts``, and ``kernels`` / ``extern_calls``
rows with ``source='compile_debug'``.

Layout (torch 2.x)::

    torch_compile_debug/
      tlparse/dedicated_log_torch_trace_*.log            an ordinary trace (format torch_trace)
      run_<YYYY_MM_DD_HH_MM_SS_ffffff>-pid_<pid>/
        torchdynamo/debug.log                            TORCH_LOGS text (format torch_logs), often empty
        torchinductor/aot_model___<n>_debug.log          usually empty
        torchinductor/model__<aot_id>_<forward|backward|inference>_<nth>.<n>/
          fx_graph_readable.py fx_graph_runnable.py fx_graph_transformed.py
          ir_pre_fusion.txt ir_post_fusion.txt output_code.py
          inductor_provenance_tracking_node_mappings.json

This reader takes one file of a graph folder: its name says what it is, and the folder names give
the AOT id, the graph (forward / backward / inference) and the process. ``output_code.py`` is parsed
with :func:`pt2logs.analysis.output_code.parse_output_code` (the same parser as the trace's
``inductor_output_code``); the compile id is not in these files (NULL; the trace in ``tlparse/`` has
it). Discovery makes the whole ``torch_compile_debug`` folder one run (see :mod:`pt2logs.discover`).
Files are read whole (at most :data:`MAX_DOC` bytes): one graph's code or IR.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Iterator
from typing import Any

import pt2logs.tables  # noqa: F401  (registers the tables)
from pt2logs.analysis.output_code import parse_output_code
from pt2logs.readers.errors import Batch, add_error
from pt2logs.readers.torch_trace import FileContext
from pt2logs.schema import Rows

SOURCE = "compile_debug"
MAX_DOC = 256 << 20

#: file name -> kind
KINDS = {
    "output_code.py": "output_code",
    "fx_graph_readable.py": "fx_graph_readable",
    "fx_graph_runnable.py": "fx_graph_runnable",
    "fx_graph_transformed.py": "fx_graph_transformed",
    "ir_pre_fusion.txt": "ir_pre_fusion",
    "ir_post_fusion.txt": "ir_post_fusion",
    "inductor_provenance_tracking_node_mappings.json": "provenance",
}
GRAPH_DIR = re.compile(r"^(?P<model>\w*?)__(?P<aot_id>\d+)_(?P<graph>forward|backward|inference)_(?P<nth>\d+)(?:\.(?P<n>\d+))?$")
DEBUG_RUN = re.compile(r"^run_\d{4}(?:_\d\d){5}_\d+-pid_(?P<pid>\d+)$")
_KERNEL_LINE = re.compile(r"^(\w+) = async_compile\.\w+\(", re.M)
_FX_NODE = re.compile(r"^\s+\w+(?:: \"[^\"\n]*\")? = ", re.M)
_IR_NODE = re.compile(r"^\w+: \w*Node\(", re.M)


def folder_facts(relpath: str) -> dict[str, Any]:
    """What the path of a debug file says: kind, debug_run, pid, graph_dir, aot_id, graph, nth_graph."""
    parts = relpath.replace("\\", "/").split("/")
    name = parts[-1]
    for suf in (".gz", ".zst", ".zstd", ".bz2"):
        if name.endswith(suf):
            name = name[: -len(suf)]
    out: dict[str, Any] = {"kind": KINDS.get(name), "debug_run": None, "pid": None, "graph_dir": None,
                           "aot_id": None, "graph": None, "nth_graph": None}
    for part in parts[:-1]:
        m = DEBUG_RUN.match(part)
        if m:
            out["debug_run"], out["pid"] = part, int(m.group("pid"))
    if len(parts) > 1:
        m = GRAPH_DIR.match(parts[-2])
        if m:
            out.update(graph_dir=parts[-2], aot_id=int(m.group("aot_id")), graph=m.group("graph"), nth_graph=int(m.group("nth")))
    return out


def read_compile_debug(chunks: Iterable[bytes], ctx: FileContext) -> Iterator[Batch]:
    """One file of a TORCH_COMPILE_DEBUG graph folder → ``debug_artifacts`` (+ kernels for output_code.py)."""
    errors = Rows("ingest_errors")
    stats = ctx.stats

    def error(kind: str, message: str, excerpt: str = "", severity: str = "error") -> None:
        add_error(errors, ctx, kind, None, message, excerpt, severity)

    parts: list[bytes] = []
    size = 0
    for c in chunks:
        size += len(c)
        if size > MAX_DOC:
            error("too_large", f"file larger than {MAX_DOC >> 20} MiB; not read")
            yield "ingest_errors", errors.take()
            return
        parts.append(c)
    data = b"".join(parts)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        error("decode_error", f"invalid UTF-8 at byte {e.start}; kept with U+FFFD replacements",
              data[max(0, e.start - 40): e.start + 40].decode("utf-8", "replace"), "warning")
        text = data.decode("utf-8", "replace")
    facts = folder_facts(ctx.file)
    kind = facts["kind"] or posixpath.basename(ctx.file)
    n_lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    stats.lines = n_lines
    stats.events = 1
    stats.kinds[kind] = 1
    n_nodes = None
    if kind == "output_code":
        oc = parse_output_code(text)
        graph = facts["graph"] or oc.graph
        facts["graph"] = graph
        lines = {m.group(1): text.count("\n", 0, m.start()) + 1 for m in _KERNEL_LINE.finditer(text)}
        base = {"source": SOURCE, "file": ctx.file, "compile_id": None, "rank": ctx.rank, "graph": graph, "cache_hit": None}
        kernels = Rows("kernels")
        for k in oc.kernels:
            kernels.add(dict(base, line_no=lines.get(k.kernel_name), kernel_name=k.kernel_name, backend=k.backend,
                             kind=k.kind, fused_ops=list(k.fused_ops)))
        externs = Rows("extern_calls")
        for op, n in sorted(oc.extern_calls.items()):
            externs.add(dict(base, line_no=None, op=op, count=n))
        n_nodes = len(oc.kernels)
        if len(kernels):
            yield "kernels", kernels.take()
        if len(externs):
            yield "extern_calls", externs.take()
    elif kind.startswith("fx_graph"):
        n_nodes = len(_FX_NODE.findall(text))
    elif kind.startswith("ir_"):
        n_nodes = len(_IR_NODE.findall(text))
    art = Rows("debug_artifacts")
    art.add({"file": ctx.file, "rank": ctx.rank, **{k: facts[k] for k in ("debug_run", "pid", "graph_dir", "aot_id", "graph", "nth_graph")},
             "kind": kind, "n_lines": n_lines, "n_bytes": len(data), "n_nodes": n_nodes, "text": text})
    yield "debug_artifacts", art.take()
    if len(errors):
        yield "ingest_errors", errors.take()


_PY_START = re.compile(rb"^\s*(?:#|from |import |class |def |\"\"\"|'''|[A-Za-z_]\w* = )")


def sniff_compile_debug(head: bytes, name: str) -> bool:
    """A graph-folder file: its name (output_code.py, fx_graph_*.py, ir_*_fusion.txt, the provenance
    map) and a content that fits it (Python source, IR node lines, a JSON object)."""
    kind = KINDS.get(name)
    if kind is None:
        return False
    h = head.lstrip()
    if kind == "provenance":
        return h.startswith(b"{")
    if kind.startswith("ir_"):
        return bool(re.match(rb"^\w+: \w*Node\(", h)) or not h
    return bool(_PY_START.match(h))
