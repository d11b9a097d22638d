"""Identities: what makes a file, a frame, a graph-break site or a function the same on every machine.

Raw values differ between installs: torch lives in ``/opt/conda/lib/python3.11/site-packages``
on one machine and ``C:\\proj\\.venv\\Lib\\site-packages`` on another, the standard library in
``/usr/lib/python3.12`` or ``/root/.pyenv/versions/3.11.7/lib/python3.11``, and torch's own line
numbers move with every release. The functions here (pure, no I/O) give the part that does not
move; readers store it next to the raw value at ingest.

* :func:`classify_path` → ``(kind, key)``. ``library``: package-relative
  (``torch/nn/parallel/distributed.py``), for site-packages / dist-packages of any prefix (conda,
  venv, pyenv, system, Windows) and for a torch source checkout (``…/pytorch/torch/_dynamo/x.py``);
  ``stdlib``: ``<stdlib>/contextlib.py`` (also ``<frozen runpy>``); ``other``: code with no file
  (``<eval_with_key>``, ``<string>``, IPython cells), numbers masked; ``user``: everything else,
  kept absolute (forward slashes) here, because only the whole run knows its root: the views make it
  relative to ``runs.user_root`` (see :func:`common_dir` and docs/architecture.md).
* :func:`pick_frames` → the innermost user-code frame of a stack (where the user's code led to the
  event) and, when the event happened inside a library or the standard library, that library frame,
  keyed by file + function (never its line).
* :func:`compile_lane` → the frame a compile id belongs to (its text without the compile number), the
  timeline lane of ``pt2logs export perfetto``.
* :func:`break_key` → a graph break's stable id: its ``gbNNNN`` id, else its type with numbers,
  addresses and paths masked (:func:`mask`).
"""

from __future__ import annotations

import re
from typing import NamedTuple

#: a frame: (file as logged, line, function)
Frame = tuple[str, "int | None", "str | None"]

_PKG_DIRS = ("site-packages", "dist-packages")
#: top-level entries of the torch package: a ``torch`` folder followed by one of these is torch itself
#: (a source checkout or a buck link-tree), not a user folder that happens to be called torch
_TORCH_TOP = frozenset({
    "nn", "fx", "distributed", "utils", "autograd", "cuda", "optim", "export", "onnx", "testing", "ao", "amp",
    "backends", "compiler", "func", "jit", "library", "mps", "multiprocessing", "nested", "overrides.py",
    "profiler", "quantization", "signal", "sparse", "special", "xpu", "mtia", "accelerator", "masked",
    "monitor", "package", "share", "storage.py", "functional.py", "serialization.py", "hub.py", "random.py",
    "__init__.py", "types.py", "linalg", "fft", "csrc", "distributions", "futures", "contrib",
})  # fmt: skip
_PY_DIR = re.compile(r"^(?:python|pypy)(\d+(?:\.\d+)?)t?$", re.I)
_WIN_PY_DIR = re.compile(r"^python(\d)(\d+)", re.I)
#: the folder that holds a Windows Python's ``Lib`` (the standard library): an install, a conda env
_WIN_BASE = re.compile(r"^(?:python\d*|(?:ana|mini)conda\d*|miniforge\d*|mambaforge)$", re.I)
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
_PSEUDO = re.compile(r"^<(?P<name>[^>]*)>(?P<rest>.*)$")
_PSEUDO_ID = re.compile(r"[0-9a-f]{8,}")
_DIGITS = re.compile(r"\d+")

# masking: what varies between runs of the same code (ids, addresses, numbers, temp paths)
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
_HASH = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{12,}\b|\b[a-z0-9]{52}\b")
_TMP = re.compile(
    r"(?:/tmp|/var/tmp|/private/var/folders|/var/folders|/dev/shm|[A-Za-z]:\\[^\s'\"]*?\\Temp)"
    r"(?=[\\/\s'\",)\]:]|$)(?:[\\/][^\s'\",)\]:]*)?"
)
_ABS_PATH = re.compile(r"(?:(?<=[\s'\"(=\[])|^)(?:/|[A-Za-z]:\\)[^\s'\",)\]:]*\.pyi?\b")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])")
_CID = re.compile(r"\[?!?\d+/\d+(?:_\d+)?\]?")
_SPACE = re.compile(r"\s+")


class PathId(NamedTuple):
    kind: str | None  # user, library, stdlib, other (None when there is no path)
    key: str | None  # the identity (see the module docstring)
    python: str | None = None  # the Python version the path reveals (lib/python3.12 → 3.12)


def _parts(path: str) -> tuple[list[str], bool]:
    """Path segments (either separator) and whether it is absolute."""
    p = posix(path)
    absolute = p.startswith("/") or _DRIVE.match(p) is not None
    return [s for s in p.split("/") if s not in ("", ".")], absolute


def posix(path: str) -> str:
    """The path with forward slashes (Windows paths included); the form user keys are stored in."""
    return path.replace("\\", "/") if "\\" in path else path


def classify_path(path: str | None) -> PathId:
    """A file as logged → (kind, key, python version it shows). Never raises."""
    if not path or not isinstance(path, str):
        return PathId(None, None)
    p = path.strip()
    pseudo = _PSEUDO.match(p)
    if pseudo:
        name = pseudo.group("name")
        if name.startswith("frozen "):
            return PathId("stdlib", f"<{name}>")
        return PathId("other", _DIGITS.sub("N", _PSEUDO_ID.sub("…", p)))
    parts, absolute = _parts(p)
    python = _python_of(parts)
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] in _PKG_DIRS and i + 1 < len(parts):
            rest = parts[i + 1 :]
            if rest[0].endswith((".egg", ".egg-link")) and len(rest) > 1:
                rest = rest[1:]
            return PathId("library", "/".join(rest), python)
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == "torch" and (parts[i + 1] in _TORCH_TOP or parts[i + 1].startswith("_")):
            return PathId("library", "/".join(parts[i:]), python)
    for i in range(len(parts) - 1):
        low = parts[i].lower()
        if low in ("lib", "lib64") and i + 2 < len(parts) and _PY_DIR.match(parts[i + 1]):
            return PathId("stdlib", "<stdlib>/" + "/".join(parts[i + 2 :]), python)
        if (
            parts[i] == "Lib"
            and i > 0
            and (_WIN_BASE.match(parts[i - 1]) or parts[i - 2 : i - 1] == ["envs"])
        ):
            return PathId("stdlib", "<stdlib>/" + "/".join(parts[i + 1 :]), python)
    if not absolute and parts and parts[0] == "torch":
        return PathId("library", "/".join(parts), python)
    return PathId("user", posix(p), python)


def _python_of(parts: list[str]) -> str | None:
    for s in parts:
        m = _PY_DIR.match(s)
        if m and "." in m.group(1):
            return m.group(1)
        w = _WIN_PY_DIR.match(s)
        if w and s.lower() != "python":
            return f"{w.group(1)}.{w.group(2)}"
    return None


def common_dir(lo: str | None, hi: str | None) -> str | None:
    """The longest common folder (ending in ``/``) of a set of user-code folders, given the
    smallest and largest of them (each ending in ``/``): the common prefix of a set of strings is
    that of its min and max. None when they share nothing but the root or a drive."""
    if not lo or not hi:
        return None
    n = 0
    for a, b in zip(lo, hi):
        if a != b:
            break
        n += 1
    prefix = lo[:n]
    cut = prefix.rfind("/")
    root = prefix[: cut + 1] if cut >= 0 else ""
    if root in ("", "/") or re.fullmatch(r"[A-Za-z]:/", root):
        return None
    return root


def user_dir(key: str) -> str | None:
    """The folder (ending in ``/``) of an absolute user-code path, for :func:`common_dir`."""
    if not (key.startswith("/") or _DRIVE.match(key)):
        return None
    cut = key.rfind("/")
    return key[: cut + 1] if cut > 0 else None


class FramePick(NamedTuple):
    """Where an event happened, as keys: the user frame and, when it is inside a library, that frame."""

    frame_file: str | None
    frame_kind: str | None
    frame_line: int | None
    frame_func: str | None
    lib_file: str | None
    lib_func: str | None
    lib_line: int | None


NO_FRAMES = FramePick(None, None, None, None, None, None, None)


def pick_frames(
    frames: list[Frame], location: tuple[str | None, int | None] | None = None
) -> FramePick:
    """The innermost user-code frame of ``frames`` (outermost first, as tracebacks print them) and,
    when the innermost frame is library or standard-library code, that frame. ``location``
    (file, line) stands in for the innermost frame when the stack is empty (a log that suppressed it)."""
    if not frames and location and location[0]:
        frames = [(location[0], location[1], None)]
    if not frames:
        return NO_FRAMES
    ids = [classify_path(f[0]) for f in frames]
    lib = None
    if ids[-1].kind in ("library", "stdlib", "other"):
        lib = (ids[-1].key, frames[-1][2], frames[-1][1])
    user = next(
        ((ids[i], frames[i]) for i in range(len(frames) - 1, -1, -1) if ids[i].kind == "user"), None
    )
    u_key, u_kind, u_line, u_func = (
        (user[0].key, "user", user[1][1], user[1][2]) if user else (None, None, None, None)
    )
    return FramePick(u_key, u_kind, u_line, u_func, *(lib or (None, None, None)))


def parse_frame_text(text: str) -> Frame | None:
    """``file:line in func`` / ``file:line`` (pt2logs' stack text) → a frame. The file may hold ``:``."""
    m = re.match(r"^(?P<file>.+):(?P<line>\d+)(?: in (?P<func>.+))?$", text)
    return (m.group("file"), int(m.group("line")), m.group("func")) if m else None


def frame_text(f: Frame) -> str:
    return f"{f[0]}:{f[1]} in {f[2]}" if f[2] else f"{f[0]}:{f[1]}"


def mask(text: str | None) -> str | None:
    """Text with what varies between runs of the same code masked: addresses (``0x…``), uuids and
    hashes (``<id>``), temp paths (``<tmp>``), other ``.py`` paths by their identity, compile ids
    (``[F/C]``), numbers (``N``); whitespace collapsed to one space."""
    if text is None:
        return None
    t = _UUID.sub("<id>", text)
    t = _TMP.sub("<tmp>", t)
    t = _ABS_PATH.sub(_path_token, t)
    t = _HEX.sub("0x…", t)
    t = _HASH.sub("<id>", t)
    t = _CID.sub("[F/C]", t)
    t = _NUMBER.sub("N", t)
    return _SPACE.sub(" ", t).strip()


def _path_token(m: re.Match[str]) -> str:
    """A path inside a message: its identity (a user file: its name; the run root is unknown here)."""
    pid = classify_path(m.group(0))
    return str(pid.key).rsplit("/", 1)[-1] if pid.kind == "user" else str(pid.key)


def break_key(gb_id: str | None, gb_type: str | None) -> str | None:
    """A graph break's stable id: ``gbNNNN`` when the log links one, else its type, masked."""
    if gb_id:
        return gb_id
    return mask(gb_type)[:200] if gb_type else None


#: a compile id [!A/]F/C: the frame part (with its compiled-autograd prefix) and the compile number
_LANE = re.compile(r"(!\d+(?:/\d+)?|\d+)(?:/\d+)?\Z", re.ASCII)


def compile_lane(compile_id: str | None) -> str | None:
    """The frame a compile id belongs to, as a label: ``0/3`` → ``0``, ``!1/0/2`` → ``!1/0``, ``!1`` →
    ``!1`` (a compiled-autograd graph of its own); None for no id or one not in torch's form."""
    m = _LANE.match(compile_id) if compile_id else None
    return m.group(1) if m else None
