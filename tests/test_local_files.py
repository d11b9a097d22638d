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


def test_isfile_makedirs_rm_and_binary_open_as_fsspec(tree: Path, monkeypatch: pytest.MonkeyPatch):
    """What an ingest asks of a local input or warehouse (issue 36: no fsspec import on that path): the same
    answers, files and exceptions as fsspec's LocalFileSystem."""
    fs, mine = LocalFileSystem(), LocalFiles()
    monkeypatch.chdir(tree)
    for p in [*_paths(tree), "wh", "./wh/runs", f"file://{tree}/file_link", "dangling"]:
        _same(fs, mine, "isfile", p)
    for i, made in enumerate((fs, mine)):
        root = tree / "empty" / f"made{i}"
        made.makedirs(str(root / "a" / "b"), exist_ok=True)
        made.makedirs(str(root / "a" / "b"), exist_ok=True)
        with pytest.raises(FileExistsError):
            made.makedirs(str(root / "a"))
        with made.open(f"{root}/a/b/f.bin", "wb") as f:
            f.write(b"\x00data")
            assert f.tell() == 5
        with made.open(f"file://{root}/a/b/f.bin", "rb") as f:
            assert f.read() == b"\x00data"
        with pytest.raises(FileNotFoundError):
            made.open(str(root / "nowhere" / "f.bin"), "wb")
        with pytest.raises(FileNotFoundError):
            made.open(str(root / "missing.bin"), "rb")
        with pytest.raises(IsADirectoryError):
            made.open(str(root / "a"), "rb")
        with made.open(str(root / "t.txt"), "w") as f:  # (a text mode: fsspec's own)
            f.write("é")
        made.rm([str(root / "a" / "b" / "f.bin"), str(root / "t.txt")])
        assert sorted(os.listdir(root / "a" / "b")) == [] and not (root / "t.txt").exists()
        with pytest.raises(FileNotFoundError):
            made.rm(str(root / "a" / "b" / "f.bin"))
        with pytest.raises(ValueError):
            made.rm(str(root / "a"))  # a folder without recursive=True
        made.rm(str(root), recursive=True)
        assert not root.exists()


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
    # one filesystem for every local path, as fsspec's cached one (grouping compares them with `is`)
    assert local_files(str(tree))[0] is local_files("./elsewhere")[0] is lay.fs
