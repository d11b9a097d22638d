"""The columns and types of a named query's answer, learned once and kept: for the process, and in the cache folder.

A run scope answers the questions it finds empty (:mod:`pt2logs.query.empty_answers`) with an empty table of the
columns and types DuckDB's own answer has. Those depend on the query's text, its parameters' types, the views'
columns (declared in ``tables/``, the same for every snapshot: a table without files is an empty view of its
declared types) and the connection's settings that shape Arrow types (:data:`ARROW_SETTINGS`) — never on the rows.
So they are asked of DuckDB once (its planning: 3-23 ms a question) and kept under a key of all of that: in this
process for every later connection, and in the cache folder (:func:`pt2logs.query.kept_files.cache_dir`, under
pt2logs' code stamp) for every later process; until then DuckDB answers. A file that cannot be read or written is
skipped, never an error.
"""

from __future__ import annotations

import base64
import contextlib
import json
import weakref
from pathlib import Path
from typing import Any

import duckdb

from pt2logs.query.kept_files import read_texts, texts_path, write_texts

#: the settings whose values shape the Arrow types of an answer (TimeZone: a TIMESTAMPTZ's zone)
ARROW_SETTINGS = (
    "TimeZone",
    "Calendar",
    "arrow_large_buffer_size",
    "arrow_lossless_conversion",
    "arrow_output_list_view",
    "arrow_output_version",
    "produce_arrow_string_view",
)
#: the kind of texts kept in the cache folder (:func:`pt2logs.query.kept_files.write_texts`)
KIND = "answer-schemas"

#: key -> the answer's schema, for this process (read from the cache folder's file once)
_KNOWN: dict[str, Any] = {}
_read: set[Path] = set()
#: per connection inside a run scope: its ARROW_SETTINGS, as a part of the key (read once a scope: :func:`forget` at
#: its end, so a setting changed between scopes, a TimeZone say, makes another key)
_SETTINGS: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, str] = weakref.WeakKeyDictionary()


def _settings(con: duckdb.DuckDBPyConnection) -> str:
    got = _SETTINGS.get(con)
    if got is None:
        try:  # (~0.7 ms; duckdb_settings() is ~7)
            row = con.execute(
                "SELECT " + ", ".join(f"current_setting('{s}')" for s in ARROW_SETTINGS)
            ).fetchall()[0]
            rows = [[s, str(v)] for s, v in zip(ARROW_SETTINGS, row, strict=True)]
        except duckdb.Error:  # a DuckDB without one of them
            rows = con.execute(
                "SELECT name, value FROM duckdb_settings() WHERE list_contains($names, name) ORDER BY name",
                {"names": list(ARROW_SETTINGS)},
            ).fetchall()
        got = _SETTINGS[con] = json.dumps(rows)
    return got


def forget(con: duckdb.DuckDBPyConnection) -> None:
    """The scope of ``con`` ended: its settings are read again in the next one."""
    _SETTINGS.pop(con, None)


def key(con: duckdb.DuckDBPyConnection, name: str, bound: dict[str, Any]) -> str:
    """What the schema of ``name``'s answer with parameters ``bound`` on ``con`` depends on (the code's stamp
    names the file it is kept in)."""
    types = sorted((k, type(v).__name__) for k, v in bound.items())
    return json.dumps([name, types, _settings(con)])


def _decode(text: str) -> Any:
    import pyarrow as pa

    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


def known(k: str) -> Any:
    """The schema kept under ``k`` (None: not known yet)."""
    got = _KNOWN.get(k)
    if got is None and (path := texts_path(KIND)) is not None and path not in _read:
        _read.add(path)
        for kk, text in (read_texts(KIND) or {}).items():
            with contextlib.suppress(Exception):  # (a damaged entry: learned again)
                _KNOWN.setdefault(kk, _decode(text))
        got = _KNOWN.get(k)
    return got


def keep(k: str, schema: Any) -> None:
    """Keep ``schema`` under ``k``: for the process, and merged into the cache folder's file (two processes at
    once: one's entry may be lost, and learned again)."""
    _KNOWN[k] = schema
    if texts_path(KIND) is not None:
        texts = read_texts(KIND) or {}
        texts[k] = base64.b64encode(schema.serialize().to_pybytes()).decode()
        write_texts(KIND, texts)
