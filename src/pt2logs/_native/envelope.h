/* The envelope of a TORCH_TRACE record read natively, in a strict subset of JSON (see events.c).
 * parse_env() returns 1 when the envelope is in the subset (then orjson reads it to the same values and
 * env_t holds what the events row needs), 0 when the Python loop must read it. Included by events.c only. */
#include <stdint.h>
#include <string.h>

/* ---- the envelope: a strict JSON subset ------------------------------------------------------ */
typedef struct { const unsigned char *p, *end; } cur;

static void ws(cur *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}
/* a string at c->p ('"'); on success (*s, *n) are its raw bytes; *esc says it holds a backslash */
static int str(cur *c, const unsigned char **s, Py_ssize_t *n, int *esc) {
    if (c->p >= c->end || *c->p != '"') return 0;
    const unsigned char *q = ++c->p;
    *esc = 0;
    while (q < c->end) {
        unsigned char ch = *q;
        if (ch == '"') { *s = c->p; *n = q - c->p; c->p = q + 1; return 1; }
        if (ch < 0x20 || ch >= 0x80) return 0;
        if (ch == '\\') {
            if (q + 1 >= c->end || !strchr("\"\\/bfnrt", q[1]) || q[1] == 0) return 0; /* \u: left to orjson */
            *esc = 1;
            q += 2;
            continue;
        }
        q++;
    }
    return 0;
}
#define DIGIT(ch) ((ch) >= '0' && (ch) <= '9')
/* a number; *is_int and *v (when an int of <= 9 digits, non-negative) */
static int num(cur *c, int *is_int, long long *v) {
    const unsigned char *q = c->p;
    int neg = 0, nd = 0;
    long long x = 0;
    if (q < c->end && *q == '-') { neg = 1; q++; }
    if (q >= c->end || !DIGIT(*q)) return 0;
    if (*q == '0') { q++; nd = 1; }
    else while (q < c->end && DIGIT(*q)) { if (nd < 18) x = x * 10 + (*q - '0'); nd++; q++; }
    /* at most 100 digits and a 2-digit exponent: orjson reads it (a huge one would be infinity, an error) */
    if (nd > 100) return 0;
    *is_int = 1;
    if (q < c->end && *q == '.') {
        q++;
        if (q >= c->end || !DIGIT(*q)) return 0;
        int fd = 0;
        while (q < c->end && DIGIT(*q)) { q++; if (++fd > 100) return 0; }
        *is_int = 0;
    }
    if (q < c->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < c->end && (*q == '+' || *q == '-')) q++;
        int ed = 0;
        while (q < c->end && DIGIT(*q)) { q++; ed++; }
        if (ed == 0 || ed > 2) return 0;
        *is_int = 0;
    }
    if (*is_int && (neg || nd > 9)) *is_int = 0; /* usable as a context int only when small and >= 0 */
    *v = x;
    c->p = q;
    return 1;
}
static int lit(cur *c, const char *w) {
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0) return 0;
    c->p += n;
    return 1;
}
static int value(cur *c, int depth);
static int object_rest(cur *c, int depth) { /* after '{' */
    ws(c);
    if (c->p < c->end && *c->p == '}') { c->p++; return 1; }
    for (;;) {
        const unsigned char *s; Py_ssize_t n; int esc;
        ws(c);
        if (!str(c, &s, &n, &esc)) return 0;
        ws(c);
        if (c->p >= c->end || *c->p != ':') return 0;
        c->p++;
        if (!value(c, depth + 1)) return 0;
        ws(c);
        if (c->p < c->end && *c->p == ',') { c->p++; continue; }
        if (c->p < c->end && *c->p == '}') { c->p++; return 1; }
        return 0;
    }
}
static int array_rest(cur *c, int depth) { /* after '[' */
    ws(c);
    if (c->p < c->end && *c->p == ']') { c->p++; return 1; }
    for (;;) {
        if (!value(c, depth + 1)) return 0;
        ws(c);
        if (c->p < c->end && *c->p == ',') { c->p++; continue; }
        if (c->p < c->end && *c->p == ']') { c->p++; return 1; }
        return 0;
    }
}
static int value(cur *c, int depth) {
    if (depth > 32) return 0;
    ws(c);
    if (c->p >= c->end) return 0;
    unsigned char ch = *c->p;
    if (ch == '{') { c->p++; return object_rest(c, depth); }
    if (ch == '[') { c->p++; return array_rest(c, depth); }
    if (ch == '"') { const unsigned char *s; Py_ssize_t n; int esc; return str(c, &s, &n, &esc); }
    if (ch == 't') return lit(c, "true");
    if (ch == 'f') return lit(c, "false");
    if (ch == 'n') return lit(c, "null");
    int is_int; long long v;
    return num(c, &is_int, &v);
}

/* context keys (trace_state.CONTEXT_KEYS); the first five are the integer fields */
static const char *CTX[] = {"frame_id", "frame_compile_id", "compiled_autograd_id", "attempt", "rank",
                            "has_payload", "stack", "subgraph_name"};
enum { K_FID, K_FCID, K_CA, K_ATT, K_RANK, K_HAS, K_STACK, K_SUB, NCTX };
#define MAX_RANK (1 << 20)

typedef struct {
    const unsigned char *kind, *name, *md5;
    Py_ssize_t kind_n, name_n, md5_n;
    int has_kind, has_name, has_md5;
    long long ints[5];
    int present[5];
} env_t;

static int ctx_index(const unsigned char *s, Py_ssize_t n) {
    for (int i = 0; i < NCTX; i++) if ((Py_ssize_t)strlen(CTX[i]) == n && memcmp(CTX[i], s, (size_t)n) == 0) return i;
    return -1;
}
static int named_kind(const unsigned char *s, Py_ssize_t n) { /* trace_state.NAMED_KINDS */
    return (n == 8 && !memcmp(s, "artifact", 8)) || (n == 9 && !memcmp(s, "dump_file", 9)) || (n == 10 && !memcmp(s, "graph_dump", 10));
}
/* the metadata of a named kind: its "name" (a string without escapes, or null/absent) */
static int meta_name(cur *c, env_t *e) {
    ws(c);
    if (c->p >= c->end || *c->p != '{') return value(c, 1); /* not an object: no name */
    c->p++;
    ws(c);
    if (c->p < c->end && *c->p == '}') { c->p++; return 1; }
    int seen = 0;
    for (;;) {
        const unsigned char *s; Py_ssize_t n; int esc;
        ws(c);
        if (!str(c, &s, &n, &esc) || esc) return 0;
        ws(c);
        if (c->p >= c->end || *c->p != ':') return 0;
        c->p++;
        if (n == 4 && !memcmp(s, "name", 4)) {
            if (seen++) return 0;
            ws(c);
            if (c->p < c->end && *c->p == '"') {
                if (!str(c, &e->name, &e->name_n, &esc) || esc) return 0;
                e->has_name = 1;
            } else if (!lit(c, "null")) return 0; /* a name that is not a string: the Python loop reports it */
        } else if (!value(c, 2)) return 0;
        ws(c);
        if (c->p < c->end && *c->p == ',') { c->p++; continue; }
        if (c->p < c->end && *c->p == '}') { c->p++; return 1; }
        return 0;
    }
}
static int parse_env(const unsigned char *p, Py_ssize_t len, env_t *e) {
    cur c = {p, p + len};
    memset(e, 0, sizeof *e);
    int seen = 0;
    ws(&c);
    if (c.p >= c.end || *c.p != '{') return 0;
    c.p++;
    ws(&c);
    if (c.p < c.end && *c.p == '}') return 0; /* no kind */
    for (;;) {
        const unsigned char *s; Py_ssize_t n; int esc;
        ws(&c);
        if (!str(&c, &s, &n, &esc) || esc) return 0;
        ws(&c);
        if (c.p >= c.end || *c.p != ':') return 0;
        c.p++;
        ws(&c);
        int k = ctx_index(s, n);
        if (k >= 0) {
            if (seen & (1 << k)) return 0;
            seen |= 1 << k;
            if (k <= K_RANK) {
                int is_int; long long v;
                if (lit(&c, "null")) {}
                else if (!num(&c, &is_int, &v) || !is_int || (k == K_RANK && v >= MAX_RANK)) return 0;
                else { e->ints[k] = v; e->present[k] = 1; }
            } else if (k == K_HAS) {
                if (lit(&c, "null")) {}
                else if (!str(&c, &e->md5, &e->md5_n, &esc) || esc) return 0;
                else e->has_md5 = 1;
            } else if (!value(&c, 1)) return 0;
        } else if (!e->has_kind) {
            e->kind = s; e->kind_n = n; e->has_kind = 1;
            if (!(named_kind(s, n) ? meta_name(&c, e) : value(&c, 1))) return 0;
        } else {
            if (n == e->kind_n && !memcmp(s, e->kind, (size_t)n)) return 0; /* the kind twice */
            if (!value(&c, 1)) return 0;
        }
        ws(&c);
        if (c.p < c.end && *c.p == ',') { c.p++; continue; }
        if (c.p < c.end && *c.p == '}') { c.p++; break; }
        return 0;
    }
    ws(&c);
    return c.p == c.end && e->has_kind;
}

