/* compile_phases rows as Arrow columns (phase_cols.c: the PhaseCols type), written by phases.c. */
#ifndef PT2_PHASE_COLS_H
#define PT2_PHASE_COLS_H
#include <Python.h>

/* one row; a NULL string is a NULL value (the lengths are bytes of UTF-8) */
typedef struct {
    long long rank, line_no, depth, start, dur;
    int has_rank, has_dur, top, instant;
    const char *cid, *phase, *parent, *stage, *cat, *args;
    Py_ssize_t cid_n, phase_n, parent_n, stage_n, cat_n, args_n;
} phase_row;

extern PyTypeObject PhaseColsType;
#define PhaseCols_Check(o) (Py_TYPE(o) == &PhaseColsType)

/* 1 when the row fits (its string columns stay under 2 GiB), else 0 and nothing is written */
int phase_cols_fits(PyObject *pc, const phase_row *r);
/* append the row, after `before` rows kept elsewhere (the Python handlers' tuples); -1: a Python error */
int phase_cols_add(PyObject *pc, const phase_row *r, Py_ssize_t before);

/* phases.c: one chromium_event payload done natively (see there); 1 taken, 0 left to Python, -1 a Python error;
 * *frame: (cid, dur_us) when it closed an entire_frame_compile span (a new reference), else NULL */
int phases_take(PyObject *pc, PyObject *payload, PyObject *cid, PyObject *spans, PyObject *rows, PyObject *rank,
                PyObject *line_no, PyObject *roots, PyObject *wrappers, PyObject **frame);

#endif
