/* bitcast(x, DTYPE) (docs/language.md): the bits of x read as DTYPE, through
 * every executing layer: the reference interpreter and the native cpu
 * against the bits C's memcpy gives, the SIMT lowering run by the SIMT
 * interpreter against the reference (lower_check.h). The PTX and MSL text:
 * tests/lit/{ptx,msl}/bitcast.tj; the front end's errors:
 * tests/errors/bitcast.tj. */
#include <criterion/criterion.h>
#include <string.h>

#include "lower_check.h"
#include "tilejit/jit.h"

/* f32 <-> u32 both ways, a packed u64 word (a look-back's flag and value),
 * f16 -> i16 and bf16 -> u16, f64 -> i64 and back to f64 */
static const char *bits_src = "kernel bits(X: f32[N], U: u32[N], Z: f32[N], W: u64[N], H: f16[N], HI: i16[N],\n"
                              "             B: bf16[N], BU: u16[N], D: f64[N], DI: i64[N], DD: f64[N])\n"
                              "    grid (cdiv(N, 64))\n"
                              "    const BLOCK = 64\n"
                              "{\n"
                              "    i = program_id(0) * BLOCK\n"
                              "    m = arange(BLOCK) < N - i\n"
                              "    x = load(X[i:i+BLOCK], mask = m)\n"
                              "    u = bitcast(x, u32)\n"
                              "    store(U[i:i+BLOCK], u, mask = m)\n"
                              "    store(Z[i:i+BLOCK], bitcast(u ^ 0x80000000, f32), mask = m)\n"
                              "    store(W[i:i+BLOCK], (u64(2) << 32) | u64(u), mask = m)\n"
                              "    store(HI[i:i+BLOCK], bitcast(load(H[i:i+BLOCK], mask = m), i16), mask = m)\n"
                              "    store(BU[i:i+BLOCK], bitcast(load(B[i:i+BLOCK], mask = m), u16), mask = m)\n"
                              "    di = bitcast(load(D[i:i+BLOCK], mask = m), i64)\n"
                              "    store(DI[i:i+BLOCK], di, mask = m)\n"
                              "    store(DD[i:i+BLOCK], bitcast(di, f64), mask = m)\n"
                              "}\n";

enum { N = 100 };

typedef struct bits_data {
    float x[N], z[N];
    uint32_t u[N];
    uint64_t w[N];
    uint16_t h[N], b[N], bu[N];
    int16_t hi[N];
    double d[N], dd[N];
    int64_t di[N];
} bits_data;

/* nan_halves: f16/bf16 NaN patterns among the data; the interpreter holds
 * halves as values, so a NaN there comes back as the canonical one
 * (docs/language.md) and only the native code keeps every bit. */
static int half_is_nan(uint16_t h, int mbits) { return (h & 0x7fff) > (0x7fff >> mbits << mbits); }

static void fill(bits_data *t, int nan_halves)
{
    memset(t, 0, sizeof *t);
    const float specials[] = {0.0f, -0.0f, 1.0f, -2.5f, INFINITY, -INFINITY, NAN, 1e-40f, 3.4e38f};
    for (int i = 0; i < N; i++) {
        t->x[i] = i < 9 ? specials[i] : (float)(i * 37 % 101) / 7.0f - 5.0f;
        t->h[i] = (uint16_t)(0x8000u + (unsigned)i * 613u); /* negative f16, then positive (wraps): both signs */
        t->b[i] = (uint16_t)(0x3f80u + (unsigned)i * 977u);
        if (!nan_halves && half_is_nan(t->h[i], 10))
            t->h[i] &= 0xfbff; /* a finite number of that sign */
        if (!nan_halves && half_is_nan(t->b[i], 7))
            t->b[i] &= 0xff7f;
        t->d[i] = i ? (double)i * -1.25e-3 : -0.0;
    }
    t->h[0] = 0x7c00; /* +inf */
    t->b[1] = 0xff80; /* -inf */
    if (nan_halves)
        t->h[2] = 0x7e5a, t->b[2] = 0xffc3; /* quiet NaNs with payloads */
    int nans = 0;
    for (int i = 0; i < N; i++)
        nans += half_is_nan(t->h[i], 10) + half_is_nan(t->b[i], 7);
    cr_assert(nan_halves ? nans >= 4 : nans == 0, "%d f16/bf16 NaNs", nans);
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void check(const bits_data *t)
{
    for (int i = 0; i < N; i++) {
        uint32_t want = f32_bits(t->x[i]);
        cr_assert_eq(t->u[i], want, "U[%d] = 0x%08x, expected 0x%08x", i, t->u[i], want);
        cr_assert_eq(f32_bits(t->z[i]), want ^ 0x80000000u, "Z[%d]: the sign bit flipped", i);
        cr_assert_eq(t->w[i], (uint64_t)2 << 32 | want, "W[%d]", i);
        cr_assert_eq((uint16_t)t->hi[i], t->h[i], "HI[%d] = 0x%04x, expected 0x%04x", i, (uint16_t)t->hi[i], t->h[i]);
        cr_assert_eq(t->bu[i], t->b[i], "BU[%d]", i);
        int64_t dbits;
        memcpy(&dbits, &t->d[i], sizeof dbits);
        cr_assert_eq(t->di[i], dbits, "DI[%d]", i);
        cr_assert_eq(memcmp(&t->dd[i], &t->d[i], sizeof(double)), 0, "DD[%d]: f64 -> i64 -> f64 keeps the bits", i);
    }
}

static void run_bits(tj_device_kind kind)
{
    static bits_data t;
    fill(&t, kind != TJ_DEVICE_INTERP);
    int64_t n = N;
    struct { void *p; tj_dtype dt; } a[] = {{t.x, TJ_DT_F32}, {t.u, TJ_DT_U32}, {t.z, TJ_DT_F32}, {t.w, TJ_DT_U64},
                                            {t.h, TJ_DT_F16}, {t.hi, TJ_DT_I16}, {t.b, TJ_DT_BF16}, {t.bu, TJ_DT_U16},
                                            {t.d, TJ_DT_F64}, {t.di, TJ_DT_I64}, {t.dd, TJ_DT_F64}};
    enum { NA = sizeof a / sizeof *a };
    tj_arg args[NA];
    for (int i = 0; i < NA; i++)
        args[i] = (tj_arg){.is_tensor = 1, .tensor = tj_tensor_contiguous(a[i].p, a[i].dt, 1, &n)};
    tj_rt_error err = {{0}};
    tj_jit *j = tj_jit_open(kind, 0, &err);
    cr_assert(j, "%s", err.msg);
    tj_fn *fn = tj_jit_compile(j, &(tj_compile_request){.file = "bits.tj", .source = bits_src,
                                                        .len = strlen(bits_src), .kernel = "bits", .args = args,
                                                        .nargs = NA},
                               &err);
    cr_assert(fn, "%s", err.msg);
    cr_assert_eq(tj_fn_launch(fn, args, NA, NULL, &err), 0, "%s", err.msg);
    check(&t);
    tj_fn_release(fn);
    tj_jit_close(j);
}

Test(bitcast, interpreter_bits) { run_bits(TJ_DEVICE_INTERP); }
Test(bitcast, native_bits) { run_bits(TJ_DEVICE_CPU); }

/* The lowering for CUDA, run by the SIMT interpreter: the same bits as the
 * reference interpreter (NaN, inf and -0.0 among the floats). */
Test(bitcast, lowered_like_the_interpreter)
{
    lc_opts o = lc_defaults();
    o.shapes = "N=100";
    o.specials = 1;
    o.rtol = 0, o.atol = 0;
    cr_assert(lc_check_tj(bits_src, "bits", &o));
}
