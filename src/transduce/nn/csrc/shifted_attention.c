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
#include "exp.h"

typedef struct {
    void *data;
    int64_t bf16, batch, head, step, channel;  /* strides in elements */
} Tensor;

/* Sequence s (= b H + h) of x, into rows of stride R (steps 0 .. T - 1), in the tensor's
 * own order: a row at a time where steps are next to each other (time last), else a step
 * at a time, its channels read in a run and written one to each row. */
static void load(const Tensor *x, int64_t s, int H, int T, int D, int64_t R, float *rows) {
    int64_t base = (s / H) * x->batch + (s % H) * x->head, c = x->channel, st = x->step;
    const uint16_t *h = (const uint16_t *)x->data + base;
    const float *f = (const float *)x->data + base;
    if (st == 1 || c != 1) {
        for (int d = 0; d < D; d++) {
            float *row = rows + d * R;
            if (x->bf16)
                for (int t = 0; t < T; t++) row[t] = from_bf16(h[d * c + t * st]);
            else
                for (int t = 0; t < T; t++) row[t] = f[d * c + t * st];
        }
        return;
    }
    for (int t = 0; t < T; t++) {
        if (x->bf16)
            for (int d = 0; d < D; d++) rows[d * R + t] = from_bf16(h[t * st + d]);
        else
            for (int d = 0; d < D; d++) rows[d * R + t] = f[t * st + d];
    }
}

/* Rows of stride R (steps 0 .. T - 1) into sequence s of x, likewise. In bfloat16 across
 * time, blocks of 16 steps and 16 channels are rounded together (a loop that vectorises),
 * then moved to where the tensor holds them. */
static void store(const float *rows, int64_t s, int H, int T, int D, int64_t R, Tensor *x) {
    int64_t base = (s / H) * x->batch + (s % H) * x->head, c = x->channel, st = x->step;
    uint16_t *h = (uint16_t *)x->data + base, tile[16][16];
    float *f = (float *)x->data + base;
    if (st == 1 || c != 1 || !x->bf16) {
        for (int d = 0; d < D; d++) {
            const float *row = rows + d * R;
            if (x->bf16)
                for (int t = 0; t < T; t++) h[d * c + t * st] = to_bf16(row[t]);
            else
                for (int t = 0; t < T; t++) f[d * c + t * st] = row[t];
        }
        return;
    }
    for (int t0 = 0; t0 < T; t0 += 16)
        for (int d0 = 0; d0 < D; d0 += 16) {
            int nt = T - t0 < 16 ? T - t0 : 16, nd = D - d0 < 16 ? D - d0 : 16;
            for (int d = 0; d < nd; d++) {
                const float *row = rows + (d0 + d) * R + t0;
                for (int j = 0; j < 16; j++) tile[d][j] = to_bf16(row[j]);  /* pads: zeros */
            }
            for (int j = 0; j < nt; j++)
                for (int d = 0; d < nd; d++) h[(t0 + j) * st + d0 + d] = tile[d][j];
        }
}

/* The contractions below work on blocks of BW steps, their sums held in registers in
 * GCC's and Clang's vector types (a V is 16 floats: one AVX-512 register, two AVX ones):
 * each operand is loaded once per block rather than once per offset or channel, and no
 * partial sum goes back to memory. Rows are padded (see Rows) so that a block may read up to
 * the largest offset before step 0 and past step T - 1, where the rows hold zeros. */
#define BW 32
typedef float V __attribute__((vector_size(64)));
typedef float VU __attribute__((vector_size(64), aligned(4)));  /* unaligned loads */

static inline V get(const float *p) { return *(const VU *)p; }
static inline void put(float *p, V x) { *(VU *)p = x; }

/* Rows of R floats, step 0 at `lead` (a multiple of 16 above the largest offset), zeros
 * before it and from step T on. The loads write steps 0 .. T - 1 only, so the pads stay
 * zero; a sum over a block past step T - 1 multiplies a zero of the queries, keys or
 * gradient rows, so the scores' rows are zero there too and the weights read past T by the
 * backward's sums (w[m][t + o]) are zero as well. */
typedef struct {
    int T, Tb, M, D;  /* Tb: T rounded up to BW */
    int64_t R, lead;
    const int32_t *off;
} Rows;

/* A block's sums: acc += (x0, x1) * the BW floats at b; and the sums into a row. */
static inline void add_block(V acc[2], V x0, V x1, const float *b) {
    acc[0] += x0 * get(b);
    acc[1] += x1 * get(b + 16);
}

static inline void put_block(float *row, const V acc[2]) {
    put(row, acc[0]);
    put(row + 16, acc[1]);
}

/* s[m][t] = sum_d a[d][t] b[d][t - off[m]], m in groups of 4 (8 registers of sums). */
static void over_channels(const Rows *r, const float *a, const float *b, float *s) {
    for (int t = 0; t < r->Tb; t += BW) {
        for (int m = 0; m < r->M; m += 4) {
            int g = r->M - m < 4 ? r->M - m : 4;
            V acc[4][2] = {{{0}}};
            for (int d = 0; d < r->D; d++) {
                const float *ad = a + d * r->R + t, *bd = b + d * r->R + t;
                V a0 = get(ad), a1 = get(ad + 16);
                for (int i = 0; i < 4; i++) {
                    if (i >= g) break;
                    add_block(acc[i], a0, a1, bd - r->off[m + i]);
                }
            }
            for (int i = 0; i < g; i++) put_block(s + (m + i) * r->R + t, acc[i]);
        }
    }
}

/* y[d][t] = sum_m w[m][t] b[d][t - off[m]] (back = 0), or, with back = 1,
 * y[d][t] = sum_m w[m][t + off[m]] b[d][t + off[m]]; d in groups of 4. */
static void over_offsets(const Rows *r, const float *w, const float *b, int back, float *y) {
    for (int t = 0; t < r->Tb; t += BW) {
        for (int d = 0; d < r->D; d += 4) {
            int g = r->D - d < 4 ? r->D - d : 4;
            V acc[4][2] = {{{0}}};
            for (int m = 0; m < r->M; m++) {
                int o = r->off[m];
                const float *wm = w + m * r->R + t + (back ? o : 0);
                V w0 = get(wm), w1 = get(wm + 16);
                for (int i = 0; i < 4; i++) {
                    if (i >= g) break;
                    add_block(acc[i], w0, w1, b + (d + i) * r->R + t + (back ? o : -o));
                }
            }
            for (int i = 0; i < g; i++) put_block(y + (d + i) * r->R + t, acc[i]);
        }
    }
}

/* The weights applied at each offset: the probabilities, times the kept cells' scale where
 * a dropout mask is given (0 where it dropped the cell). */
static void applied(const Rows *r, const float *p, const uint8_t *keep, float kept, float *w) {
    for (int m = 0; m < r->M; m++) {
        const float *pm = p + m * r->R;
        float *wm = w + m * r->R;
        if (!keep) {
            if (wm != pm) memcpy(wm, pm, sizeof(float) * r->T);
            continue;
        }
        const uint8_t *km = keep + (int64_t)m * r->T;
        for (int t = 0; t < r->T; t++) wm[t] = km[t] ? pm[t] * kept : 0.0f;
    }
}

/* One sequence: q, k, v, out (D rows); probs (M, T) to keep for the backward; s: M rows. */
static void forward_one(const Rows *r, const float *q, const float *k, const float *v,
                        const uint8_t *valid, const uint8_t *keep, float kept, float *probs,
                        float *out, float *s, float *best, float *total) {
    int T = r->T, M = r->M;
    float scale = 1.0f / sqrtf((float)r->D);
    over_channels(r, q, k, s);  /* s[m][t] = q_t . k_{t - o} */
    for (int m = 0; m < M; m++) {
        float *sm = s + m * r->R;
        const uint8_t *ok = valid + (int64_t)m * T;
        for (int t = 0; t < T; t++) sm[t] = ok[t] ? sm[t] * scale : -INFINITY;
    }
    memcpy(best, s, sizeof(float) * T);  /* offset 0, always allowed */
    for (int m = 1; m < M; m++) {
        const float *sm = s + m * r->R;
        for (int t = 0; t < T; t++) best[t] = sm[t] > best[t] ? sm[t] : best[t];
    }
    memset(total, 0, sizeof(float) * T);
    for (int m = 0; m < M; m++) {
        float *sm = s + m * r->R;
        for (int t = 0; t < T; t++) {
            sm[t] = exp_nonpositive(sm[t] - best[t]);
            total[t] += sm[t];
        }
    }
    for (int t = 0; t < T; t++) best[t] = 1.0f / total[t];
    for (int m = 0; m < M; m++) {
        float *sm = s + m * r->R, *pm = probs + (int64_t)m * T;
        for (int t = 0; t < T; t++) pm[t] = sm[t] *= best[t];
    }
    applied(r, s, keep, kept, s);
    over_offsets(r, s, v, 0, out);  /* out_t = sum_m w[m, t] v_{t - o_m} */
}

/* One sequence's gradients dq, dk, dv (D rows) from grad (D rows) and probs (M rows); w,
 * ds: M rows each. */
static void backward_one(const Rows *r, const float *grad, const float *q, const float *k,
                         const float *v, const uint8_t *keep, float kept, const float *p,
                         float *dq, float *dk, float *dv, float *w, float *ds, float *mean) {
    int T = r->T, M = r->M;
    float scale = 1.0f / sqrtf((float)r->D);
    applied(r, p, keep, kept, w);
    over_offsets(r, w, grad, 1, dv);  /* dv_s = sum_m w[m, s + o] g_{s + o} */
    over_channels(r, grad, v, ds);    /* dw[m][t] = g_t . v_{t - o} */
    memset(mean, 0, sizeof(float) * T);
    for (int m = 0; m < M; m++) {  /* the dropout's backward, then the softmax's */
        float *dm = ds + m * r->R;
        const float *pm = p + m * r->R;
        const uint8_t *km = keep ? keep + (int64_t)m * T : 0;
        if (km)
            for (int t = 0; t < T; t++) dm[t] = km[t] ? dm[t] * kept : 0.0f;
        for (int t = 0; t < T; t++) mean[t] += pm[t] * dm[t];
    }
    for (int m = 0; m < M; m++) {
        float *dm = ds + m * r->R;
        const float *pm = p + m * r->R;
        for (int t = 0; t < T; t++) dm[t] = pm[t] * (dm[t] - mean[t]) * scale;
    }
    over_offsets(r, ds, k, 0, dq);  /* dq_t = sum_m ds[m, t] k_{t - o} */
    over_offsets(r, ds, q, 1, dk);  /* dk_s = sum_m ds[m, s + o] q_{s + o} */
}

/* The rows' layout for T steps and offsets off[0..M) (increasing). */
static Rows rows_for(const int32_t *off, int T, int M, int D) {
    Rows r = {T, (T + BW - 1) / BW * BW, M, D, 0, 0, off};
    r.lead = (off[M - 1] + 16) / 16 * 16;
    r.R = r.lead + r.Tb + r.lead;
    return r;
}

/* n zeroed rows of r (calloc), each pointer at its step 0. */
static float *zeroed(const Rows *r, int n) {
    float *x = calloc((size_t)n * r->R, sizeof(float));
    return x ? x + r->lead : 0;
}

/* Forward over all S = B H sequences; returns 0, or 1 where scratch memory ran out. */
int shifted_forward(Tensor q, Tensor k, Tensor v, Tensor out, const int32_t *offsets,
                    const uint8_t *valid, const uint8_t *keep, float kept, float *probs,
                    int B, int H, int T, int M, int D, int threads) {
    int failed = 0;
    Rows r = rows_for(offsets, T, M, D);
#pragma omp parallel num_threads(threads) reduction(|| : failed)
    {
        float *rows = zeroed(&r, 4 * D + M + 2);
        failed = !rows;
#pragma omp for schedule(static)
        for (int64_t s = 0; s < (int64_t)B * H; s++) {
            if (!rows) continue;
            float *qs = rows, *ks = qs + D * r.R, *vs = ks + D * r.R, *os = vs + D * r.R;
            float *ss = os + D * r.R, *best = ss + M * r.R, *total = best + r.R;
            int64_t p = s * M * T;
            load(&q, s, H, T, D, r.R, qs);
            load(&k, s, H, T, D, r.R, ks);
            load(&v, s, H, T, D, r.R, vs);
            forward_one(&r, qs, ks, vs, valid, keep ? keep + p : 0, kept, probs + p, os, ss,
                        best, total);
            store(os, s, H, T, D, r.R, &out);
        }
        if (rows) free(rows - r.lead);
    }
    return failed;
}

int shifted_backward(Tensor grad, Tensor q, Tensor k, Tensor v, Tensor dq, Tensor dk,
                     Tensor dv, const int32_t *offsets, const uint8_t *keep, float kept,
                     const float *probs, int B, int H, int T, int M, int D, int threads) {
    int failed = 0;
    Rows r = rows_for(offsets, T, M, D);
#pragma omp parallel num_threads(threads) reduction(|| : failed)
    {
        float *rows = zeroed(&r, 7 * D + 3 * M + 1);
        failed = !rows;
#pragma omp for schedule(static)
        for (int64_t s = 0; s < (int64_t)B * H; s++) {
            if (!rows) continue;
            int64_t n = D * r.R, p = s * M * T;
            float *gs = rows, *qs = gs + n, *ks = qs + n, *vs = ks + n;
            float *dqs = vs + n, *dks = dqs + n, *dvs = dks + n, *ps = dvs + n;
            float *ws = ps + M * r.R, *dss = ws + M * r.R, *mean = dss + M * r.R;
            load(&grad, s, H, T, D, r.R, gs);
            load(&q, s, H, T, D, r.R, qs);
            load(&k, s, H, T, D, r.R, ks);
            load(&v, s, H, T, D, r.R, vs);
            for (int m = 0; m < M; m++)
                memcpy(ps + m * r.R, probs + p + (int64_t)m * T, sizeof(float) * T);
            backward_one(&r, gs, qs, ks, vs, keep ? keep + p : 0, kept, ps, dqs, dks, dvs, ws,
                         dss, mean);
            store(dqs, s, H, T, D, r.R, &dq);
            store(dks, s, H, T, D, r.R, &dk);
            store(dvs, s, H, T, D, r.R, &dv);
        }
        if (rows) free(rows - r.lead);
    }
    return failed;
}
