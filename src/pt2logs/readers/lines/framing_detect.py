"""What :mod:`.framing` decides framings with: the framing of one line (:func:`line_framing`, for files that
mix them), of one JSON record, the layer's limits and what :func:`.framing.detect` found (:class:`Found`).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from pt2logs.readers.lines.framing_patterns import FRAMINGS, Framing, Prefix

#: the lines of a head looked at (enough to see a framing and its prefixes; the head is at most 64 KB)
HEAD_LINES = 400
#: the longest line handed over (the kit's MAX_TEXT_LINE): a longer joined line keeps its head
MAX_LINE = 1 << 20
#: the most lines open (written in parts, not yet ended) at once: one per stream, so a few
MAX_OPEN = 8
_JSON_START = re.compile(r'\{\s*"')


# ----------------------------------------------------------------------------- detection


class Found:
    """A file's wrapping, from its head: ``framing`` (None: its lines are not framed), ``prefixes`` (the
    prefix kinds its lines carry) and ``repeats`` (Ray's deduplication suffix may occur)."""

    __slots__ = ("framing", "prefixes", "repeats", "docker_partial")

    def __init__(
        self,
        framing: Framing | None,
        prefixes: tuple[Prefix, ...],
        repeats: bool,
        docker_partial: bool = True,
    ):
        self.framing = framing
        self.prefixes = prefixes
        self.repeats = repeats
        self.docker_partial = docker_partial

    @property
    def names(self) -> list[str]:
        return ([self.framing.name] if self.framing else []) + [p.name for p in self.prefixes]

    def __repr__(self) -> str:
        return f"Found({'+'.join(self.names)}{', repeats' if self.repeats else ''})"


def _json_framing(obj: Any) -> Framing | None:
    if not isinstance(obj, dict):
        return None
    for f in FRAMINGS:
        if (
            f.kind == "json"
            and all(k in obj for k in f.needs)
            and isinstance(obj.get(f.keys[0]), (str, list))
        ):
            return f
    return None


_TEXT = tuple(f for f in FRAMINGS if f.kind == "text")
_CRI = next(f for f in FRAMINGS if f.name == "cri")


def _text_framing(line: str) -> tuple[Framing, re.Match] | None:
    c = line[:1]
    if not ("0" <= c <= "9" or "A" <= c <= "Z"):
        return None
    for f in FRAMINGS:
        if f.kind == "text" and (m := f.line.match(line)) is not None:  # type: ignore[union-attr]
            return f, m
    return None


def line_framing(line: str) -> Framing | None:
    """The framing of one line, if any."""
    if line[:1] == "{" and _JSON_START.match(line):
        try:
            return _json_framing(orjson.loads(line))
        except orjson.JSONDecodeError:
            return None
    t = _text_framing(line)
    return t[0] if t else None


#: a line that may start a framing or a prefix (one scan of the head from newline to newline: most heads have
#: none, and are done)
_MAYBE = re.compile(
    rb"\n(?:\d{4}-\d\d-\d\dT|[A-Z][a-z]{2} [ \d]\d \d\d:|\{ ?\"| {0,6}(?:P\d+ +)?\d{1,7}: |\[(?!rank\d)[A-Za-z_-]+\d+\]:|\[actor="
    rb"|(?:\x1b\[[0-9;]*m)?(?:\([^()\n]{0,200}pid=|\((?:raylet|autoscaler|gcs_server|monitor)|[\w.-]{1,128} +\| ))"
)
