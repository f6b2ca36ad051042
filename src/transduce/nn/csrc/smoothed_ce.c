/* Label-smoothed cross-entropy of a block of logits, and its gradient, in one visit of each
 * row: training/loss.py's chunked output layer calls it through ctypes (compiled at first
 * use by native.py) on the rows the matrix product has just written, in place.
 *
 * For a row z of V logits, gold class y and smoothing e, with lse = log sum_v exp(z_v):
 *   loss = lse - (1 - e) z_y - e mean_v z_v
 *   dloss/dz_v = softmax(z)_v - e / V - (1 - e) [v = y]
 * PyTorch's operations make ten passes over a block (cast, max, subtract, exp, sum, divide,
 * ...), each through memory; here a row is read once into a float32 buffer that stays in
 * the core's cache, and the gradient written back over the logits in their own type.
 *
 * logits: rows x V, row r at logits + r * ld elements, float32 or bfloat16 (bf16 != 0);
 * target: rows gold ids (int64); loss: rows floats out. Rows are shared out between the
 * OpenMP threads (the runtime PyTorch has loaded, whose libgomp.so.1 this library names). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "bf16.h"
#include "exp.h"

/* One row: its loss, and its gradient in buf (float32). */
static float row_loss(float *buf, int64_t V, int64_t y, float epsilon) {
    float top = -INFINITY, sum = 0.0f;
#pragma omp simd reduction(max : top) reduction(+ : sum)
    for (int64_t v = 0; v < V; v++) {
        top = buf[v] > top ? buf[v] : top;
        sum += buf[v];
    }
    float gold = buf[y], norm = 0.0f;
#pragma omp simd reduction(+ : norm)
    for (int64_t v = 0; v < V; v++) {
        buf[v] = exp_nonpositive(buf[v] - top);
        norm += buf[v];
    }
    float scale = 1.0f / norm, floor = epsilon / (float)V;
#pragma omp simd
    for (int64_t v = 0; v < V; v++) buf[v] = buf[v] * scale - floor;
    buf[y] -= 1.0f - epsilon;
    /* a NaN or infinite logit makes top, norm and so the loss NaN: the caller's guard sees it */
    return top + logf(norm) - (1.0f - epsilon) * gold - epsilon * (sum / (float)V);
}

int smoothed_ce(void *logits, int bf16, int64_t rows, int64_t V, int64_t ld,
                const int64_t *target, float epsilon, float *loss, int threads) {
    int failed = 0;
#pragma omp parallel num_threads(threads) reduction(| : failed)
    {
        float *buf = malloc((size_t)V * sizeof(float));
        if (buf == NULL) failed = 1;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; r++) {
            if (buf == NULL) continue;
            if (bf16) {
                uint16_t *z = (uint16_t *)logits + r * ld;
#pragma omp simd
                for (int64_t v = 0; v < V; v++) buf[v] = from_bf16(z[v]);
                loss[r] = row_loss(buf, V, target[r], epsilon);
#pragma omp simd
                for (int64_t v = 0; v < V; v++) z[v] = to_bf16(buf[v]);
            } else {
                float *z = (float *)logits + r * ld;
                for (int64_t v = 0; v < V; v++) buf[v] = z[v];
                loss[r] = row_loss(buf, V, target[r], epsilon);
                for (int64_t v = 0; v < V; v++) z[v] = buf[v];
            }
        }
        free(buf);
    }
    return failed;
}
