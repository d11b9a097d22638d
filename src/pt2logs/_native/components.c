/* A cache key's components as Arrow string columns, in one native pass over the JSON-parsed
 * `components` list of a cache artifact (pt2logs._native._records.split_components; the Python caller
 * is readers/trace_events/caches.py, the oracle pt2logs.analysis.cache_keys.parse_components).
 *
 * split_components(items: list) -> None | (n, name_offsets, names, hash_offsets, hashes,
 *                                          value_offsets, values, backward)
 * The three columns are Arrow `string` buffers (int32 offsets, n + 1 of them, and UTF-8 data; read-only
 * buffer objects that own the memory the pass wrote, see buffers.c);
 * `backward` is the (cut) value of the first component named `fx_kwargs[is_backward]`, or None.
 * The rules are those of cache_keys.split_line / _cut / parse_components, byte for byte:
 *  - an item that is not exactly a str is skipped;
 *  - `[` + 16..64 of [0-9a-z] + `] ` + name + `:` + value, the name up to the first `:`, non-empty,
 *    without `\n`, then str.strip()ped; the value loses one leading space;
 *  - a value longer than 1,024 code points keeps the first 1,024 and gets "…" (U+2026).
 * None (the caller runs the Python oracle on the whole list) when this pass cannot be sure to match it:
 * a str that is no component after one that is (a continuation line: torch 2.3-2.4), a name whose
 * edge after stripping ASCII whitespace is not ASCII (str.strip's Unicode whitespace), a str that
 * cannot be encoded as UTF-8 (a lone surrogate), or a column over 2 GiB (int32 offsets).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "arrowcol.h"

#define VALUE_CHARS 1024

/* one string column: offsets (int32) and data; 1 = over int32 (the caller gives up), -1 = error */
typedef struct { gbuf offs, data; } strcol;

static int col_put(strcol *c, const char *s, size_t n, const char *tail, size_t tail_n) {
    if (c->data.len + n + tail_n > INT32_MAX) return 1;
    if (gb_put(&c->data, s, n) < 0 || gb_put(&c->data, tail, tail_n) < 0) return -1;
    int32_t o = (int32_t)c->data.len;
    return gb_put(&c->offs, &o, 4);
}

/* Python's str.isspace() for ASCII: \t \n \v \f \r, \x1c-\x1f and space */
static int ascii_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }
static int hash_char(unsigned char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z'); }

/* the byte length of the first `chars` code points of valid UTF-8 s[0:n], or n when it has no more */
static size_t cut_at(const char *s, size_t n, size_t chars) {
    if (n <= chars) return n; /* at most n code points */
    size_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80 && seen++ == chars) return i;
    }
    return n;
}

enum { OK, NOT_A_LINE, GIVE_UP };

/* split_line: the hash, (stripped) name and value of one `[hash] name: value` item */
static int split_line(const char *s, size_t n, const char **h, size_t *hn, const char **nm, size_t *nn,
                      const char **v, size_t *vn) {
    if (n == 0 || s[0] != '[') return NOT_A_LINE;
    size_t k = 1;
    while (k < n && k <= 65 && hash_char((unsigned char)s[k])) k++; /* 65 chars: too long already */
    k -= 1; /* hash chars at s[1 : 1 + k] */
    if (k < 16 || k > 64 || 1 + k + 2 > n || s[1 + k] != ']' || s[2 + k] != ' ') return NOT_A_LINE;
    size_t a = 3 + k;
    const char *colon = memchr(s + a, ':', n - a);
    if (!colon) return NOT_A_LINE;
    size_t b = (size_t)(colon - s);
    if (b == a || memchr(s + a, '\n', b - a)) return NOT_A_LINE;
    size_t e = b;
    while (a < e && ascii_space((unsigned char)s[a])) a++;
    while (e > a && ascii_space((unsigned char)s[e - 1])) e--;
    if (e > a && (((unsigned char)s[a] & 0x80) || ((unsigned char)s[e - 1] & 0x80))) return GIVE_UP;
    *h = s + 1, *hn = k, *nm = s + a, *nn = e - a;
    size_t vs = b + 1 + (b + 1 < n && s[b + 1] == ' ');
    *v = s + vs, *vn = n - vs;
    return OK;
}

static const char BACKWARD[] = "fx_kwargs[is_backward]";

PyObject *pt2_split_components(PyObject *self, PyObject *items) {
    if (!PyList_Check(items)) {
        PyErr_SetString(PyExc_TypeError, "split_components: a list");
        return NULL;
    }
    strcol cols[3]; /* name, hash, value */
    memset(cols, 0, sizeof cols);
    PyObject *result = NULL, *backward = NULL;
    Py_ssize_t rows = 0;
    int32_t zero = 0;
    for (int i = 0; i < 3; i++) if (gb_put(&cols[i].offs, &zero, 4) < 0) goto done;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        if (!PyUnicode_CheckExact(item)) continue;
        Py_ssize_t len;
        const char *s = PyUnicode_AsUTF8AndSize(item, &len);
        if (!s) { PyErr_Clear(); goto give_up; } /* a lone surrogate: Python's rules apply */
        const char *h, *nm, *v;
        size_t hn, nn, vn;
        int r = split_line(s, (size_t)len, &h, &hn, &nm, &nn, &v, &vn);
        if (r == GIVE_UP || (r == NOT_A_LINE && rows)) goto give_up; /* NOT_A_LINE after one: a continuation */
        if (r == NOT_A_LINE) continue;
        size_t cut = cut_at(v, vn, VALUE_CHARS);
        int e;
        if ((e = col_put(&cols[0], nm, nn, NULL, 0)) || (e = col_put(&cols[1], h, hn, NULL, 0)) ||
            (e = col_put(&cols[2], v, cut, "\xe2\x80\xa6", cut < vn ? 3 : 0))) {
            if (e > 0) goto give_up;
            goto done;
        }
        if (!backward && nn == sizeof BACKWARD - 1 && !memcmp(nm, BACKWARD, nn)) {
            size_t end = cols[2].data.len;
            size_t start = end - cut - (cut < vn ? 3 : 0);
            backward = PyUnicode_DecodeUTF8(cols[2].data.p + start, (Py_ssize_t)(end - start), "strict");
            if (!backward) goto done;
        }
        rows++;
    }
    {
        PyObject *b[6] = {NULL};
        for (int i = 0; i < 3; i++) {
            b[2 * i] = gb_release(&cols[i].offs); /* the memory handed to Python, not copied (buffers.c) */
            b[2 * i + 1] = gb_release(&cols[i].data);
        }
        int ok = 1;
        for (int i = 0; i < 6; i++) ok = ok && b[i];
        if (ok) result = Py_BuildValue("(nNNNNNNO)", rows, b[0], b[1], b[2], b[3], b[4], b[5], backward ? backward : Py_None);
        else for (int i = 0; i < 6; i++) Py_XDECREF(b[i]);
    }
    goto done;
give_up:
    Py_INCREF(Py_None);
    result = Py_None;
done:
    Py_XDECREF(backward);
    for (int i = 0; i < 3; i++) { PyMem_Free(cols[i].offs.p); PyMem_Free(cols[i].data.p); }
    return result;
}
