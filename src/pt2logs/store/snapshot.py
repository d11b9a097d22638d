"""What a connection reads: the files its commits list, checked against their records.

A snapshot is taken once per connection (:func:`pt2logs.query.views.create_views`): one listing of the
table folders (local: a walk; object store: three recursive listings whatever the number of tables —
the ``_`` folders, ``runs/``, the whole warehouse — the cache dropped first), then the ``runs`` files in it — the commits — and their records (:mod:`pt2logs.store.manifest`).
Each view then reads exactly the files the commits name, never a glob: a stray file or folder in a
table's folder is never read, a commit landing later is not seen, and an object store's listing is
never asked again while the connection's queries run (a stale listing cannot name a file twice or
miss one).

A recorded file that is missing, quarantined by ``pt2logs repair``, or whose size differs from its
record is left out; :attr:`Snapshot.damaged` says which, and the views module turns those of live
runs into warnings naming the file and its runs. A file of the right size whose bytes are damaged is
found by ``pt2logs check`` (it hashes every file; reads do not). A transaction committed before
records existed reads the files whose names carry its id, in its partition folders, as before.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any

import orjson

from pt2logs.store import manifest, recovery
from pt2logs.store.parts import PARTITION, PAYLOADS, Layout, found, stored_tables, txn_of

QUARANTINE = "_quarantine"


@dataclass
class Damage:
    path: str  # relative to the warehouse root
    txn: str | None
    why: str
    quarantined: bool = False  # moved away by `pt2logs repair`, the loss recorded


@dataclass
class Snapshot:
    #: names of the runs files listed (the commits), replaced ones too: a later listing that differs
    #: means commits landed since
    commits: frozenset[str] = frozenset()
    #: table -> rel paths of the files to read (``runs`` included)
    files: dict[str, list[str]] = field(default_factory=dict)
    #: tables whose files all carry a record of the current schema version: every declared column is in them
    complete: dict[str, bool] = field(default_factory=dict)
    damaged: list[Damage] = field(default_factory=list)

    def of_txns(self, txns: set[str], payloads: bool = True) -> Snapshot:
        """This snapshot narrowed to the files the transactions ``txns`` committed: a run scope's, or one
        transaction's for its kept outcomes; the payload store whole (``payloads``) or left out."""
        files = {
            t: (list(v) if payloads else [])
            if t == PAYLOADS
            else [r for r in v if txn_of(r) in txns]
            for t, v in self.files.items()
        }
        return Snapshot(self.commits, files, dict(self.complete))


def is_data_path(rel: str) -> bool:
    """``<table>/ingest_date=<day>/part-….parquet``: where writers put files (anything else is a stray)."""
    parts = rel.split("/")
    return (
        len(parts) == 3
        and parts[1].startswith(PARTITION + "=")
        and parts[2].startswith("part-")
        and parts[2].endswith(".parquet")
        and txn_of(parts[2]) is not None
    )


def quarantined(
    lay: Layout, listed: dict[str, dict[str, Any]] | None = None
) -> dict[str, dict[str, Any]]:
    """Files ``pt2logs repair`` moved away: rel path -> its record (why, runs, when)."""
    out: dict[str, dict[str, Any]] = {}
    for info in recovery._ls(lay, QUARANTINE, listed):
        name = info["name"]
        if not name.endswith(".json"):
            continue
        try:
            with lay.fs.open(name, "rb") as f:
                rec = orjson.loads(f.read())
            out[rec["path"]] = rec
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            continue
    return out


def take(
    lay: Layout,
    records: dict[str, list[dict[str, Any]] | None] | None = None,
    read_records: Any = None,
) -> Snapshot:
    """List the warehouse once and decide every file the views read. ``read_records(rel paths)`` ->
    {rel: entries or None} reads the runs files' records (DuckDB's parquet_kv_metadata in the views)."""
    # the compactions' records and the quarantine before the commits (on an object store one listing of
    # the ``_`` folders), then the commits, then their files: the order consistency needs
    marks = found(lay, "_") if lay.remote else None
    garbage = recovery.garbage_names(lay, marks)
    held = quarantined(lay, marks)
    listing = manifest.listing(lay)
    snap = Snapshot()
    names = {rel: posixpath.basename(rel) for rel in listing}
    runs = sorted(rel for rel in listing if rel.startswith("runs/") and is_data_path(rel))
    snap.commits = frozenset(names[r] for r in runs)
    runs = [r for r in runs if names[r] not in garbage]
    by_txn: dict[str, list[str]] = {}
    for rel in listing:
        if is_data_path(rel) and not rel.startswith("runs/") and names[rel] not in garbage:
            by_txn.setdefault(txn_of(rel) or "", []).append(rel)
    if records is None:
        records = read_records(runs) if read_records is not None and runs else {}
    files: dict[str, list[str]] = {t: [] for t in stored_tables()}
    complete = {t: True for t in stored_tables()}
    files["runs"] = runs
    complete["runs"] = (
        False  # a runs file records its files, not itself: its columns are asked (small files)
    )
    for r in runs:
        txn = txn_of(r)
        entries = records.get(r)
        if entries is None:  # committed before records: its files as listed
            for rel in by_txn.get(txn or "", []):
                table = rel.split("/", 1)[0]
                files[table].append(rel)
                complete[table] = False
            complete["runs"] = False
            continue
        for ent in entries:
            rel = ent.get("path", "")
            table = rel.split("/", 1)[0]
            if table not in files or posixpath.basename(rel) in garbage:
                continue
            if rel in held:
                snap.damaged.append(
                    Damage(
                        rel,
                        txn,
                        f"quarantined by `pt2logs repair` ({held[rel].get('why', '?')})",
                        True,
                    )
                )
            elif rel not in listing:
                snap.damaged.append(Damage(rel, txn, "missing"))
            elif "bytes" in ent and listing[rel] != ent["bytes"]:
                snap.damaged.append(
                    Damage(
                        rel,
                        txn,
                        f"{listing[rel]:,} bytes where its commit recorded {ent['bytes']:,}",
                    )
                )
            else:
                files[table].append(rel)
                if ent.get("schema") != manifest.schema_version(table):
                    complete[table] = False
    snap.files = {t: sorted(v) for t, v in files.items()}
    snap.complete = complete
    return snap


def damage_warnings(con: Any, wh: Layout, snap: Snapshot) -> tuple[list[str], set[str]]:
    """Warnings for the damaged files that hold rows of live runs, and those runs (``con``: its views made)."""
    if not snap.damaged:
        return [], set()
    txns = sorted({d.txn for d in snap.damaged if d.txn})
    held = dict(
        con.execute(
            "SELECT txn, list(DISTINCT run_id ORDER BY run_id) FROM _runs_all SEMI JOIN _live USING (run_id, txn) "
            "WHERE txn IN (SELECT unnest($t)) GROUP BY txn",
            {"t": txns},
        ).fetchall()
    )
    out, runs = [], set()
    for d in snap.damaged:
        ids = held.get(d.txn)
        if not ids:
            continue  # its runs were ingested again since: nothing live is missing
        runs.update(ids)
        out.append(
            f"{wh.url(*d.path.split('/'))} is {d.why}: left out, so run(s) {', '.join(ids)} lack its rows. "
            f"`pt2logs check` says what is damaged; `pt2logs repair` re-ingests those runs from their sources"
        )
    return out, runs


def damaged_runs_files(lay: Layout, runs: list[str]) -> list[tuple[str, str]]:
    """(rel path, why) of every ``runs`` file that cannot be read whole (a runs file is the commit)."""
    bad = []
    for rel in runs:
        try:
            manifest.read_record(lay, lay.path(*rel.split("/")))
        except FileNotFoundError:
            continue  # deleted meanwhile (a compaction's grace ran out): not damage
        except Exception as e:  # noqa: BLE001
            bad.append((rel, manifest._why(e)))
    return bad


def runs_file_error(lay: Layout, bad: list[tuple[str, str]]) -> str:
    rel, why = bad[0]
    more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
    return (
        f"{lay.url(*rel.split('/'))} is damaged{more}: {why}. It is the commit record of transaction "
        f"{txn_of(rel)}, so no read can decide which rows are live. Run `pt2logs check -w {lay.location}` to see "
        f"what is damaged, then `pt2logs repair -w {lay.location}`: it moves the file to {QUARANTINE}/ and "
        "re-ingests what it held from its sources where they still exist."
    )
