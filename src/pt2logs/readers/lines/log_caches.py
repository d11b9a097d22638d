"""Cache lookups in TORCH_LOGS text → ``cache_events`` / ``cache_key_components`` (``source='torch_logs'``).

The lines, as torch 2.13 logs them (INFO unless said; the loggers' names work in TORCH_LOGS, e.g.
``TORCH_LOGS=+torch._inductor.codecache,+torch._functorch._aot_autograd.autograd_cache``):

* torch/_inductor/codecache.py: ``fx graph cache hit for key K`` / ``fx graph cache miss for key K``
  (DEBUG before torch 2.5), ``Bypassing FX Graph Cache because 'R'``, and at DEBUG
  ``FX graph cache hash details for key K:`` followed by the components, one ``[hash] name: value``
  per line (``compiled_fx_graph_hash``);
* torch/_functorch/_aot_autograd/autograd_cache.py: ``AOTAutograd cache hit for key K`` / ``... miss
  for key K``, ``Bypassing autograd cache due to: R``, and at DEBUG ``Autograd graph cache hash details
  for key K:`` + components.

A key's components come before its hit or miss line; they wait here (at most :data:`MAX_KEYS` keys)
and leave with it. Torch before 2.3 logged no hit or miss at INFO: without DEBUG, no rows.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from pt2logs.analysis.cache_keys import is_backward, parse_components
from pt2logs.readers.kit import RowSink

SOURCE = "torch_logs"
MAX_KEYS = 1000
_LOOKUP = re.compile(r"^(fx graph|AOTAutograd) cache (hit|miss) for key (\S+)\s*$")
_BYPASS = re.compile(
    r"^(?:Bypassing FX Graph Cache because '(?P<fx>.*)'|Bypassing autograd cache due to: (?P<aot>.*))$",
    re.S,
)
_DETAILS = re.compile(r"^(FX|Autograd) graph cache hash details for key (\S+):\n", re.S)
_CACHE = {
    "fx graph": "fx_graph",
    "AOTAutograd": "aotautograd",
    "FX": "fx_graph",
    "Autograd": "aotautograd",
}


class CacheLines:
    """Cache lookups from closed TORCH_LOGS messages (``line_no``, ``rank``, ``cid``, ``ts``)."""

    def __init__(self, sink: RowSink) -> None:
        self.sink = sink
        self.details: dict[str, list[str]] = {}  # key → component lines, until its lookup line

    def message(self, msg: Any, text: str) -> bool:
        """Take ``text`` when it is a cache line; says whether it was."""
        head = text[:120]
        if "cache" not in head:
            return False
        m = _DETAILS.match(text)
        if m:
            self.details[m.group(2)] = text[m.end() :].split("\n")
            if len(self.details) > MAX_KEYS:
                self.details.pop(next(iter(self.details)))
            return True
        m = _LOOKUP.match(text)
        if m:
            self._row(msg, _CACHE[m.group(1)], m.group(2), m.group(3), None)
            return True
        m = _BYPASS.match(text)
        if m:
            cache = "fx_graph" if m.group("fx") is not None else "aotautograd"
            self._row(
                msg,
                cache,
                "bypass",
                None,
                (m.group("fx") if m.group("fx") is not None else m.group("aot")).strip(),
            )
            return True
        return False

    def _row(self, msg: Any, cache: str, outcome: str, key: str | None, reason: str | None) -> None:
        comps = parse_components(self.details.pop(key, None)) if key else []
        base = {
            "source": SOURCE,
            "file": self.sink.ctx.file,
            "line_no": msg.line_no,
            "compile_id": msg.cid,
            "rank": msg.rank,
        }
        self.sink.add(
            "cache_events",
            dict(
                base,
                ts=msg.ts,
                cache=cache,
                outcome=outcome,
                key=key,
                reason=reason,
                time_saved_ms=None,
                detail=orjson.dumps({"log": "torch_logs"}).decode(),
                n_components=len(comps),
                is_backward=is_backward(comps),
            ),
        )
        for c in comps:
            self.sink.add(
                "cache_key_components",
                dict(
                    base,
                    cache=cache,
                    key=key,
                    component=c.name,
                    kind=c.kind,
                    hash=c.hash,
                    value=c.value,
                ),
            )
