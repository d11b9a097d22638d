"""The guards a compile installed, as torch prints them: counted the same way from the trace's
``dynamo_cpp_guards_str`` payload and from TORCH_LOGS ``[__guards]`` messages.

Two layouts (torch ``_dynamo/guards.py``):

* the guard manager's tree (torch 2.5+; ``dynamo_cpp_guards_str`` and the ``guards`` log since 2.4 with
  the C++ guard manager): ``TREE_GUARD_MANAGER:`` then ``+- RootGuardManager`` and ``| +- KIND: code  # where``
  lines; a guard is a ``+- KIND:`` line, a ``GuardManager:`` line is a node, not a guard;
* the list (torch 2.1-2.4, ``compile_check_fn``: ``guards_log.debug("GUARDS:")`` then one
  ``guards_log.debug("%s", f"{code:<60}{extra}")`` per guard): every line after ``GUARDS:`` is a guard.
"""

from __future__ import annotations


def guard_lines(text: str) -> int:
    """Non-empty lines of a guard text."""
    return sum(1 for ln in text.splitlines() if ln.strip())


def count_guards(text: str) -> int:
    """Guards in a guard text: the tree's ``+- KIND: ...`` lines (not its ``GuardManager`` nodes), else,
    for the list layout, its non-empty lines other than ``GUARDS:`` and ``TREE_GUARD_MANAGER:``."""
    n = 0
    tree = False
    for ln in text.splitlines():
        s = ln.lstrip("| ").lstrip()
        if s.startswith("+- "):
            tree = True
            if ":" in s and "GuardManager" not in s.split(":", 1)[0]:
                n += 1
    if tree:
        return n
    return sum(
        1
        for ln in text.splitlines()
        if ln.strip() and ln.strip() not in ("GUARDS:", "TREE_GUARD_MANAGER:")
    )
