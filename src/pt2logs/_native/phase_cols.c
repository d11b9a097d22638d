/* PhaseCols: compile_phases rows written natively (phases.c) straight into Arrow column buffers
 * (pt2logs._native._records.PhaseCols; the Python side is segment_rows.NativeTupleRows).
 *
 * The Python handlers (readers/trace_events/phases.py) add their rows as tuples to a list beside it; so that
 * the batch keeps the order in which rows were made, each native row records how many tuple rows came
 * before it (`before`: the list's length when it was added).
 *
 * PhaseCols() ; len(pc) ; pc.take() -> (n, before, columns) and starts empty: `before` is n int64 (a buffer),
 * columns one (validity | None, offsets | None, data) triple of buffers (buffers.c: no copy) per column (validity None: no
 * nulls; offsets None: fixed width): rank, line_no, compile_id, phase, parent_phase, depth, stage, top_level,
 * start_us, duration_us, ts (int64 microseconds), is_instant, category, args.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "arrowcol.h"
#include "phase_cols.h"

enum { P_RANK, P_LINE, P_CID, P_PHASE, P_PARENT, P_DEPTH, P_STAGE, P_TOP, P_START, P_DUR, P_TS, P_INSTANT, P_CAT,
       P_ARGS, P_NCOLS };
static const int P_WIDTH[P_NCOLS] = {4, 8, 0, 0, 0, 4, 0, 1, 8, 8, 8, 1, 0, 0};

typedef struct {
    PyObject_HEAD
    col cols[P_NCOLS];
    gbuf before;
    Py_ssize_t n;
} PhaseCols;

static void pc_clear(PhaseCols *pc) {
    for (int i = 0; i < P_NCOLS; i++) col_free(&pc->cols[i]);
    PyMem_Free(pc->before.p);
    memset(pc->cols, 0, sizeof pc->cols);
    memset(&pc->before, 0, sizeof pc->before);
    pc->n = 0;
}

static int pc_reset(PhaseCols *pc) {
    pc_clear(pc);
    for (int i = 0; i < P_NCOLS; i++) if (col_init(&pc->cols[i], P_WIDTH[i]) < 0) return -1;
    return 0;
}

static PyObject *PhaseCols_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    if ((kw && PyDict_GET_SIZE(kw)) || !PyArg_ParseTuple(args, ":PhaseCols")) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "PhaseCols() takes no arguments");
        return NULL;
    }
    PhaseCols *pc = (PhaseCols *)type->tp_alloc(type, 0); /* zeroed */
    if (pc && pc_reset(pc) < 0) Py_CLEAR(pc);
    return (PyObject *)pc;
}

static void PhaseCols_dealloc(PhaseCols *pc) {
    pc_clear(pc);
    Py_TYPE(pc)->tp_free((PyObject *)pc);
}

static Py_ssize_t PhaseCols_len(PhaseCols *pc) { return pc->n; }

int phase_cols_fits(PyObject *o, const phase_row *r) {
    PhaseCols *pc = (PhaseCols *)o;
    const char *s[] = {r->cid, r->phase, r->parent, r->stage, r->cat, r->args};
    Py_ssize_t sn[] = {r->cid_n, r->phase_n, r->parent_n, r->stage_n, r->cat_n, r->args_n};
    const int at[] = {P_CID, P_PHASE, P_PARENT, P_STAGE, P_CAT, P_ARGS};
    for (int i = 0; i < 6; i++)
        if (s[i] && pc->cols[at[i]].data.len + (size_t)sn[i] > INT32_MAX) return 0;
    return 1;
}

int phase_cols_add(PyObject *o, const phase_row *r, Py_ssize_t before) {
    PhaseCols *pc = (PhaseCols *)o;
    col *c = pc->cols;
    Py_ssize_t row = pc->n;
    int64_t b = before;
    if (col_int(&c[P_RANK], row, r->rank, r->has_rank) < 0 || col_int(&c[P_LINE], row, r->line_no, 1) < 0 ||
        col_str(&c[P_CID], row, r->cid, r->cid_n) < 0 || col_str(&c[P_PHASE], row, r->phase, r->phase_n) < 0 ||
        col_str(&c[P_PARENT], row, r->parent, r->parent_n) < 0 || col_int(&c[P_DEPTH], row, r->depth, 1) < 0 ||
        col_str(&c[P_STAGE], row, r->stage, r->stage_n) < 0 || col_int(&c[P_TOP], row, r->top, 1) < 0 ||
        col_int(&c[P_START], row, r->start, 1) < 0 || col_int(&c[P_DUR], row, r->dur, r->has_dur) < 0 ||
        col_int(&c[P_TS], row, r->start, 1) < 0 || col_int(&c[P_INSTANT], row, r->instant, 1) < 0 ||
        col_str(&c[P_CAT], row, r->cat, r->cat_n) < 0 || col_str(&c[P_ARGS], row, r->args, r->args_n) < 0 ||
        gb_put(&pc->before, &b, 8) < 0)
        return -1;
    pc->n++;
    return 0;
}

static PyObject *PhaseCols_take(PhaseCols *pc, PyObject *unused) {
    PyObject *cols = PyTuple_New(P_NCOLS), *before = NULL, *out = NULL;
    Py_ssize_t n = pc->n;
    for (int k = 0; cols && k < P_NCOLS; k++) { /* the columns' memory handed over (buffers.c) */
        PyObject *t = col_buffers(&pc->cols[k]);
        if (!t) Py_CLEAR(cols);
        else PyTuple_SET_ITEM(cols, k, t);
    }
    if (cols && (before = gb_release(&pc->before))) out = Py_BuildValue("(nNN)", n, before, cols);
    else Py_XDECREF(cols);
    if (pc_reset(pc) < 0) Py_CLEAR(out); /* starts empty, even after an error */
    return out;
}

static PyMethodDef PhaseCols_methods[] = {
    {"take", (PyCFunction)PhaseCols_take, METH_NOARGS, "take() -> (n, before, columns); starts empty (see phase_cols.c)"},
    {NULL}};

static PySequenceMethods PhaseCols_seq = {.sq_length = (lenfunc)PhaseCols_len};

PyTypeObject PhaseColsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pt2logs._native._records.PhaseCols",
    .tp_basicsize = sizeof(PhaseCols),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PhaseCols_new,
    .tp_dealloc = (destructor)PhaseCols_dealloc,
    .tp_methods = PhaseCols_methods,
    .tp_as_sequence = &PhaseCols_seq,
    .tp_doc = "compile_phases rows as Arrow column buffers (see phase_cols.c)",
};
