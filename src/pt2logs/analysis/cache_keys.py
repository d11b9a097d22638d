"""A compile cache's key, broken into the components torch hashed: what made two keys differ.

torch writes one line per attribute of the object it hashes (``FxGraphCachePickler.debug_lines``,
torch/_inductor/codecache.py; AOTAutograd's ``AOTAutogradCachePickler``, torch/_functorch/
_aot_autograd/autograd_cache.py)::

    [fay2vbhai3npe…] gm: <lambda>()\\n\\n\\n\\ndef forward(self, arg0_1, …
    [avf2u3luxvyab…] example_inputs[0]: TensorMetadata(dtype=torch.float32, shape=…
    [esstihe2nyydk…] inductor_config[fx_graph_cache]: True

as the ``components`` list of the cache artifacts' JSON payload. Two shapes across torch versions:

* torch 2.5+ (``fx_graph_cache_{hit,miss,bypass}``, ``fx_graph_cache_hash`` with ``cache_state``,
  ``aotautograd_cache_*``): one list item per component, a multi-line value inside the item;
* torch 2.3-2.4 (``fx_graph_cache_hash``, ``{"key", "components": debug_str.split("\\n")}``): one
  list item per LINE, so a graph's lines follow its ``[hash] gm:`` item; they are joined back here.

In recent torch (2.13 checked) AOTAutograd fills ``components`` only when its logger is at DEBUG
(``_get_debug_lines_for_cache_key``): an ``aotautograd`` lookup then has a key and no components.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

#: ``[hash] name: value`` (the hash is base32, lower case; older torch: hex)
_LINE = re.compile(r"^\[([0-9a-z]{16,64})\] ([^:\n]+?): ?(.*)$", re.S)
#: the longest value kept per component (torch itself cuts bytes values at 1024)
VALUE_CHARS = 1024

#: what a component is about, by its name (the attribute of FxGraphHashDetails /
#: AOTAutogradCacheDetails it hashes); first match wins
_KINDS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^(gm|graph|user_defined_triton_source|fx_graph)\b"), "graph"),
    (re.compile(r"^(example_inputs|inputs_to_check|args|tensor_metadata)\b"), "inputs"),
    (
        re.compile(r"^(torch_version|system_info\[(hash|version)\]|system_info$|triton_version)"),
        "torch_version",
    ),
    (re.compile(r"^(system_info\[device\]|default_cuda_device_index)"), "device"),
    (re.compile(r"(config|cache_key_tag|fx_kwargs|precompile_enabled)"), "config"),
    (re.compile(r"pass|^_?custom_"), "custom_passes"),
    (
        re.compile(
            r"^(deterministic|grad_enabled|disable_amp|default_dtype|cpp_runtime_thread_count|"
            r"provenance_tracking_level|autocast|dtype|cuda_matmul_settings)"
        ),
        "settings",
    ),
]


def split_line(item: str) -> tuple[str, str, str] | None:
    """``(hash, name, value)`` of a ``[hash] name: value`` item, as :data:`_LINE` matches it (string
    methods instead of the regex: a key has hundreds of items, a run thousands of keys)."""
    if item[:1] != "[":
        return None
    close = item.find("] ", 17)
    if close < 0:  # no "] " after a 16-char hash: no match (item[1:-1] must not pass as a hash)
        return None
    h = item[1:close]
    if not 16 <= len(h) <= 64 or not (h.isascii() and h.isalnum() and (h.islower() or h.isdigit())):
        return None
    colon = item.find(":", close + 2)
    name = item[close + 2 : colon]
    if colon < 0 or not name or "\n" in name:
        return None
    value = item[colon + 1 :]
    return h, name.strip(), value[1:] if value[:1] == " " else value


@dataclass(frozen=True)
class Component:
    name: str  # inductor_config[max_autotune], example_inputs[0], gm, torch_version
    kind: str  # graph, inputs, config, torch_version, device, settings, custom_passes, other
    hash: str
    value: str  # at most VALUE_CHARS characters


@functools.lru_cache(maxsize=4096)  # a run's keys repeat the same few hundred names
def component_kind(name: str) -> str:
    for pattern, kind in _KINDS:
        if pattern.search(name):
            return kind
    return "other"


#: components of short items already seen (a run's keys repeat the same config lines): item → Component
_SEEN: dict[str, Component | None] = {}
_SEEN_ITEMS, _SEEN_CHARS = 20_000, 512  # at most ~10 MB of items held


def _component(item: str) -> Component | None:
    c = _SEEN.get(item, _LINE)  # _LINE: a sentinel (never a value)
    if c is _LINE:
        s = split_line(item)
        c = None if s is None else Component(s[1], component_kind(s[1]), s[0], _cut(s[2]))
        if len(item) <= _SEEN_CHARS:
            if len(_SEEN) >= _SEEN_ITEMS:
                _SEEN.clear()
            _SEEN[item] = c
    return c  # type: ignore[return-value]


def _cut(value: str) -> str:
    return value[:VALUE_CHARS] + "…" if len(value) > VALUE_CHARS else value


def _with_lines(head: str, lines: list[str]) -> Component:
    """The component of ``head`` whose value goes on over the item lines after it (torch 2.3-2.4)."""
    h, name, first = split_line(head)  # type: ignore[misc]
    return Component(name, component_kind(name), h, _cut("\n".join([first, *lines])))


def parse_components(items: object) -> list[Component]:
    """The components of a cache artifact's ``components`` list (either shape above); items that
    are not text are skipped, a line without a ``[hash] name:`` head continues the one before."""
    if not isinstance(items, list):
        return []
    out: list[Component] = []
    head = ""  # the item of out[-1]
    more: list[str] = []  # the lines that continue it
    for item in items:
        if type(item) is not str:
            continue
        c = _component(item)
        if c is not None:
            if more:
                out[-1], more = _with_lines(head, more), []
            out.append(c)
            head = item
        elif out:
            more.append(item)
    if more:
        out[-1] = _with_lines(head, more)
    return out


def is_backward(components: list[Component]) -> bool | None:
    """The lookup was for a backward graph (``fx_kwargs[is_backward]: True``), when the key says."""
    for c in components:
        if c.name == "fx_kwargs[is_backward]":
            return c.value.strip() == "True"
    return None
