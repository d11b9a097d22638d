/* One Arrow column built row by row in C (validity bitmap, int32 offsets for strings, data), shared by
 * the native passes that hand columns to Python as bytes (events.c, phase_cols.c). */
#ifndef PT2_ARROWCOL_H
#define PT2_ARROWCOL_H
#include <Python.h>
#include <stdint.h>

#include "gbuf.h"

/* width 8/4 = int64/int32, 1 = bool (bit-packed), 0 = string */
typedef struct { gbuf valid, offs, data; int is_str, width, has_null; } col;

static inline int col_init(col *c, int width) {
    memset(c, 0, sizeof *c);
    c->width = width;
    c->is_str = width == 0;
    int32_t z = 0;
    return c->is_str ? gb_put(&c->offs, &z, 4) : 0;
}
static inline void col_free(col *c) { PyMem_Free(c->valid.p); PyMem_Free(c->offs.p); PyMem_Free(c->data.p); }

static inline int col_valid(col *c, Py_ssize_t row, int v) {
    if ((size_t)(row / 8) >= c->valid.len) {
        unsigned char z = 0;
        if (gb_put(&c->valid, &z, 1) < 0) return -1;
    }
    if (v) c->valid.p[row / 8] |= (char)(1 << (row % 8));
    else c->has_null = 1;
    return 0;
}
static inline int col_str(col *c, Py_ssize_t row, const char *s, Py_ssize_t n) { /* s NULL: null */
    if (col_valid(c, row, s != NULL) < 0) return -1;
    if (s && gb_put(&c->data, s, (size_t)n) < 0) return -1;
    if ((size_t)c->data.len > INT32_MAX) { PyErr_SetString(PyExc_OverflowError, "column over 2 GiB"); return -1; }
    int32_t o = (int32_t)c->data.len;
    return gb_put(&c->offs, &o, 4);
}
static inline int col_int(col *c, Py_ssize_t row, long long v, int present) {
    if (col_valid(c, row, present) < 0) return -1;
    if (c->width == 8) { int64_t x = present ? v : 0; return gb_put(&c->data, &x, 8); }
    if (c->width == 4) { int32_t x = present ? (int32_t)v : 0; return gb_put(&c->data, &x, 4); }
    /* bool: bit-packed */
    if ((size_t)(row / 8) >= c->data.len) { unsigned char z = 0; if (gb_put(&c->data, &z, 1) < 0) return -1; }
    if (present && v) c->data.p[row / 8] |= (char)(1 << (row % 8));
    return 0;
}
/* buffers.c: the gbuf's memory handed over to a read-only buffer object (the gbuf is left empty) */
extern PyTypeObject BufType;
PyObject *gb_release(gbuf *g);

/* (validity or None when no null, offsets or None when fixed-width, data) as buffer objects (the column's
 * memory handed over: it is left empty, for col_free or col_init) */
static inline PyObject *col_buffers(col *c) {
    PyObject *v = c->has_null ? gb_release(&c->valid) : (Py_INCREF(Py_None), Py_None);
    PyObject *o = c->is_str ? gb_release(&c->offs) : (Py_INCREF(Py_None), Py_None);
    PyObject *d = gb_release(&c->data);
    PyObject *t = (v && o && d) ? PyTuple_Pack(3, v, o, d) : NULL;
    Py_XDECREF(v); Py_XDECREF(o); Py_XDECREF(d);
    return t;
}

#endif
