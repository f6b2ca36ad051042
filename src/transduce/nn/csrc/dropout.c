/* Dropout on the CPU in one pass: each element's keep-or-drop from a counter-based random
 * stream, the kept ones scaled, and the mask kept for the backward. dropout.py calls it
 * through ctypes (compiled at first use by native.py).
 *
 * The stream is SplitMix64 (Steele, Lea and Flood 2014): word w of a call is the finaliser
 * of seed + (w + 1) * 0x9e3779b97f4a7c15, so any word can be computed without the ones
 * before it, and the threads share the elements out with no state between them. Each word
 * gives four 16-bit uniform numbers, the elements 4w to 4w + 3 (low bits first); an element
 * is kept where its number is at least `dropped` (p rounded to a multiple of 2^-16, as
 * dropout.py says).
 * The seed is one draw of PyTorch's generator, so torch.manual_seed repeats the masks.
 *
 * x and out are float32 or bfloat16 (bf16 != 0), contiguous, n elements; keep is n bytes. */
#include <stdint.h>
#include <string.h>

#include "bf16.h"

/* One rounding per operation, as PyTorch's x + y * scale has them: no fused multiply-add,
 * which the vectorised loops and their scalar tails could otherwise use differently. */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

static inline uint64_t word(uint64_t seed, int64_t w) {
    uint64_t z = seed + (uint64_t)(w + 1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The 16-bit numbers of elements i0 .. i0 + n - 1 (i0 a multiple of 4, n at most CHUNK):
 * the words hashed in a loop that vectorises, each once for its four elements, then split
 * into their lanes (on a little-endian machine the words' bytes are the lanes in order). */
#define CHUNK 1024
static inline void numbers(uint64_t seed, int64_t i0, int n, uint16_t *u) {
    uint64_t w[CHUNK / 4];
    for (int j = 0; j < (n + 3) / 4; j++) w[j] = word(seed, i0 / 4 + j);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(u, w, sizeof(uint16_t) * n);
#else
    for (int j = 0; j < n; j++) u[j] = (uint16_t)(w[j / 4] >> (16 * (j % 4)));
#endif
}

/* Over the elements CHUNK at a time (the threads share the chunks out): i0, n and the
 * numbers u of each; BODY uses them. */
#define CHUNKS(BODY)                                                                        \
    _Pragma("omp parallel for num_threads(threads) schedule(static)")                      \
    for (int64_t c = 0; c < (n + CHUNK - 1) / CHUNK; c++) {                                 \
        int64_t i0 = c * CHUNK;                                                             \
        int m = n - i0 < CHUNK ? (int)(n - i0) : CHUNK;                                     \
        uint16_t u[CHUNK];                                                                  \
        numbers(seed, i0, m, u);                                                            \
        BODY                                                                                \
    }

/* The mask alone: keep[i] = 1 where element i is kept. */
void dropout_mask(uint8_t *keep, int64_t n, uint64_t seed, uint32_t dropped, int threads) {
    CHUNKS(for (int j = 0; j < m; j++) keep[i0 + j] = u[j] >= dropped;)
}

/* out = x * scale where kept, else 0, in one pass, with the mask written to keep. */
#define FORWARD(T, LOAD, STORE)                                                             \
    {                                                                                       \
        const T *a = (const T *)x;                                                          \
        T *b = (T *)out;                                                                    \
        CHUNKS(for (int j = 0; j < m; j++) {                                                \
            uint8_t k = u[j] >= dropped;                                                    \
            keep[i0 + j] = k;                                                               \
            b[i0 + j] = STORE(k ? LOAD(a[i0 + j]) * scale : 0.0f);                          \
        })                                                                                  \
    }
#define SAME(v) (v)

void dropout_forward(const void *x, void *out, uint8_t *keep, int64_t n, int bf16,
                     uint64_t seed, uint32_t dropped, float scale, int threads) {
    if (bf16)
        FORWARD(uint16_t, from_bf16, to_bf16)
    else
        FORWARD(float, SAME, SAME)
}

/* out = x + (y * scale where kept, else 0): a residual connection's dropout and sum in
 * one pass, the mask written to keep. `types`: bit 0 x, bit 1 y, bit 2 out in bfloat16 (out
 * is bfloat16 only where x and y both are, as PyTorch promotes). */
#define ADD(TX, LX, TY, LY, TO, SO)                                                         \
    {                                                                                       \
        const TX *a = (const TX *)x;                                                        \
        const TY *b = (const TY *)y;                                                        \
        TO *o = (TO *)out;                                                                  \
        CHUNKS(for (int j = 0; j < m; j++) {                                                \
            uint8_t k = u[j] >= dropped;                                                    \
            keep[i0 + j] = k;                                                               \
            o[i0 + j] = SO(LX(a[i0 + j]) + (k ? LY(b[i0 + j]) * scale : 0.0f));            \
        })                                                                                  \
    }

void dropout_add_forward(const void *x, const void *y, void *out, uint8_t *keep, int64_t n,
                         int types, uint64_t seed, uint32_t dropped, float scale,
                         int threads) {
    switch (types) {
        case 0: ADD(float, SAME, float, SAME, float, SAME) break;
        case 1: ADD(uint16_t, from_bf16, float, SAME, float, SAME) break;
        case 2: ADD(float, SAME, uint16_t, from_bf16, float, SAME) break;
        default: ADD(uint16_t, from_bf16, uint16_t, from_bf16, uint16_t, to_bf16) break;
    }
}

/* The gradient: grad * scale where kept, else 0. `types`: bit 0 grad, bit 1 out in
 * bfloat16 (they differ where a sum's gradient goes back to an input of the other type). */
#define BACKWARD(TG, LOAD, TO, STORE)                                                       \
    {                                                                                       \
        const TG *a = (const TG *)grad;                                                     \
        TO *b = (TO *)out;                                                                  \
        _Pragma("omp parallel for num_threads(threads) schedule(static)")                  \
        for (int64_t i = 0; i < n; i++) b[i] = STORE(keep[i] ? LOAD(a[i]) * scale : 0.0f);  \
    }

void dropout_backward(const void *grad, void *out, const uint8_t *keep, int64_t n, int types,
                      float scale, int threads) {
    switch (types) {
        case 0: BACKWARD(float, SAME, float, SAME) break;
        case 1: BACKWARD(uint16_t, from_bf16, float, SAME) break;
        case 2: BACKWARD(float, SAME, uint16_t, to_bf16) break;
        default: BACKWARD(uint16_t, from_bf16, uint16_t, to_bf16) break;
    }
}
