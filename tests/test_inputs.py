"""Inputs as users give them: several files under one --run-id, unreadable entries, links, files
rewritten in place. Real fixtures and real filesystem conditions only."""

from __future__ import annotations

import os
import shutil

import pytest
from tests.conftest import fixture_path

import pt2logs
from pt2logs.tables.schema import TABLES


def counts(wh: str) -> dict[str, int]:
    con = pt2logs.connect(wh)
    try:
        return {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in sorted(TABLES)}
    finally:
        con.close()


# ----------------------------------------------------------------------------- several paths, one --run-id


@pytest.mark.parametrize(
    "folder", ["multi_rank_logs", "multi_rank_runtime", "multi_rank_messy_input"]
)
def test_files_given_one_by_one_under_a_run_id_are_one_run_as_their_folder(tmp_path, folder):
    src = fixture_path("tlparse", folder)
    logs = sorted(p for p in src.iterdir() if p.is_file())
    wa, wb = str(tmp_path / "a"), str(tmp_path / "b")
    pt2logs.ingest([str(src)], wa)
    res = pt2logs.ingest([str(p) for p in logs], wb, run_id="X")
    assert res.runs_new == 1 and res.run_ids == ["X"]
    a, b = pt2logs.connect(wa), pt2logs.connect(wb)
    q = "SELECT name, root, n_ranks, ranks, n_files, n_events, n_errors FROM runs"
    ((run_id,),) = b.execute("SELECT run_id FROM runs").fetchall()
    assert run_id == "X"
    assert b.execute(q).fetchall() == a.execute(q).fetchall()
    assert sorted(b.execute("SELECT relpath, rank, n_events FROM files").fetchall()) == sorted(
        a.execute("SELECT relpath, rank, n_events FROM files").fetchall()
    )
    assert counts(wb) == counts(wa)
    assert (
        b.execute("SELECT count(DISTINCT rank) FROM events").fetchone()
        == a.execute("SELECT count(DISTINCT rank) FROM events").fetchone()
    )


def test_files_of_two_folders_under_one_run_id(tmp_path):
    """Paths in different folders: the run's root is the folder holding both, files keep their place."""
    one = fixture_path("tlparse", "multi_rank_logs", "dedicated_log_torch_trace_rank_0.log")
    two = fixture_path("tlparse", "multi_rank_schedule", "dedicated_log_torch_trace_rank_2.log")
    wh = str(tmp_path / "wh")
    res = pt2logs.ingest([str(one), str(two), str(one)], wh, run_id="both")
    con = pt2logs.connect(wh)
    assert res.runs_new == 1
    assert con.execute("SELECT run_id, name, root, n_files FROM runs").fetchall() == [
        ("both", "tlparse", str(one.parent.parent), 2)
    ]
    assert sorted(r[0] for r in con.execute("SELECT relpath FROM files").fetchall()) == [
        "multi_rank_logs/dedicated_log_torch_trace_rank_0.log",
        "multi_rank_schedule/dedicated_log_torch_trace_rank_2.log",
    ]


def test_one_file_under_a_run_id_is_unchanged(tmp_path):
    log = fixture_path("tlparse", "simple.log")
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(log)], wh, run_id="one")
    con = pt2logs.connect(wh)
    assert con.execute("SELECT run_id, name, root, source FROM runs").fetchall() == [
        ("one", "simple.log", str(log), str(log))
    ]
    assert con.execute("SELECT relpath FROM files").fetchall() == [("simple.log",)]


# ----------------------------------------------------------------------------- unreadable entries, links


def unreadable_folder(parent) -> str:
    """A folder no one can list, root included: its path is longer than PATH_MAX (made one level at a
    time through directory descriptors), so the walk's scandir fails with ENAMETOOLONG."""
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    path = str(parent)
    try:
        while len(path) <= 4200:
            name = "d" * 200
            os.mkdir(name, dir_fd=fd)
            nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd, path = nfd, f"{path}/{name}"
    finally:
        os.close(fd)
    return path


def job_with_unreadable_entries(tmp_path):
    """A real run folder (trace/ + stderr capture + counters) with entries that cannot be read: a symlink
    loop, a dangling symlink, a folder too deep to list; and a chmod 000 file and folder, which stop
    reads only when the tests do not run as root. Returns (job folder, {path: expected reason}, the deep
    folder)."""
    job = tmp_path / "job"
    shutil.copytree(fixture_path("gpu", "recompile_causes"), job)
    (job / "trace" / "loop").symlink_to("loop")
    (job / "dangling.log").symlink_to(tmp_path / "nowhere.log")
    deep = unreadable_folder(job)
    expected = {
        str(job / "trace" / "loop"): "unreadable: Too many levels of symbolic links",
        str(job / "dangling.log"): "unreadable: No such file or directory",
    }
    (job / "locked.txt").write_text("not a log\n")
    (job / "locked").mkdir()
    (job / "locked" / "notes.txt").write_text("not a log\n")
    os.chmod(job / "locked.txt", 0)
    os.chmod(job / "locked", 0)
    if os.geteuid() != 0:
        expected[str(job / "locked.txt")] = "unreadable: Permission denied"
        expected[str(job / "locked")] = "unreadable folder: Permission denied"
    return job, expected, deep


def test_unreadable_entries_are_errors_of_the_run_whose_folder_holds_them(tmp_path):
    job, expected, deep = job_with_unreadable_entries(tmp_path)
    wh = str(tmp_path / "wh")
    res = pt2logs.ingest([str(job)], wh)
    assert res.runs_new == 1 and res.problems == []
    con = pt2logs.connect(wh)
    ((run_id, root, n_errors),) = con.execute("SELECT run_id, root, n_errors FROM runs").fetchall()
    assert root == str(job)
    rows = con.execute(
        "SELECT run_id, path, kind, severity, message, line_no FROM ingest_errors"
    ).fetchall()
    got = {
        path: msg
        for rid, path, kind, sev, msg, line in rows
        if (rid, kind, sev, line) == (run_id, "unreadable", "error", None)
    }
    assert len(got) == len(rows) == len(expected) + 1
    assert {p: got[p] for p in expected} == expected
    (long_path,) = set(got) - set(expected)
    assert (
        deep.startswith(long_path)
        and len(long_path) > 4095
        and got[long_path] == "unreadable folder: File name too long"
    )
    assert n_errors == res.errors == len(expected) + 1
    # nothing else of the run was lost: its rows equal an ingest of a clean copy
    clean = tmp_path / "clean" / "job"
    shutil.copytree(fixture_path("gpu", "recompile_causes"), clean)
    pt2logs.ingest([str(clean)], str(tmp_path / "wh2"))
    a, b = counts(wh), counts(str(tmp_path / "wh2"))
    assert a.pop("ingest_errors") == len(expected) + 1 and b.pop("ingest_errors") == 0
    assert a == b
    # the same problems again: already recorded, the run is unchanged
    again = pt2logs.ingest([str(job)], wh)
    assert again.runs_unchanged == 1 and again.runs_new == again.runs_updated == 0
    # a new one: the run is read again, with it
    (job / "trace" / "gone.log").symlink_to(tmp_path / "gone")
    third = pt2logs.ingest([str(job)], wh)
    assert third.runs_updated == 1 and third.errors == len(expected) + 2


def test_unreadable_entry_outside_every_run_is_an_error_of_the_ingest(tmp_path):
    from click.testing import CliRunner

    from pt2logs.cli import main

    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(
        fixture_path("tlparse", "simple.log"), folder / "simple.log"
    )  # a run of its own (root: the file)
    (folder / "loop.log").symlink_to("loop.log")
    wh = str(tmp_path / "wh")
    res = pt2logs.ingest([str(folder)], wh)
    assert res.runs_new == 1 and res.errors == 1
    assert res.problems == [
        (str(folder / "loop.log"), "unreadable: Too many levels of symbolic links")
    ]
    assert res.as_dict()["problems"] == [
        {"path": str(folder / "loop.log"), "why": "unreadable: Too many levels of symbolic links"}
    ]
    r = CliRunner().invoke(
        main,
        ["ingest", str(folder), "-w", str(tmp_path / "wh2"), "--strict"],
        catch_exceptions=False,
    )
    assert r.exit_code == 1
    assert (
        "1 errors" in r.output
        and f"{folder / 'loop.log'}: unreadable: Too many levels of symbolic links" in r.output
    )


def test_strict_fails_on_an_unreadable_entry_inside_a_run(tmp_path):
    from click.testing import CliRunner

    from pt2logs.cli import main

    job = tmp_path / "job"
    shutil.copytree(fixture_path("tlparse", "multi_rank_logs"), job)
    (job / "dedicated_log_torch_trace_rank_9.log").symlink_to(tmp_path / "never_written.log")
    r = CliRunner().invoke(
        main, ["ingest", str(job), "-w", str(tmp_path / "wh"), "--strict"], catch_exceptions=False
    )
    assert r.exit_code == 1 and "1 errors" in r.output


def test_a_linked_run_folder_is_read_once_and_a_link_loop_ends_with_a_note(tmp_path):
    src = fixture_path("tlparse", "multi_rank_logs")
    top = tmp_path / "in"
    (top / "sub").mkdir(parents=True)
    (top / "job").symlink_to(src, target_is_directory=True)
    (top / "job_again").symlink_to(src, target_is_directory=True)
    (top / "sub" / "up").symlink_to("..", target_is_directory=True)  # a loop back to in/
    wh = str(tmp_path / "wh")
    res = pt2logs.ingest([str(top)], wh)
    con = pt2logs.connect(wh)
    assert res.errors == 0 and res.runs_new == 1
    assert con.execute("SELECT name, root, n_ranks, n_files FROM runs").fetchall() == [
        ("job", str(top / "job"), 4, 4)
    ]
    why = dict(res.skipped)
    assert (
        why[str(top / "job_again")]
        == f"the same folder as {src}, read already (a link to it, or a loop): not read twice"
    )
    assert (
        why[str(top / "sub" / "up")]
        == f"the same folder as {top}, read already (a link to it, or a loop): not read twice"
    )
    a = str(tmp_path / "direct")
    pt2logs.ingest([str(src)], a)
    assert counts(wh) == counts(a)


# ----------------------------------------------------------------------------- change detection


def rewrite_payloads(path, old: str, new: str) -> int:
    """Replace ``old`` by ``new`` (same length) inside the payloads of a trace and set each changed
    record's has_payload md5 to its new payload's (same length too): a valid trace of the same size."""
    import hashlib
    import re

    assert len(old.encode()) == len(new.encode())
    lines = path.read_text().split("\n")
    changed = 0
    i = 0
    while i < len(lines):
        m = re.search(r'"has_payload": "([0-9a-f]{32})"', lines[i])
        j = i + 1
        while j < len(lines) and lines[j].startswith("\t"):
            j += 1
        if m and any(old in ln for ln in lines[i + 1 : j]):
            body = [ln.replace(old, new) for ln in lines[i + 1 : j]]
            assert hashlib.md5(
                "\n".join(ln[1:] for ln in lines[i + 1 : j]).encode()
            ).hexdigest() == m.group(1)
            md5 = hashlib.md5("\n".join(ln[1:] for ln in body).encode()).hexdigest()
            lines[i] = lines[i].replace(m.group(1), md5)
            lines[i + 1 : j] = body
            changed += 1
        i = j
    path.write_text("\n".join(lines))
    return changed


def test_a_same_size_rewrite_with_its_mtime_set_back_is_read_again(tmp_path):
    (src,) = fixture_path("gpu", "recompile_causes", "trace").glob("*.log")
    trace = tmp_path / "job" / "trace" / src.name
    trace.parent.mkdir(parents=True)
    shutil.copy(src, trace)
    wh = str(tmp_path / "wh")
    first = pt2logs.ingest([str(trace.parent)], wh)
    assert first.runs_new == 1
    con = pt2logs.connect(wh)
    reasons = "SELECT reason FROM recompiles WHERE reason LIKE '%expected Float, actual%'"
    assert [r[0] for r in con.execute(reasons).fetchall()] == [
        "tensor 'x' dtype mismatch. expected Float, actual Double"
    ]
    (token,) = con.execute("SELECT change_token FROM files").fetchone()
    con.close()
    before = os.stat(trace)
    assert rewrite_payloads(trace, "actual Double", "actual Half16") == 1
    os.utime(trace, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(trace)
    assert (after.st_size, after.st_mtime_ns) == (
        before.st_size,
        before.st_mtime_ns,
    ) and after.st_ctime_ns != before.st_ctime_ns
    second = pt2logs.ingest([str(trace.parent)], wh)
    assert (
        second.runs_updated == 1
        and second.runs_unchanged == 0
        and second.errors == second.warnings == 0
    )
    con = pt2logs.connect(wh)
    assert [r[0] for r in con.execute(reasons).fetchall()] == [
        "tensor 'x' dtype mismatch. expected Float, actual Half16"
    ]
    assert (
        con.execute(
            "SELECT count(*) FROM events WHERE payload LIKE '%actual Half16%' AND payload_ok"
        ).fetchone()[0]
        == 1
    )
    assert (
        con.execute("SELECT count(*) FROM events WHERE payload LIKE '%actual Double%'").fetchone()[
            0
        ]
        == 0
    )
    ((new_token, n_files),) = con.execute(
        "SELECT change_token, count(*) OVER () FROM files"
    ).fetchall()
    assert (
        n_files == 1
        and token == f"ctime:{before.st_ctime_ns}"
        and new_token == f"ctime:{after.st_ctime_ns}"
    )
    con.close()
    assert pt2logs.ingest([str(trace.parent)], wh).runs_unchanged == 1
