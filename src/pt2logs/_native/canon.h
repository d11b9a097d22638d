/* JSON read in a strict subset and written in canonical form: the bytes orjson.dumps(orjson.loads(text))
 * writes (no whitespace; strings with the escapes orjson writes; ints digit for digit; floats as repr writes
 * them), or "outside the subset" when this file cannot be sure of those bytes. Included by phases.c only.
 *
 * The subset: strings of valid UTF-8 whose escapes are JSON's (a lone surrogate is left out: orjson refuses
 * it); ints in [-2**63, 2**64 - 1] but -0; floats whose repr has no exponent (orjson writes those as repr
 * does); objects without duplicate keys; depth <= 32. Return codes of the writers: 1 written, 0 outside
 * the subset, -1 a Python error (set).
 */
#include <Python.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gbuf.h"

#define DIG(ch) ((ch) >= '0' && (ch) <= '9')
/* exact: floats written as orjson writes them (repr); otherwise only checked (values this file only reads) */
typedef struct { const unsigned char *p, *end; int exact; } jcur;
typedef struct { size_t koff, klen, voff, vlen; } member; /* offsets into the output buffer */
typedef struct { member *m; Py_ssize_t n, cap; } members;

static int mem_add(members *ms, member m) {
    if (ms->n == ms->cap) {
        Py_ssize_t cap = ms->cap ? ms->cap * 2 : 16;
        member *q = PyMem_Realloc(ms->m, (size_t)cap * sizeof(member));
        if (!q) { PyErr_NoMemory(); return -1; }
        ms->m = q;
        ms->cap = cap;
    }
    ms->m[ms->n++] = m;
    return 0;
}

static void jws(jcur *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

/* the length of the valid UTF-8 sequence at p (RFC 3629: no overlong forms, no surrogates), or 0 */
static int utf8_len(const unsigned char *p, const unsigned char *end) {
    unsigned char b = p[0];
    int n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) n = 2;
    else if (b >= 0xE0 && b <= 0xEF) { n = 3; if (b == 0xE0) lo = 0xA0; if (b == 0xED) hi = 0x9F; }
    else if (b >= 0xF0 && b <= 0xF4) { n = 4; if (b == 0xF0) lo = 0x90; if (b == 0xF4) hi = 0x8F; }
    else return 0;
    if (end - p < n || p[1] < lo || p[1] > hi) return 0;
    for (int i = 2; i < n; i++) if ((p[i] & 0xC0) != 0x80) return 0;
    return n;
}

/* the four hex digits at p (as a code unit), or -1 */
static long hex4(const unsigned char *p, const unsigned char *end) {
    if (end - p < 4) return -1;
    long u = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char h = p[i];
        int d = DIG(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
        if (d < 0) return -1;
        u = u * 16 + d;
    }
    return u;
}
/* one code point as orjson writes it in a string, into b (room for 6): short escapes, \u00xx for other
 * control characters, else UTF-8; returns the bytes written */
static size_t put_char(char *b, long u) {
    if (u < 0x20 || u == '"' || u == '\\') {
        const char *sh = u == '"' ? "\\\"" : u == '\\' ? "\\\\" : u == '\b' ? "\\b" : u == '\f' ? "\\f" : u == '\n' ? "\\n"
                       : u == '\r' ? "\\r" : u == '\t' ? "\\t" : NULL;
        if (sh) { memcpy(b, sh, 2); return 2; }
        static const char HEX[] = "0123456789abcdef";
        memcpy(b, "\\u00", 4);
        b[4] = HEX[u >> 4];
        b[5] = HEX[u & 15];
        return 6;
    }
    if (u < 0x80) { b[0] = (char)u; return 1; }
    if (u < 0x800) { b[0] = (char)(0xC0 | (u >> 6)); b[1] = (char)(0x80 | (u & 0x3F)); return 2; }
    if (u < 0x10000) { b[0] = (char)(0xE0 | (u >> 12)); b[1] = (char)(0x80 | ((u >> 6) & 0x3F)); b[2] = (char)(0x80 | (u & 0x3F)); return 3; }
    b[0] = (char)(0xF0 | (u >> 18)); b[1] = (char)(0x80 | ((u >> 12) & 0x3F)); b[2] = (char)(0x80 | ((u >> 6) & 0x3F));
    b[3] = (char)(0x80 | (u & 0x3F));
    return 4;
}

/* bytes a string copies as they are: printable ASCII but '"' and '\\' (DEL too: orjson writes it bare) */
static unsigned char PLAIN[256];
static void init_plain(void) {
    for (int b = 0x20; b < 0x80; b++) PLAIN[b] = b != '"' && b != '\\';
}

/* return codes of the canonical writers: 1 written, 0 outside the subset, -1 a Python error */
/* any of 8 bytes needs a look: '"', '\\', a control character or a non-ASCII byte (bit hacks, exact) */
#define ONES 0x0101010101010101ULL
#define HIGH 0x8080808080808080ULL
static inline uint64_t special8(uint64_t x) {
    uint64_t q = x ^ (ONES * '"'), b = x ^ (ONES * '\\');
    return (x | ((x - ONES * 0x20) & ~x) | ((q - ONES) & ~q) | ((b - ONES) & ~b)) & HIGH;
}

/* a string: the bytes between the quotes are copied as they are, but for the escapes orjson writes
 * differently (\u, \/), which are written as put_char writes the character */
static int c_str(jcur *c, gbuf *o, int *esc) {
    if (c->p >= c->end || *c->p != '"') return 0;
    /* the canonical form is never longer than the text (an escape never grows): room for all of it */
    if (gb_reserve(o, (size_t)(c->end - c->p)) < 0) return -1;
    const unsigned char *q = c->p + 1, *run = c->p, *end = c->end;
    *esc = 0;
    for (;;) {
        while (end - q >= 8) {
            uint64_t x;
            memcpy(&x, q, 8);
            if (special8(x)) break;
            q += 8;
        }
        while (q < end && PLAIN[*q]) q++;
        if (q >= end) return 0;
        unsigned char ch = *q;
        if (ch == '"') break;
        if (ch < 0x20) return 0;
        if (ch >= 0x80) { /* valid UTF-8 is kept as it is (orjson writes it so); anything else orjson refuses */
            int n = utf8_len(q, end);
            if (!n) return 0;
            q += n;
            continue;
        }
        /* a backslash */
        if (q + 1 >= end) return 0;
        unsigned char e = q[1];
        *esc = 1;
        if (e != 'u' && e != '/') { /* written as it is */
            if (!strchr("\"\\bfnrt", e) || e == 0) return 0;
            q += 2;
            continue;
        }
        memcpy(o->p + o->len, run, (size_t)(q - run));
        o->len += (size_t)(q - run);
        if (e == '/') {
            o->p[o->len++] = '/';
            q += 2;
        } else {
            long u = hex4(q + 2, end);
            q += 6;
            if (u < 0 || (u >= 0xDC00 && u <= 0xDFFF)) return 0; /* a lone low surrogate: orjson refuses it */
            if (u >= 0xD800 && u <= 0xDBFF) { /* a pair, or orjson refuses it */
                long lo = q + 1 < end && q[0] == '\\' && q[1] == 'u' ? hex4(q + 2, end) : -1;
                if (lo < 0xDC00 || lo > 0xDFFF) return 0;
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
                q += 6;
            }
            o->len += put_char(o->p + o->len, u);
        }
        run = q;
    }
    memcpy(o->p + o->len, run, (size_t)(q + 1 - run)); /* up to the closing quote */
    o->len += (size_t)(q + 1 - run);
    c->p = q + 1;
    return 1;
}

/* a number, written as orjson writes what it reads (callers that need its value parse the literal) */
static int c_num(jcur *c, gbuf *o) {
    const unsigned char *s = c->p, *q = s;
    int nd = 0, isfloat = 0;
    if (q < c->end && *q == '-') q++;
    if (q >= c->end || !DIG(*q)) return 0;
    unsigned long long ux = 0;
    int big = 0; /* over 2**64 - 1: orjson reads a float */
    if (*q == '0') { q++; nd = 1; }
    else while (q < c->end && DIG(*q)) {
        unsigned d = (unsigned)(*q - '0');
        if (ux > (ULLONG_MAX - d) / 10) big = 1; else ux = ux * 10 + d;
        nd++; q++;
    }
    if (q < c->end && *q == '.') {
        q++;
        if (q >= c->end || !DIG(*q)) return 0;
        while (q < c->end && DIG(*q)) q++;
        isfloat = 1;
    }
    if (q < c->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < c->end && (*q == '+' || *q == '-')) q++;
        if (q >= c->end || !DIG(*q)) return 0;
        while (q < c->end && DIG(*q)) q++;
        isfloat = 1;
    }
    size_t n = (size_t)(q - s);
    if (!isfloat) {
        /* orjson reads ints in [-2**63, 2**64 - 1] as ints (written back digit for digit); -0 reads as 0 */
        if (big || (*s == '-' && (ux == 0 || ux > 0x8000000000000000ULL))) return 0;
        if (gb_put(o, s, n) < 0) return -1;
        c->p = q;
        return 1;
    }
    char lit[350];
    if (n >= sizeof lit) return 0;
    memcpy(lit, s, n);
    lit[n] = 0;
    char *endp;
    errno = 0;
    double val = strtod(lit, &endp);
    if (endp != lit + n || !isfinite(val) || errno == ERANGE) return 0; /* orjson: "number is infinity"; underflow */
    if (!c->exact) { /* read, not written: the literal itself */
        if (gb_put(o, s, n) < 0) return -1;
        c->p = q;
        return 1;
    }
    char *r = PyOS_double_to_string(val, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (!r) return -1;
    int ok = strchr(r, 'e') == NULL; /* repr with an exponent: orjson writes it differently */
    int rc = ok ? (gb_put(o, r, strlen(r)) < 0 ? -1 : 1) : 0;
    PyMem_Free(r);
    if (rc == 1) c->p = q;
    return rc;
}

static int c_lit(jcur *c, gbuf *o, const char *w) {
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0) return 0;
    c->p += n;
    return gb_put(o, w, n) < 0 ? -1 : 1;
}

/* members of one object taken here (chromium events' objects have fewer than 32) */
#define MAX_MEMBERS 64

/* a value in canonical form; with ms, an object's members are recorded there (and no duplicates) */
static int c_value(jcur *c, gbuf *o, int depth, members *ms);

/* with args_ms (the payload's top level only), the members of an object under the key "args" go there */
static int c_object(jcur *c, gbuf *o, int depth, members *ms, members *args_ms) {
    members local = {0};
    members *keys = ms ? ms : &local;
    int rc = 0;
    c->p++;
    if (gb_put(o, "{", 1) < 0) return -1;
    jws(c);
    if (c->p < c->end && *c->p == '}') { c->p++; rc = gb_put(o, "}", 1) < 0 ? -1 : 1; goto out; }
    for (;;) {
        int esc;
        member m;
        jws(c);
        m.koff = o->len;
        if ((rc = c_str(c, o, &esc)) != 1) goto out;
        m.klen = o->len - m.koff;
        if (keys->n >= MAX_MEMBERS) { rc = 0; goto out; } /* the check below is quadratic: a larger object is Python's */
        for (Py_ssize_t i = 0; i < keys->n; i++) /* a duplicate key: orjson keeps the first place, the last value */
            if (keys->m[i].klen == m.klen && !memcmp(o->p + keys->m[i].koff, o->p + m.koff, m.klen)) { rc = 0; goto out; }
        jws(c);
        if (c->p >= c->end || *c->p != ':') { rc = 0; goto out; }
        c->p++;
        if (gb_put(o, ":", 1) < 0) { rc = -1; goto out; }
        jws(c);
        m.voff = o->len;
        if (args_ms && m.klen == 6 && !memcmp(o->p + m.koff, "\"args\"", 6)) { /* args: written exactly */
            c->exact = 1;
            rc = c->p < c->end && *c->p == '{' ? (depth + 1 > 32 ? 0 : c_object(c, o, depth + 1, args_ms, NULL))
                                               : c_value(c, o, depth + 1, NULL);
            c->exact = 0;
        } else
            rc = c_value(c, o, depth + 1, NULL);
        if (rc != 1) goto out;
        m.vlen = o->len - m.voff;
        if (mem_add(keys, m) < 0) { rc = -1; goto out; }
        jws(c);
        if (c->p < c->end && *c->p == ',') { c->p++; if (gb_put(o, ",", 1) < 0) { rc = -1; goto out; } continue; }
        if (c->p < c->end && *c->p == '}') { c->p++; rc = gb_put(o, "}", 1) < 0 ? -1 : 1; goto out; }
        rc = 0;
        goto out;
    }
out:
    PyMem_Free(local.m);
    return rc;
}

static int c_array(jcur *c, gbuf *o, int depth) {
    c->p++;
    if (gb_put(o, "[", 1) < 0) return -1;
    jws(c);
    if (c->p < c->end && *c->p == ']') { c->p++; return gb_put(o, "]", 1) < 0 ? -1 : 1; }
    for (;;) {
        int rc = c_value(c, o, depth + 1, NULL);
        if (rc != 1) return rc;
        jws(c);
        if (c->p < c->end && *c->p == ',') { c->p++; if (gb_put(o, ",", 1) < 0) return -1; continue; }
        if (c->p < c->end && *c->p == ']') { c->p++; return gb_put(o, "]", 1) < 0 ? -1 : 1; }
        return 0;
    }
}

static int c_value(jcur *c, gbuf *o, int depth, members *ms) {
    if (depth > 32) return 0;
    jws(c);
    if (c->p >= c->end) return 0;
    unsigned char ch = *c->p;
    int esc;
    if (ch == '{') return c_object(c, o, depth, ms, NULL);
    if (ch == '[') return c_array(c, o, depth);
    if (ch == '"') return c_str(c, o, &esc);
    if (ch == 't') return c_lit(c, o, "true");
    if (ch == 'f') return c_lit(c, o, "false");
    if (ch == 'n') return c_lit(c, o, "null");
    return c_num(c, o);
}
