/* bfloat16 to and from float32 for the kernels of this folder: a bfloat16 is the top 16
 * bits of a float32, so widening is a shift, and narrowing rounds to the nearest, ties to
 * even, as PyTorch does (NaN stays a NaN). */
#ifndef TRANSDUCE_BF16_H
#define TRANSDUCE_BF16_H

#include <stdint.h>
#include <string.h>

static inline float from_bf16(uint16_t x) {
    uint32_t bits = (uint32_t)x << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint16_t to_bf16(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    uint16_t rounded = (uint16_t)((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
    return f != f ? 0x7fc0 : rounded;  /* a select, not a branch: loops of it vectorise */
}

#endif
