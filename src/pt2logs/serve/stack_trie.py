"""The stack trie of a run, as tlparse draws it: the stack each compile started from (its ``dynamo_start``
record, named query ``compile_stacks``), frames merged into a tree from the outermost down, each compile
hung on its innermost frame; among siblings the program's own frames first. One tree per trace file (a rank's)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pt2logs.analysis.identity import classify_path


@dataclass
class Node:
    filename: str | None
    line: int | None
    function: str | None
    code: str | None
    #: "user" for the program's own code (the identity rule's kind), else the library's or Python's
    kind: str
    children: list[Node] = field(default_factory=list)
    #: the compiles that started at this frame (their stack ends here), in log order
    compiles: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "filename": self.filename,
            "line": self.line,
            "function": self.function,
            "code": self.code,
            "kind": self.kind,
            "compiles": self.compiles,
            "children": [c.as_dict() for c in self.children],
        }


def tries(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[Any, str], list[Node]]:
    """``compile_stacks`` rows (ordered by record, then depth) → the roots of the trie of each trace file,
    by (rank, file): a process's compile ids are its own (two processes of a run without ranks both have a
    compile 0/0)."""
    out: dict[tuple[Any, str], list[Node]] = {}
    stacks: dict[tuple, list[Mapping[str, Any]]] = {}
    for r in rows:
        stacks.setdefault((r["rank"], r["file"], r["line_no"], r["compile_id"]), []).append(r)
    for (rank, file, _, cid), frames in stacks.items():
        level = out.setdefault((rank, file), [])
        node = None
        for f in sorted(frames, key=lambda f: f["depth"]):
            key = (f["filename"], f["line"], f["function"])
            node = next((n for n in level if (n.filename, n.line, n.function) == key), None)
            if node is None:
                kind = classify_path(f["filename"] or "").kind
                node = Node(f["filename"], f["line"], f["function"], f["code"], kind)
                level.append(node)
            level = node.children
        if node is not None and cid is not None and cid not in node.compiles:
            node.compiles.append(cid)
    for roots in out.values():
        _user_first(roots)
    return out


def _user_first(nodes: list[Node]) -> None:
    """Siblings: the program's own frames first, each group in the order the log met them."""
    nodes.sort(key=lambda n: n.kind != "user")
    for n in nodes:
        _user_first(n.children)
