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
 * Rows are written straight into Arrow column buffers (a PhaseCols, phase_cols.c), never as Python objects;
 * so a row is written here only when every value of it fits its column as the Python row's would (a rank
 * in int32, a start inside the `ts` column's years 1-9999, text that is UTF-8, a category that is text or
 * null): a value the Python path would report as not fitting (rows.to_array's on_bad) is left to it.
 *
 * chromium(cols, payload, cid, spans, rows, rank, line_no, roots, wrappers)
 *   -> 0: not taken (nothing changed); 1: done; (cid, dur_us): done, and an entire_frame_compile span closed
 *   (the caller keeps its duration for the metrics handler, as _emit does). `rows` is the list of the Python
 *   handlers' tuple rows: a row written here comes after len(rows) of them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "canon.h"
#include "phase_cols.h"

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
    if (S_OTHER) return 0; /* set last, once all the others are */
    init_plain();
    if (!(S_TRACE = PyUnicode_InternFromString("trace")) || !(S_FRAME = PyUnicode_InternFromString("frame_compile"))
        || !(S_BACKWARD = PyUnicode_InternFromString("backward_compile")) || !(S_WRAPPER = PyUnicode_InternFromString("wrapper"))
        || !(S_RUNTIME = PyUnicode_InternFromString("runtime")) || !(S_OTHER = PyUnicode_InternFromString("other"))) {
        Py_CLEAR(S_TRACE); Py_CLEAR(S_FRAME); Py_CLEAR(S_BACKWARD); Py_CLEAR(S_WRAPPER); Py_CLEAR(S_RUNTIME); /* S_OTHER is NULL */
        return -1;
    }
    return 0;
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

/* the `ts` column's range (schema.TS_MIN, TS_LIMIT): years 1-9999 in epoch microseconds */
#define TS_MIN (-62135596800LL * 1000000LL)
#define TS_LIMIT (253402300800LL * 1000000LL)

/* an exact int in [lo, hi) (what a Python row's value must be for its column to take it as it is) */
static int int_in(PyObject *o, long long lo, long long hi, long long *v) {
    if (!PyLong_CheckExact(o)) return 0;
    int of = 0;
    *v = PyLong_AsLongLongAndOverflow(o, &of);
    if (of || (*v == -1 && PyErr_Occurred())) { PyErr_Clear(); return 0; }
    return *v >= lo && *v < hi;
}

/* the UTF-8 of an exact str (NULL for None when nullable); 0 when it is neither or has no UTF-8 (a surrogate) */
static int text_of(PyObject *o, int nullable, const char **s, Py_ssize_t *n) {
    if (o == Py_None && nullable) { *s = NULL; *n = 0; return 1; }
    if (!PyUnicode_CheckExact(o)) return 0;
    *s = PyUnicode_AsUTF8AndSize(o, n);
    if (!*s) { PyErr_Clear(); return 0; }
    return 1;
}

/* the row's rank: None or an int32 (1), else 0 */
static int rank_of(PyObject *o, phase_row *r) {
    r->has_rank = o != Py_None;
    return !r->has_rank || int_in(o, -((long long)1 << 31), (long long)1 << 31, &r->rank);
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

int phases_take(PyObject *pc, PyObject *payload, PyObject *cid, PyObject *spans, PyObject *rows, PyObject *rank,
                PyObject *line_no, PyObject *roots, PyObject *wrappers, PyObject **frame) {
    *frame = NULL;
    if (init_strings() < 0) return -1;
    Py_ssize_t before = PyList_GET_SIZE(rows);
    if (!PyBytes_Check(payload) || !spans_ok(spans)) return 0;
    gbuf o = {0}, m = {0};
    payload_t pl;
    phase_row r;
    memset(&r, 0, sizeof r);
    int result = -1;
    PyObject *name = NULL, *c = NULL, *cat = NULL, *stage = NULL, *args = NULL, *span = NULL;
    int rc = read_payload((const unsigned char *)PyBytes_AS_STRING(payload), PyBytes_GET_SIZE(payload), &o, &pl);
    if (rc < 0) goto done;
    if (rc == 0) goto not_taken;
    char ph = pl.has_ph && pl.ph_n == 1 ? pl.ph[0] : 0;
    if (ph != 'B' && ph != 'E' && ph != 'i' && ph != 'I' && ph != 'X') { result = 1; goto done; } /* no row */
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
        if (match < 0) goto not_taken; /* unmatched: the handler reports it */
        PyObject *sp = PyList_GET_ITEM(spans, match), **f = ((PyListObject *)sp)->ob_item;
        PyObject *bargs = f[5];
        /* the span's fields as _emit's row has them: each must fit its column as it is */
        if ((bargs != Py_None && !PyBytes_CheckExact(bargs)) || !int_in(f[2], TS_MIN, TS_LIMIT, &r.start) ||
            !text_of(f[0], 0, &r.phase, &r.phase_n) || !text_of(f[1], 1, &r.cid, &r.cid_n) ||
            !int_in(f[3], -((long long)1 << 31), (long long)1 << 31, &r.depth) ||
            !text_of(f[4], 1, &r.parent, &r.parent_n) || !int_in(f[6], LLONG_MIN, LLONG_MAX, &r.line_no) ||
            !text_of(f[7], 1, &r.cat, &r.cat_n) || !rank_of(f[8], &r) || !text_of(f[9], 0, &r.stage, &r.stage_n) ||
            (f[10] != Py_True && f[10] != Py_False))
            goto not_taken;
        int mr = merge_args(bargs, &o, &pl, &m);
        if (mr == -2) goto not_taken;
        if (mr < 0) goto done;
        if (m.len > 0 && truthy(m.p, m.len)) { r.args = m.p; r.args_n = (Py_ssize_t)m.len; }
        r.top = f[10] == Py_True;
        r.dur = pl.ts - r.start; /* both well inside int64 */
        r.has_dur = 1;
        if (!phase_cols_fits(pc, &r)) goto not_taken;
        int is_frame = r.phase_n == 20 && !memcmp(r.phase, "entire_frame_compile", 20);
        span = sp;
        Py_INCREF(span); /* its fields stay alive while the row is written and the span removed */
        if (phase_cols_add(pc, &r, before) < 0) goto done;
        if (is_frame && !(*frame = Py_BuildValue("(OL)", f[1], r.dur))) goto done;
        if (PySequence_DelItem(spans, match) < 0) { Py_CLEAR(*frame); goto done; }
        result = 1;
        goto done;
    }
    int top;
    if (stage_of(name, c, spans, roots, wrappers, &stage, &top) < 0) goto done;
    if (pl.has_cat) { if (!(cat = PyUnicode_FromStringAndSize(pl.cat, pl.cat_n))) goto done; }
    else { cat = Py_None; Py_INCREF(cat); }
    PyObject *parent = ns ? PyList_GET_ITEM(PyList_GET_ITEM(spans, ns - 1), 0) : Py_None;
    if (ph == 'B') {
        args = pl.has_args ? PyBytes_FromStringAndSize(o.p + pl.args_off, (Py_ssize_t)pl.args_len) : (Py_INCREF(Py_None), Py_None);
        if (!args) goto done;
        span = Py_BuildValue("[OOLnOOOOOOO]", name, c, pl.ts, ns, parent, args, line_no, cat, rank, stage, top ? Py_True : Py_False);
        if (!span || PyList_Append(spans, span) < 0) goto done;
        result = 1;
        goto done;
    }
    /* an instant (i, I) or a complete event (X): its row */
    r.start = pl.ts;
    r.phase = pl.name; r.phase_n = pl.name_n;
    r.depth = ns;
    r.cat = pl.has_cat ? pl.cat : NULL; r.cat_n = pl.cat_n;
    if (pl.has_args && truthy(o.p + pl.args_off, pl.args_len)) { r.args = o.p + pl.args_off; r.args_n = (Py_ssize_t)pl.args_len; }
    r.top = top && ph == 'X';
    r.instant = ph != 'X';
    r.has_dur = ph != 'X' || pl.dur_kind;
    r.dur = ph != 'X' ? 0 : pl.dur;
    if (r.start < TS_MIN || r.start >= TS_LIMIT || ns >= ((Py_ssize_t)1 << 31) || !rank_of(rank, &r) ||
        !int_in(line_no, LLONG_MIN, LLONG_MAX, &r.line_no) || !text_of(c, 1, &r.cid, &r.cid_n) ||
        !text_of(parent, 1, &r.parent, &r.parent_n) || !text_of(stage, 0, &r.stage, &r.stage_n) || !phase_cols_fits(pc, &r))
        goto not_taken;
    if (phase_cols_add(pc, &r, before) < 0) goto done;
    result = 1;
    goto done;
not_taken:
    result = 0;
done:
    PyMem_Free(o.p);
    PyMem_Free(m.p);
    PyMem_Free(pl.args_m.m);
    Py_XDECREF(name); Py_XDECREF(c); Py_XDECREF(cat); Py_XDECREF(stage); Py_XDECREF(args); Py_XDECREF(span);
    return result;
}

PyObject *pt2_chromium(PyObject *self, PyObject *const *a, Py_ssize_t na) {
    if (na != 9 || !PhaseCols_Check(a[0]) || !PyList_CheckExact(a[3]) || !PyList_CheckExact(a[4]) || !PyDict_Check(a[7]) ||
        !PyAnySet_Check(a[8])) {
        PyErr_SetString(PyExc_TypeError, "chromium(cols, payload, cid, spans, rows, rank, line_no, roots, wrappers)");
        return NULL;
    }
    PyObject *frame;
    int r = phases_take(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], &frame);
    if (r < 0) return NULL;
    return frame ? frame : PyLong_FromLong(r);
}
