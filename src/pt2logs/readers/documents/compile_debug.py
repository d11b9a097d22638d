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
it). Discovery makes the whole ``torch_compile_debug`` folder one run (see :mod:`pt2logs.inputs.discover`).
Files are read whole (at most :data:`MAX_DOC` bytes, whole lines; a larger one keeps its head, with a
``too_large`` warning): one graph's code or IR.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Iterator
from typing import Any

from pt2logs.analysis.output_code import parse_output_code
from pt2logs.readers.compile_rows import kernel_rows
from pt2logs.readers.format import DOCUMENT, Format, Layout
from pt2logs.readers.kit import (
    Batch,
    FileContext,
    RowSink,
    decode,
    read_document,
    repro_torch_version,
)

SOURCE = "compile_debug"

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
GRAPH_DIR = re.compile(
    r"^(?P<model>\w*?)__(?P<aot_id>\d+)_(?P<graph>forward|backward|inference)_(?P<nth>\d+)(?:\.(?P<n>\d+))?$"
)
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
    out: dict[str, Any] = {
        "kind": KINDS.get(name),
        "debug_run": None,
        "pid": None,
        "graph_dir": None,
        "aot_id": None,
        "graph": None,
        "nth_graph": None,
    }
    for part in parts[:-1]:
        m = DEBUG_RUN.match(part)
        if m:
            out["debug_run"], out["pid"] = part, int(m.group("pid"))
    if len(parts) > 1:
        m = GRAPH_DIR.match(parts[-2])
        if m:
            out.update(
                graph_dir=parts[-2],
                aot_id=int(m.group("aot_id")),
                graph=m.group("graph"),
                nth_graph=int(m.group("nth")),
            )
    return out


def read_compile_debug(chunks: Iterable[bytes], ctx: FileContext) -> Iterator[Batch]:
    """One file of a TORCH_COMPILE_DEBUG graph folder → ``debug_artifacts`` (+ kernels for output_code.py)."""
    sink = RowSink(ctx)
    stats = ctx.stats
    data = read_document(chunks, sink, "TORCH_COMPILE_DEBUG file", keep_head=True)
    if data is None:
        yield from sink.flush()
        return
    text = decode(data, None, sink)
    facts = folder_facts(ctx.file)
    kind = facts["kind"] or posixpath.basename(ctx.file)
    if kind == "fx_graph_runnable":
        stats.note_torch(repro_torch_version(data), "repro_payload")
    n_bytes = len(data)
    del data  # the text is what is kept: one copy, not two
    n_lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    stats.lines = n_lines
    stats.events = 1
    stats.kinds[kind] = 1
    n_nodes = None
    if kind == "output_code":
        oc = parse_output_code(text)
        graph = facts["graph"] or oc.graph
        facts["graph"] = graph
        lines = {
            m.group(1): text.count("\n", 0, m.start()) + 1 for m in _KERNEL_LINE.finditer(text)
        }
        where = {
            "source": SOURCE,
            "file": ctx.file,
            "compile_id": None,
            "rank": ctx.rank,
            "cache_hit": None,
        }
        kernels, externs = kernel_rows(where, oc, graph, lines)
        for r in kernels:
            sink.add("kernels", r)
        for r in externs:
            sink.add("extern_calls", r)
        n_nodes = len(oc.kernels)
    elif kind.startswith("fx_graph"):
        n_nodes = len(_FX_NODE.findall(text))
    elif kind.startswith("ir_"):
        n_nodes = len(_IR_NODE.findall(text))
    sink.add(
        "debug_artifacts",
        {
            "file": ctx.file,
            "rank": ctx.rank,
            **{
                k: facts[k]
                for k in ("debug_run", "pid", "graph_dir", "aot_id", "graph", "nth_graph")
            },
            "kind": kind,
            "n_lines": n_lines,
            "n_bytes": n_bytes,
            "n_nodes": n_nodes,
            "text": text,
        },
    )
    yield from sink.flush()


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


#: the folder TORCH_COMPILE_DEBUG=1 writes, and its per-process ``run_<time>-pid_<pid>`` folders
DEBUG_ROOT = "torch_compile_debug"


def debug_anchor(folder: str, root: str) -> str | None:
    """The ``torch_compile_debug`` folder above a TORCH_COMPILE_DEBUG file (or the parent of its
    ``run_<time>-pid_<pid>`` folder), when it is inside the input root; else None."""
    parts = folder.split("/")
    for i in range(len(parts), 0, -1):
        name = parts[i - 1]
        if name == DEBUG_ROOT:
            anchor = "/".join(parts[:i])
        elif DEBUG_RUN.match(name):
            anchor = "/".join(parts[: i - 1])
        else:
            continue
        if anchor and (anchor == root.rstrip("/") or anchor.startswith(root.rstrip("/") + "/")):
            return anchor
        return None
    return None


FORMAT = Format(
    "compile_debug",
    "TORCH_COMPILE_DEBUG graph folder file (output_code.py, fx_graph_*.py, ir_*_fusion.txt)",
    sniff_compile_debug,
    read_compile_debug,
    role=DOCUMENT,
    auxiliary=True,
    switch="TORCH_COMPILE_DEBUG=1",
    source=SOURCE,
    source_rank=3,
    layout=Layout(anchor=debug_anchor),
)
