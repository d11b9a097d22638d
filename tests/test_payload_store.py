"""The payload store (pt2logs/store/payloads.py): each distinct payload once per warehouse, keyed by the hash of
its bytes, put back by the `events` view. Every answer must be the one of a warehouse without the store
(PT2LOGS_PAYLOAD_STORE=0, payloads in their rows), through damaged logs, tlparse folders, killed writers
and compactions."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tests.conftest import SAMPLES, gpu_trace_head, tables_rows
from tests.old_warehouse import rerecord
from tests.test_crash_safety import _cli, _env

import pt2logs
import pt2logs.tables  # noqa: F401  (registers every table)
from pt2logs.store.faults import COMPACT_STEPS, TXN_STEPS
from pt2logs.store.parts import STORED
from pt2logs.store.payloads import MIN_BYTES
from pt2logs.tables.schema import TABLES

DROP = ("txn", "ingest_date", "ingested_at", "committed_at")
TLPARSE = shutil.which("tlparse") or str(Path(sys.executable).parent / "tlparse")


def snapshot(wh: str) -> dict:
    """Every row of the tables with stored texts (through their views), and how many rows each table has."""
    con = pt2logs.connect(wh)
    counts = {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in sorted(TABLES)}
    con.close()
    return tables_rows(wh, dict.fromkeys(STORED, DROP)) | {"counts": counts}


def inline(paths: list[Path], wh: Path, monkeypatch) -> str:
    """The reference: the same inputs ingested with every payload kept in its row."""
    with monkeypatch.context() as m:
        m.setenv("PT2LOGS_PAYLOAD_STORE", "0")
        for p in paths:
            pt2logs.ingest([str(p)], str(wh))
    assert not list(Path(wh).glob("payloads/**/*.parquet"))
    return str(wh)


def raw(wh: str, table: str, columns: list[str]) -> list[dict]:
    return [
        r
        for f in sorted(Path(wh).glob(f"{table}/**/*.parquet"))
        for r in pq.read_table(f, columns=columns).to_pylist()
    ]


def run_folder(root: Path, name: str, data: bytes) -> Path:
    (root / name).mkdir(parents=True)
    (root / name / "dedicated_log_torch_trace_rank_0_x.log").write_bytes(data)
    return root / name


def same_trace_again(data: bytes, i: int) -> bytes:
    """The same run as another run (bench/corpus.py's way: the first line's thread id differs)."""
    first, rest = data.split(b"\n", 1)
    parts = first.split(b" ")
    parts[2] = str(1_000_000 + i).encode()
    return b" ".join(parts) + b"\n" + rest


def damaged(data: bytes) -> bytes:
    """One payload line changed, its envelope's md5 kept: a payload whose md5 does not match (the first
    payload line from a third of the bytes on that has an ``a`` or an ``e`` to change)."""
    j = len(data) // 3
    while True:
        i = data.index(b"\n\t", j) + 2
        j = data.index(b"\n", i)
        changed = data[i:j].replace(b"a", b"b").replace(b"e", b"a")
        if changed != data[i:j]:
            return data[:i] + changed + data[j:]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("inputs")
    data = gpu_trace_head()  # (its first 3.2 MB: each test ingests it several times)
    assert damaged(data) != data
    return {
        "a": run_folder(root, "a", data),
        "b": run_folder(root, "b", same_trace_again(data, 1)),
        "bad": run_folder(root, "bad", damaged(same_trace_again(data, 2))),
    }


@pytest.fixture(scope="module")
def reference(inputs, tmp_path_factory) -> Callable[..., dict]:
    """``reference("a", "b")``: the :func:`snapshot` of :func:`inline` over those inputs, in that order.
    A pure function of the module's inputs, so each is made once per module: the kill-point cases
    compared against the same references, and made them again for every step (12 ingests)."""
    made: dict[tuple[str, ...], dict] = {}

    def ref(*names: str) -> dict:
        if names not in made:
            wh = tmp_path_factory.mktemp("ref") / "wh"
            with pytest.MonkeyPatch.context() as m:
                made[names] = snapshot(inline([inputs[n] for n in names], wh, m))
        return made[names]

    return ref


def test_answers_are_those_of_payloads_in_their_rows(tmp_path, monkeypatch, inputs):
    """Sample runs, a run twice, a damaged copy (md5 kept, payload changed) and tlparse's output folder
    of the same trace (payloads re-serialized under the same md5): the store keys each by its bytes."""
    if not Path(TLPARSE).exists():
        pytest.skip("tlparse CLI not installed")
    out = tmp_path / "tl" / "tl_out"
    subprocess.run(
        [
            TLPARSE,
            str(next(inputs["a"].glob("*.log"))),
            "-o",
            str(out),
            "--overwrite",
            "--no-browser",
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    paths = [SAMPLES, inputs["a"], inputs["b"], inputs["bad"], out.parent]
    ref = inline(paths, tmp_path / "ref", monkeypatch)
    wh = str(tmp_path / "wh")
    for p in paths:
        pt2logs.ingest([str(p)], wh)
    assert snapshot(wh) == snapshot(ref)
    con = pt2logs.connect(wh)
    # the cases that would go wrong if the store trusted the envelope's md5: one md5, two texts
    clash = con.execute(
        "SELECT count(*) FROM (SELECT payload_md5 FROM events WHERE payload_md5 IS NOT NULL "
        "GROUP BY 1 HAVING count(DISTINCT payload) > 1)"
    ).fetchone()[0]
    assert clash > 0
    assert con.execute("SELECT count(*) FROM events WHERE payload_ok = false").fetchone()[0] > 0
    # the store holds each long text once; the tables' files keep them as keys, short ones inline
    distinct = con.execute(
        " UNION ".join(
            f"SELECT {text} FROM {table} WHERE strlen({text}) >= {MIN_BYTES}"
            for table, pairs in STORED.items()
            for text, _ in pairs
        )
    ).fetchall()
    keys = [r["payload_key"] for r in raw(wh, "payloads", ["payload_key"])]
    assert len(keys) == len(set(keys)) == len(distinct)
    named: set = set()
    for table, pairs in STORED.items():
        for text, key in pairs:
            rows = raw(wh, table, [text, key])
            assert all(r[text] is None for r in rows if r[key] is not None)
            assert all(r[text] is None or len(r[text].encode()) < MIN_BYTES for r in rows)
            assert any(r[key] is not None for r in rows), (table, text)
            named |= {r[key] for r in rows} - {None}
    assert set(keys) == named


def test_runs_of_one_model_share_their_payloads_across_transactions(tmp_path, inputs, reference):
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(inputs["a"])], wh)
    first = raw(wh, "payloads", ["payload_key"])
    pt2logs.ingest(
        [str(inputs["b"])], wh
    )  # its own transaction: the first one's payloads are committed
    assert raw(wh, "payloads", ["payload_key"]) == first and first
    con = pt2logs.connect(wh)
    by_run = con.execute(
        "SELECT count(DISTINCT run_id), count(*) FROM events WHERE strlen(payload) >= 64"
    ).fetchone()
    assert (
        by_run[0] == 2
        and by_run[1]
        == 2
        * con.execute(
            "SELECT count(*) FROM events WHERE strlen(payload) >= 64 AND run_id = (SELECT min(run_id) FROM runs)"
        ).fetchone()[0]
    )
    assert snapshot(wh) == reference("a", "b")


def test_a_writer_that_may_hold_few_keys_stores_payloads_again_and_answers_the_same(
    tmp_path, monkeypatch, inputs, reference
):
    monkeypatch.setenv("PT2LOGS_PAYLOAD_KEYS", "5")  # 5 committed keys known, 5 of its own
    monkeypatch.setattr("pt2logs.store.payloads.OWN_KEYS", 5)
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(inputs["a"])], wh, engine=_one_process())
    pt2logs.ingest([str(inputs["b"])], wh, engine=_one_process())
    keys = [r["payload_key"] for r in raw(wh, "payloads", ["payload_key"])]
    assert len(keys) > len(set(keys))  # stored again: bytes, not answers
    assert snapshot(wh) == reference("a", "b")


def _one_process():
    from pt2logs.ingestion.engines import make_engine

    return make_engine(jobs=1)


@pytest.fixture(scope="module")
def made(inputs, tmp_path_factory) -> Callable[..., str]:
    """``made(name, build)``: the warehouse ``build(wh)`` makes, made once for the module; each caller
    gets a copy of it (the kill-point cases start from the same warehouse, and made it again for every
    step: 2 ingests each)."""
    built: dict[str, Path] = {}

    def copy(name: str, build: Callable[[Path], None], dest: Path) -> str:
        if name not in built:
            built[name] = tmp_path_factory.mktemp(name) / "wh"
            build(built[name])
        shutil.copytree(built[name], dest)
        return str(dest)

    return copy


@pytest.mark.parametrize("step", TXN_STEPS)
def test_an_ingest_killed_after_any_step_leaves_every_payload(
    tmp_path, inputs, reference, made, step
):
    """Run b shares run a's payloads: killed before its commit it is rolled back, after it is whole."""
    wh = made("a", lambda w: pt2logs.ingest([str(inputs["a"])], str(w)), tmp_path / "wh")
    p = _cli(
        "ingest",
        str(inputs["b"]),
        str(inputs["bad"]),
        "-w",
        wh,
        "--jobs",
        "1",
        "-q",
        PT2LOGS_DIE_AFTER=step,
    )
    assert p.returncode == 137, p.stdout + p.stderr
    pt2logs.ingest(
        [str(inputs["b"]), str(inputs["bad"])], wh
    )  # recovers, then finishes (or finds it done)
    assert snapshot(wh) == reference("a", "b", "bad")


def test_payloads_of_a_transaction_not_committed_are_never_named_by_another(
    tmp_path, inputs, reference
):
    """Ingest 1 has written run a's payloads and waits before its commit; ingest 2 (run b, the same
    payloads) commits meanwhile; ingest 1 is then killed and rolled back: run b keeps every payload."""
    wh = str(tmp_path / "wh")
    flag = tmp_path / "go"
    first = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pt2logs",
            "ingest",
            str(inputs["a"]),
            "-w",
            wh,
            "--jobs",
            "1",
            "-q",
        ],
        env=_env(PT2LOGS_PAUSE_AT=f"txn.data:{flag}"),
    )
    deadline = time.monotonic() + 120
    while not Path(f"{flag}.reached").exists():
        assert first.poll() is None and time.monotonic() < deadline, (
            "the first ingest did not reach its pause"
        )
        time.sleep(0.05)
    assert raw(wh, "payloads", ["payload_key"])  # its payloads are written, not committed
    pt2logs.ingest([str(inputs["b"])], wh)
    first.send_signal(signal.SIGKILL)
    first.wait()
    pt2logs.ingest([str(inputs["b"])], wh)  # recovery deletes ingest 1's files
    assert snapshot(wh) == reference("b")
    assert len(list(Path(wh).glob("payloads/**/*.parquet"))) == 1


def _a_on_two_days(wh: Path, a: Path) -> None:
    """Run a ingested on an earlier day, then again today."""
    pt2logs.ingest([str(a)], str(wh))
    for table in [*TABLES, "payloads"]:  # the first transaction moved to an earlier day
        for f in list(wh.glob(f"{table}/ingest_date=*/*.parquet")):
            dest = wh / table / "ingest_date=2020-01-01" / f.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            f.rename(dest)
    rerecord(wh)  # its commit lists them there
    pt2logs.ingest([str(a)], str(wh), force=True)


@pytest.mark.parametrize("step", (None, *COMPACT_STEPS))
def test_compaction_keeps_payloads_that_runs_of_other_partitions_name(
    tmp_path, monkeypatch, inputs, reference, made, step
):
    """Run a ingested on an earlier day, then again today (its new rows name the payloads stored that
    day): compacting the earlier partition, where no run is live any more, drops its rows but keeps its
    payloads, committed by a runs file without rows. Killed after any step, the next writers finish."""
    monkeypatch.setenv("PT2LOGS_GC_GRACE_S", "0")
    wh = Path(made("two_days", lambda w: _a_on_two_days(w, inputs["a"]), tmp_path / "wh"))
    assert not [
        f for f in wh.glob("payloads/*/*.parquet") if "2020" not in str(f)
    ]  # today's rows name the old ones
    if step is not None:
        assert _cli("compact", "-w", str(wh), PT2LOGS_DIE_AFTER=step).returncode == 137
        pt2logs.ingest([str(inputs["a"])], str(wh))  # recovers (the run is unchanged)
    from pt2logs.store.compact import compact

    compact(str(wh))
    assert not list(wh.glob("events/ingest_date=2020-01-01/*.parquet"))  # its rows were all dead
    kept = list(wh.glob("payloads/ingest_date=2020-01-01/*.parquet"))
    assert len(kept) == 1 and pq.read_metadata(kept[0]).num_rows > 0
    assert [
        pq.read_metadata(f).num_rows for f in wh.glob("runs/ingest_date=2020-01-01/*.parquet")
    ] == [0]
    assert snapshot(str(wh)) == reference("a")
    # and the next compaction and ingest still find them (the empty runs file commits them)
    compact(str(wh), min_files=1)
    stored = raw(str(wh), "payloads", ["payload_key"])
    pt2logs.ingest([str(inputs["b"])], str(wh))
    assert raw(str(wh), "payloads", ["payload_key"]) == stored  # run b names them, stores nothing
    assert snapshot(str(wh)) == reference("a", "b")


def test_a_split_batch_keeps_only_the_short_payloads_bytes(tmp_path):
    """The events rows the writer buffers hold the short payloads' bytes and no stored one's: the
    writer sizes its row groups by the buffers' bytes, so a copy of every payload would cut them small."""
    import pyarrow as pa

    from pt2logs.store.parts import PAYLOAD_KEY, TxnInfo
    from pt2logs.store.payloads import PayloadStore

    texts = ["x" * 5000, "short", None, "y" * 70, "", "z" * (MIN_BYTES - 1)] * 50
    batch = pa.record_batch(
        [pa.array(texts, type=pa.string()), pa.array(range(len(texts)), type=pa.int64())],
        names=["payload", "line_no"],
    )
    out, stored = PayloadStore(TxnInfo(str(tmp_path), "t1", "2026-01-01")).split(batch)
    kept = out.column(out.schema.get_field_index("payload"))
    short = [t if t is not None and len(t) < MIN_BYTES else None for t in texts]
    assert kept.to_pylist() == short
    assert kept.get_total_buffer_size() < sum(len(t) for t in short if t) + 16 * len(texts)
    assert [
        k is not None for k in out.column(out.schema.get_field_index(PAYLOAD_KEY)).to_pylist()
    ] == [t is not None and len(t) >= MIN_BYTES for t in texts]
    assert sorted(stored.column(1).to_pylist()) == ["x" * 5000, "y" * 70]
