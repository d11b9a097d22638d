"""Where each view reads its rows from: the Parquet source of a table, and the columns it holds.

Two kinds: :class:`Listed`, what every connection of pt2logs uses — exactly the files its snapshot's
commits list (:mod:`pt2logs.store.snapshot`), in one ``read_parquet`` list; and :class:`Glob`, what the views
file ``pt2logs.duckdb`` for other tools uses — the table's folder as a glob, so each of their queries
lists the files anew (less the files a compaction replaced).

Columns: a view selects the declared columns (:mod:`pt2logs.tables`) in declared order, NULL where
no file holds one. A :class:`Listed` table whose files were all recorded with the current schema
version holds every declared column; otherwise (and always for :class:`Glob` when it has a
connection) the columns are the union of its files' own
(``union_by_name``: a file written by an older pt2logs, lacking ``source`` or ``break_key``, reads
NULL there and the newer files keep theirs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pt2logs.query import frame_fill
from pt2logs.query.sql_text import literal as _q
from pt2logs.store.parts import PARTITION, STORED
from pt2logs.store.warehouse import PAYLOAD_KEY, PAYLOADS
from pt2logs.tables import TABLES

if TYPE_CHECKING:
    import duckdb

    from pt2logs.store.snapshot import Snapshot
    from pt2logs.store.warehouse import Warehouse


def source_sql(
    wh: Warehouse, table: str, skip: set[str] | frozenset[str] = frozenset(), row_ids: bool = False
) -> str:
    """The table's files (a glob: each query sees the files of that moment), less the files in ``skip``
    (names of files a compaction replaced: pruned by file name before they are scanned). Only where
    writers put files (``<table>/ingest_date=<day>/part-….parquet``, snapshot.is_data_path): a stray
    copy or folder beside them is not read by the views file either. ``row_ids``: each row's ``filename`` and
    ``file_row_number`` too (where a row is: one copy of a payload chosen by its place, not its text)."""
    glob = wh.url(table, f"{PARTITION}=*", "part-*.parquet")
    src = f"read_parquet({_q(glob)}, union_by_name=true, hive_partitioning=true, hive_types={{{_q(PARTITION)}: VARCHAR}}"
    if row_ids:
        src += ", file_row_number=true"
    if not skip:
        return src + (", filename=true)" if row_ids else ")")
    names = ", ".join(_q(n) for n in sorted(skip))
    keep = "*" if row_ids else "* EXCLUDE (filename)"
    return f"(SELECT {keep} FROM {src}, filename=true) WHERE parse_filename(filename) NOT IN ({names}))"


def _present_columns(
    con: duckdb.DuckDBPyConnection,
    wh: Warehouse,
    table: str,
    garbage: set[str] | None = None,
    files: list[str] | None = None,
) -> set[str] | None:
    """Columns the table's files hold: those of its newest file (file names sort by transaction time,
    and every pt2logs version writes all the columns it knows), plus the partition column.
    None when the table has no files yet (or only replaced ones). ``files``: its live files, when
    the caller listed them already."""
    files = wh.live_files(table, garbage) if files is None else files
    if not files:
        return None
    import pyarrow.parquet as pq

    try:
        with wh.fs.open(max(files, key=_txn_order), "rb") as f:
            names = set(pq.read_schema(f).names)
    except (OSError, ValueError):
        if con is None:
            return set(TABLES[table].names) | {PARTITION}
        rows = con.execute(
            f"DESCRIBE SELECT * FROM {source_sql(wh, table, garbage or set())}"
        ).fetchall()
        names = {r[0] for r in rows}
    return names | {PARTITION}


def _txn_order(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name[5:] if name.startswith("part-") else name


class Glob:
    """The views file's sources: each query lists the table's files anew (less the replaced ones)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, wh: Warehouse):
        self.con, self.wh = con, wh
        # taken once, before the runs are read: the replaced files this connection's queries never open.
        # (Taken after, a compaction committing in between would hide the files of the runs read.)
        self.skip = wh.garbage_names()

    def sql(self, table: str, row_ids: bool = False) -> str:
        return source_sql(self.wh, table, self.skip, row_ids)

    def present(self, table: str) -> set[str] | None:
        """The union of the files' columns (``union_by_name``: a newest file written by an older pt2logs
        must not blank the others' columns); the newest file's alone where there is no connection."""
        cols = _present_columns(None, self.wh, table, self.skip)
        if cols is None or self.con is None:
            return cols
        return {
            r[0] for r in self.con.execute(f"DESCRIBE SELECT * FROM {self.sql(table)}").fetchall()
        } | {PARTITION}

    def fills_frames(self, table: str) -> bool:
        """Never: the DuckDB CLI cannot call Python (a file not upgraded reads NULL frame ids there)."""
        return False


def files_sql(urls: list[str], row_ids: bool = False) -> str:
    """A read of exactly the files ``urls`` (with ``row_ids``: each row's file and place in it, columns
    ``filename`` and ``file_row_number``)."""
    ids = ", filename=true, file_row_number=true" if row_ids else ""
    return (
        f"read_parquet([{', '.join(map(_q, urls))}], union_by_name=true, hive_partitioning=true, "
        f"hive_types={{{_q(PARTITION)}: VARCHAR}}{ids})"
    )


class Listed:
    """A connection's sources: exactly the files its snapshot's commits list (pt2logs.store.snapshot)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, wh: Warehouse, snap: Snapshot):
        self.con, self.wh, self.snap = con, wh, snap

    def sql(self, table: str, row_ids: bool = False) -> str:
        return files_sql(
            [self.wh.url(*rel.split("/")) for rel in self.snap.files.get(table, ())], row_ids
        )

    def fills_frames(self, table: str) -> bool:
        """The view fills the compile id's integers of rows stored without them (pt2logs.query.frame_fill)."""
        return frame_fill.needed(self.snap, table)

    def present(self, table: str) -> set[str] | None:
        """The declared columns when every file was written with them; else the union of the files' own."""
        if not self.snap.files.get(table):
            return None
        if self.snap.complete.get(table):
            return file_columns(table) | {PARTITION}
        return {
            r[0] for r in self.con.execute(f"DESCRIBE SELECT * FROM {self.sql(table)}").fetchall()
        } | {PARTITION}


def payloads_view(src: Listed | Glob) -> str:
    """``_payloads``: one row per key of the payload store (pt2logs.store.payloads). Every file is read, not
    only committed ones: a key is the hash of its text, so any copy of it is the right text, and an
    events row only ever names a key that is committed with it or before it. The copy kept: the first by
    place (file, row), only the keys grouped (grouping the texts was most of a payload query's time)."""
    key = f'"{PAYLOAD_KEY}"'
    if src.present(PAYLOADS) is None:
        return f"CREATE OR REPLACE VIEW _payloads AS SELECT NULL::BLOB AS {key}, NULL::VARCHAR AS payload WHERE false"
    rows = src.sql(PAYLOADS, row_ids=True)
    return (
        f"CREATE OR REPLACE VIEW _payloads AS SELECT s.{key}, s.payload "
        f"FROM (SELECT {key}, payload, filename, file_row_number FROM {rows}) s "
        f"SEMI JOIN (SELECT {key}, min({{'f': filename, 'r': file_row_number}}) AS first "
        f"FROM (SELECT {key}, filename, file_row_number FROM {rows}) GROUP BY {key}) k "
        f"ON s.{key} = k.{key} AND s.filename = k.first.f AND s.file_row_number = k.first.r"
    )


def file_columns(table: str) -> set[str]:
    """The columns of ``table``'s files as this code writes them (store.parts.file_schema's names, without pyarrow:
    a command that answers from kept rows imports none)."""
    if table == PAYLOADS:
        return {PAYLOAD_KEY, "payload", "txn"}
    return set(TABLES[table].names) | {key for _, key in STORED.get(table, ())}
