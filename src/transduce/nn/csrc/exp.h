/* A vectorisable exp for the kernels of this folder. */
#ifndef TRANSDUCE_EXP_H
#define TRANSDUCE_EXP_H

#include <math.h>
#include <stdint.h>
#include <string.h>

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

#endif
