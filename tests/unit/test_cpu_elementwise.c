/* The native cpu back end on elementwise ops: integer division by 0 and
 * -1, shifts out of range, integer powers, casts that saturate or meet
 * NaN, the f32 math written in IR (exp, exp2, tanh, erf, sigmoid) over a
 * wide range with NaN, inf and -0 among the inputs, and f16, bf16, f64. */
#include <criterion/criterion.h>
#include <float.h>

#include "cpu_check.h"

static const char *const INTS = "kernel ints(a: i32[N], b: i32[N], c: u8[N], d: i64[N], q: i32[N], r: i32[N],\n"
                                "            s: i32[N], t: i32[N], p: i32[N], u: u8[N], w: i64[N])\n"
                                "    grid (cdiv(N, B))\n"
                                "    const B = 128\n"
                                "{\n"
                                "    i = program_id(0) * B\n"
                                "    x = load(a[i:i+B])\n"
                                "    y = load(b[i:i+B])\n"
                                "    store(q[i:i+B], x / y)\n"
                                "    store(r[i:i+B], x % y)\n"
                                "    store(s[i:i+B], (x << y) + (x >> y))\n"
                                "    store(t[i:i+B], maximum(x, y) * minimum(x, -y) - abs(x))\n"
                                "    store(p[i:i+B], x ** (y % 5))\n"
                                "    cu = load(c[i:i+B])\n"
                                "    store(u[i:i+B], (cu >> u8(3)) ^ (cu * cu) / (cu % u8(7) + u8(1)))\n"
                                "    dv = load(d[i:i+B])\n"
                                "    store(w[i:i+B], dv * i64(y) - (dv >> 40) + i64(x == y))\n"
                                "}\n";

Test(cpu_elementwise, integer_edges)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "N=1000";
    o.ilo = -40, o.ihi = 40; /* shift amounts and divisors out of range, 0 and -1 */
    cr_assert(cc_check_tj(INTS, "ints", &o));
}

static const char *const CASTS = "kernel casts(x: f32[N], d: f64[N], k: i32[N], a: i8[N], b: u16[N], c: i32[N],\n"
                                 "             h: f16[N], g: bf16[N], e: f32[N], l: i64[N], m: bool[N])\n"
                                 "    grid (cdiv(N, B))\n"
                                 "    const B = 256\n"
                                 "{\n"
                                 "    i = program_id(0) * B\n"
                                 "    v = load(x[i:i+B]) * 300.0\n"
                                 "    dv = load(d[i:i+B]) * 1e5\n"
                                 "    kv = load(k[i:i+B])\n"
                                 "    store(a[i:i+B], i8(v))\n"
                                 "    store(b[i:i+B], u16(v) + u16(kv))\n"
                                 "    store(c[i:i+B], i32(dv) + i32(i8(kv * 9)))\n"
                                 "    store(h[i:i+B], f16(dv) + f16(kv))\n"
                                 "    store(g[i:i+B], bf16(dv) * bf16(v))\n"
                                 "    store(e[i:i+B], f32(f16(v)) + f32(bf16(kv * 1000)))\n"
                                 "    store(l[i:i+B], i64(dv * 1e9))\n"
                                 "    store(m[i:i+B], bool(v) && bool(kv))\n"
                                 "}\n";

Test(cpu_elementwise, casts_saturate_and_round_once)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "N=700";
    o.specials = 1; /* NaN -> 0, inf saturates, -0 */
    cr_assert(cc_check_tj(CASTS, "casts", &o));
}

static const char *const MATH = "kernel math(x: f32[N], y: f32[N], o: f32[N], p: f32[N], q: f32[N], r: f32[N])\n"
                                "    grid (cdiv(N, B))\n"
                                "    const B = 512\n"
                                "{\n"
                                "    i = program_id(0) * B\n"
                                "    a = load(x[i:i+B])\n"
                                "    b = load(y[i:i+B])\n"
                                "    store(o[i:i+B], exp(a) + exp2(b) * 1e-3)\n"
                                "    store(p[i:i+B], tanh(a) + erf(b) + sigmoid(a * b))\n"
                                "    store(q[i:i+B], log(abs(a) + 1.0) + sqrt(abs(b)) + rsqrt(abs(a) + 0.5) + sin(a) * cos(b))\n"
                                "    store(r[i:i+B], floor(a) - ceil(b) + a % 3.0 + maximum(a, b) - minimum(a, -b) + abs(a) ** 1.5)\n"
                                "}\n";

Test(cpu_elementwise, math_over_a_wide_range)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "N=5000";
    o.lo = -120, o.hi = 120; /* exp over- and underflows, subnormals */
    cr_assert(cc_check_tj(MATH, "math", &o));
    o.lo = -3, o.hi = 3; /* where tanh and erf switch formulas */
    o.specials = 1;
    cr_assert(cc_check_tj(MATH, "math", &o));
    o.lo = -1e-3, o.hi = 1e-3;
    o.specials = 0;
    cr_assert(cc_check_tj(MATH, "math", &o));
}

static const char *const HALVES = "kernel halves(h: f16[N], g: bf16[N], d: f64[N], oh: f16[N], og: bf16[N], od: f64[N])\n"
                                  "    grid (cdiv(N, B))\n"
                                  "    const B = 64\n"
                                  "{\n"
                                  "    i = program_id(0) * B\n"
                                  "    a = load(h[i:i+B])\n"
                                  "    b = load(g[i:i+B])\n"
                                  "    c = load(d[i:i+B])\n"
                                  "    store(oh[i:i+B], exp(a) * a + a / (a + f16(3.0)))\n"
                                  "    store(og[i:i+B], tanh(b) - b * b + fma(b, b, b))\n"
                                  "    store(od[i:i+B], exp(c) + tanh(c) + erf(c) + sigmoid(c) + c ** 3.0 + sqrt(abs(c)))\n"
                                  "}\n";

Test(cpu_elementwise, f16_bf16_f64)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "N=300";
    cr_assert(cc_check_tj(HALVES, "halves", &o));
    o.specials = 1;
    cr_assert(cc_check_tj(HALVES, "halves", &o));
}

/* exp and exp2 where they underflow: lanes whose result rounds to 0 (below
 * -104 and -151, -inf among them) are zeroed without the scaling (which
 * costs a microcode assist on Intel cores), and the subnormal results just
 * above stay within an ulp of libm's. A threshold set too high would zero
 * exp(-100) = 3.7e-44; one too low would not matter to the values. */
static const char *const UNDERFLOW = "kernel under(x: f32[N], o: f32[N], p: f32[N])\n"
                                     "    grid (1)\n"
                                     "{\n"
                                     "    a = load(x[0:32])\n"
                                     "    store(o[0:32], exp(a))\n"
                                     "    store(p[0:32], exp2(a))\n"
                                     "}\n";

static int within_ulp(float got, float want)
{
    return got == want || got == nextafterf(want, INFINITY) || got == nextafterf(want, -INFINITY);
}

/* Runs kernel src (x, o, p: f32[N], N = n) on the native back end: x from
 * in, o and p out. */
static void run_two_outputs(const char *src, const float *in, float *o, float *q, int64_t n)
{
    char err[256];
    tj_cpu *cpu = tj_cpu_new(1, err, sizeof err);
    cr_assert(cpu, "%s", err);
    tj_ctx *c = tj_ctx_new();
    char shapes[32];
    snprintf(shapes, sizeof shapes, "N=%lld", (long long)n);
    tj_kernel *k = CC_TILE_KERNEL(c, src, shapes);
    float *x = malloc((size_t)n * sizeof *x);
    cr_assert(x);
    memcpy(x, in, (size_t)n * sizeof *x);
    int64_t shape[1] = {n};
    tj_arg args[3] = {{.is_tensor = 1, .tensor = tj_tensor_contiguous(x, TJ_DT_F32, 1, shape)},
                      {.is_tensor = 1, .tensor = tj_tensor_contiguous(o, TJ_DT_F32, 1, shape)},
                      {.is_tensor = 1, .tensor = tj_tensor_contiguous(q, TJ_DT_F32, 1, shape)}};
    cr_assert_eq(tj_cpu_run_kernel(cpu, k, args, 3), 0, "%s", tj_diag_render(c));
    free(x);
    tj_ctx_free(c);
    tj_cpu_free(cpu);
}

Test(cpu_elementwise, exp_and_exp2_at_their_underflow)
{
    CC_REQUIRE_LLVM();
    static const float in[32] = {-INFINITY, -1e30f, -200.0f, -160.0f, -152.0f, -151.5f, -151.0f, -150.5f,
                                 -150.0f,   -149.5f, -149.0f, -140.0f, -126.5f, -126.0f, -110.0f, -104.5f,
                                 -104.0f,   -103.98f, -103.96f, -103.9f, -102.0f, -100.0f, -95.0f, -90.0f,
                                 -87.5f,    -87.3f,  -87.0f, -50.0f,  -1.0f,   0.0f,    1.0f,    NAN};
    float o[32], q[32];
    run_two_outputs(UNDERFLOW, in, o, q, 32);
    for (int i = 0; i < 31; i++) {
        cr_expect(within_ulp(o[i], expf(in[i])), "exp(%g) = %a, libm %a", in[i], o[i], expf(in[i]));
        cr_expect(within_ulp(q[i], exp2f(in[i])), "exp2(%g) = %a, libm %a", in[i], q[i], exp2f(in[i]));
    }
    cr_expect(isnan(o[31]) && isnan(q[31]), "NaN in, %g and %g out", o[31], q[31]);
    cr_expect(o[21] > 0 && q[9] > 0, "the subnormal results are not zeroed: %a %a", o[21], q[9]);
}

/* exp and exp2 within an ulp of libm's (in double, rounded to f32) over
 * every 9973rd float of [-160, 130], which holds the polynomial's whole
 * reduced range at every exponent, the subnormal results and both
 * saturations, and at the infinities, FLT_MAX and NaN of either sign. */
static const char *const EXP_SWEEP = "kernel sweep(x: f32[N], o: f32[N], p: f32[N])\n"
                                     "    grid (cdiv(N, 1024))\n"
                                     "{\n"
                                     "    i = program_id(0) * 1024\n"
                                     "    a = load(x[i:i+1024])\n"
                                     "    store(o[i:i+1024], exp(a))\n"
                                     "    store(p[i:i+1024], exp2(a))\n"
                                     "}\n";

static int64_t sweep_inputs(float *in, int64_t cap)
{
    static const float special[] = {INFINITY, -INFINITY, FLT_MAX, -FLT_MAX, NAN, -NAN};
    int64_t n = 0;
    for (size_t i = 0; i < sizeof special / sizeof *special; i++)
        in[n++] = special[i];
    for (uint32_t sign = 0; sign < 2; sign++)
        for (uint32_t bits = 0; n < cap; bits += 9973) {
            uint32_t b = bits | sign << 31;
            float v;
            memcpy(&v, &b, sizeof v);
            if (v < -160.0f || v > 130.0f)
                break;
            in[n++] = v;
        }
    return n;
}

Test(cpu_elementwise, exp_and_exp2_within_an_ulp_over_their_range)
{
    CC_REQUIRE_LLVM();
    enum { CAP = 1 << 18 };
    float *in = malloc(CAP * sizeof *in), *o = malloc(CAP * sizeof *o), *q = malloc(CAP * sizeof *q);
    cr_assert(in && o && q);
    int64_t n = sweep_inputs(in, CAP);
    cr_assert(n > 200000 && n < CAP, "%lld inputs", (long long)n);
    run_two_outputs(EXP_SWEEP, in, o, q, n);
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; i++) {
        float e = (float)exp((double)in[i]), e2 = (float)exp2((double)in[i]);
        int ok = isnan(in[i]) ? isnan(o[i]) && isnan(q[i]) : within_ulp(o[i], e) && within_ulp(q[i], e2);
        if (!ok && wrong++ < 5)
            cr_expect(0, "x = %a: exp %a (libm %a), exp2 %a (libm %a)", in[i], o[i], e, q[i], e2);
    }
    cr_expect_eq(wrong, 0, "%lld of %lld inputs more than an ulp off", (long long)wrong, (long long)n);
    free(in);
    free(o);
    free(q);
}

/* tanh and erf carry a NaN through their formulas (no fix-up at the end):
 * NaN in is NaN out; elsewhere within 2e-7 of libm's, the infinities too. */
static const char *const TANH_ERF_NAN = "kernel te(x: f32[N], o: f32[N], p: f32[N])\n"
                                        "    grid (1)\n"
                                        "{\n"
                                        "    a = load(x[0:8])\n"
                                        "    store(o[0:8], tanh(a))\n"
                                        "    store(p[0:8], erf(a))\n"
                                        "}\n";

static int near_or_nan(float got, float want)
{
    return isnan(want) ? isnan(got) : fabsf(got - want) <= 2e-7f;
}

Test(cpu_elementwise, tanh_and_erf_of_nan_and_the_infinities)
{
    CC_REQUIRE_LLVM();
    static const float in[8] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e30f, -5.0f};
    float o[8], q[8];
    run_two_outputs(TANH_ERF_NAN, in, o, q, 8);
    for (int i = 0; i < 8; i++) {
        cr_expect(near_or_nan(o[i], tanhf(in[i])), "tanh(%g) = %g, libm %g", in[i], o[i], tanhf(in[i]));
        cr_expect(near_or_nan(q[i], erff(in[i])), "erf(%g) = %g, libm %g", in[i], q[i], erff(in[i]));
    }
}

/* x / s with s the same for every element is a product with an f64
 * reciprocal (llvm_arith.c, divide_by_invariant), which must give the
 * division's bits for every x and s: checked against C's float division on
 * (and the interpreter's) values of every exponent, NaN, inf, signed zeros and subnormal dividends
 * whose quotients by even divisors are exact midpoints of the subnormal
 * grid (ties to even, where the plain product would round by the
 * reciprocal's error), with divisors a parameter (y) and a reduction's
 * result broadcast (z: the softmax form, e / sum(e)). */
static const char *const DIVIDE = "kernel divide(x: f32[N], m: f32[K], y: f32[N], z: f32[N], s: f32)\n"
                                  "    grid (cdiv(N, B))\n"
                                  "    const B = 256\n"
                                  "{\n"
                                  "    i = program_id(0) * B\n"
                                  "    a = load(x[i:i+B])\n"
                                  "    store(y[i:i+B], a / s)\n"
                                  "    store(z[i:i+B], a / max(load(m[0:K])))\n"
                                  "}\n";

enum { DIV_N = 4096, DIV_B = 256 };

/* Dividends: random bit patterns (every exponent, NaNs and infinities
 * among them), subnormals (X * 2^-149: X / s is a tie for an even s = 2k,
 * k odd, whenever X = k mod 2k), and the specials. */
static void dividends(float *x)
{
    uint64_t st = 7;
    for (int i = 0; i < DIV_N; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t bits = (uint32_t)(st >> 32);
        if (i % 4 == 1) /* subnormal: an integer below 2^23 times 2^-149 */
            bits &= 0x807fffffu;
        else if (i % 4 == 2) /* near 1 */
            bits = 0x3f000000u + (bits >> 9);
        memcpy(&x[i], &bits, sizeof bits);
    }
    static const float special[] = {0.0f,    -0.0f,         INFINITY,      -INFINITY,     NAN,           FLT_MAX,
                                    -FLT_MAX, FLT_MIN,      0x1p-149f,     3 * 0x1p-149f, 9 * 0x1p-149f,
                                    /* ties by 98 that x * (1.0 / 98) in f64 alone rounds the wrong way */
                                    147 * 0x1p-149f, -343 * 0x1p-149f, 735 * 0x1p-149f};
    memcpy(x, special, sizeof special);
}

static int same_bits(float got, float want)
{
    return isnan(want) ? isnan(got) : !memcmp(&got, &want, sizeof got);
}

Test(cpu_elementwise, division_by_a_scalar_has_the_division_bits)
{
    CC_REQUIRE_LLVM();
    static const float divisors[] = {98.0f, 6.0f, 10.0f, 14.0f, 22.0f, 3.0f, 12.0f, 0.1f, 1e30f, 1e-30f, 0x1p-140f,
                                     0x1p-149f, 7.0f / 3.0f, -6.0f, 0.0f, -0.0f, INFINITY, NAN, FLT_MAX, 1.0f, 0.75f};
    char err[256];
    tj_cpu *cpu = tj_cpu_new(1, err, sizeof err);
    cr_assert(cpu, "%s", err);
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = CC_TILE_KERNEL(c, DIVIDE, "N=4096,K=256");
    tj_cpu_fn *f = tj_cpu_compile(cpu, k, NULL);
    cr_assert(f, "%s", tj_diag_render(c));
    static float x[DIV_N], y[DIV_N], z[DIV_N], iy[DIV_N], iz[DIV_N], m[DIV_B];
    dividends(x);
    int64_t n[1] = {DIV_N}, b[1] = {DIV_B}, grid[3];
    int wrong = 0;
    for (size_t d = 0; d < sizeof divisors / sizeof *divisors; d++) {
        float s = divisors[d];
        for (int j = 0; j < DIV_B; j++) /* max(m) = s; NaN: one NaN among -inf */
            m[j] = j == 17 ? s : -INFINITY;
        tj_arg args[5] = {{.is_tensor = 1, .tensor = tj_tensor_contiguous(x, TJ_DT_F32, 1, n)},
                          {.is_tensor = 1, .tensor = tj_tensor_contiguous(m, TJ_DT_F32, 1, b)},
                          {.is_tensor = 1, .tensor = tj_tensor_contiguous(y, TJ_DT_F32, 1, n)},
                          {.is_tensor = 1, .tensor = tj_tensor_contiguous(z, TJ_DT_F32, 1, n)},
                          {.scalar.f = s}};
        cr_assert_eq(tj_interp_run(k, args, 5), 0, "%s", tj_diag_render(c));
        memcpy(iy, y, sizeof y);
        memcpy(iz, z, sizeof z);
        cr_assert_eq(tj_eval_grid(k, args, 5, grid), 0, "%s", tj_diag_render(c));
        cr_assert_eq(tj_cpu_run(f, args, 5, grid, err, sizeof err), 0, "%s", err);
        for (int i = 0; i < DIV_N; i++) {
            volatile float want = x[i] / s; /* volatile: C's own float division, at run time */
            int ok = same_bits(y[i], want) && same_bits(z[i], want) && same_bits(iy[i], want) && same_bits(iz[i], want);
            if (!ok && wrong++ < 10)
                cr_expect(0, "%a / %a = %a, native %a and %a, interpreter %a and %a", x[i], s, want, y[i], z[i], iy[i], iz[i]);
        }
    }
    cr_expect_eq(wrong, 0, "%d quotients differ from the division's", wrong);
    tj_ctx_free(c);
    tj_cpu_free(cpu);
}

/* An elementwise op computes into the loop-carried buffer of a body
 * argument it reads once at its own index (llvm_arith.c, carried_operand):
 * through a fused operand (acc * 0.5 + u), as the second operand (u - c),
 * across a swap (a, b = b, a + b: the yield must copy the sum out of a's
 * buffer before a's slot gets b), not when the argument is read again
 * later (dn = d + u, then d * 0.25), nor from a nested loop (f * q + e
 * runs three times a trip and would read an overwritten f). */
static const char *const CARRIED = "kernel carried(x: f32[N], y: f32[N], z: f32[N], w: f32[N], v: f32[N], o: f32[N])\n"
                                   "    grid (cdiv(N, B))\n"
                                   "    const B = 64\n"
                                   "{\n"
                                   "    i = program_id(0) * B\n"
                                   "    t = load(x[i:i+B])\n"
                                   "    acc = zeros(f32[B])\n"
                                   "    a = t\n"
                                   "    b = t * 2.0\n"
                                   "    c = t\n"
                                   "    d = t\n"
                                   "    f = t\n"
                                   "    for k in range(0, 5) {\n"
                                   "        u = load(x[i:i+B]) * f32(k)\n"
                                   "        acc = acc * 0.5 + u\n"
                                   "        n = b + a\n"
                                   "        a = b\n"
                                   "        b = n\n"
                                   "        c = u - c\n"
                                   "        dn = d + u\n"
                                   "        d = dn * dn + d * 0.25\n"
                                   "        e = zeros(f32[B])\n"
                                   "        for q in range(0, 3) {\n"
                                   "            e = f * f32(q) + e\n"
                                   "        }\n"
                                   "        f = e\n"
                                   "    }\n"
                                   "    store(y[i:i+B], acc)\n"
                                   "    store(z[i:i+B], a + b)\n"
                                   "    store(w[i:i+B], c)\n"
                                   "    store(v[i:i+B], d)\n"
                                   "    store(o[i:i+B], f)\n"
                                   "}\n";

Test(cpu_elementwise, carried_tiles_computed_in_place)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "N=200"; /* an edge program too */
    cr_assert(cc_check_tj(CARRIED, "carried", &o));
}
