"""torch's log messages without torch's glog prefix: Python logging reconfigured, or the prefix elided.

torch's compile loggers are ordinary Python loggers (``torch._dynamo.guards.__recompiles`` is the
``recompiles`` artifact of ``torch/_dynamo/guards.py``: ``torch/_logging/_internal.py`` names an
artifact logger ``<module>.__<artifact>``); torch installs its glog formatter only on the handler it
adds itself (``_internal.py`` ``TorchLogsFormatter``, ``_init_logs``). A framework that calls
``logging.basicConfig`` or routes torch's loggers through its own handler prints the same messages
under another prefix, and a paste or a collector can cut the prefix. The shapes read here, each as
the program that prints it writes it:

* ``logging``: a handler's own ``Formatter`` with the logger's name and level: the common
  ``"%(asctime)s - %(name)s - %(levelname)s - %(message)s"`` (``2026-11-26 17:36:29,939 -
  torch._dynamo.guards.__recompiles - DEBUG - Recompiling function …``), ``logging.BASIC_FORMAT``
  ``"%(levelname)s:%(name)s:%(message)s"`` (``DEBUG:torch._dynamo.guards.__recompiles:Recompiling …``),
  ``%(name)s | %(lineno)d | %(levelname)s : …`` and the like: a compile logger's name (``torch._dynamo``,
  ``torch._inductor``, ``torch.fx``, ``torch._functorch``, ``torch._subclasses``, ``torch.export``; not
  ``torch.distributed``: those lines are a launcher's) next to a level. A plain ``Formatter`` prints
  the prefix on the first line of a message only: the lines after it (indented ones, and any line
  of a message whose kind has lines that are not indented: graph breaks, guards, output code) are its
  continuation.
* ``elided``: the glog prefix cut before the source path: ``.../torch/_dynamo/guards.py:2772] [16/8]
  [__recompiles_verbose] Recompiling function …`` (the rest of torch's prefix, repeated on every line).
* ``bare``: only the compile id and the artifact tag: ``[0/1] [__recompiles] Recompiling function f in …``;
  without a tag only the recompile limit's warning and ``WON'T CONVERT`` start a message (lines with the
  same ``[0/1]`` continue it).
* ``level``: torch 2.0's ``[date] logger: [LEVEL] msg`` with date and logger cut:
  ``[WARNING] Graph break: call_function BuiltinVariable(iadd) [...] {} from user code at …``
  (torch 2.0 ``_dynamo/symbolic_convert.py`` ``log.warning(f"Graph break: {excp} from user code at {user_stack_formatted}")``).

A message with no artifact tag whose text is one of torch's artifact messages gets that artifact
(:func:`artifact_of`), so it gives the rows the tagged message gives.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_LEVEL = r"(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)"
_TID = r"(?P<trace_id>!?\d+(?:/\d+){0,2}(?:_\d+)?)"
#: the loggers of torch's compiler stack (torch/_logging/_registrations.py registers them)
_LOGGER = r"(?P<logger>torch\.(?:_dynamo|_inductor|_functorch|_subclasses|_guards|_export|_higher_order_ops|fx|export|compiler|_logging)(?:\.\w+)*)"
_DATE = r"(?:\[?(?P<date>\d{4}-\d\d-\d\d)[ T](?P<time>\d\d:\d\d:\d\d)(?:[,.](?P<frac>\d{1,9}))?\]?\s*(?:[-|:]\s*)?)?"
_SEP = r"\s*[-|:]\s?"
#: a logging Formatter's prefix with the logger first (``- name - LEVEL -``, ``| name | 140 | LEVEL :``) or the level first (``LEVEL:name:``)
LOGGING = re.compile(
    rf"{_DATE}(?:{_LOGGER}(?:{_SEP}\d+)?{_SEP}\[?{_LEVEL}\]?{_SEP}"
    rf"|\[?(?P<level2>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\]?{_SEP}(?P<logger2>torch\.(?:_dynamo|_inductor|_functorch|_subclasses|_guards|_export|_higher_order_ops|fx|export|compiler|_logging)(?:\.\w+)*){_SEP})"
    rf"(?:\[{_TID}\] )?(?P<msg>.*)$"
)
ELIDED = re.compile(
    rf"(?P<path>\S*?torch/[\w/]+\.py):(?P<lineno>\d+)\](?: \[{_TID}\])?(?: \[__(?P<artifact>\w+)\])?(?: (?P<msg>.*))?$"
)
BARE = re.compile(rf"\[{_TID}\](?: \[__(?P<artifact>\w+)\])? (?P<msg>.*)$")
LEVEL_ONLY = re.compile(rf"\[{_LEVEL}\] (?P<msg>Graph break[: ].*)$")
#: the first words of torch's artifact messages → the artifact (a message with no tag)
_KNOWN = (
    ("Recompiling function ", "recompiles"),
    ("Graph break in user code at ", "graph_breaks"),
    ("Graph break (user stack suppressed", "graph_breaks"),
    ("Graph break: ", "graph_breaks"),
    ("GUARDS:", "guards"),
    ("TREE_GUARD_MANAGER:", "guards"),
    ("Output code:", "output_code"),
)
#: torch messages with no artifact tag that a bare ``[0/8]`` line may start (the recompile limit, a failed frame)
_UNTAGGED = ("torch._dynamo hit config.", "WON'T CONVERT ")
#: the kinds whose messages hold lines that are not indented (a recompile's lines all are)
_MULTI = frozenset({"graph_breaks", "guards", "output_code"})
_LEVELS = {
    "DEBUG": "V",
    "INFO": "I",
    "WARNING": "W",
    "WARN": "W",
    "ERROR": "E",
    "CRITICAL": "C",
    "FATAL": "C",
}


class Shaped(NamedTuple):
    """One line of a reshaped torch message: its prefix (lines of one message repeat it, or only the
    first has it: ``continues``), what the prefix says, the message text."""

    shape: str
    prefix: str
    level: str | None
    path: str | None
    lineno: int | None
    trace_id: str | None
    artifact: str | None
    msg: str
    date: str | None = None
    time: str | None = None
    #: the prefix is on the first line only (a plain Formatter): the lines after it continue the message
    continues: bool = False
    #: only the compile id, and no message torch is known to print: a line of the message open with
    #: this same prefix, else not torch's
    weak: bool = False


def artifact_of(msg: str) -> str | None:
    for head, art in _KNOWN:
        if msg.startswith(head):
            return art
    return None


def multi_line(artifact: str | None) -> bool:
    return artifact in _MULTI


def match(text: str) -> Shaped | None:
    """The reshaped torch line ``text`` is, or None. Cheap for most lines: each shape needs a ``[`` first
    or ``torch`` in the line."""
    first = text[:1]
    if "torch" in text:
        m = LOGGING.match(text)
        if m is not None:
            logger = m.group("logger") or m.group("logger2")
            level = m.group("level") or m.group("level2")
            module, _, last = logger.rpartition(".")
            art = last[2:] if last.startswith("__") else None
            msg = m.group("msg")
            art = art or artifact_of(msg)
            return Shaped(
                "logging",
                text[: m.start("msg")].rstrip(),
                _LEVELS[level],
                module if last.startswith("__") else logger,
                None,
                m.group("trace_id"),
                art,
                msg,
                m.group("date"),
                m.group("time") and f"{m.group('time')}.{m.group('frac') or 0}",
                continues=True,
            )
        m = ELIDED.match(text)
        if m is not None:
            msg = m.group("msg") or ""
            path = m.group("path")
            path = path[path.index("torch/") :]
            return Shaped(
                "elided",
                text[: m.start("msg")].rstrip() if m.group("msg") is not None else text.rstrip(),
                None,
                path,
                int(m.group("lineno")),
                m.group("trace_id"),
                m.group("artifact") or artifact_of(msg),
                msg,
            )
    if first == "[":
        m = BARE.match(text)
        if m is not None:
            msg = m.group("msg")
            art = m.group(
                "artifact"
            )  # (not guessed from the text: torch's untagged warnings say "Graph break" too)
            return Shaped(
                "bare",
                text[: m.start("msg")].rstrip(),
                None,
                None,
                None,
                m.group("trace_id"),
                art,
                msg,
                weak=art is None and not msg.startswith(_UNTAGGED),
            )
        m = LEVEL_ONLY.match(text)
        if m is not None:
            return Shaped(
                "level",
                text[: m.start("msg")].rstrip(),
                _LEVELS[m.group("level")],
                None,
                None,
                None,
                "graph_breaks",
                m.group("msg"),
                continues=True,
            )
    return None


#: the sniffer's view of the same shapes (bytes, anywhere in the head, one line each)
SNIFF = re.compile(
    rb"^(?:\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[,.]\d+)?\]?\s*(?:[-|:]\s*)?)?"
    rb"(?:torch\.(?:_dynamo|_inductor|_functorch|_subclasses|fx|export)(?:\.\w+)*(?:\s*[-|:]\s?\d+)?\s*[-|:]\s?\[?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\]?\s*[-|:]"
    rb"|\[?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\]?:torch\.(?:_dynamo|_inductor|_functorch|_subclasses|fx|export)(?:\.\w+)*:)"
    rb"|^\S*?torch/[\w/]+\.py:\d+\] \[!?\d+(?:/\d+){0,2}(?:_\d+)?\]"
    rb"|^\[!?\d+(?:/\d+){0,2}(?:_\d+)?\] \[__\w+\] "
    rb"|^\[WARNING\] Graph break: ",
    re.M,
)
