/* MD5 (RFC 1321), written from the RFC's description; checked against hashlib in
 * tests/readers/test_native_records.py. Used for payload md5s inside the one-pass splitter. */
#ifndef PT2LOGS_MD5_H
#define PT2LOGS_MD5_H
#include <stdint.h>
#include <string.h>

typedef struct { uint32_t a, b, c, d; uint64_t len; unsigned char buf[64]; size_t used; } md5_ctx;

static const uint32_t MD5_K[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};

#define MD5_ROTL(x, c) (((x) << (c)) | ((x) >> (32 - (c))))

/* one 64-byte block: the four rounds of RFC 1321 section 3.4, unrolled (the branchy loop form ran at
 * about half of OpenSSL's speed) */
#define MD5_F(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
#define MD5_G(x, y, z) ((y) ^ ((z) & ((x) ^ (y))))
#define MD5_H(x, y, z) ((x) ^ (y) ^ (z))
#define MD5_I(x, y, z) ((y) ^ ((x) | ~(z)))
#define MD5_STEP(f, a, b, c, d, x, k, s) ((a) += f((b), (c), (d)) + (x) + (k), (a) = MD5_ROTL((a), (s)) + (b))

/* RFC 1321's 64 steps over state a, b, c, d and message words m[16], with a STEP(f, a, b, c, d, x, k, s) and
 * the four round functions given: the one-message code below and the eight-lane code of md5x8.h share it */
#define MD5_ROUNDS(STEP, F, G, H, I, a, b, c, d, m)                                                \
    do {                                                                                           \
        for (int i = 0; i < 16; i += 4) {                                                          \
            STEP(F, a, b, c, d, m[i], MD5_K[i], 7);                                                \
            STEP(F, d, a, b, c, m[i + 1], MD5_K[i + 1], 12);                                       \
            STEP(F, c, d, a, b, m[i + 2], MD5_K[i + 2], 17);                                       \
            STEP(F, b, c, d, a, m[i + 3], MD5_K[i + 3], 22);                                       \
        }                                                                                          \
        for (int i = 16; i < 32; i += 4) {                                                         \
            STEP(G, a, b, c, d, m[(5 * i + 1) & 15], MD5_K[i], 5);                                 \
            STEP(G, d, a, b, c, m[(5 * i + 6) & 15], MD5_K[i + 1], 9);                             \
            STEP(G, c, d, a, b, m[(5 * i + 11) & 15], MD5_K[i + 2], 14);                           \
            STEP(G, b, c, d, a, m[(5 * i + 16) & 15], MD5_K[i + 3], 20);                           \
        }                                                                                          \
        for (int i = 32; i < 48; i += 4) {                                                         \
            STEP(H, a, b, c, d, m[(3 * i + 5) & 15], MD5_K[i], 4);                                 \
            STEP(H, d, a, b, c, m[(3 * i + 8) & 15], MD5_K[i + 1], 11);                            \
            STEP(H, c, d, a, b, m[(3 * i + 11) & 15], MD5_K[i + 2], 16);                           \
            STEP(H, b, c, d, a, m[(3 * i + 14) & 15], MD5_K[i + 3], 23);                           \
        }                                                                                          \
        for (int i = 48; i < 64; i += 4) {                                                         \
            STEP(I, a, b, c, d, m[(7 * i) & 15], MD5_K[i], 6);                                     \
            STEP(I, d, a, b, c, m[(7 * i + 7) & 15], MD5_K[i + 1], 10);                            \
            STEP(I, c, d, a, b, m[(7 * i + 14) & 15], MD5_K[i + 2], 15);                           \
            STEP(I, b, c, d, a, m[(7 * i + 21) & 15], MD5_K[i + 3], 21);                           \
        }                                                                                          \
    } while (0)

static void md5_block(md5_ctx *c, const unsigned char *p) {
    uint32_t m[16], a = c->a, b = c->b, cc = c->c, d = c->d;
    for (int i = 0; i < 16; i++)
        m[i] = (uint32_t)p[4 * i] | ((uint32_t)p[4 * i + 1] << 8) | ((uint32_t)p[4 * i + 2] << 16) | ((uint32_t)p[4 * i + 3] << 24);
    MD5_ROUNDS(MD5_STEP, MD5_F, MD5_G, MD5_H, MD5_I, a, b, cc, d, m);
    c->a += a; c->b += b; c->c += cc; c->d += d;
}

static void md5_init(md5_ctx *c) {
    c->a = 0x67452301; c->b = 0xefcdab89; c->c = 0x98badcfe; c->d = 0x10325476; c->len = 0; c->used = 0;
}

static void md5_update(md5_ctx *c, const unsigned char *p, size_t n) {
    c->len += n;
    if (c->used) {
        size_t k = 64 - c->used < n ? 64 - c->used : n;
        memcpy(c->buf + c->used, p, k);
        c->used += k; p += k; n -= k;
        if (c->used < 64) return;
        md5_block(c, c->buf);
        c->used = 0;
    }
    for (; n >= 64; n -= 64, p += 64) md5_block(c, p);
    if (n) { memcpy(c->buf, p, n); c->used = n; }
}

static void md5_hex_words(const uint32_t w[4], char *out) {
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        unsigned char v = (unsigned char)(w[i / 4] >> (8 * (i % 4)));
        out[2 * i] = hx[v >> 4];
        out[2 * i + 1] = hx[v & 15];
    }
}

/* the digest as 32 lowercase hex characters (no NUL) */
static void md5_hex(md5_ctx *c, char out[32]) {
    uint64_t bits = c->len * 8;
    unsigned char pad[72] = {0x80};
    size_t padn = (c->used < 56 ? 56 : 120) - c->used;
    unsigned char lenb[8];
    for (int i = 0; i < 8; i++) lenb[i] = (unsigned char)(bits >> (8 * i));
    md5_update(c, pad, padn);
    md5_update(c, lenb, 8);
    uint32_t w[4] = {c->a, c->b, c->c, c->d};
    md5_hex_words(w, out);
}
#endif
