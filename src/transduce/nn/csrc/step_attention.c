/* The attention of one decoding step: a few queries a row against keys and values already
 * projected (the decoder's cache), softmax(q k^T / sqrt(Dh)) v, in one pass per (row, head).
 * step_attention.py compiles it at first use and calls it through ctypes; without it the step runs
 * PyTorch's products, which in bfloat16 first copy the whole cache into float32 at every
 * step and go through memory three times more (scores, softmax, weighted sum).
 *
 * Queries and output are (M G, H Dh) rows, contiguous, bfloat16 or float32: the G queries
 * of key row m are rows m G .. m G + G - 1 (a sentence's beams over its shared source, or
 * one beam's own query over its own cache), G at most 16. Keys and values are (M, H, K,
 * Dh) in either type and any strides but the channels', which are next to each other. mask, where given, is a byte per key (nonzero: attend), key row
 * m's at mask + m * mask_batch (0: one mask for all rows). A query with no key to attend
 * gets zeros, as the explicit path's masked softmax gives.
 *
 * A task is one (key row, head), shared out between OpenMP threads (PyTorch's runtime).
 * Each key and each value is read once, widened to float32 in registers (vectors of 16
 * floats in GCC's and Clang's vector types), and serves every query of the task; the
 * scores and the queries' sums stay in the core's cache. Dh is a multiple of 16
 * (step_attention.py checks it and the rest). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "exp.h"

typedef struct {
    void *data;
    int64_t bf16, batch, head, step, channel; /* strides in elements */
} Tensor;

typedef float V __attribute__((vector_size(64)));
typedef float VU __attribute__((vector_size(64), aligned(4)));      /* unaligned */
typedef uint16_t H16 __attribute__((vector_size(32), aligned(2)));  /* 16 bfloat16 */
typedef uint32_t U32 __attribute__((vector_size(64)));

/* 16 floats from p, bfloat16 (widened: a shift into the top half) or float32. */
static inline V get(const void *p, int bf16) {
    if (!bf16) return *(const VU *)p;
    U32 bits = __builtin_convertvector(*(const H16 *)p, U32) << 16;
    V x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

static inline float total_of(V x) {
    float t = 0.0f;
    for (int l = 0; l < 16; l++) t += x[l];
    return t;
}

/* Returns 0, or 1 where scratch memory ran out. */
int step_attention(const void *q, int q_bf16, Tensor k, Tensor v, const uint8_t *mask,
                   int64_t mask_batch, void *out, int out_bf16, int M, int G, int H, int K,
                   int D, float scale, int threads) {
    int failed = 0, C = D / 16; /* vectors a row */
    int64_t width = (int64_t)H * D;     /* a query row's elements */
#pragma omp parallel num_threads(threads) reduction(|| : failed)
    {
        /* per thread: the task's queries (G C vectors), sums (G C) and scores (G K) */
        size_t bytes = sizeof(V) * (2 * (size_t)G * C) + sizeof(float) * (size_t)G * K;
        V *qs = aligned_alloc(sizeof(V), (bytes + sizeof(V) - 1) / sizeof(V) * sizeof(V));
        if (!qs) failed = 1;
#pragma omp for schedule(static)
        for (int64_t task = 0; task < (int64_t)M * H; task++) {
            if (!qs) continue;
            int64_t m = task / H;
            int h = (int)(task % H);
            V *os = qs + (int64_t)G * C;
            float *s = (float *)(os + (int64_t)G * C);
            const uint8_t *keep = mask ? mask + m * mask_batch : 0;
            int64_t row0 = m * G * width + (int64_t)h * D; /* query i's at row0 + i width */
            for (int i = 0; i < G; i++)
                for (int c = 0; c < C; c++) {
                    int64_t at = row0 + i * width + 16 * c;
                    qs[i * C + c] = get(q_bf16 ? (const void *)((const uint16_t *)q + at)
                                               : (const void *)((const float *)q + at), q_bf16);
                }
            int64_t kb = m * k.batch + h * k.head, vb = m * v.batch + h * v.head;
            int any = 0;
            for (int j = 0; j < K; j++) {
                if (keep && !keep[j]) continue;
                any = 1;
                int64_t at = kb + j * k.step;
                const void *kj = k.bf16 ? (const void *)((const uint16_t *)k.data + at)
                                        : (const void *)((const float *)k.data + at);
                V acc[16];
                for (int i = 0; i < G; i++) acc[i] = (V){0};
                for (int c = 0; c < C; c++) {
                    V kc = get(k.bf16 ? (const void *)((const uint16_t *)kj + 16 * c)
                                      : (const void *)((const float *)kj + 16 * c), k.bf16);
                    for (int i = 0; i < G; i++) acc[i] += qs[i * C + c] * kc;
                }
                for (int i = 0; i < G; i++) s[i * K + j] = total_of(acc[i]) * scale;
            }
            for (int64_t i = 0; i < (int64_t)G * C; i++) os[i] = (V){0};
            if (any) {
                for (int i = 0; i < G; i++) { /* the softmax of query i's scores */
                    float *si = s + i * K, top = -INFINITY, sum = 0.0f;
                    for (int j = 0; j < K; j++)
                        if (!keep || keep[j]) top = si[j] > top ? si[j] : top;
                    for (int j = 0; j < K; j++) {
                        si[j] = (!keep || keep[j]) ? exp_nonpositive(si[j] - top) : 0.0f;
                        sum += si[j];
                    }
                    float inv = 1.0f / sum;
                    for (int j = 0; j < K; j++) si[j] *= inv;
                }
                for (int j = 0; j < K; j++) {
                    if (keep && !keep[j]) continue;
                    int64_t at = vb + j * v.step;
                    for (int c = 0; c < C; c++) {
                        V vc = get(v.bf16 ? (const void *)((const uint16_t *)v.data + at + 16 * c)
                                          : (const void *)((const float *)v.data + at + 16 * c),
                                   v.bf16);
                        for (int i = 0; i < G; i++) os[i * C + c] += s[i * K + j] * vc;
                    }
                }
            }
            for (int i = 0; i < G; i++) {
                int64_t at = row0 + i * width;
                const float *o = (const float *)(os + (int64_t)i * C);
                if (out_bf16)
                    for (int d = 0; d < D; d++) ((uint16_t *)out)[at + d] = to_bf16(o[d]);
                else
                    memcpy((float *)out + at, o, sizeof(float) * D);
            }
        }
        free(qs);
    }
    return failed;
}
