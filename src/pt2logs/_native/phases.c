/* chromium_event payloads -> compile_phases rows and open spans, natively
 * (pt2logs._native._records.chromium; the Python caller is readers/trace_events/phases.py native_handler).
 *
 * The Python handler (phases.chromium_event and _emit) stays the oracle: for every payload this file either
 * does exactly what that handler would do to the open spans and the compile_phases rows, or returns 0
 * having changed nothing, and the handler runs. A payload is taken here only when all of it is in the JSON
 * subset of canon.h (whose canonical form this file writes as orjson would), its name, ph and cat are
 * strings without escapes (cat may be null or absent) and its ts is a number that fits. Span args are kept
 * in the open span as their canonical bytes (phases._emit reads them back with orjson).
 *
 * chromium(payload, cid, spans, rows, file, rank, line_no, roots, wrappers)
 *   -> 0: not taken (nothing changed); 1: done; (cid, dur_us): done, and an entire_frame_compile span closed
 *   (the caller keeps its duration for the metrics handler, as _emit does).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "canon.h"

/* Python truthiness of a canonical JSON value */
static int truthy(const char *s, size_t n) {
    static const char *FALSY[] = {"null", "false", "0", "0.0", "-0.0", "\"\"", "{}", "[]"};
    for (size_t i = 0; i < sizeof FALSY / sizeof *FALSY; i++)
        if (strlen(FALSY[i]) == n && !memcmp(FALSY[i], s, n)) return 0;
    return 1;
}

/* the payload's top-level fields this handler reads */
typedef struct {
    const char *name, *ph, *cat; /* raw (escape-free) strings */
    Py_ssize_t name_n, ph_n, cat_n;
    int has_name, has_ph, has_cat, cat_null;
    long long ts, dur;
    int has_ts, dur_kind;  /* dur_kind: 0 absent or not a number, 1 a number */
    size_t args_off, args_len; int has_args;  /* canonical args in the buffer */
    members args_m;                           /* its members when an object */
    const char *cid; Py_ssize_t cid_n;         /* args.compile_id when a plain string */
} payload_t;

static int key_is(const char *k, size_t n, const char *w) { return strlen(w) + 2 == n && !memcmp(k + 1, w, n - 2); }

/* an int(x) of a JSON number as Python computes it (floats truncate); 0 if outside what C holds */
static int as_int(const char *s, size_t n, long long *out) {
    char lit[350];
    if (n == 0 || n >= sizeof lit) return 0;
    memcpy(lit, s, n);
    lit[n] = 0;
    if (!strpbrk(lit, ".eE")) { /* at most 18 digits: ts and dur stay well inside int64 */
        if (n > 18 + (lit[0] == '-')) return 0;
        *out = strtoll(lit, NULL, 10);
        return 1;
    }
    double d = strtod(lit, NULL);
    if (!(d > -4e18 && d < 4e18)) return 0;
    *out = (long long)d; /* truncation toward zero, as int(float) */
    return 1;
}

/* parse the whole payload in the subset; 1 in it, 0 not, -1 a Python error */
static int read_payload(const unsigned char *p, Py_ssize_t len, gbuf *o, payload_t *pl) {
    jcur c = {p, p + len, 0};
    members top = {0};
    int rc;
    memset(pl, 0, sizeof *pl);
    jws(&c);
    if (c.p >= c.end || *c.p != '{') return 0;
    if ((rc = c_object(&c, o, 0, &top, &pl->args_m)) != 1) goto out;
    jws(&c);
    if (c.p != c.end) { rc = 0; goto out; }
    rc = 0;
    for (Py_ssize_t i = 0; i < top.n; i++) {
        const char *k = o->p + top.m[i].koff, *v = o->p + top.m[i].voff;
        size_t kn = top.m[i].klen, vn = top.m[i].vlen;
        int is_str = v[0] == '"', has_esc = is_str && memchr(v, '\\', vn) != NULL;
        int is_num = v[0] == '-' || DIG(v[0]);
        if (key_is(k, kn, "name")) {
            if (!is_str || has_esc) goto out; /* not a string: the handler reports it */
            pl->name = v + 1; pl->name_n = (Py_ssize_t)vn - 2; pl->has_name = 1;
        } else if (key_is(k, kn, "ts")) {
            if (!is_num || !as_int(v, vn, &pl->ts)) goto out;
            pl->has_ts = 1;
        } else if (key_is(k, kn, "ph")) {
            if (is_str && !has_esc) { pl->ph = v + 1; pl->ph_n = (Py_ssize_t)vn - 2; pl->has_ph = 1; }
            else if (v[0] == 't' || v[0] == 'f') goto out; /* keep ph simple: a bool is no phase, but let Python say */
        } else if (key_is(k, kn, "cat")) {
            if (is_str && !has_esc) { pl->cat = v + 1; pl->cat_n = (Py_ssize_t)vn - 2; pl->has_cat = 1; }
            else if (vn == 4 && !memcmp(v, "null", 4)) pl->cat_null = 1;
            else goto out; /* a cat that is not text is stored as the column coerces it */
        } else if (key_is(k, kn, "dur")) {
            if (is_num) { if (!as_int(v, vn, &pl->dur)) goto out; pl->dur_kind = 1; }
            else if (v[0] == 't' || v[0] == 'f') goto out; /* int(True) */
        } else if (key_is(k, kn, "args")) {
            if (vn == 4 && !memcmp(v, "null", 4)) continue; /* d.get("args") is None */
            pl->has_args = 1; pl->args_off = top.m[i].voff; pl->args_len = vn; /* its members: pl->args_m */
        }
    }
    if (!pl->has_name || !pl->has_ts) goto out; /* the handler reports it */
    for (Py_ssize_t j = 0; j < pl->args_m.n; j++) {
        member *m = &pl->args_m.m[j];
        const char *v = o->p + m->voff;
        if (key_is(o->p + m->koff, m->klen, "compile_id") && v[0] == '"') {
            if (memchr(v, '\\', m->vlen)) goto out;
            if (!(m->vlen == 6 && !memcmp(v, "\"None\"", 6))) { pl->cid = v + 1; pl->cid_n = (Py_ssize_t)m->vlen - 2; }
        }
    }
    rc = 1;
out:
    PyMem_Free(top.m);
    return rc;
}

/* ---- the handler ------------------------------------------------------------------------------ */
static PyObject *S_TRACE, *S_FRAME, *S_BACKWARD, *S_WRAPPER, *S_RUNTIME, *S_OTHER;

static int init_strings(void) {
    if (S_TRACE) return 0;
    init_plain();
    S_TRACE = PyUnicode_InternFromString("trace");
    S_FRAME = PyUnicode_InternFromString("frame_compile");
    S_BACKWARD = PyUnicode_InternFromString("backward_compile");
    S_WRAPPER = PyUnicode_InternFromString("wrapper");
    S_RUNTIME = PyUnicode_InternFromString("runtime");
    S_OTHER = PyUnicode_InternFromString("other");
    return S_TRACE && S_FRAME && S_BACKWARD && S_WRAPPER && S_RUNTIME && S_OTHER ? 0 : -1;
}

static int str_eq(PyObject *s, PyObject *lit) {
    return PyUnicode_Check(s) && PyUnicode_Compare(s, lit) == 0;
}

/* phases._stage: (stage, top_level) of a span opening inside the open spans (new references in *stage) */
static int stage_of(PyObject *name, PyObject *c, PyObject *spans, PyObject *roots, PyObject *wrappers,
                    PyObject **stage, int *top) {
    PyObject *r = PyDict_GetItemWithError(roots, name);
    if (r) { Py_INCREF(r); *stage = r; *top = 1; return 0; }
    if (PyErr_Occurred()) return -1;
    Py_ssize_t n = PyList_GET_SIZE(spans);
    for (Py_ssize_t i = n - 1; i >= 0; i--) {
        PyObject *st = PyList_GET_ITEM(PyList_GET_ITEM(spans, i), 9);
        if (str_eq(st, S_FRAME) || str_eq(st, S_BACKWARD)) { Py_INCREF(st); *stage = st; *top = 0; return 0; }
    }
    int w = PySet_Contains(wrappers, name);
    if (w < 0) return -1;
    if (w) { Py_INCREF(S_WRAPPER); *stage = S_WRAPPER; *top = 0; return 0; }
    if (n) { PyObject *st = PyList_GET_ITEM(PyList_GET_ITEM(spans, n - 1), 9); Py_INCREF(st); *stage = st; *top = 0; return 0; }
    *stage = c != Py_None ? S_RUNTIME : S_OTHER;
    Py_INCREF(*stage);
    *top = 1;
    return 0;
}

static int spans_ok(PyObject *spans) { /* every open span is a list of 11 (what the handlers push) */
    Py_ssize_t n = PyList_GET_SIZE(spans);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *s = PyList_GET_ITEM(spans, i);
        if (!PyList_CheckExact(s) || PyList_GET_SIZE(s) != 11) return 0;
    }
    return 1;
}

static PyObject *bytes_or_none(const char *s, size_t n, int keep) {
    if (!keep) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize(s, (Py_ssize_t)n);
}

/* the merged args of a closing span ({**begin, **end} when both are objects), canonical, into m */
static int merge_args(PyObject *begin, const gbuf *o, const payload_t *pl, gbuf *m) {
    int end_obj = pl->has_args && o->p[pl->args_off] == '{' && pl->args_m.n > 0;
    const char *b = begin == Py_None ? NULL : PyBytes_AS_STRING(begin);
    size_t bn = begin == Py_None ? 0 : (size_t)PyBytes_GET_SIZE(begin);
    if (!end_obj) return b ? gb_put(m, b, bn) : 0;
    if (!b || b[0] != '{') return gb_put(m, o->p + pl->args_off, pl->args_len);
    members bm = {0};
    gbuf scratch = {0};
    jcur c = {(const unsigned char *)b, (const unsigned char *)b + bn, 1};
    int rc = c_object(&c, &scratch, 0, &bm, NULL);
    PyMem_Free(scratch.p);
    if (rc != 1) { PyMem_Free(bm.m); return rc < 0 ? -1 : -2; } /* -2: not canonical (cannot happen) */
    char *used = PyMem_Calloc((size_t)pl->args_m.n + 1, 1);
    if (!used) { PyMem_Free(bm.m); PyErr_NoMemory(); return -1; }
    rc = gb_put(m, "{", 1);
    int first = 1;
    for (Py_ssize_t i = 0; i < bm.n && rc == 0; i++) {
        const char *k = b + bm.m[i].koff, *v = b + bm.m[i].voff;
        size_t kn = bm.m[i].klen, vn = bm.m[i].vlen;
        for (Py_ssize_t j = 0; j < pl->args_m.n; j++) {
            const member *e = &pl->args_m.m[j];
            if (e->klen == kn && !memcmp(o->p + e->koff, k, kn)) { v = o->p + e->voff; vn = e->vlen; used[j] = 1; break; }
        }
        rc = (first ? 0 : gb_put(m, ",", 1)) || gb_put(m, k, kn) || gb_put(m, ":", 1) || gb_put(m, v, vn) ? -1 : 0;
        first = 0;
    }
    for (Py_ssize_t j = 0; j < pl->args_m.n && rc == 0; j++) {
        const member *e = &pl->args_m.m[j];
        if (used[j]) continue;
        rc = (first ? 0 : gb_put(m, ",", 1)) || gb_put(m, o->p + e->koff, e->klen) || gb_put(m, ":", 1) ||
             gb_put(m, o->p + e->voff, e->vlen) ? -1 : 0;
        first = 0;
    }
    if (rc == 0) rc = gb_put(m, "}", 1);
    PyMem_Free(used);
    PyMem_Free(bm.m);
    return rc;
}

PyObject *pt2_chromium(PyObject *self, PyObject *const *a, Py_ssize_t na) {
    if (na != 9 || !PyList_CheckExact(a[2]) || !PyList_CheckExact(a[3]) || !PyDict_Check(a[7]) || !PyAnySet_Check(a[8])) {
        PyErr_SetString(PyExc_TypeError, "chromium(payload, cid, spans, rows, file, rank, line_no, roots, wrappers)");
        return NULL;
    }
    if (init_strings() < 0) return NULL;
    PyObject *payload = a[0], *cid = a[1], *spans = a[2], *rows = a[3], *file = a[4], *rank = a[5], *line_no = a[6];
    if (!PyBytes_Check(payload) || !spans_ok(spans)) return PyLong_FromLong(0);
    gbuf o = {0};
    payload_t pl;
    PyObject *result = NULL, *name = NULL, *c = NULL, *cat = NULL, *stage = NULL, *args = NULL, *row = NULL;
    int rc = read_payload((const unsigned char *)PyBytes_AS_STRING(payload), PyBytes_GET_SIZE(payload), &o, &pl);
    if (rc < 0) goto done;
    if (rc == 0) { result = PyLong_FromLong(0); goto done; }
    char ph = pl.has_ph && pl.ph_n == 1 ? pl.ph[0] : 0;
    if (ph != 'B' && ph != 'E' && ph != 'i' && ph != 'I' && ph != 'X') { result = PyLong_FromLong(1); goto done; } /* no row */
    name = PyUnicode_FromStringAndSize(pl.name, pl.name_n);
    if (!name) goto done;
    if (pl.cid) { if (!(c = PyUnicode_FromStringAndSize(pl.cid, pl.cid_n))) goto done; }
    else { c = cid; Py_INCREF(c); }
    Py_ssize_t ns = PyList_GET_SIZE(spans);
    if (ph == 'E') {
        Py_ssize_t match = -1;
        for (Py_ssize_t i = ns - 1; i >= 0; i--) {
            PyObject *sp = PyList_GET_ITEM(spans, i);
            int eq = PyObject_RichCompareBool(PyList_GET_ITEM(sp, 0), name, Py_EQ);
            if (eq < 0) goto done;
            if (!eq) continue;
            eq = PyObject_RichCompareBool(PyList_GET_ITEM(sp, 1), c, Py_EQ);
            if (eq < 0) goto done;
            if (eq) { match = i; break; }
            if (match < 0) match = i;
        }
        if (match < 0) { result = PyLong_FromLong(0); goto done; } /* unmatched: the handler reports it */
        PyObject *sp = PyList_GET_ITEM(spans, match);
        PyObject *bargs = PyList_GET_ITEM(sp, 5), *start_o = PyList_GET_ITEM(sp, 2);
        if ((bargs != Py_None && !PyBytes_CheckExact(bargs)) || !PyLong_CheckExact(start_o)) { result = PyLong_FromLong(0); goto done; }
        int of = 0;
        long long start = PyLong_AsLongLongAndOverflow(start_o, &of);
        if (of || (start == -1 && PyErr_Occurred()) || start < -((long long)1 << 62) || start > ((long long)1 << 62)) {
            PyErr_Clear(); result = PyLong_FromLong(0); goto done;
        }
        gbuf m = {0};
        int mr = merge_args(bargs, &o, &pl, &m);
        if (mr == -2) { PyMem_Free(m.p); result = PyLong_FromLong(0); goto done; }
        if (mr < 0) { PyMem_Free(m.p); goto done; }
        args = bytes_or_none(m.p, m.len, m.len > 0 && truthy(m.p, m.len));
        PyMem_Free(m.p);
        if (!args) goto done;
        long long dur = pl.ts - start;
        row = Py_BuildValue("(OOOOOOOOOOOLOOOO)", S_TRACE, file, PyList_GET_ITEM(sp, 8), PyList_GET_ITEM(sp, 6),
                            PyList_GET_ITEM(sp, 1), PyList_GET_ITEM(sp, 0), PyList_GET_ITEM(sp, 4), PyList_GET_ITEM(sp, 3),
                            PyList_GET_ITEM(sp, 9), PyList_GET_ITEM(sp, 10), start_o, dur, start_o, Py_False,
                            PyList_GET_ITEM(sp, 7), args);
        if (!row) goto done;
        int frame = PyUnicode_Check(PyList_GET_ITEM(sp, 0)) &&
                    PyUnicode_CompareWithASCIIString(PyList_GET_ITEM(sp, 0), "entire_frame_compile") == 0;
        PyObject *span_cid = PyList_GET_ITEM(sp, 1);
        Py_INCREF(span_cid);
        result = frame ? Py_BuildValue("(OL)", span_cid, dur) : PyLong_FromLong(1);
        Py_DECREF(span_cid);
        if (!result || PyList_Append(rows, row) < 0 || PySequence_DelItem(spans, match) < 0) Py_CLEAR(result);
        goto done;
    }
    int top;
    if (stage_of(name, c, spans, a[7], a[8], &stage, &top) < 0) goto done;
    if (pl.has_cat) { if (!(cat = PyUnicode_FromStringAndSize(pl.cat, pl.cat_n))) goto done; }
    else { cat = Py_None; Py_INCREF(cat); }
    PyObject *parent = ns ? PyList_GET_ITEM(PyList_GET_ITEM(spans, ns - 1), 0) : Py_None;
    if (ph == 'B') {
        args = pl.has_args ? PyBytes_FromStringAndSize(o.p + pl.args_off, (Py_ssize_t)pl.args_len) : (Py_INCREF(Py_None), Py_None);
        if (!args) goto done;
        row = Py_BuildValue("[OOLnOOOOOOO]", name, c, pl.ts, ns, parent, args, line_no, cat, rank, stage, top ? Py_True : Py_False);
        if (!row || PyList_Append(spans, row) < 0) goto done;
        result = PyLong_FromLong(1);
        goto done;
    }
    /* an instant (i, I) or a complete event (X) */
    args = bytes_or_none(o.p + pl.args_off, pl.args_len, pl.has_args && truthy(o.p + pl.args_off, pl.args_len));
    if (!args) goto done;
    PyObject *dur = NULL;
    if (ph != 'X') dur = PyLong_FromLong(0);
    else if (pl.dur_kind) dur = PyLong_FromLongLong(pl.dur);
    else { dur = Py_None; Py_INCREF(dur); }
    if (!dur) goto done;
    row = Py_BuildValue("(OOOOOOOnOOLNLOOO)", S_TRACE, file, rank, line_no, c, name, parent, ns, stage,
                        top && ph == 'X' ? Py_True : Py_False, pl.ts, dur, pl.ts, ph != 'X' ? Py_True : Py_False, cat, args);
    if (!row || PyList_Append(rows, row) < 0) goto done;
    result = PyLong_FromLong(1);
done:
    PyMem_Free(o.p);
    PyMem_Free(pl.args_m.m);
    Py_XDECREF(name); Py_XDECREF(c); Py_XDECREF(cat); Py_XDECREF(stage); Py_XDECREF(args); Py_XDECREF(row);
    return result;
}
