/* The TORCH_TRACE record splitter's inner loop in one native pass (pt2logs._native._records).
 *
 * It mirrors, rule for rule, the per-buffer loop of src/pt2logs/readers/records.py (the oracle:
 * tests/readers/test_native_records.py checks that both give identical records, errors and tables).
 * The Python wrapper (readers/records_native.py) still assembles chunks into buffers of whole lines
 * (CRLF detection, over-long lines, the missing final newline); this file does, per buffer: find the
 * record boundaries (line starts that are not payload lines), check each header's glog prefix, slice
 * the envelope, join + strip the payload lines' TABs into one buffer, all in one pass over the bytes; then
 * the buffer's payload md5s together (md5x8.h: eight at a time, see flush_pending). No Python object is
 * made per payload line, only one per record.
 *
 * Scanner(record_type, max_payload, excerpt)
 *   .feed(buf, n, crlf, line_at) -> (items, line_at, has_errors)   buf[:n] is whole lines (buf[n-1] == '\n')
 *   .finish() -> items                                  closes the open record
 * items: record_type instances (11 fields: the 10 of records.Record + payload md5 hex or None),
 *        or error tuples (kind, line_no, count, excerpt) that the wrapper turns into messages.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include "md5x8.h"

typedef struct {
    PyObject_HEAD
    PyObject *record_type;
    Py_ssize_t max_payload, excerpt;
    long long line_at;
    int p_open, p_has_fields, p_cut, crlf;
    long long p_line, p_n;
    Py_ssize_t p_size;
    PyObject *fields[7]; /* level, mmdd, tod_us, thread, pathname, lineno, envelope */
    char *raw;           /* the open record's payload lines, as in the file */
    Py_ssize_t raw_len, raw_cap;
    PyObject *levels[5], *last_path;
    /* records whose payload md5 is still to come: md5x8.h does a whole buffer's at once (their place in
     * items holds None until then) */
    PyObject **pend;
    Py_ssize_t *pend_at, n_pend, cap_pend;
    md5_job *jobs;
    char *hexes;
} Scanner;

static int raw_append(Scanner *sc, const char *p, Py_ssize_t n) {
    if (sc->raw_len + n > sc->raw_cap) {
        Py_ssize_t cap = sc->raw_cap ? sc->raw_cap : 4096;
        while (cap < sc->raw_len + n) cap *= 2;
        char *r = PyMem_Realloc(sc->raw, (size_t)cap);
        if (!r) { PyErr_NoMemory(); return -1; }
        sc->raw = r;
        sc->raw_cap = cap;
    }
    memcpy(sc->raw + sc->raw_len, p, (size_t)n);
    sc->raw_len += n;
    return 0;
}

static int emit_error(PyObject *items, const char *kind, long long line, long long n, const char *p, Py_ssize_t len) {
    PyObject *t = Py_BuildValue("(sLLy#)", kind, line, n, p, len);
    if (!t) return -1;
    int r = PyList_Append(items, t);
    Py_DECREF(t);
    return r;
}

static void clear_fields(Scanner *sc) {
    for (int i = 0; i < 7; i++) Py_CLEAR(sc->fields[i]);
}

/* the record_type instance of an 11-tuple (the tuple's reference is taken) */
static PyObject *make_record(Scanner *sc, PyObject *t) {
    PyObject *args = PyTuple_Pack(1, t);
    Py_DECREF(t);
    if (!args) return NULL;
    PyObject *rec = PyTuple_Type.tp_new((PyTypeObject *)sc->record_type, args, NULL);
    Py_DECREF(args);
    return rec;
}

static int pend_add(Scanner *sc, PyObject *t, Py_ssize_t at) {
    if (sc->n_pend == sc->cap_pend) {
        Py_ssize_t cap = sc->cap_pend ? sc->cap_pend * 2 : 256;
        PyObject **p = PyMem_Realloc(sc->pend, (size_t)cap * sizeof *p);
        if (p) sc->pend = p;
        Py_ssize_t *a = p ? PyMem_Realloc(sc->pend_at, (size_t)cap * sizeof *a) : NULL;
        if (a) sc->pend_at = a;
        md5_job *j = a ? PyMem_Realloc(sc->jobs, (size_t)cap * sizeof *j) : NULL;
        if (j) sc->jobs = j;
        char *h = j ? PyMem_Realloc(sc->hexes, (size_t)cap * 32) : NULL;
        if (!h) { PyErr_NoMemory(); return -1; }
        sc->hexes = h;
        sc->cap_pend = cap;
    }
    sc->pend[sc->n_pend] = t;
    sc->pend_at[sc->n_pend++] = at;
    return 0;
}

static void pend_clear(Scanner *sc) {
    for (Py_ssize_t i = 0; i < sc->n_pend; i++) Py_CLEAR(sc->pend[i]);
    sc->n_pend = 0;
}

/* records.py _record(): drop the first TAB and the last newline, CRLF -> LF, "\n\t" -> "\n"; its md5 is
 * computed with the buffer's others (flush_pending) */
static int emit_record(Scanner *sc, PyObject *items) {
    PyObject *payload = Py_None, *hex = Py_None;
    Py_INCREF(Py_None);
    Py_INCREF(Py_None);
    if (sc->raw_len > 0) {
        const unsigned char *r = (const unsigned char *)sc->raw;
        Py_ssize_t a = r[0] == '\t' ? 1 : 0, b = sc->raw_len - 1;
        if (b < a) b = a;
        Py_DECREF(payload);
        payload = PyBytes_FromStringAndSize(NULL, b - a);
        if (!payload) { Py_DECREF(hex); return -1; }
        unsigned char *o = (unsigned char *)PyBytes_AS_STRING(payload), *o0 = o;
        if (!sc->crlf) { /* line by line: copy through each newline, skip the TAB after it */
            Py_ssize_t i = a;
            while (i < b) {
                const unsigned char *nl = memchr(r + i, '\n', (size_t)(b - i));
                Py_ssize_t e = nl ? (Py_ssize_t)(nl - r) + 1 : b;
                memcpy(o, r + i, (size_t)(e - i));
                o += e - i;
                i = e < b && r[e] == '\t' ? e + 1 : e;
            }
        } else {
            unsigned char prev = 0;
            for (Py_ssize_t i = a; i < b; i++) {
                unsigned char c = r[i];
                if (c == '\r' && (i + 1 == b || r[i + 1] == '\n')) continue; /* \r\n -> \n; a final \r goes */
                if (c == '\t' && prev == '\n') { prev = c; continue; }
                *o++ = c;
                prev = c;
            }
        }
        Py_ssize_t n = o - o0;
        if (n != b - a && _PyBytes_Resize(&payload, n) < 0) { Py_DECREF(hex); return -1; }
    }
    PyObject *t = PyTuple_New(11);
    if (!t) { Py_DECREF(payload); Py_DECREF(hex); return -1; }
    PyTuple_SET_ITEM(t, 0, PyLong_FromLongLong(sc->p_line));
    PyTuple_SET_ITEM(t, 1, PyLong_FromLongLong(sc->p_n));
    for (int i = 0; i < 6; i++) { PyTuple_SET_ITEM(t, 2 + i, sc->fields[i]); sc->fields[i] = NULL; }
    PyTuple_SET_ITEM(t, 8, sc->fields[6]);
    sc->fields[6] = NULL;
    PyTuple_SET_ITEM(t, 9, payload);
    PyTuple_SET_ITEM(t, 10, hex);
    if (!PyTuple_GET_ITEM(t, 0) || !PyTuple_GET_ITEM(t, 1)) { Py_DECREF(t); return -1; }
    if (PyTuple_GET_ITEM(t, 9) != Py_None) { /* its md5 later, with the buffer's others */
        if (pend_add(sc, t, PyList_GET_SIZE(items)) < 0) { Py_DECREF(t); return -1; }
        return PyList_Append(items, Py_None);
    }
    PyObject *rec = make_record(sc, t);
    if (!rec) return -1;
    int rc = PyList_Append(items, rec);
    Py_DECREF(rec);
    return rc;
}

/* the pending records' md5s, all at once, each record then put in its place in items */
static int flush_pending(Scanner *sc, PyObject *items) {
    Py_ssize_t k = sc->n_pend;
    if (!k) return 0;
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *pl = PyTuple_GET_ITEM(sc->pend[i], 9);
        sc->jobs[i].p = (const unsigned char *)PyBytes_AS_STRING(pl);
        sc->jobs[i].n = (size_t)PyBytes_GET_SIZE(pl);
        sc->jobs[i].hex = sc->hexes + 32 * i;
    }
    md5_many(sc->jobs, (size_t)k);
    int rc = 0;
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *t = sc->pend[i];
        sc->pend[i] = NULL;
        PyObject *hex = rc ? NULL : PyUnicode_FromStringAndSize(sc->hexes + 32 * i, 32);
        if (!hex) { Py_DECREF(t); rc = -1; continue; }
        Py_SETREF(((PyTupleObject *)t)->ob_item[10], hex); /* t is ours alone: not shared yet */
        PyObject *rec = make_record(sc, t);
        if (!rec || PyList_SetItem(items, sc->pend_at[i], rec) < 0) rc = -1;
    }
    sc->n_pend = 0;
    return rc;
}

/* close the open record (records.py: the `if p_open:` blocks before a header and at the end) */
static int close_open(Scanner *sc, PyObject *items) {
    if (!sc->p_open) return 0;
    if (sc->p_has_fields) {
        if (sc->p_cut && emit_error(items, "payload_too_large", sc->p_line, sc->p_n, "", 0) < 0) return -1;
        if (emit_record(sc, items) < 0) return -1;
    } else if (sc->raw_len > 0) {
        Py_ssize_t k = sc->raw_len < sc->excerpt ? sc->raw_len : sc->excerpt;
        if (emit_error(items, "orphan_payload_after_bad_line", sc->p_line + 1, 0, sc->raw, k) < 0) return -1;
    }
    sc->p_open = 0;
    sc->raw_len = 0;
    if (sc->raw_cap > (4 << 20)) { /* a huge payload's buffer is not kept for the rest of the file */
        PyMem_Free(sc->raw);
        sc->raw = NULL;
        sc->raw_cap = 0;
    }
    clear_fields(sc);
    return 0;
}

static PyObject *digits(const char *p, Py_ssize_t n) {
    if (n <= 18) {
        long long v = 0;
        for (Py_ssize_t i = 0; i < n; i++) v = v * 10 + (p[i] - '0');
        return PyLong_FromLongLong(v);
    }
    char *tmp = PyMem_Malloc((size_t)n + 1);
    if (!tmp) return PyErr_NoMemory();
    memcpy(tmp, p, (size_t)n);
    tmp[n] = 0;
    PyObject *r = PyLong_FromString(tmp, NULL, 10);
    PyMem_Free(tmp);
    return r;
}

#define DIG(c) ((unsigned char)((c) - '0') <= 9)

/* records.py _HDR: ([VIWEC])(\d{4}) (\d\d:\d\d:\d\d)\.(\d{6}) +(\d+) ([^\n]*?):(\d+)\] matched at
 * b[s:end]. Returns the index after "] ", or -1; fills the offsets of the groups. */
static Py_ssize_t match_header(const char *b, Py_ssize_t s, Py_ssize_t end, Py_ssize_t g[8]) {
    Py_ssize_t i = s;
    if (end - s < 28) return -1; /* the shortest header: "V0101 00:00:00.000000 1 :1] " */
    if (!strchr("VIWEC", b[i]) || b[i] == 0) return -1;
    for (int k = 1; k <= 4; k++) if (!DIG(b[i + k])) return -1;
    if (b[i + 5] != ' ') return -1;
    const char *t = b + i + 6; /* HH:MM:SS.uuuuuu */
    if (!(DIG(t[0]) && DIG(t[1]) && t[2] == ':' && DIG(t[3]) && DIG(t[4]) && t[5] == ':' && DIG(t[6]) && DIG(t[7]) && t[8] == '.'))
        return -1;
    for (int k = 9; k < 15; k++) if (!DIG(t[k])) return -1;
    i += 21;
    if (b[i] != ' ') return -1;
    while (i < end && b[i] == ' ') i++;
    g[0] = i;
    while (i < end && DIG(b[i])) i++;
    if (i == g[0] || i >= end || b[i] != ' ') return -1;
    g[1] = i;
    g[2] = ++i; /* path start */
    while (i < end) {
        const char *c = memchr(b + i, ':', (size_t)(end - i));
        if (!c) return -1;
        Py_ssize_t j = c - b, k = j + 1;
        while (k < end && DIG(b[k])) k++;
        if (k > j + 1 && k + 1 < end && b[k] == ']' && b[k + 1] == ' ') {
            g[3] = j; g[4] = j + 1; g[5] = k;
            return k + 2;
        }
        i = j + 1;
    }
    return -1;
}

static int is_space(unsigned char c) { return c == ' ' || (c >= 9 && c <= 13); }

static int open_header(Scanner *sc, const char *b, Py_ssize_t s, Py_ssize_t end, Py_ssize_t mend, Py_ssize_t *g) {
    static const char LV[] = "VIWEC";
    int li = (int)(strchr(LV, b[s]) - LV);
    Py_INCREF(sc->levels[li]);
    sc->fields[0] = sc->levels[li];
    const char *t = b + s + 6;
    long mmdd = (b[s + 1] - '0') * 1000 + (b[s + 2] - '0') * 100 + (b[s + 3] - '0') * 10 + (b[s + 4] - '0');
    long long hh = (t[0] - '0') * 10 + (t[1] - '0'), mi = (t[3] - '0') * 10 + (t[4] - '0'), ss = (t[6] - '0') * 10 + (t[7] - '0');
    long long us = 0;
    for (int k = 9; k < 15; k++) us = us * 10 + (t[k] - '0');
    sc->fields[1] = PyLong_FromLong(mmdd);
    sc->fields[2] = PyLong_FromLongLong(((hh * 60 + mi) * 60 + ss) * 1000000LL + us);
    sc->fields[3] = digits(b + g[0], g[1] - g[0]);
    Py_ssize_t plen = g[3] - g[2];
    if (sc->last_path && PyBytes_GET_SIZE(sc->last_path) == plen && memcmp(PyBytes_AS_STRING(sc->last_path), b + g[2], (size_t)plen) == 0) {
        Py_INCREF(sc->last_path);
        sc->fields[4] = sc->last_path;
    } else {
        sc->fields[4] = PyBytes_FromStringAndSize(b + g[2], plen);
        if (sc->fields[4]) { Py_XDECREF(sc->last_path); Py_INCREF(sc->fields[4]); sc->last_path = sc->fields[4]; }
    }
    sc->fields[5] = digits(b + g[4], g[5] - g[4]);
    Py_ssize_t e = sc->crlf && b[end - 1] == '\r' ? end - 1 : end;
    sc->fields[6] = PyBytes_FromStringAndSize(b + mend, e - mend);
    for (int i = 1; i < 7; i++) if (!sc->fields[i]) return -1;
    return 0;
}

/* a run of payload lines b[pos:s] holding n newlines (records.py: the `if s > pos:` block) */
static int segment(Scanner *sc, PyObject *items, const char *b, Py_ssize_t pos, Py_ssize_t s, long long n) {
    if (sc->p_open) {
        if (sc->p_size < sc->max_payload) {
            if (raw_append(sc, b + pos, s - pos) < 0) return -1;
            sc->p_size += s - pos;
        } else sc->p_cut = 1;
        sc->p_n += n;
    } else {
        for (Py_ssize_t i = pos; i < s; i++)
            if (!is_space((unsigned char)b[i])) {
                Py_ssize_t k = s - pos < sc->excerpt ? s - pos : sc->excerpt;
                return emit_error(items, "orphan_payload", sc->line_at, n, b + pos, k);
            }
    }
    return 0;
}

static PyObject *Scanner_feed(Scanner *sc, PyObject *args) {
    Py_buffer view;
    Py_ssize_t len;
    int crlf;
    long long line_at;
    if (!PyArg_ParseTuple(args, "y*npL", &view, &len, &crlf, &line_at)) return NULL;
    const char *b = view.buf;
    PyObject *items = PyList_New(0);
    if (!items || len < 1 || len > view.len || b[len - 1] != '\n') {
        if (items) PyErr_SetString(PyExc_ValueError, "feed: buf[:n] must be whole lines");
        goto fail;
    }
    sc->crlf = crlf;
    sc->line_at = line_at;
    Py_ssize_t last_nl = len - 1, pos = 0, scan = 0, s = 0;
    long long nonq = 0;
    int have = b[0] != '\t';
#define QUAL(p) ((p) + 1 == last_nl || (b[(p) + 1] != '\t' && b[(p) + 1] != '\n'))
    for (;;) {
        if (!have) {
            while (scan < last_nl) {
                const char *q = memchr(b + scan, '\n', (size_t)(last_nl - scan));
                if (!q) { scan = last_nl; break; }
                Py_ssize_t p = q - b;
                scan = p + 1;
                if (QUAL(p)) { s = p + 1; have = 1; break; }
                nonq++;
            }
            if (!have) break;
        }
        have = 0;
        if (s > pos) {
            if (segment(sc, items, b, pos, s, nonq + 1) < 0) goto fail;
            sc->line_at += nonq + 1;
        }
        nonq = 0;
        Py_ssize_t end = (const char *)memchr(b + s, '\n', (size_t)(last_nl + 1 - s)) - b;
        Py_ssize_t g[8], mend = -1;
        if (b[s] == 'V' || b[s] == 'I' || b[s] == 'W' || b[s] == 'E' || b[s] == 'C') mend = match_header(b, s, end, g);
        if (mend < 0) {
            Py_ssize_t le = crlf && end > s && b[end - 1] == '\r' ? end - 1 : end;
            if (le > s) {
                if (emit_error(items, "bad_prefix", sc->line_at, 0, b + s, le - s < sc->excerpt ? le - s : sc->excerpt) < 0) goto fail;
                if (!sc->p_open) {
                    sc->p_open = 1; sc->p_has_fields = 0; sc->raw_len = 0; sc->p_line = sc->line_at;
                    sc->p_n = 1; sc->p_size = 0; sc->p_cut = 0;
                }
            } else if (sc->p_open) {
                if (sc->p_size < sc->max_payload) {
                    if (raw_append(sc, "\n", 1) < 0) goto fail;
                    sc->p_size += 1;
                } else sc->p_cut = 1;
                sc->p_n += 1;
            }
        } else {
            if (close_open(sc, items) < 0) goto fail;
            if (open_header(sc, b, s, end, mend, g) < 0) goto fail;
            sc->p_line = sc->line_at; sc->raw_len = 0; sc->p_open = 1; sc->p_has_fields = 1;
            sc->p_n = 1; sc->p_size = 0; sc->p_cut = 0;
        }
        sc->line_at += 1;
        pos = end + 1;
        if (end < last_nl && QUAL(end)) { s = end + 1; have = 1; } else scan = end + 1;
    }
    if (pos <= last_nl) {
        if (segment(sc, items, b, pos, last_nl + 1, nonq + 1) < 0) goto fail;
        sc->line_at += nonq + 1;
    }
    PyBuffer_Release(&view);
    if (flush_pending(sc, items) < 0) { pend_clear(sc); Py_DECREF(items); return NULL; }
    /* whether items holds any error tuple: without one, the wrapper hands the list on as it is */
    int had_errors = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items) && !had_errors; i++) had_errors = PyTuple_CheckExact(PyList_GET_ITEM(items, i));
    return Py_BuildValue("(NLO)", items, sc->line_at, had_errors ? Py_True : Py_False);
fail:
    PyBuffer_Release(&view);
    pend_clear(sc);
    Py_XDECREF(items);
    return NULL;
}

static PyObject *Scanner_finish(Scanner *sc, PyObject *unused) {
    PyObject *items = PyList_New(0);
    if (!items) return NULL;
    if (close_open(sc, items) < 0 || flush_pending(sc, items) < 0) { pend_clear(sc); Py_DECREF(items); return NULL; }
    return items;
}

static int Scanner_init(Scanner *sc, PyObject *args, PyObject *kw) {
    PyObject *rt;
    if (!PyArg_ParseTuple(args, "Onn", &rt, &sc->max_payload, &sc->excerpt)) return -1;
    Py_INCREF(rt);
    Py_XSETREF(sc->record_type, rt);
    static const char LV[] = "VIWEC";
    for (int i = 0; i < 5; i++) {
        Py_XSETREF(sc->levels[i], PyBytes_FromStringAndSize(LV + i, 1));
        if (!sc->levels[i]) return -1;
    }
    return 0;
}

static void Scanner_dealloc(Scanner *sc) {
    Py_XDECREF(sc->record_type);
    clear_fields(sc);
    for (int i = 0; i < 5; i++) Py_XDECREF(sc->levels[i]);
    Py_XDECREF(sc->last_path);
    pend_clear(sc);
    PyMem_Free(sc->pend);
    PyMem_Free(sc->pend_at);
    PyMem_Free(sc->jobs);
    PyMem_Free(sc->hexes);
    PyMem_Free(sc->raw);
    Py_TYPE(sc)->tp_free((PyObject *)sc);
}

static PyMethodDef Scanner_methods[] = {
    {"feed", (PyCFunction)Scanner_feed, METH_VARARGS, "feed(buf, n, crlf, line_at) -> (items, line_at, has_errors)"},
    {"finish", (PyCFunction)Scanner_finish, METH_NOARGS, "finish() -> items"},
    {NULL}};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pt2logs._native._records.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
};

static PyObject *py_md5(PyObject *self, PyObject *arg) {
    Py_buffer v;
    if (PyObject_GetBuffer(arg, &v, PyBUF_SIMPLE) < 0) return NULL;
    md5_ctx m;
    char h[32];
    md5_init(&m);
    md5_update(&m, v.buf, (size_t)v.len);
    md5_hex(&m, h);
    PyBuffer_Release(&v);
    return PyUnicode_FromStringAndSize(h, 32);
}

/* md5_hex_many(list of bytes) -> list of str: the splitter's batch md5 (md5x8.h), for the tests */
static PyObject *py_md5_many(PyObject *self, PyObject *arg) {
    if (!PyList_Check(arg)) { PyErr_SetString(PyExc_TypeError, "md5_hex_many(list of bytes)"); return NULL; }
    Py_ssize_t k = PyList_GET_SIZE(arg);
    md5_job *jobs = PyMem_Calloc((size_t)k + 1, sizeof *jobs);
    char *hx = PyMem_Malloc((size_t)k * 32 + 1);
    PyObject *out = jobs && hx ? PyList_New(k) : NULL;
    for (Py_ssize_t i = 0; out && i < k; i++) {
        PyObject *b = PyList_GET_ITEM(arg, i);
        if (!PyBytes_Check(b)) { PyErr_SetString(PyExc_TypeError, "md5_hex_many(list of bytes)"); Py_CLEAR(out); break; }
        jobs[i] = (md5_job){(const unsigned char *)PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b), hx + 32 * i};
    }
    if (out) {
        md5_many(jobs, (size_t)k);
        for (Py_ssize_t i = 0; i < k; i++) {
            PyObject *h = PyUnicode_FromStringAndSize(hx + 32 * i, 32);
            if (!h) { Py_CLEAR(out); break; }
            PyList_SET_ITEM(out, i, h);
        }
    } else if (!PyErr_Occurred()) PyErr_NoMemory();
    PyMem_Free(jobs);
    PyMem_Free(hx);
    return out;
}

PyObject *pt2_event_columns(PyObject *self, PyObject *args); /* events.c */
PyObject *pt2_chromium(PyObject *self, PyObject *const *args, Py_ssize_t nargs); /* phases.c */
PyObject *pt2_split_components(PyObject *self, PyObject *items); /* components.c */
extern PyTypeObject PhaseColsType; /* phase_cols.c */
extern PyTypeObject BufType; /* buffers.c */

static PyMethodDef module_methods[] = {
    {"md5_hex", py_md5, METH_O, "md5_hex(bytes) -> str (RFC 1321)"},
    {"md5_hex_many", py_md5_many, METH_O, "md5_hex_many(list of bytes) -> list of str (md5x8.h)"},
    {"event_columns", pt2_event_columns, METH_VARARGS,
     "event_columns(recs, start, handlers, art_handlers, file_rank, last_rank, bump, last_mmdd, max_rows, max_bytes) -> "
     "(stop, n, columns, handled, last_rank, bump, last_mmdd, payload_bytes, ranks); see events.c"},
    {"chromium", (PyCFunction)(void (*)(void))pt2_chromium, METH_FASTCALL,
     "chromium(cols, payload, cid, spans, rows, rank, line_no, roots, wrappers) -> 0 | 1 | (cid, dur_us); see phases.c"},
    {"split_components", pt2_split_components, METH_O, "split_components(items) -> None | (n, 3 x (offsets, data), backward); see components.c"},
    {NULL}};
static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_records", NULL, -1, module_methods};

PyMODINIT_FUNC PyInit__records(void) {
    if (PyType_Ready(&ScannerType) < 0 || PyType_Ready(&PhaseColsType) < 0 || PyType_Ready(&BufType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0) { Py_DECREF(&ScannerType); Py_DECREF(m); return NULL; }
    Py_INCREF(&PhaseColsType);
    if (PyModule_AddObject(m, "PhaseCols", (PyObject *)&PhaseColsType) < 0) { Py_DECREF(&PhaseColsType); Py_DECREF(m); return NULL; }
    /* the interface's version: readers/records_native.py sets aside a build whose ABI is not its own. Bump it
     * with any change to what Python calls (a function, its arguments, what it returns). */
    if (PyModule_AddIntConstant(m, "ABI", 2) < 0) { Py_DECREF(m); return NULL; }
    return m;
}
