/* Seeded random tensors for `run --random`: floats uniform in [-1, 1),
 * signed integers in [-8, 8), unsigned ones in [0, 16), bools 0/1. The
 * generator is splitmix64, so a seed gives the same data everywhere. */
#include <string.h>

#include "run.h"

static uint64_t next_u64(run_rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1) on a grid of 2^bits points: with `bits` the type's
 * precision every value is exact, so rounding never yields 1.0. */
static double next_unit(run_rng *r, int bits)
{
    return (double)(next_u64(r) >> (64 - bits)) / (double)(1ull << (bits - 1)) - 1.0;
}

/* Stores the low `size` bytes of v (an integer of that width) at p. */
static void store_int(void *p, int size, int64_t v)
{
    switch (size) {
    case 1: { int8_t x = (int8_t)v; memcpy(p, &x, 1); break; }
    case 2: { int16_t x = (int16_t)v; memcpy(p, &x, 2); break; }
    case 4: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
    default: memcpy(p, &v, 8); break;
    }
}

void run_fill_random(run_rng *rng, tj_dtype dt, void *data, uint64_t numel)
{
    unsigned char *p = data;
    int size = tj_dtype_size(dt);
    for (uint64_t i = 0; i < numel; i++, p += size) {
        if (dt == TJ_DT_F64) {
            double v = next_unit(rng, 53);
            memcpy(p, &v, 8);
        } else if (dt == TJ_DT_F32) {
            float v = (float)next_unit(rng, 24);
            memcpy(p, &v, 4);
        } else if (dt == TJ_DT_F16 || dt == TJ_DT_BF16) {
            float v = (float)next_unit(rng, dt == TJ_DT_F16 ? 11 : 8);
            uint16_t h = dt == TJ_DT_F16 ? tj_f32_to_f16(v) : tj_f32_to_bf16(v);
            memcpy(p, &h, 2);
        } else if (dt == TJ_DT_BOOL) {
            *p = (unsigned char)(next_u64(rng) >> 63);
        } else {
            int64_t v = (int64_t)(next_u64(rng) >> 60); /* 0..15 */
            store_int(p, size, tj_dtype_is_signed(dt) ? v - 8 : v);
        }
    }
}
