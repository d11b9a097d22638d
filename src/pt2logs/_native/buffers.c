/* Buf: a read-only buffer (the buffer protocol) that owns memory a native pass wrote (a gbuf's), so that
 * Arrow wraps it with pa.py_buffer without a copy; the memory is freed when the last view is gone.
 * (pt2logs._native._records.Buf; made by gb_release, never from Python.) */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "arrowcol.h"

typedef struct {
    PyObject_HEAD
    char *p;
    Py_ssize_t n;
} Buf;

static int Buf_getbuffer(Buf *b, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)b, b->p, b->n, 1, flags);
}

static void Buf_dealloc(Buf *b) {
    PyMem_Free(b->p);
    Py_TYPE(b)->tp_free((PyObject *)b);
}

static Py_ssize_t Buf_len(Buf *b) { return b->n; }

static PyBufferProcs Buf_as_buffer = {.bf_getbuffer = (getbufferproc)Buf_getbuffer};
static PySequenceMethods Buf_seq = {.sq_length = (lenfunc)Buf_len};

PyTypeObject BufType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pt2logs._native._records.Buf",
    .tp_basicsize = sizeof(Buf),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)Buf_dealloc,
    .tp_as_buffer = &Buf_as_buffer,
    .tp_as_sequence = &Buf_seq,
    .tp_doc = "memory written by a native pass, read-only, for pa.py_buffer (see buffers.c)",
};

PyObject *gb_release(gbuf *g) {
    if (g->len == 0) return PyBytes_FromStringAndSize("", 0); /* no memory to hand over */
    Buf *b = PyObject_New(Buf, &BufType);
    if (!b) return NULL;
    char *p = PyMem_Realloc(g->p, g->len); /* give back the growth room (shrinking does not move it in practice) */
    b->p = p ? p : g->p;
    b->n = (Py_ssize_t)g->len;
    g->p = NULL;
    g->len = g->cap = 0;
    return (PyObject *)b;
}
