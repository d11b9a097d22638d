"""FX graphs as torch prints them (``print_readable``: the Dynamo graph, the AOT and post-grad graphs),
read back into nodes, and two of them compared node by node.

A graph's nodes are the top-level ``forward``'s parameters (placeholders), one node per assignment
(``relu: "f32[8, 16]" = torch.relu(l_x_)``) and the ``return`` (output); a placeholder's rename
(``l_x_ = L_x_``) is no node. The counts agree with torch's own: ``graph_node_count`` and
``graph_op_count`` of the compile's compilation_metrics (ops: call_function, call_method and
call_module nodes; tests/test_serve_graphdiff.py checks it on real compiles).

Nodes are aligned as tlhub aligns them: a placeholder by its name, an op by its target and its
occurrence among the nodes with that target (the third ``torch.ops.aten.mul.Tensor`` of A against
the third of B), so a node inserted upstream does not make every later node "changed".
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass, field

_DEF = re.compile(r"^(\s*)def forward\(")
_ASSIGN = re.compile(r'^\s*([A-Za-z_]\w*)\s*(?::\s*"((?:[^"\\]|\\.)*)")?\s*=\s*(.*)$')
_CALL = re.compile(r"^([A-Za-z_][\w.]*)\(")
_NAME = re.compile(r"^[A-Za-z_]\w*$")
_ATTR = re.compile(r"^self\.[\w.]+$")
_BINARY = [
    ("//", "floordiv"),
    ("**", "pow"),
    ("<<", "lshift"),
    (">>", "rshift"),
    ("==", "eq"),
    ("!=", "ne"),
    ("<=", "le"),
    (">=", "ge"),
    ("+", "add"),
    ("-", "sub"),
    ("*", "mul"),
    ("/", "truediv"),
    ("%", "mod"),
    ("@", "matmul"),
    ("&", "and_"),
    ("|", "or_"),
    ("^", "xor"),
    ("<", "lt"),
    (">", "gt"),
]
#: the kinds of node that are ops in torch's graph_op_count
OP_KINDS = ("call_function", "call_method", "call_module")


@dataclass(frozen=True)
class Node:
    name: str
    kind: str  # placeholder, call_function, call_method, call_module, get_attr, output
    target: (
        str  # torch.relu, torch.ops.aten.mul.Tensor, operator.mul, .view, self.L__self___fc1, ...
    )
    args: str = ""  # the right-hand side as printed (``;  x = None`` cleanups cut off)
    type: str = ""  # the annotation: "f32[8, 16][16, 1]cpu"


@dataclass
class Graph:
    nodes: list[Node] = field(default_factory=list)

    @property
    def ops(self) -> Counter:
        return Counter(n.target for n in self.nodes if n.kind in OP_KINDS)

    @property
    def op_count(self) -> int:
        return sum(1 for n in self.nodes if n.kind in OP_KINDS)


def _split_top(text: str) -> list[str]:
    """``text`` split at the commas outside brackets and quotes."""
    out, depth, cur, quote = [], 0, [], ""
    for ch in text:
        if quote:
            cur.append(ch)
            quote = "" if ch == quote else quote
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur))
    return [s.strip() for s in out if s.strip()]


def _strip_comment(line: str) -> str:
    """The code of a line without its ``#`` comment (a ``#`` inside quotes is code)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            return line[:i]
    return line


def _classify(expr: str, names: set[str]) -> tuple[str, str]:
    m = _CALL.match(expr)
    if m:
        target = m.group(1)
        head = target.split(".", 1)[0]
        if head == "self":
            return "call_module", target
        if head in names and "." in target:
            return "call_method", "." + target.split(".", 1)[1]
        return "call_function", target
    if _ATTR.match(expr):
        return "get_attr", expr
    if re.match(r"^[A-Za-z_]\w*\[", expr):
        return "call_function", "operator.getitem"
    if expr.startswith("-") and not expr[1:2].isdigit():
        return "call_function", "operator.neg"
    if expr.startswith("~"):
        return "call_function", "operator.invert"
    for sym, name in _BINARY:
        if f" {sym} " in expr:
            return "call_function", f"operator.{name}"
    return "call_function", expr.split("(", 1)[0]


def parse_graph(text: str | None) -> Graph:
    """The nodes of the first ``forward`` of a printed FX graph (an empty Graph when there is none)."""
    g = Graph()
    lines = (text or "").splitlines()
    start = next((i for i, ln in enumerate(lines) if _DEF.match(ln)), None)
    if start is None:
        return g
    indent = len(_DEF.match(lines[start]).group(1))
    sig, i = [], start
    while i < len(lines):  # the signature, over one or several lines, up to its "):"
        code = _strip_comment(lines[i])
        sig.append(code)
        i += 1
        if code.rstrip().endswith(":"):
            break
    sig_text = "".join(sig)
    params = sig_text[sig_text.index("(") + 1 : sig_text.rindex(")")]
    names: set[str] = set()
    aliases: set[str] = set()
    for p in _split_top(params):
        name, _, ann = p.partition(":")
        name = name.strip()
        if name == "self" or not name:
            continue
        names.add(name)
        g.nodes.append(Node(name, "placeholder", "placeholder", "", ann.strip().strip('"')))
    for ln in lines[i:]:
        if ln.strip() and len(ln) - len(ln.lstrip()) <= indent:
            break  # the end of forward: a submodule's class or the next member
        code = _strip_comment(ln).strip()
        if not code:
            continue
        if code.startswith("return"):
            g.nodes.append(Node("output", "output", "output", code[len("return") :].strip()))
            continue
        m = _ASSIGN.match(code)
        if not m:
            continue
        name, ann, rhs = m.group(1), m.group(2) or "", m.group(3).split(";", 1)[0].strip()
        if rhs == "None":
            continue  # a cleanup (`x = None`) on a line of its own
        if _NAME.match(rhs) and (rhs in names or rhs in aliases) and not ann:
            aliases.add(name)  # l_x_ = L_x_: a rename of a placeholder, not a node
            names.add(name)
            continue
        kind, target = _classify(rhs, names)
        names.add(name)
        g.nodes.append(Node(name, kind, target, rhs, ann))
    return g


def _keyed(g: Graph) -> dict[tuple[str, str, int], Node]:
    seen: Counter = Counter()
    out = {}
    for n in g.nodes:
        if n.kind == "placeholder":
            out[("placeholder", n.name, 0)] = n
        else:
            seen[n.target] += 1
            out[(n.kind, n.target, seen[n.target])] = n
    return out


@dataclass
class GraphDiff:
    a: Graph
    b: Graph
    added: list[Node]
    removed: list[Node]
    changed: list[tuple[Node, Node]]
    ops: list[dict]  # {"op", "a", "b", "delta"}, changed ops first
    unified: list[str]  # the unified diff of the two texts, line by line

    def as_dict(self) -> dict:
        def node(n: Node) -> dict:
            return {
                "name": n.name,
                "kind": n.kind,
                "target": n.target,
                "args": n.args,
                "type": n.type,
            }

        return {
            "nodes": {"a": len(self.a.nodes), "b": len(self.b.nodes)},
            "op_count": {"a": self.a.op_count, "b": self.b.op_count},
            "added": [node(n) for n in self.added],
            "removed": [node(n) for n in self.removed],
            "changed": [{"a": node(x), "b": node(y)} for x, y in self.changed],
            "ops": self.ops,
            "unified": "\n".join(self.unified),
        }


def diff_graphs(
    text_a: str | None, text_b: str | None, label_a: str = "a", label_b: str = "b", context: int = 3
) -> GraphDiff:
    """Nodes added, removed and changed (type or arguments) from graph A to graph B, the op counts of
    both, and the unified diff of their text."""
    a, b = parse_graph(text_a), parse_graph(text_b)
    ka, kb = _keyed(a), _keyed(b)
    added = [n for k, n in kb.items() if k not in ka]
    removed = [n for k, n in ka.items() if k not in kb]
    changed = [
        (ka[k], n)
        for k, n in kb.items()
        if k in ka and (ka[k].type, ka[k].args) != (n.type, n.args)
    ]
    oa, ob = a.ops, b.ops
    ops = [
        {"op": op, "a": oa.get(op, 0), "b": ob.get(op, 0), "delta": ob.get(op, 0) - oa.get(op, 0)}
        for op in sorted(set(oa) | set(ob))
    ]
    ops.sort(key=lambda r: (r["delta"] == 0, -abs(r["delta"]), r["op"]))
    unified = list(
        difflib.unified_diff(
            (text_a or "").splitlines(),
            (text_b or "").splitlines(),
            label_a,
            label_b,
            n=context,
            lineterm="",
        )
    )
    return GraphDiff(a, b, added, removed, changed, ops, unified)
