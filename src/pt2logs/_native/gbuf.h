/* A growable byte buffer (PyMem), shared by the native passes. */
#ifndef PT2_GBUF_H
#define PT2_GBUF_H
#include <Python.h>
#include <string.h>

/* ---- growable buffers ---------------------------------------------------------------------- */
typedef struct { char *p; size_t len, cap; } gbuf;

static inline int gb_reserve(gbuf *g, size_t n) {
    if (g->len + n <= g->cap) return 0;
    size_t cap = g->cap ? g->cap : 1024;
    while (cap < g->len + n) cap *= 2;
    char *q = PyMem_Realloc(g->p, cap);
    if (!q) { PyErr_NoMemory(); return -1; }
    g->p = q;
    g->cap = cap;
    return 0;
}
static inline int gb_put(gbuf *g, const void *src, size_t n) {
    if (n == 0) return 0; /* memcpy with a NULL buffer is undefined even for no bytes */
    if (gb_reserve(g, n) < 0) return -1;
    memcpy(g->p + g->len, src, n);
    g->len += n;
    return 0;
}

#endif
