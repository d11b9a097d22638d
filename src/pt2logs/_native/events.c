/* The `events` rows of TORCH_TRACE records as Arrow column buffers, in one native pass
 * (pt2logs._native._records.event_columns; the Python caller is readers/trace_fast.py).
 *
 * The pure-Python record loop (readers/torch_trace.py read_records) stays the oracle: for every
 * record this file either produces exactly the row that loop would, or stops and leaves the record
 * to it. A record is taken here only when its envelope is in a strict subset of JSON that orjson
 * is known to read to the same values (ASCII only, no \u escapes, ints of at most 9 digits, numbers
 * whose exponent has at most 2 digits, depth <= 32), its context fields are plain non-negative ints,
 * its payload md5 matches `has_payload` (or it has neither), and its prefix numbers fit their
 * columns. Anything else (damage, an odd envelope) is "hard": the caller runs the Python loop on it.
 *
 * event_columns(recs, start, handlers, art_handlers, file_rank, last_rank, bump, last_mmdd, max_rows, max_bytes
 *               [, chromium]) -> (stop, n, columns, handled, last_rank, bump, last_mmdd, payload_bytes, ranks)
 * recs[start:stop] became n = stop - start rows. It stops at a hard record (recs[stop]), after max_rows
 * rows, or after the record that brings the payload bytes to max_bytes: where the Python loop would
 * consider a flush, so batches (and the errors a flush reports) fall where they fall there.
 * columns: one (validity, offsets, data) triple of buffers (buffers.c: no copy) per COLS entry (validity None: no nulls;
 * offsets None: a fixed-width column). handled: (index, handler, kind, cid, rank, key) for each
 * record whose kind (or artifact name) has a handler, in order. ranks: the envelope ranks seen.
 *
 * chromium: None, or (handler, cols, spans, rows, roots, wrappers, ready). Not ready (the file's time base is
 * not set yet): the pass stops after the first record whose handler is `handler` (phases.chromium_event: its
 * Python handler sets the time base). Ready: such a record is done here by phases.c (phases_take, writing
 * into the PhaseCols `cols` beside the tuple `rows`, as phases.native_handler would) and is not in
 * `handled`, unless phases.c leaves it: then it is in `handled`, and so is every chromium record after it
 * in this call (its Python handler must run first). This is what the Python loop would do, in its order:
 * the handlers that run later in Python never touch the spans nor compile_phases, and the one thing a
 * chromium event gives them (the duration of a closed entire_frame_compile span, for the metrics handler)
 * comes in `handled` in its place, as (index, None, duration, cid, rank, key).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "arrowcol.h"
#include "phase_cols.h"

enum { C_LINE, C_NLINES, C_KEY, C_TOD, C_LEVEL, C_THREAD, C_PATH, C_LINENO, C_KIND, C_NAME, C_CID, C_FID, C_FCID,
       C_ATT, C_CA, C_ENV, C_PAYLOAD, C_PBYTES, C_MD5, C_OK, C_RANK, NCOLS };
/* width 8/4 = int64/int32, 1 = bool, 0 = string */
static const int WIDTH[NCOLS] = {8, 4, 8, 8, 0, 8, 0, 4, 0, 0, 0, 4, 4, 4, 4, 0, 0, 8, 0, 1, 4};

#include "envelope.h"

/* ---- the rows ---------------------------------------------------------------------------------- */
static int as_ll(PyObject *o, long long *v) { /* an int that fits (and is not a bool); 0 if not */
    if (!PyLong_CheckExact(o)) return 0;
    int of = 0;
    *v = PyLong_AsLongLongAndOverflow(o, &of);
    if (of || (*v == -1 && PyErr_Occurred())) { PyErr_Clear(); return 0; }
    return 1;
}

/* trace_state.compile_id_text: "F/C", "!A/F/C", "!A" (a missing F or C prints as None) */
static Py_ssize_t cid_text(char *out, const env_t *e) {
    int f = e->present[K_FID], c = e->present[K_FCID], a = e->present[K_CA];
    if (!f && !c) return a ? sprintf(out, "!%lld", e->ints[K_CA]) : -1;
    char fs[24], cs[24];
    if (f) sprintf(fs, "%lld", e->ints[K_FID]); else strcpy(fs, "None");
    if (c) sprintf(cs, "%lld", e->ints[K_FCID]); else strcpy(cs, "None");
    return a ? sprintf(out, "!%lld/%s/%s", e->ints[K_CA], fs, cs) : sprintf(out, "%s/%s", fs, cs);
}

PyObject *pt2_event_columns(PyObject *self, PyObject *args) {
    PyObject *recs, *handlers, *art_handlers, *file_rank_o, *last_rank_o, *chrom = Py_None;
    Py_ssize_t start, max_rows;
    long long bump, last_mmdd, max_bytes;
    if (!PyArg_ParseTuple(args, "O!nO!O!OOLLnL|O", &PyList_Type, &recs, &start, &PyDict_Type, &handlers, &PyDict_Type,
                          &art_handlers, &file_rank_o, &last_rank_o, &bump, &last_mmdd, &max_rows, &max_bytes, &chrom))
        return NULL;
    /* chromium: (handler, cols, spans, rows, roots, wrappers, ready) or None (see the top of this file) */
    PyObject *ch_h = NULL, *ch_cols = NULL, *ch_spans = NULL, *ch_rows = NULL, *ch_roots = NULL, *ch_wrappers = NULL;
    int ch_ready = 0, stop_after = 0;
    if (chrom != Py_None) {
        if (!PyTuple_Check(chrom) || !PyArg_ParseTuple(chrom, "OO!O!O!O!Op", &ch_h, &PhaseColsType, &ch_cols, &PyList_Type,
                                                         &ch_spans, &PyList_Type, &ch_rows, &PyDict_Type, &ch_roots,
                                                         &ch_wrappers, &ch_ready))
            return NULL;
        if (!PyAnySet_Check(ch_wrappers)) { PyErr_SetString(PyExc_TypeError, "event_columns: wrappers must be a set"); return NULL; }
    }
    long long file_rank = 0, last_rank = 0;
    int has_file_rank = file_rank_o != Py_None, has_last_rank = last_rank_o != Py_None;
    if ((has_file_rank && !as_ll(file_rank_o, &file_rank)) || (has_last_rank && !as_ll(last_rank_o, &last_rank)) ||
        file_rank < 0 || file_rank > INT32_MAX || last_rank < 0 || last_rank > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "event_columns: ranks must be None or int32");
        return NULL;
    }
    PyObject *handled = NULL, *ranks = NULL, *result = NULL, *last_cid = NULL, *last_kind = NULL;
    col cols[NCOLS];
    memset(cols, 0, sizeof cols);
    for (int i = 0; i < NCOLS; i++) if (col_init(&cols[i], WIDTH[i]) < 0) goto fail;
    handled = PyList_New(0);
    ranks = PySet_New(NULL);
    char last_cid_buf[96];
    Py_ssize_t last_cid_n = -2;
    long long payload_bytes = 0;
    if (!handled || !ranks) goto fail;
    Py_ssize_t n = PyList_GET_SIZE(recs), i = start, row = 0;
    { /* room for the payloads and envelopes of the records this pass may take: the two large columns are
       * written once, not copied again as they grow */
        size_t pay = 0, env = 0;
        for (Py_ssize_t k = start; k < n && k - start < max_rows && (long long)pay < max_bytes; k++) {
            PyObject *r = PyList_GET_ITEM(recs, k);
            if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) < 11) break;
            PyObject *p = PyTuple_GET_ITEM(r, 9), *e = PyTuple_GET_ITEM(r, 8);
            if (PyBytes_Check(p)) pay += (size_t)PyBytes_GET_SIZE(p);
            if (PyBytes_Check(e)) env += (size_t)PyBytes_GET_SIZE(e);
        }
        if (gb_reserve(&cols[C_PAYLOAD].data, pay) < 0 || gb_reserve(&cols[C_ENV].data, env) < 0) goto fail;
    }
    for (; i < n && row < max_rows && payload_bytes < max_bytes; i++, row++) {
        PyObject *r = PyList_GET_ITEM(recs, i);
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) < 11) break;
        long long line_no, n_lines, mmdd, tod, thread, lineno;
        PyObject *level = PyTuple_GET_ITEM(r, 2), *path = PyTuple_GET_ITEM(r, 6), *envb = PyTuple_GET_ITEM(r, 8);
        PyObject *payload = PyTuple_GET_ITEM(r, 9), *md5 = PyTuple_GET_ITEM(r, 10);
        if (!as_ll(PyTuple_GET_ITEM(r, 0), &line_no) || !as_ll(PyTuple_GET_ITEM(r, 1), &n_lines) || n_lines > INT32_MAX ||
            !as_ll(PyTuple_GET_ITEM(r, 3), &mmdd) || !as_ll(PyTuple_GET_ITEM(r, 4), &tod) ||
            !as_ll(PyTuple_GET_ITEM(r, 5), &thread) || !as_ll(PyTuple_GET_ITEM(r, 7), &lineno) || lineno > INT32_MAX ||
            !PyBytes_Check(level) || !PyBytes_Check(path) || !PyBytes_Check(envb))
            break;
        env_t e;
        if (!parse_env((const unsigned char *)PyBytes_AS_STRING(envb), PyBytes_GET_SIZE(envb), &e)) break;
        int has_payload = payload != Py_None;
        if (has_payload && !PyBytes_Check(payload)) break;
        if (e.has_md5) { /* verified: the payload's own md5 (computed by the splitter) equals has_payload */
            if (!has_payload || !PyUnicode_Check(md5) || PyUnicode_GET_LENGTH(md5) != e.md5_n) break;
            const char *h = PyUnicode_AsUTF8(md5);
            if (!h || memcmp(h, e.md5, (size_t)e.md5_n) != 0) { PyErr_Clear(); break; }
        } else if (has_payload) break; /* a payload without has_payload: reported by the Python loop */
        /* easy: the row */
        if (mmdd < last_mmdd - 600) bump += 1; /* timebase.TimeBase.key */
        last_mmdd = mmdd;
        long long key = bump * 10000 + mmdd, rank = 0;
        int has_rank;
        if (e.present[K_RANK]) { rank = e.ints[K_RANK]; has_rank = 1; last_rank = rank; has_last_rank = 1; }
        else { rank = file_rank; has_rank = has_file_rank; }
        if (e.present[K_RANK]) {
            PyObject *ro = PyLong_FromLongLong(rank);
            if (!ro || PySet_Add(ranks, ro) < 0) { Py_XDECREF(ro); goto fail; }
            Py_DECREF(ro);
        }
        char cbuf[96];
        Py_ssize_t cn = cid_text(cbuf, &e);
        const char *name = e.has_name ? (const char *)e.name : NULL;
        Py_ssize_t pn = has_payload ? PyBytes_GET_SIZE(payload) : 0;
        if (col_int(&cols[C_LINE], row, line_no, 1) < 0 || col_int(&cols[C_NLINES], row, n_lines, 1) < 0 ||
            col_int(&cols[C_KEY], row, key, 1) < 0 || col_int(&cols[C_TOD], row, tod, 1) < 0 ||
            col_str(&cols[C_LEVEL], row, PyBytes_AS_STRING(level), PyBytes_GET_SIZE(level)) < 0 ||
            col_int(&cols[C_THREAD], row, thread, 1) < 0 ||
            col_str(&cols[C_PATH], row, PyBytes_AS_STRING(path), PyBytes_GET_SIZE(path)) < 0 ||
            col_int(&cols[C_LINENO], row, lineno, 1) < 0 ||
            col_str(&cols[C_KIND], row, (const char *)e.kind, e.kind_n) < 0 ||
            col_str(&cols[C_NAME], row, name, e.name_n) < 0 ||
            col_str(&cols[C_CID], row, cn >= 0 ? cbuf : NULL, cn) < 0 ||
            col_int(&cols[C_FID], row, e.ints[K_FID], e.present[K_FID]) < 0 ||
            col_int(&cols[C_FCID], row, e.ints[K_FCID], e.present[K_FCID]) < 0 ||
            col_int(&cols[C_ATT], row, e.ints[K_ATT], e.present[K_ATT]) < 0 ||
            col_int(&cols[C_CA], row, e.ints[K_CA], e.present[K_CA]) < 0 ||
            col_str(&cols[C_ENV], row, PyBytes_AS_STRING(envb), PyBytes_GET_SIZE(envb)) < 0 ||
            col_str(&cols[C_PAYLOAD], row, has_payload ? PyBytes_AS_STRING(payload) : NULL, pn) < 0 ||
            col_int(&cols[C_PBYTES], row, pn, has_payload) < 0 ||
            col_str(&cols[C_MD5], row, e.has_md5 ? (const char *)e.md5 : NULL, e.md5_n) < 0 ||
            col_int(&cols[C_OK], row, 1, e.has_md5) < 0 ||
            col_int(&cols[C_RANK], row, rank, has_rank) < 0)
            goto fail;
        payload_bytes += pn;
        /* the handler: trace_state.ARTIFACT_HANDLERS by name for artifacts, else HANDLERS by kind */
        PyObject *kind = NULL, *h = NULL;
        if (last_kind && PyUnicode_GET_LENGTH(last_kind) == e.kind_n && !memcmp(PyUnicode_AsUTF8(last_kind), e.kind, (size_t)e.kind_n)) {
            kind = last_kind;
        } else {
            kind = PyUnicode_FromStringAndSize((const char *)e.kind, e.kind_n);
            if (!kind) goto fail;
            Py_XSETREF(last_kind, kind);
        }
        if (e.kind_n == 8 && !memcmp(e.kind, "artifact", 8) && name) {
            PyObject *nm = PyUnicode_FromStringAndSize(name, e.name_n);
            if (!nm) goto fail;
            h = PyDict_GetItemWithError(art_handlers, nm);
            Py_DECREF(nm);
            if (!h && PyErr_Occurred()) goto fail;
        }
        if (!h) {
            h = PyDict_GetItemWithError(handlers, kind);
            if (!h && PyErr_Occurred()) goto fail;
        }
        if (h) {
            if (e.present[K_RANK] == 0) { last_rank = rank; has_last_rank = has_rank; } /* st.rank = rank before a handler */
            PyObject *cid = Py_None;
            if (cn >= 0) {
                if (!(last_cid && cn == last_cid_n && !memcmp(cbuf, last_cid_buf, (size_t)cn))) {
                    PyObject *t = PyUnicode_FromStringAndSize(cbuf, cn);
                    if (!t) goto fail;
                    Py_XSETREF(last_cid, t);
                    memcpy(last_cid_buf, cbuf, (size_t)cn);
                    last_cid_n = cn;
                }
                cid = last_cid;
            }
            PyObject *ro = has_rank ? PyLong_FromLongLong(rank) : (Py_INCREF(Py_None), Py_None);
            if (!ro) goto fail;
            PyObject *it, *frame = NULL;
            if (ch_h && h == ch_h && !ch_ready) stop_after = 1; /* the Python handler sets the time base first */
            else if (ch_h && h == ch_h) { /* a chromium event: done here when the native handler takes it */
                int t = phases_take(ch_cols, payload, cid, ch_spans, ch_rows, ro, PyTuple_GET_ITEM(r, 0), ch_roots,
                                    ch_wrappers, &frame);
                if (t < 0) { Py_DECREF(ro); goto fail; }
                if (t && !frame) { Py_DECREF(ro); continue; }
                if (!t) ch_h = NULL; /* the Python handler does this one, and so every chromium event after it here */
            }
            if (frame) { /* (i, None, duration, cid, ...): the duration goes to the compile's scratch, in order */
                it = Py_BuildValue("(nOOONL)", i, Py_None, PyTuple_GET_ITEM(frame, 1), PyTuple_GET_ITEM(frame, 0), ro, key);
                Py_DECREF(frame);
            } else
                it = Py_BuildValue("(nOOONL)", i, h, kind, cid, ro, key);
            if (!it) goto fail;
            int rc = PyList_Append(handled, it);
            Py_DECREF(it);
            if (rc < 0) goto fail;
        }
        if (stop_after) { i++; row++; break; }
    }
    {
        PyObject *ct = PyTuple_New(NCOLS);
        if (!ct) goto fail;
        for (int k = 0; k < NCOLS; k++) {
            PyObject *t = col_buffers(&cols[k]);
            if (!t) { Py_DECREF(ct); goto fail; }
            PyTuple_SET_ITEM(ct, k, t);
        }
        PyObject *lr = has_last_rank ? PyLong_FromLongLong(last_rank) : (Py_INCREF(Py_None), Py_None);
        result = lr ? Py_BuildValue("(nnNOOLLLO)", i, row, ct, handled, lr, bump, last_mmdd, payload_bytes, ranks) : NULL;
        Py_XDECREF(lr);
    }
fail:
    Py_XDECREF(handled);
    Py_XDECREF(ranks);
    Py_XDECREF(last_cid);
    Py_XDECREF(last_kind);
    for (int k = 0; k < NCOLS; k++) col_free(&cols[k]);
    return result;
}
