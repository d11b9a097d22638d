"""The pure-Python TORCH_TRACE record loop: each record → its ``events`` row, then the handler
its event key (or artifact name) has in :mod:`pt2logs.readers.trace.handlers` may add rows to derived tables.

It is the oracle of the native loop (:mod:`pt2logs.readers.trace.fast`), which runs it on the records
it leaves (damaged or unusual ones), and the loop of the readers that rebuild trace records from
another layout (:mod:`pt2logs.readers.documents.tlparse_dir`) or when the native extension is not built.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator

import orjson

from pt2logs.readers.kit import Batch
from pt2logs.readers.trace.handlers import ARTIFACT_HANDLERS, HANDLERS, KNOWN_PLAIN, finish_file
from pt2logs.readers.trace.records import Record
from pt2logs.readers.trace.state import CONTEXT_KEYS, NAMED_KINDS, TraceState, compile_id_text

#: the largest rank read from a log (a larger number is damage, not a rank)
MAX_RANK = 1 << 20
_INT_FIELDS = ("frame_id", "frame_compile_id", "compiled_autograd_id", "attempt", "rank")


def clean_context(st: TraceState, env: dict, line_no: int) -> tuple:
    """The integer context fields of an envelope (frame_id, frame_compile_id, compiled_autograd_id,
    attempt, rank), each one that is not an integer (or a rank out of range) read as absent with a
    warning; the record and its other fields are kept. Values too large for their column are NULLed
    (and reported) when the batch is built."""
    out = []
    for k in _INT_FIELDS:
        v = env.get(k)
        if v is not None and (type(v) is not int or (k == "rank" and not 0 <= v < MAX_RANK)):
            text = repr(v)
            st.error(
                "bad_value",
                line_no,
                f"envelope {k} is {text[:80]}, not {'a rank' if k == 'rank' else 'an integer'}; "
                "read as absent, record kept",
                text,
            )
            v = None
        out.append(v)
    return tuple(out)


def bad_name(st: TraceState, name: object, line_no: int) -> str:
    text = orjson.dumps(name, default=str).decode()
    st.error(
        "bad_value",
        line_no,
        f"artifact name is {text[:80]}, not a string; kept as its JSON text",
        text,
    )
    return text


def read_records(st: TraceState, records: Iterable[Record]) -> Iterator[Batch]:
    """The record loop of :func:`read_trace`: events rows, handler dispatch, batching. Also used by
    readers that rebuild trace records from another layout (:mod:`pt2logs.readers.documents.tlparse_dir`)."""
    yield from record_loop(st, records)
    finish(st)
    yield from st.flush(final=True)


def finish(st: TraceState) -> None:
    """After the last record: the handlers' end of file, the file's line count."""
    st.rec = None
    finish_file(st)
    st.stats.lines = st.last_line


def record_loop(st: TraceState, records: Iterable[Record]) -> Iterator[Batch]:
    """Each record → its ``events`` row and its handler (the pure-Python loop: the oracle of the
    native one in :mod:`pt2logs.readers.trace.fast`, which hands it the records it leaves)."""
    ctx = st.ctx
    stats = st.stats
    ev = st.ev
    loads = orjson.loads
    JSONError = orjson.JSONDecodeError
    md5 = hashlib.md5
    kinds = stats.kinds
    handlers = HANDLERS
    art_handlers = ARTIFACT_HANDLERS
    file = ctx.file
    tb = st.tb
    # bound appends: the lists are cleared in place at each flush, so these stay valid
    a_file, a_line, a_nl, a_level, a_thread, a_path, a_lineno = (
        ev["file"].append,
        ev["line_no"].append,
        ev["n_lines"].append,
        ev["level"].append,
        ev["thread"].append,
        ev["pathname"].append,
        ev["lineno"].append,
    )
    a_payload, a_pbytes, a_env, a_kind, a_name, a_cid = (
        ev["payload"].append,
        ev["payload_bytes"].append,
        ev["envelope"].append,
        ev["event_type"].append,
        ev["artifact_name"].append,
        ev["compile_id"].append,
    )
    a_fid, a_fcid, a_att, a_ca, a_rank, a_md5, a_ok = (
        ev["frame_id"].append,
        ev["frame_compile_id"].append,
        ev["attempt"].append,
        ev["compiled_autograd_id"].append,
        ev["rank"].append,
        ev["payload_md5"].append,
        ev["payload_ok"].append,
    )
    a_key, a_tod = st._ev_keys.append, st._ev_tods.append
    tb_key = tb.key
    context_keys = CONTEXT_KEYS
    named_kinds = NAMED_KINDS
    known_plain = KNOWN_PLAIN
    file_rank = ctx.rank
    batch_rows = ctx.batch_rows
    batch_bytes = ctx.batch_bytes
    n_pending = 0
    last_line = st.last_line
    cid_cache: dict[tuple, str | None] = {}

    for rec in records:
        st.rec = rec
        st._text = None
        st._last_ok = True
        key = st.key = tb_key(rec.mmdd)
        last_line = rec.line_no + rec.n_lines - 1
        try:
            env = loads(rec.envelope)
        except JSONError as e:
            st.error(
                "bad_json",
                rec.line_no,
                f"envelope is not valid JSON ({e}); record kept in events without metadata",
                rec.envelope,
            )
            env = None
            st._last_ok = False
        else:
            if type(env) is not dict:
                st.error(
                    "not_an_object",
                    rec.line_no,
                    f"envelope is JSON {'null' if env is None else type(env).__name__}, "
                    "not an object; record kept in events without metadata",
                    rec.envelope,
                )
                env = None
                st._last_ok = False
        a_file(file)
        a_line(rec.line_no)
        a_nl(rec.n_lines)
        a_key(key)
        a_tod(rec.tod_us)
        a_level(rec.level)
        a_thread(rec.thread)
        a_path(rec.pathname)
        a_lineno(rec.lineno)
        payload = rec.payload
        a_payload(payload)
        if payload is not None:
            n = len(payload)
            a_pbytes(n)
            st._ev_bytes += n
        else:
            a_pbytes(None)
        n_pending += 1
        if env is None:
            a_env(None)
            for c in (
                "event_type",
                "artifact_name",
                "compile_id",
                "frame_id",
                "frame_compile_id",
                "attempt",
                "compiled_autograd_id",
                "payload_md5",
                "payload_ok",
            ):
                ev[c].append(None)
            a_rank(st.rank)
        else:
            a_env(rec.envelope)
            kind = None
            for k in env:
                if k not in context_keys:
                    kind = k
                    break
            meta = env.get(kind) if kind is not None else None
            name = meta.get("name") if kind in named_kinds and type(meta) is dict else None
            if name is not None and type(name) is not str:
                name = bad_name(st, name, rec.line_no)
            fid = env.get("frame_id")
            fcid = env.get("frame_compile_id")
            ca = env.get("compiled_autograd_id")
            att = env.get("attempt")
            rank = env.get("rank")
            if (
                (fid is not None and type(fid) is not int)
                or (fcid is not None and type(fcid) is not int)
                or (ca is not None and type(ca) is not int)
                or (att is not None and type(att) is not int)
                or (rank is not None and (type(rank) is not int or not 0 <= rank < MAX_RANK))
            ):
                fid, fcid, ca, att, rank = clean_context(st, env, rec.line_no)
            if fid is None and fcid is None and ca is None:
                cid = None
            else:
                ck = (ca, fid, fcid)
                cid = cid_cache.get(ck, False)
                if cid is False:
                    cid = cid_cache[ck] = compile_id_text(ca, fid, fcid)
            if rank is not None:
                st.rank = rank
                stats.ranks.add(rank)
            else:
                rank = file_rank
            a_kind(kind)
            a_name(name)
            a_cid(cid)
            a_fid(fid)
            a_fcid(fcid)
            a_att(att)
            a_ca(ca)
            a_rank(rank)
            expect = env.get("has_payload")
            a_md5(expect if type(expect) is str else None)
            if expect is not None:
                ok = payload is not None and (rec.md5 or md5(payload).hexdigest()) == expect
                if not ok and payload is not None and b"\r" in payload:
                    # a file whose line ends were converted in part (CRLF and LF mixed): the payload
                    # as written had LF; keep that form when its md5 says so
                    lf = payload.replace(b"\r\n", b"\n").removesuffix(b"\r")
                    if md5(lf).hexdigest() == expect:
                        ok = True
                        ev["payload"][-1] = lf
                        st._ev_bytes -= len(payload) - len(lf)
                if not ok and st.payload_verdict is not None:
                    ok = st.payload_verdict(rec, expect)
                if ok is False:
                    st._last_ok = False
                    st.error(
                        "payload_md5_mismatch",
                        rec.line_no,
                        "payload md5 does not match has_payload (edited or damaged payload); payload kept"
                        if payload is not None
                        else "has_payload is set but no payload lines follow; record kept",
                        rec.envelope,
                    )
                a_ok(ok)
            else:
                a_ok(None)
                if payload is not None:
                    st.error(
                        "unexpected_payload",
                        rec.line_no,
                        "payload lines follow a record without has_payload; kept",
                        payload[:200],
                    )
            kinds[kind] = kinds.get(kind, 0) + 1
            h = art_handlers.get(name) if kind == "artifact" else None
            if h is None:
                h = handlers.get(kind)  # type: ignore[arg-type]
            if h is not None:
                st.rank = rank
                h(st, env, meta, cid)
            elif kind not in known_plain and kind != "artifact":
                stats.unknown += 1
        if (n_pending >= batch_rows or st._ev_bytes >= batch_bytes) and st.should_flush():
            stats.events += n_pending
            n_pending = 0
            yield from st.flush()
    stats.events += n_pending
    st.last_line = last_line
