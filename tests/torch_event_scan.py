"""Every TORCH_TRACE event kind and artifact name a torch source tree can write, read statically.

torch writes a trace record with ``trace_structured(name, metadata_fn, payload_fn=...)`` (and its
``dtrace_structured`` twin, which writes the same records at a lower level), and artifacts with
``trace_structured("artifact", metadata_fn=lambda: {"name": NAME, "encoding": ...})`` or
``trace_structured_artifact(NAME, encoding, ...)`` (torch/_logging/_internal.py). :func:`scan` walks
every ``.py`` file under a torch folder with :mod:`ast` and resolves each call's name:

* a string constant (positional or ``name=``);
* a local variable: its assignments in the enclosing function, in source order (an assignment inside
  an ``if`` adds to what the name may hold: ``name = "bwd_" + name`` gives both);
* a parameter of the enclosing function (or a call of one, ``structured_log_prefix_fn()``): the values
  the function's callers in the same tree pass for it (a lambda's body);
* an f-string or ``+`` of those: every combination; a part known only at run time (``code.co_name``)
  becomes ``*``, and the name a pattern (``*_ORIGINAL_BYTECODE``).

What cannot be resolved at all (a value computed at run time elsewhere) is returned in ``unresolved`` with
where it is, so the coverage test can say so instead of passing over it.

    python -m tests.torch_event_scan [TORCH_DIR]    # print kinds, artifacts and the unresolved calls
"""

from __future__ import annotations

import ast
import itertools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

_CALLS = {"trace_structured", "dtrace_structured"}
_ARTIFACT_CALL = "trace_structured_artifact"
#: the definitions of the calls themselves (their ``name`` parameter is the caller's)
_DEFINITIONS = "_logging/_internal.py"
_MAX = 64  # a name's possible values, at most (a combination past this is unresolved)
#: a part of a name known only at run time: the name is a pattern (``*_fused``, ``optimus_*``)
_WILD = frozenset({"*"})


@dataclass
class Scan:
    #: event kind -> the places (file:line) that write it
    kinds: dict[str, set[str]] = field(default_factory=dict)
    #: artifact name -> the places that write it
    artifacts: dict[str, set[str]] = field(default_factory=dict)
    #: (file:line, what, the expression as written) for each name that could not be resolved
    unresolved: list[tuple[str, str, str]] = field(default_factory=list)


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _arg(call: ast.Call, pos: int, kw: str) -> ast.expr | None:
    for k in call.keywords:
        if k.arg == kw:
            return k.value
    return call.args[pos] if len(call.args) > pos else None


class _Module:
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node

    def function_of(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return node
        return None


class _Resolver:
    def __init__(self, texts: dict[str, bytes]) -> None:
        self.texts = texts
        self.modules: dict[str, _Module] = {}
        self._calls: dict[str, list[tuple[_Module, ast.Call]]] = {}

    def module(self, rel: str) -> _Module | None:
        if rel not in self.modules:
            try:
                self.modules[rel] = _Module(ast.parse(self.texts[rel]))
            except (SyntaxError, ValueError):
                return None
        return self.modules[rel]

    def calls(self, fname: str) -> list[tuple[_Module, ast.Call]]:
        """Every call of a function named ``fname`` in the tree (only files that name it are parsed)."""
        if fname not in self._calls:
            needle = f"{fname}(".encode()
            out = []
            for rel, text in self.texts.items():
                if needle in text and (mod := self.module(rel)) is not None:
                    out += [
                        (mod, n)
                        for n in ast.walk(mod.tree)
                        if isinstance(n, ast.Call) and _name(n.func) == fname
                    ]
            self._calls[fname] = out
        return self._calls[fname]

    def values(
        self, expr: ast.expr | None, mod: _Module, at: ast.AST, depth: int = 0
    ) -> set[str] | None:
        """Every string ``expr`` may hold, or None when one of them cannot be known statically."""
        if expr is None or depth > 4:
            return None
        if isinstance(expr, ast.Constant):
            if expr.value is None:
                return (
                    set()
                )  # a name not set yet (``cache_state = None`` before the branches that set it)
            return {expr.value} if isinstance(expr.value, str) else None
        if isinstance(expr, ast.JoinedStr):
            parts: list[set[str]] = []
            for v in expr.values:
                p = self.values(
                    v.value if isinstance(v, ast.FormattedValue) else v, mod, at, depth + 1
                )
                parts.append(_WILD if p is None else p)
            return _product(parts)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            a = self.values(expr.left, mod, at, depth + 1)
            b = self.values(expr.right, mod, at, depth + 1)
            return _product([_WILD if a is None else a, _WILD if b is None else b])
        if isinstance(expr, ast.IfExp):
            a = self.values(expr.body, mod, at, depth + 1)
            b = self.values(expr.orelse, mod, at, depth + 1)
            return (_WILD if a is None else a) | (_WILD if b is None else b)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and not expr.args:
            return self._param(expr.func.id, mod, at, depth, called=True)
        if isinstance(expr, ast.Name):
            return self._local(expr, mod, at, depth)
        return None

    def _local(self, expr: ast.Name, mod: _Module, at: ast.AST, depth: int) -> set[str] | None:
        fn = mod.function_of(at)
        if fn is None or expr.id not in _assigned(fn):
            # a module constant (``_ARTIFACT_NAME = "native_dsl_compile"``)
            consts = [
                n.value
                for n in mod.tree.body
                if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == expr.id for t in n.targets)
            ]
            if len(consts) == 1 and (v := self.values(consts[0], mod, at, depth + 1)):
                return v
        if fn is None:
            return None
        assigns = [
            n
            for n in ast.walk(fn)
            if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == expr.id for t in n.targets)
            and n.lineno < getattr(at, "lineno", 0)
        ]
        if not assigns:
            return self._param(expr.id, mod, at, depth, called=False)
        held: set[str] = set()
        for a in sorted(assigns, key=lambda n: n.lineno):
            v = self.values(a.value, mod, a, depth + 1) if _refers(a.value, expr.id) else None
            if v is None and not _refers(a.value, expr.id):
                v = self.values(a.value, mod, a, depth + 1)
            elif _refers(a.value, expr.id):
                v = _substitute(self, a.value, expr.id, held, mod, a, depth)
            if v is None:
                v = _WILD
            held = v if mod.parents.get(a) is fn else held | v
        return held

    def _param(
        self, name: str, mod: _Module, at: ast.AST, depth: int, *, called: bool
    ) -> set[str] | None:
        fn = mod.function_of(at)
        if fn is None:
            return None
        args = fn.args
        params = [a.arg for a in args.posonlyargs + args.args]
        if name not in params and name not in [a.arg for a in args.kwonlyargs]:
            return None
        pos = params.index(name) if name in params else 10**6
        if params and params[0] in ("self", "cls"):
            pos -= 1
        out: set[str] = set()
        callers = self.calls(fn.name)
        if not callers:
            return None
        for cmod, call in callers:
            given = _arg(call, pos, name)
            if given is None:
                continue  # its default (a call that does not pass it writes no name of its own)
            if called:
                if not isinstance(given, ast.Lambda):
                    return None
                given = given.body
            v = self.values(given, cmod, call, depth + 1)
            out |= _WILD if v is None else v  # one caller's value unknown: the others still count
        return out or None


def _assigned(fn: ast.AST) -> set[str]:
    return {
        t.id
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name)
    } | {a.arg for a in ast.walk(fn) if isinstance(a, ast.arg)}


def _refers(expr: ast.expr, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(expr))


def _substitute(
    r: _Resolver, expr: ast.expr, name: str, held: set[str], mod: _Module, at: ast.AST, depth: int
) -> set[str] | None:
    """``expr`` (which reads ``name``) evaluated with each value ``name`` holds so far."""
    if isinstance(expr, ast.Name) and expr.id == name:
        return set(held)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        a = _substitute(r, expr.left, name, held, mod, at, depth)
        b = _substitute(r, expr.right, name, held, mod, at, depth)
        return None if a is None or b is None else _product([a, b])
    if _refers(expr, name):
        return None
    return r.values(expr, mod, at, depth + 1)


def _product(parts: list[set[str]]) -> set[str] | None:
    n = 1
    for p in parts:
        n *= len(p)
    if n > _MAX:
        return None
    return {re.sub(r"\*+", "*", "".join(t)) for t in itertools.product(*parts)}


def _artifact_name(call: ast.Call) -> ast.expr | None:
    meta = _arg(call, 1, "metadata_fn")
    if isinstance(meta, ast.Lambda) and isinstance(meta.body, ast.Dict):
        for k, v in zip(meta.body.keys, meta.body.values):
            if isinstance(k, ast.Constant) and k.value == "name":
                return v
    return None


def scan(torch_dir: Path) -> Scan:
    """Every kind and artifact name under ``torch_dir`` (a torch package folder)."""
    texts = {str(p.relative_to(torch_dir)): p.read_bytes() for p in sorted(torch_dir.rglob("*.py"))}
    r = _Resolver(texts)
    out = Scan()
    for rel, text in texts.items():
        if b"trace_structured" not in text or (mod := r.module(rel)) is None:
            continue
        for node in ast.walk(mod.tree):
            if not isinstance(node, ast.Call):
                continue
            fname = _name(node.func)
            if fname not in _CALLS and fname != _ARTIFACT_CALL:
                continue
            where = f"{rel}:{node.lineno}"
            if (
                rel == _DEFINITIONS
                and fname in _CALLS
                and isinstance(_arg(node, 0, "name"), ast.Name)
            ):
                continue  # dtrace_structured / trace_structured_artifact forwarding their own name
            if fname == _ARTIFACT_CALL:
                what, expr = "artifact", _arg(node, 0, "name")
                if rel == _DEFINITIONS and isinstance(expr, ast.Name):
                    continue
            else:
                kinds = r.values(_arg(node, 0, "name"), mod, node)
                if kinds is None or "*" in kinds:
                    out.unresolved.append((where, "kind", ast.unparse(_arg(node, 0, "name"))))
                for k in (kinds or set()) - {"*"}:
                    out.kinds.setdefault(k, set()).add(where)
                if not kinds or "artifact" not in kinds:
                    continue
                what, expr = "artifact", _artifact_name(node)
                if rel == _DEFINITIONS and isinstance(expr, ast.Name):
                    continue  # trace_structured_artifact's own body
            names = r.values(expr, mod, node)
            if names is None or "*" in names:
                shown = ast.unparse(expr) if expr is not None else "(metadata not a literal dict)"
                out.unresolved.append((where, what, shown))
            for n in (names or set()) - {"*"}:
                out.artifacts.setdefault(n, set()).add(where)
    return out


def torch_source() -> Path:
    """The installed torch's package folder (found without importing torch)."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("torch is not installed")
    return Path(spec.origin).parent


def main(argv: list[str]) -> None:
    s = scan(Path(argv[0]) if argv else torch_source())
    print(f"{len(s.kinds)} event kinds:", ", ".join(sorted(s.kinds)))
    print(f"{len(s.artifacts)} artifact names:", ", ".join(sorted(s.artifacts)))
    for where, what, expr in s.unresolved:
        print(f"unresolved {what} at {where}: {expr}")


if __name__ == "__main__":
    main(sys.argv[1:])
