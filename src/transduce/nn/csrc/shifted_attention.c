/* Attention on a few fixed offsets back (the LogSparse patterns of logsparse.py), fused per
 * sequence: the scores of each step's query against the keys o_m steps back, their
 * softmax, the dropout mask and the weighted sum of the values in one pass over a sequence
 * held in the cache, and the backward likewise. fused.py compiles it at first use and calls
 * it through ctypes; shifted_attention in logsparse.py computes the same with PyTorch's ops.
 *
 * A sequence is one (batch row, head): S = B x H of them, independent, shared out between
 * OpenMP threads (the OpenMP runtime PyTorch has loaded, whose libgomp.so.1 this library
 * names). Each tensor is given by its data, whether it holds bfloat16 (else float32), and
 * its strides for (batch, head, step, channel); a sequence is copied into float32 rows of
 * T steps, one per channel, so that every inner loop below runs along contiguous steps and
 * the compiler vectorises it, and written back in the caller's layout and type.
 * probs and keep are (S, M, T); offsets (M,) increasing, offsets[0] = 0; valid (M, T), 1
 * where step t may attend offsets[m] steps back (every step attends to itself). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"

typedef struct {
    void *data;
    int64_t bf16, batch, head, step, channel;  /* strides in elements */
} Tensor;

/* Sequence s (= b H + h) of x, into rows (D, T). */
static void load(const Tensor *x, int64_t s, int H, int T, int D, float *rows) {
    int64_t base = (s / H) * x->batch + (s % H) * x->head;
    for (int d = 0; d < D; d++) {
        float *row = rows + (int64_t)d * T;
        int64_t at = base + d * x->channel;
        if (x->bf16) {
            const uint16_t *p = (const uint16_t *)x->data + at;
            for (int t = 0; t < T; t++) row[t] = from_bf16(p[t * x->step]);
        } else {
            const float *p = (const float *)x->data + at;
            for (int t = 0; t < T; t++) row[t] = p[t * x->step];
        }
    }
}

static void store(const float *rows, int64_t s, int H, int T, int D, Tensor *x) {
    int64_t base = (s / H) * x->batch + (s % H) * x->head;
    for (int d = 0; d < D; d++) {
        const float *row = rows + (int64_t)d * T;
        int64_t at = base + d * x->channel;
        if (x->bf16) {
            uint16_t *p = (uint16_t *)x->data + at;
            for (int t = 0; t < T; t++) p[t * x->step] = to_bf16(row[t]);
        } else {
            float *p = (float *)x->data + at;
            for (int t = 0; t < T; t++) p[t * x->step] = row[t];
        }
    }
}

/* exp(x) for x <= 0 (a score less the largest of its step), to a few units in the last
 * place: x = n ln 2 + r with |r| <= ln 2 / 2, exp(r) by its Taylor series to r^7 (error
 * below 1e-8), times 2^n put in the exponent bits; 0 below -87, where 2^n leaves the normal
 * floats. A loop of it vectorises; one of the C library's expf does not. */
static inline float exp_nonpositive(float x) {
    float y = x < -87.0f ? -87.0f : x;  /* a masked cell's -inf: no float-to-int overflow */
    float n = floorf(y * 1.44269504f + 0.5f);
    float r = (y - n * 0.693145752f) - n * 1.42860677e-6f;  /* ln 2 in two parts */
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120
              + r * (1.0f / 720 + r * (1.0f / 5040)))))));
    int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return x < -87.0f ? 0.0f : p * scale;
}

/* The weights applied at offset m: the probabilities, times the kept cells' scale where a
 * dropout mask is given (0 where it dropped the cell). */
static inline void applied(const float *p, const uint8_t *keep, float kept, float *w, int T) {
    if (!keep) {
        memcpy(w, p, sizeof(float) * T);
        return;
    }
    for (int t = 0; t < T; t++) w[t] = keep[t] ? p[t] * kept : 0.0f;
}

/* One sequence: q, k, v, out (D, T); probs, keep (M, T); rows: 2 T of scratch. */
static void forward_one(const float *q, const float *k, const float *v, const int32_t *offsets,
                        const uint8_t *valid, const uint8_t *keep, float kept, float *probs,
                        float *out, float *rows, int T, int M, int D) {
    float scale = 1.0f / sqrtf((float)D), *best = rows, *w = rows + T;
    for (int m = 0; m < M; m++) {  /* the scores, into probs: q_t . k_{t - o} */
        int o = offsets[m];
        float *s = probs + (int64_t)m * T;
        memset(s, 0, sizeof(float) * T);
        for (int d = 0; d < D; d++) {
            const float *qd = q + (int64_t)d * T + o, *kd = k + (int64_t)d * T;
            float *so = s + o;
            for (int t = 0; t < T - o; t++) so[t] += qd[t] * kd[t];
        }
        const uint8_t *ok = valid + (int64_t)m * T;
        for (int t = 0; t < T; t++) s[t] = ok[t] ? s[t] * scale : -INFINITY;
    }
    memcpy(best, probs, sizeof(float) * T);  /* offset 0, always allowed */
    for (int m = 1; m < M; m++) {
        const float *s = probs + (int64_t)m * T;
        for (int t = 0; t < T; t++) best[t] = s[t] > best[t] ? s[t] : best[t];
    }
    float *total = w;
    memset(total, 0, sizeof(float) * T);
    for (int m = 0; m < M; m++) {
        float *s = probs + (int64_t)m * T;
        for (int t = 0; t < T; t++) {
            s[t] = exp_nonpositive(s[t] - best[t]);
            total[t] += s[t];
        }
    }
    for (int t = 0; t < T; t++) best[t] = 1.0f / total[t];
    for (int m = 0; m < M; m++) {
        float *s = probs + (int64_t)m * T;
        for (int t = 0; t < T; t++) s[t] *= best[t];
    }
    memset(out, 0, sizeof(float) * T * D);
    for (int m = 0; m < M; m++) {  /* out_t = sum_m w[m, t] v_{t - o_m} */
        int o = offsets[m];
        applied(probs + (int64_t)m * T, keep ? keep + (int64_t)m * T : 0, kept, w, T);
        const float *wo = w + o;
        for (int d = 0; d < D; d++) {
            float *od = out + (int64_t)d * T + o;
            const float *vd = v + (int64_t)d * T;
            for (int t = 0; t < T - o; t++) od[t] += wo[t] * vd[t];
        }
    }
}

/* One sequence's gradients dq, dk, dv (D, T) from grad (D, T); rows: (2 + M) T. */
static void backward_one(const float *grad, const float *q, const float *k, const float *v,
                         const int32_t *offsets, const uint8_t *keep, float kept,
                         const float *probs, float *dq, float *dk, float *dv, float *rows,
                         int T, int M, int D) {
    float scale = 1.0f / sqrtf((float)D), *mean = rows, *w = rows + T, *dprob = rows + 2 * T;
    memset(mean, 0, sizeof(float) * T);
    memset(dv, 0, sizeof(float) * T * D);
    for (int m = 0; m < M; m++) {  /* dv_{t - o} += w[m, t] g_t; dp[m, t] = g_t . v_{t - o} */
        int o = offsets[m];
        const float *p = probs + (int64_t)m * T;
        const uint8_t *km = keep ? keep + (int64_t)m * T : 0;
        float *dp = dprob + (int64_t)m * T, *dpo = dp + o;
        applied(p, km, kept, w, T);
        memset(dp, 0, sizeof(float) * T);
        const float *wo = w + o;
        for (int d = 0; d < D; d++) {
            const float *gd = grad + (int64_t)d * T + o, *vd = v + (int64_t)d * T;
            float *dvd = dv + (int64_t)d * T;
            for (int t = 0; t < T - o; t++) {
                dvd[t] += wo[t] * gd[t];
                dpo[t] += gd[t] * vd[t];
            }
        }
        if (km)
            for (int t = 0; t < T; t++) dp[t] = km[t] ? dp[t] * kept : 0.0f;
        for (int t = 0; t < T; t++) mean[t] += p[t] * dp[t];
    }
    memset(dq, 0, sizeof(float) * T * D);
    memset(dk, 0, sizeof(float) * T * D);
    for (int m = 0; m < M; m++) {  /* the softmax's backward, then the scores' */
        int o = offsets[m];
        const float *p = probs + (int64_t)m * T;
        float *ds = dprob + (int64_t)m * T;
        for (int t = 0; t < T; t++) ds[t] = p[t] * (ds[t] - mean[t]) * scale;
        const float *dso = ds + o;
        for (int d = 0; d < D; d++) {
            float *dqd = dq + (int64_t)d * T + o, *dkd = dk + (int64_t)d * T;
            const float *qd = q + (int64_t)d * T + o, *kd = k + (int64_t)d * T;
            for (int t = 0; t < T - o; t++) {
                dqd[t] += dso[t] * kd[t];
                dkd[t] += dso[t] * qd[t];
            }
        }
    }
}

/* Forward over all S = B H sequences; returns 0, or 1 where scratch memory ran out. */
int shifted_forward(Tensor q, Tensor k, Tensor v, Tensor out, const int32_t *offsets,
                    const uint8_t *valid, const uint8_t *keep, float kept, float *probs,
                    int B, int H, int T, int M, int D, int threads) {
    int failed = 0;
#pragma omp parallel num_threads(threads) reduction(|| : failed)
    {
        float *rows = malloc(sizeof(float) * ((int64_t)4 * D + 2) * T);
        failed = !rows;
#pragma omp for schedule(static)
        for (int64_t s = 0; s < (int64_t)B * H; s++) {
            if (!rows) continue;
            float *qs = rows, *ks = qs + (int64_t)D * T, *vs = ks + (int64_t)D * T;
            float *os = vs + (int64_t)D * T, *scratch = os + (int64_t)D * T;
            int64_t p = s * M * T;
            load(&q, s, H, T, D, qs);
            load(&k, s, H, T, D, ks);
            load(&v, s, H, T, D, vs);
            forward_one(qs, ks, vs, offsets, valid, keep ? keep + p : 0, kept, probs + p, os,
                        scratch, T, M, D);
            store(os, s, H, T, D, &out);
        }
        free(rows);
    }
    return failed;
}

int shifted_backward(Tensor grad, Tensor q, Tensor k, Tensor v, Tensor dq, Tensor dk,
                     Tensor dv, const int32_t *offsets, const uint8_t *keep, float kept,
                     const float *probs, int B, int H, int T, int M, int D, int threads) {
    int failed = 0;
#pragma omp parallel num_threads(threads) reduction(|| : failed)
    {
        float *rows = malloc(sizeof(float) * ((int64_t)7 * D + 2 + M) * T);
        failed = !rows;
#pragma omp for schedule(static)
        for (int64_t s = 0; s < (int64_t)B * H; s++) {
            if (!rows) continue;
            int64_t n = (int64_t)D * T, p = s * M * T;
            float *gs = rows, *qs = gs + n, *ks = qs + n, *vs = ks + n;
            float *dqs = vs + n, *dks = dqs + n, *dvs = dks + n, *scratch = dvs + n;
            load(&grad, s, H, T, D, gs);
            load(&q, s, H, T, D, qs);
            load(&k, s, H, T, D, ks);
            load(&v, s, H, T, D, vs);
            backward_one(gs, qs, ks, vs, offsets, keep ? keep + p : 0, kept, probs + p, dqs,
                         dks, dvs, scratch, T, M, D);
            store(dqs, s, H, T, D, &dq);
            store(dks, s, H, T, D, &dk);
            store(dvs, s, H, T, D, &dv);
        }
        free(rows);
    }
    return failed;
}
