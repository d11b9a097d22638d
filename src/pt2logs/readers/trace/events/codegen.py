"""Kernel provenance and AOTInductor / export compiles from a trace.

* ``kernel_provenance`` — inductor's provenance tracking (torch/_inductor/compile_fx.py and codecache.py,
  on with ``INDUCTOR_PROVENANCE=1`` / ``TORCH_COMPILE_DEBUG=1``, config ``trace.provenance_tracking_level``)
  writes two JSON artifacts per generated module, in this order: ``inductor_provenance_tracking_node_mappings``
  (``{"preToPost", "postToPre", "cppCodeToPost", "postToCppCode", "version": 2.0}``, the kernel keys
  ``name:position``; "cppCode" names every backend's kernels, Triton's too) and
  ``inductor_provenance_tracking_kernel_stack_traces`` (``{"name:position": ["  File \\"f.py\\", line N, in
  fn\\n    code\\n", ...]}``). The rows are made when both came (or at the compile's end).
* ``aot_compiles`` — AOTInductor writes its generated C++ as ``graph_dump`` records named
  ``inductor_aot_wrapper_code`` / ``inductor_aot_kernel_code`` / ``inductor_aot_header_code``
  (codecache.py AotCodeCompiler.compile); the compile has no compile id; its ``compilation_metrics``
  record closes it. The kernels of the kernel code become ``kernels`` rows (backend cpp or triton).
  ``exported_program`` (torch.export, written by ``dtrace_structured``: only under ``TORCH_DTRACE``)
  marks the next AOT compile as exported.
"""

from __future__ import annotations

import re
from typing import Any

from pt2logs.analysis.identity import classify_path
from pt2logs.analysis.output_code import OutputCode, kernel_lines, parse_output_code
from pt2logs.readers.compile_rows import kernel_rows
from pt2logs.readers.trace.state import TraceState

#: a stack trace's frame as Python's traceback prints it
_FRAME = re.compile(
    r'^\s*File "(?P<file>[^"]*)", line (?P<line>\d+), in (?P<func>[^\n]*)\n?(?P<code>[^\n]*)', re.M
)
#: a C++ kernel AOTInductor defines in its kernel code (declarations end in ";", definitions do not)
_CPP_KERNEL = re.compile(r'^extern "C"\s+(?:\w+\s+)*?void\s+(?P<name>\w+)\((?P<rest>[^;{]*)$', re.M)
#: a Triton kernel AOTInductor's CUDA wrapper loads
_CU_KERNEL = re.compile(r"^\s*CUfunction (?P<name>\w+)\{nullptr\};", re.M)
AOT_DUMPS = {
    "inductor_aot_wrapper_code": "wrapper",
    "inductor_aot_kernel_code": "kernel",
    "inductor_aot_header_code": "header",
}


# ---------------------------------------------------------------- kernel provenance


def node_mappings(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    data = st.json_payload()
    if isinstance(data, str):  # json.dumps of a dict, dumped once more by some torch versions
        data = _loads(data)
    prov = st.scratch(cid).setdefault("provenance", {})
    prov["map"] = data if isinstance(data, dict) else {}
    prov.setdefault("where", st.where(cid))
    if "traces" in prov:
        _emit_provenance(st, cid)


def kernel_stack_traces(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    data = st.json_payload()
    if isinstance(data, str):
        data = _loads(data)
    prov = st.scratch(cid).setdefault("provenance", {})
    prov["traces"] = data if isinstance(data, dict) else {}
    prov["where"] = st.where(cid)
    if "map" in prov:
        _emit_provenance(st, cid)


def _loads(text: str) -> Any:
    import orjson

    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _names(v: Any) -> list[str]:
    return [str(x) for x in v] if isinstance(v, list) else []


def _emit_provenance(st: TraceState, cid: str | None) -> None:
    prov = st.scratch(cid).pop("provenance", None)
    if not prov:
        return
    mapping, traces = prov.get("map") or {}, prov.get("traces") or {}
    code_to_post = mapping.get("cppCodeToPost") or mapping.get("tritonCodeToPost") or {}
    post_to_pre = mapping.get("postToPre") or {}
    if not isinstance(code_to_post, dict):
        code_to_post = {}
    if not isinstance(post_to_pre, dict):
        post_to_pre = {}
    base = dict(prov["where"])
    for key in dict.fromkeys([*code_to_post, *traces]):
        name, _, pos = str(key).rpartition(":")
        if not name or not pos.isdigit():
            name, pos = str(key), ""
        post = _names(code_to_post.get(key))
        pre = list(dict.fromkeys(p for n in post for p in _names(post_to_pre.get(n))))
        row = dict(
            base,
            kernel_name=name,
            kernel_index=int(pos) if pos else None,
            post_nodes=post,
            pre_nodes=pre,
        )
        frames = (
            [t for t in traces.get(key) or [] if isinstance(t, str)]
            if isinstance(traces.get(key), list)
            else []
        )
        seen = set()
        for text in frames:
            found = list(_FRAME.finditer(text))
            if not found:
                continue
            f = found[-1]
            user = (f["file"], int(f["line"]), f["func"].strip())
            if user in seen:
                continue
            seen.add(user)
            pid = classify_path(f["file"])
            st.add(
                "kernel_provenance",
                dict(
                    row,
                    user_file=pid.key,
                    user_file_kind=pid.kind,
                    user_line=user[1],
                    user_func=user[2],
                    user_code=f["code"].strip() or None,
                    n_frames=len(found),
                ),
            )
        if not seen:
            st.add(
                "kernel_provenance",
                dict(
                    row,
                    user_file=None,
                    user_file_kind=None,
                    user_line=None,
                    user_func=None,
                    user_code=None,
                    n_frames=None,
                ),
            )


# ---------------------------------------------------------------- AOTInductor and export


def exported_program(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    """torch.export logs its program once it is made (export/_trace.py): where it was logged, for the AOT
    compile that follows, or a row of its own."""
    st.scratch(cid)["exported"] = st.where(cid)


def _export_row(where: dict[str, Any]) -> dict[str, Any]:
    """An exported program no AOTInductor compile followed (torch.export alone): done when logged."""
    return dict(where, kind="export", exported=True, finished=True)


def aot_dump(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    """A ``graph_dump`` record of AOTInductor's generated code (other graph dumps are not ours)."""
    part = AOT_DUMPS.get(meta.get("name")) if isinstance(meta, dict) else None
    if part is None:
        return
    sc = st.scratch(cid)
    aot = sc.get("aot")
    if aot is None:
        aot = sc["aot"] = dict(
            st.where(cid),
            kind="aot_inductor",
            exported=bool(sc.pop("exported", False)),
            wrapper_path=None,
            wrapper_bytes=None,
            kernel_bytes=None,
            header_bytes=None,
            n_kernels=None,
            compile_s=None,
            finished=False,
        )
    payload = st.rec.payload if st.rec is not None else None
    aot[f"{part}_bytes"] = len(payload) if payload is not None else None
    if part == "wrapper":
        aot["wrapper_path"] = meta.get("filename")
    if (
        part != "header"
    ):  # kernels are defined in the kernel code, or in the wrapper (package_cpp_only)
        seen: set = sc.setdefault("aot_kernels", set())
        oc = aot_output_code(st.text())
        oc.kernels = [k for k in oc.kernels if k.kernel_name not in seen]
        seen.update(k.kernel_name for k in oc.kernels)
        aot["n_kernels"] = len(seen)
        sc.setdefault("code", []).append(kernel_rows(st.where(cid), oc, graph="inference"))


def aot_output_code(text: str) -> OutputCode:
    """The kernels of AOTInductor's generated code: C++ kernels it defines (``extern "C" void name(...)`` not
    followed by ``;``), Triton kernels its CUDA wrapper loads (``CUfunction name{nullptr};``), Triton kernels
    as in a Python module."""
    oc = parse_output_code(text) if kernel_lines(text) else OutputCode()
    names = {k.kernel_name for k in oc.kernels}
    found = [(m["name"], "cpp") for m in _CPP_KERNEL.finditer(text)]
    found += [(m["name"], "triton") for m in _CU_KERNEL.finditer(text)]
    more = parse_output_code(
        "\n".join(f"{n} = async_compile.{b}(" for n, b in dict(found).items() if n not in names)
    )
    oc.kernels += more.kernels
    return oc


def on_metrics(st: TraceState, kind: str, meta: dict[str, Any], cid: str | None) -> None:
    if kind != "compilation_metrics":
        return
    sc = st.compiles.get(cid or "")
    if sc is None:
        return
    if "provenance" in sc:
        _emit_provenance(st, cid)
    aot = sc.pop("aot", None)
    sc.pop("aot_kernels", None)
    exported = sc.pop("exported", None)
    if aot is None and exported:
        aot = _export_row(exported)
    if aot is not None:
        start, end = meta.get("start_time_us"), meta.get("end_time_us")
        if isinstance(start, int) and isinstance(end, int) and end >= start:
            aot["compile_s"] = (end - start) / 1e6
        aot["finished"] = True
        st.add("aot_compiles", aot)


def finish(st: TraceState) -> None:
    """End of file: provenance whose compile never ended; AOT compiles the log ends inside."""
    for cid, sc in list(st.compiles.items()):
        if "provenance" in sc:
            _emit_provenance(st, cid or None)
        aot = sc.pop("aot", None)
        if aot is not None:
            st.add("aot_compiles", aot)
        exported = sc.pop("exported", None)
        if exported:
            st.add("aot_compiles", _export_row(exported))
