/* A bitonic sorting network for lines of 32-bit keys alone (no values, no
 * indices), in AVX2 registers: 8 keys a vector, unsigned min and max for
 * each compare-exchange. A radix sort's byte passes scatter through a
 * chain of counters (about 26 cycles a key at 1024 keys); the network's
 * n log^2 n compare-exchanges take 8 at a time in two instructions.
 *
 * Layout: element i of the line (in sorted order) is lane i / Q of vector
 * i % Q (Q vectors), so every step between elements closer than Q is
 * between whole vectors, and only the last three merge levels move keys
 * across lanes; a transpose at the end writes the line in order. Every
 * step is ascending: the first step of merge level k compares element i
 * with i ^ (k - 1) (its mirror in its block of k), the others are
 * half-cleaners (i with i ^ j, the smaller to the lower). Steps between
 * vectors closer than 8 run on 8 vectors held in registers; the wider ones
 * take up to three steps a pass over memory.
 *
 * Built for x86-64 only (TJ_CPU_SORT_NET); the code generator calls it
 * where the host has AVX2 (tj_cpu_sort_net_host, llvm_sort.c). */
#include <stdint.h>
#include <string.h>

#include "codegen/llvm/llvm.h"

int tj_cpu_sort_net_host(const char *features)
{
    /* a whole entry of the comma-separated list */
    for (const char *f = features; TJ_CPU_SORT_NET && f && (f = strstr(f, "+avx2")); f += 5)
        if ((f == features || f[-1] == ',') && (f[5] == ',' || f[5] == '\0'))
            return 1;
    return 0;
}

#if TJ_CPU_SORT_NET

#include <immintrin.h>

#define NET __attribute__((target("avx2"), always_inline)) static inline
#define LANES 8
/* loops over the vectors held in registers: unrolled, so they stay there */
#define UNROLL _Pragma("GCC unroll 8")

typedef __m256i vec;

NET vec load(const uint32_t *p) { return _mm256_loadu_si256((const vec *)p); }
NET void store(uint32_t *p, vec v) { _mm256_storeu_si256((vec *)p, v); }

NET void exchange(vec *a, vec *b)
{
    vec lo = _mm256_min_epu32(*a, *b);
    *b = _mm256_max_epu32(*a, *b);
    *a = lo;
}

/* Lane l of v from lane l ^ s (s = 1 .. 7). */
NET vec lanes_xor(vec v, int s)
{
    switch (s) {
    case 1: return _mm256_shuffle_epi32(v, 0xB1);
    case 2: return _mm256_shuffle_epi32(v, 0x4E);
    case 3: return _mm256_shuffle_epi32(v, 0x1B);
    case 4: return _mm256_permute4x64_epi64(v, 0x4E);
    default: return _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0));
    }
}

/* min where the lane's bit t is 0, max where it is 1 (t = 1, 2, 4). */
NET vec by_lane(vec mn, vec mx, int t)
{
    if (t == 1)
        return _mm256_blend_epi32(mn, mx, 0xAA);
    if (t == 2)
        return _mm256_blend_epi32(mn, mx, 0xCC);
    return _mm256_blend_epi32(mn, mx, 0xF0);
}

/* A half-cleaner step across lanes: lane l against lane l ^ t. */
NET vec lane_step(vec v, int t)
{
    vec p = lanes_xor(v, t);
    return by_lane(_mm256_min_epu32(v, p), _mm256_max_epu32(v, p), t);
}

/* The mirror step of a level that crosses lanes: a's lane l against b's
 * lane l ^ s; the lower element of each pair is the one whose lane has bit
 * t clear (t = (s + 1) / 2). */
NET void lane_mirror(vec *a, vec *b, int s)
{
    int t = (s + 1) / 2;
    vec p = lanes_xor(*b, s), mn = _mm256_min_epu32(*a, p), mx = _mm256_max_epu32(*a, p);
    *a = by_lane(mn, mx, t);
    *b = lanes_xor(by_lane(mx, mn, t), s);
}

/* Levels 2, 4 and 8 on 8 vectors in registers: each group of 8 elements
 * of a lane sorted. */
NET void sort_eight(vec *r)
{
    UNROLL for (int k = 2; k <= 8; k *= 2) {
        UNROLL for (int x = 0; x < 8; x++)
            if (!(x & (k / 2)))
                exchange(&r[x], &r[x ^ (k - 1)]);
        UNROLL for (int d = k / 4; d >= 1; d /= 2)
            UNROLL for (int x = 0; x < 8; x++)
                if (!(x & d))
                    exchange(&r[x], &r[x + d]);
    }
}

/* Half-cleaner steps at vector distances lo << (c - 1) down to lo, on the
 * 2^c vectors of each group (base + x * lo), one pass; lane_t: the lane
 * steps of the level (from lane_t down to 1; 0: none) go first. */
NET void half_pass(uint32_t *v, uint32_t nvec, uint32_t lo, int c, int lane_t)
{
    int m = 1 << c;
    for (uint32_t hi = 0; hi < nvec; hi += lo << c)
        for (uint32_t base = hi; base < hi + lo; base++) {
            vec r[8];
            UNROLL for (int x = 0; x < m; x++)
                r[x] = load(v + LANES * (base + (uint32_t)x * lo));
            UNROLL for (int t = lane_t; t >= 1; t /= 2)
                UNROLL for (int x = 0; x < m; x++)
                    r[x] = lane_step(r[x], t);
            UNROLL for (int e = c - 1; e >= 0; e--)
                UNROLL for (int x = 0; x < m; x++)
                    if (!(x & (1 << e)))
                        exchange(&r[x], &r[x + (1 << e)]);
            UNROLL for (int x = 0; x < m; x++)
                store(v + LANES * (base + (uint32_t)x * lo), r[x]);
        }
}

/* half_pass with c and lane_t constants, so the group stays in registers */
NET void half_pass_c(uint32_t *v, uint32_t nvec, uint32_t lo, int c, int lane_t)
{
#define HALF_PASS(C)                                                                                                   \
    (lane_t == 2 ? half_pass(v, nvec, lo, C, 2) : lane_t == 1 ? half_pass(v, nvec, lo, C, 1) : half_pass(v, nvec, lo, C, 0))
    if (c == 3)
        HALF_PASS(3);
    else if (c == 2)
        HALF_PASS(2);
    else
        HALF_PASS(1);
#undef HALF_PASS
}

NET void lane_steps_pass(uint32_t *v, uint32_t nvec, int lane_t)
{
    for (uint32_t q = 0; q < nvec; q++) {
        vec r = load(v + LANES * q);
        if (lane_t == 2)
            r = lane_step(r, 2);
        r = lane_step(r, 1);
        store(v + LANES * q, r);
    }
}

/* The mirror step of level k over memory: vector q against q ^ (k - 1)
 * (s = 0: k <= nvec), else against nvec - 1 - q with lanes l ^ s. */
NET void mirror_pass_s(uint32_t *v, uint32_t nvec, uint32_t k, int s)
{
    for (uint32_t q = 0; q < nvec; q++) {
        uint32_t p = s ? nvec - 1 - q : q ^ (k - 1);
        if (p < q)
            continue;
        vec a = load(v + LANES * q), b = load(v + LANES * p);
        if (s)
            lane_mirror(&a, &b, s);
        else
            exchange(&a, &b);
        store(v + LANES * q, a);
        store(v + LANES * p, b);
    }
}

NET void mirror_pass(uint32_t *v, uint32_t nvec, uint32_t k)
{
    uint32_t s = k <= nvec ? 0 : k / nvec - 1; /* s a constant in each call */
    if (s == 0)
        mirror_pass_s(v, nvec, k, 0);
    else if (s == 1)
        mirror_pass_s(v, nvec, k, 1);
    else if (s == 3)
        mirror_pass_s(v, nvec, k, 3);
    else
        mirror_pass_s(v, nvec, k, 7);
}

/* The steps of level k after its mirror: across lanes (k > nvec), then
 * between vectors, three distances a pass. */
NET void half_steps(uint32_t *v, uint32_t nvec, uint32_t k)
{
    int lane_t = k / 4 >= nvec ? (int)(k / 4 / nvec) : 0;
    uint32_t top = k / 4 < nvec / 2 ? k / 4 : nvec / 2; /* widest distance between vectors */
    int steps = 0;
    for (uint32_t d = top; d >= 1; d /= 2)
        steps++;
    if (!steps) {
        if (lane_t)
            lane_steps_pass(v, nvec, lane_t);
        return;
    }
    for (int c = steps % 3 ? steps % 3 : 3; steps > 0; steps -= c, c = 3) {
        uint32_t lo = 1u << (steps - c);
        half_pass_c(v, nvec, lo, c, lane_t);
        lane_t = 0;
    }
}

/* out[l * nvec + q] = lane l of vector q: the line in order. */
NET void transpose_out(const uint32_t *v, uint32_t nvec, uint32_t *out)
{
    for (uint32_t q0 = 0; q0 < nvec; q0 += 8) {
        vec r[8], s[8], t[8];
        UNROLL for (int x = 0; x < 8; x++)
            r[x] = load(v + LANES * (q0 + (uint32_t)x));
        UNROLL for (int x = 0; x < 8; x += 2) {
            s[x] = _mm256_unpacklo_epi32(r[x], r[x + 1]);
            s[x + 1] = _mm256_unpackhi_epi32(r[x], r[x + 1]);
        }
        UNROLL for (int x = 0; x < 8; x += 4)
            UNROLL for (int y = 0; y < 2; y++) {
                t[x + y] = _mm256_unpacklo_epi64(s[x + y], s[x + y + 2]);
                t[x + y + 2] = _mm256_unpackhi_epi64(s[x + y], s[x + y + 2]);
            }
        /* t[0..3]: lanes (0, 4), (2, 6), (1, 5), (3, 7) of r[0..3]; t[4..7] of r[4..7] */
        UNROLL for (int y = 0; y < 4; y++) {
            int l = (y & 1) * 2 + (y >> 1);
            store(out + (uint32_t)l * nvec + q0, _mm256_permute2x128_si256(t[y], t[y + 4], 0x20));
            store(out + (uint32_t)(l + 4) * nvec + q0, _mm256_permute2x128_si256(t[y], t[y + 4], 0x31));
        }
    }
}

__attribute__((target("avx2"))) void tj_cpu_sort_keys32(uint32_t *v, uint32_t n, uint32_t cap, uint32_t *out)
{
    for (uint32_t i = n; i < cap; i++)
        v[i] = UINT32_MAX;
    uint32_t nvec = cap / LANES;
    for (uint32_t q = 0; q < nvec; q += 8) {
        vec r[8];
        UNROLL for (int x = 0; x < 8; x++)
            r[x] = load(v + LANES * (q + (uint32_t)x));
        sort_eight(r);
        UNROLL for (int x = 0; x < 8; x++)
            store(v + LANES * (q + (uint32_t)x), r[x]);
    }
    for (uint32_t k = 16; k <= cap; k *= 2) {
        mirror_pass(v, nvec, k);
        half_steps(v, nvec, k);
    }
    transpose_out(v, nvec, out);
}

#endif
