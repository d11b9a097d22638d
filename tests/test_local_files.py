"""A local warehouse's filesystem (pt2logs.store.local_files) answers exists / info / ls exactly as fsspec's
LocalFileSystem, its oracle, on a real warehouse (files, folders, links, missing paths, every spelling of a path), and
hands every other call to fsspec's."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest
from fsspec.implementations.local import LocalFileSystem

from pt2logs.store.local_files import LocalFiles, local_files
from pt2logs.store.parts import Layout


@pytest.fixture(scope="module")
def tree(sample_wh: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample warehouse, with links (to a file, a folder, nothing) and an empty folder beside it."""
    root = tmp_path_factory.mktemp("localfs")
    wh = root / "wh"
    os.symlink(sample_wh, wh)
    (root / "empty").mkdir()
    some = next(p for p in Path(sample_wh).rglob("*.parquet"))
    os.symlink(some, root / "file_link")
    os.symlink(Path(sample_wh) / "runs", root / "dir_link")
    os.symlink(root / "nowhere", root / "dangling")
    return root


def _paths(tree: Path) -> list[str]:
    out = [str(tree), str(tree / "missing"), str(tree / "wh" / "nope" / "x")]
    for dirpath, dirs, files in os.walk(tree, followlinks=True):
        out += [os.path.join(dirpath, n) for n in dirs + files]
    return out


def _same(a, b, *args, **kwargs):
    """The same result, or the same exception type."""
    try:
        want = getattr(a, args[0])(*args[1:], **kwargs)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            getattr(b, args[0])(*args[1:], **kwargs)
        return
    got = getattr(b, args[0])(*args[1:], **kwargs)
    if isinstance(want, list):
        key = lambda x: x["name"] if isinstance(x, dict) else x  # noqa: E731
        want, got = sorted(want, key=key), sorted(got, key=key)
    assert got == want, args


def test_exists_info_ls_as_fsspec(tree: Path, monkeypatch: pytest.MonkeyPatch):
    fs, mine = LocalFileSystem(), LocalFiles()
    paths = _paths(tree)
    assert len(paths) > 50
    monkeypatch.chdir(tree)
    spellings = [
        "wh",
        "./wh",
        ".",
        "wh/runs/",
        f"file://{tree}/wh",
        f"local://{tree}/empty",
        f"file:{tree}/file_link",
    ]
    for p in paths + spellings:
        _same(fs, mine, "exists", p)
        _same(fs, mine, "info", p)
        _same(fs, mine, "ls", p)
        _same(fs, mine, "ls", p, detail=True)
        assert mine._strip_protocol(p) == fs._strip_protocol(p)


def test_every_other_call_is_fsspecs(tree: Path):
    mine = LocalFiles()
    assert mine.find(str(tree / "wh"), detail=True) == LocalFileSystem().find(
        str(tree / "wh"), detail=True
    )
    out = tree / "empty" / "made" / "f.txt"
    mine.makedirs(str(out.parent), exist_ok=True)
    with mine.open(str(out), "wb") as f:
        f.write(b"x")
    assert out.read_bytes() == b"x"
    mine.rm(str(out))
    assert not out.exists()
    again = pickle.loads(pickle.dumps(mine))  # (what a worker process is handed)
    assert again.exists(str(tree / "wh")) and again.info(str(tree))["type"] == "directory"


def test_a_local_warehouse_takes_it_a_url_takes_fsspecs(tree: Path):
    lay = Layout(str(tree / "wh"))
    assert isinstance(lay.fs, LocalFiles) and not lay.remote
    assert lay.root == str(tree / "wh")
    url = Layout(f"file://{tree}/wh")
    assert isinstance(url.fs, LocalFileSystem) and not url.remote and url.root == lay.root
    assert local_files("s3://bucket/wh") is None and local_files("memory::x") is None
