/* Many MD5s at once (multi-buffer MD5): eight messages side by side, one in each 32-bit lane of the
 * AVX2 registers, each lane running RFC 1321's rounds on its own message. MD5 is a chain of dependent
 * steps, so one message cannot go faster than about 5 cycles a byte; eight independent ones can share
 * the same instructions. Used by the splitter (records.c) for the payload md5s of a whole buffer;
 * checked against hashlib in tests/readers/test_native_records.py. Without AVX2 (checked at run time)
 * the scalar md5.h does them one after the other.
 *
 * md5_many(jobs, k): for each job, the 32 lowercase hex characters of md5(p[:n]) into its hex. */
#ifndef PT2LOGS_MD5X8_H
#define PT2LOGS_MD5X8_H
#include <stddef.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "md5.h"

typedef struct { const unsigned char *p; size_t n; char *hex; } md5_job;

static void md5_many_scalar(md5_job *jobs, size_t k) {
    for (size_t i = 0; i < k; i++) {
        md5_ctx m;
        md5_init(&m);
        md5_update(&m, jobs[i].p, jobs[i].n);
        md5_hex(&m, jobs[i].hex);
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MD5X8 1

/* one lane's message: its whole 64-byte blocks in place, then the padded tail (1 or 2 blocks) */
typedef struct {
    const unsigned char *p;
    size_t full;
    unsigned char tail[128];
    int ntail, ti;
    md5_job *job;
} md5_lane;

static void md5_lane_start(md5_lane *l, md5_job *j) {
    size_t r = j->n % 64;
    uint64_t bits = (uint64_t)j->n * 8;
    l->job = j;
    l->p = j->p;
    l->full = j->n / 64;
    l->ntail = r < 56 ? 1 : 2;
    l->ti = 0;
    memset(l->tail, 0, sizeof l->tail);
    if (r) memcpy(l->tail, j->p + j->n - r, r);
    l->tail[r] = 0x80;
    for (int i = 0; i < 8; i++) l->tail[64 * l->ntail - 8 + i] = (unsigned char)(bits >> (8 * i));
}

#define V8_ROTL(x, s) _mm256_or_si256(_mm256_slli_epi32((x), (s)), _mm256_srli_epi32((x), 32 - (s)))
#define V8_F(x, y, z) _mm256_xor_si256((z), _mm256_and_si256((x), _mm256_xor_si256((y), (z))))
#define V8_G(x, y, z) _mm256_xor_si256((y), _mm256_and_si256((z), _mm256_xor_si256((x), (y))))
#define V8_H(x, y, z) _mm256_xor_si256(_mm256_xor_si256((x), (y)), (z))
#define V8_I(x, y, z) _mm256_xor_si256((y), _mm256_or_si256((x), _mm256_xor_si256((z), ones)))
#define V8_STEP(f, a, b, c, d, x, k, s)                                                                        \
    do {                                                                                                       \
        (a) = _mm256_add_epi32((a), _mm256_add_epi32(f((b), (c), (d)), _mm256_add_epi32((x), _mm256_set1_epi32((int)(k))))); \
        (a) = _mm256_add_epi32(V8_ROTL((a), (s)), (b));                                                       \
    } while (0)

/* the 16 message words of 8 blocks, word w of every lane in m[w] (two 8x8 transposes of 32-bit words) */
__attribute__((target("avx2"))) static inline void md5x8_words(const unsigned char *const bp[8], __m256i m[16]) {
    for (int h = 0; h < 2; h++) {
        __m256i r[8], t[8], u[8];
        for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_si256((const __m256i *)(bp[i] + 32 * h));
        for (int i = 0; i < 8; i += 2) {
            t[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);
            t[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);
        }
        for (int i = 0; i < 8; i += 4) {
            u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
            u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
            u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
            u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
        }
        for (int i = 0; i < 4; i++) {
            m[8 * h + i] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x20);
            m[8 * h + i + 4] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x31);
        }
    }
}

static int md5_job_longer(const void *x, const void *y) {
    size_t a = (*(md5_job *const *)x)->n, b = (*(md5_job *const *)y)->n;
    return a < b ? 1 : a > b ? -1 : 0;
}

/* the messages go into the lanes longest first: a long one started last would end alone in its lane */
__attribute__((target("avx2"))) static void md5_many_avx2(md5_job *jobs_in, size_t k) {
    static const unsigned char zero[64] = {0};
    md5_job **jobs = malloc(k * sizeof *jobs);
    if (!jobs) { md5_many_scalar(jobs_in, k); return; }
    for (size_t i = 0; i < k; i++) jobs[i] = &jobs_in[i];
    qsort(jobs, k, sizeof *jobs, md5_job_longer);
    const __m256i ones = _mm256_set1_epi32(-1);
    md5_lane lanes[8];
    uint32_t st[4][8];
    int active[8] = {0}, live = 0;
    size_t next = 0;
    for (int l = 0; l < 8; l++) {
        st[0][l] = 0x67452301; st[1][l] = 0xefcdab89; st[2][l] = 0x98badcfe; st[3][l] = 0x10325476;
        if (next < k) { md5_lane_start(&lanes[l], jobs[next++]); active[l] = 1; live++; }
    }
    __m256i A = _mm256_loadu_si256((const __m256i *)st[0]), B = _mm256_loadu_si256((const __m256i *)st[1]);
    __m256i C = _mm256_loadu_si256((const __m256i *)st[2]), D = _mm256_loadu_si256((const __m256i *)st[3]);
    while (live) {
        const unsigned char *bp[8];
        for (int l = 0; l < 8; l++)
            bp[l] = !active[l] ? zero : lanes[l].full ? lanes[l].p : lanes[l].tail + 64 * lanes[l].ti;
        __m256i m[16];
        md5x8_words(bp, m);
        __m256i a = A, b = B, c = C, d = D;
        MD5_ROUNDS(V8_STEP, V8_F, V8_G, V8_H, V8_I, a, b, c, d, m);
        A = _mm256_add_epi32(A, a); B = _mm256_add_epi32(B, b); C = _mm256_add_epi32(C, c); D = _mm256_add_epi32(D, d);
        int ended = 0;
        for (int l = 0; l < 8; l++) {
            if (!active[l]) continue;
            md5_lane *ln = &lanes[l];
            if (ln->full) { ln->p += 64; ln->full--; }
            else ln->ti++;
            if (!ln->full && ln->ti == ln->ntail) ended = 1;
        }
        if (!ended) continue;
        /* a lane's message is done: its digest out, the next message in (through memory: rare enough) */
        _mm256_storeu_si256((__m256i *)st[0], A); _mm256_storeu_si256((__m256i *)st[1], B);
        _mm256_storeu_si256((__m256i *)st[2], C); _mm256_storeu_si256((__m256i *)st[3], D);
        for (int l = 0; l < 8; l++) {
            md5_lane *ln = &lanes[l];
            if (!active[l] || ln->full || ln->ti != ln->ntail) continue;
            uint32_t w[4] = {st[0][l], st[1][l], st[2][l], st[3][l]};
            md5_hex_words(w, ln->job->hex);
            st[0][l] = 0x67452301; st[1][l] = 0xefcdab89; st[2][l] = 0x98badcfe; st[3][l] = 0x10325476;
            if (next < k) md5_lane_start(ln, jobs[next++]);
            else { active[l] = 0; live--; }
        }
        A = _mm256_loadu_si256((const __m256i *)st[0]); B = _mm256_loadu_si256((const __m256i *)st[1]);
        C = _mm256_loadu_si256((const __m256i *)st[2]); D = _mm256_loadu_si256((const __m256i *)st[3]);
    }
    free(jobs);
}
#endif

static void md5_many(md5_job *jobs, size_t k) {
#ifdef MD5X8
    static int avx2 = -1;
    if (avx2 < 0) avx2 = __builtin_cpu_supports("avx2") && !getenv("PT2LOGS_MD5_SCALAR");
    if (avx2 && k > 1) { md5_many_avx2(jobs, k); return; }
#endif
    md5_many_scalar(jobs, k);
}
#endif
