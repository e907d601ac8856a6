/* The native cpu back end on elementwise ops: integer division by 0 and
 * -1, shifts out of range, integer powers, casts that saturate or meet
 * NaN, the f32 math written in IR (exp, exp2, tanh, erf, sigmoid) over a
 * wide range with NaN, inf and -0 among the inputs, and f16, bf16, f64. */
#include <criterion/criterion.h>

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

Test(cpu_elementwise, exp_and_exp2_at_their_underflow)
{
    CC_REQUIRE_LLVM();
    static const float in[32] = {-INFINITY, -1e30f, -200.0f, -160.0f, -152.0f, -151.5f, -151.0f, -150.5f,
                                 -150.0f,   -149.5f, -149.0f, -140.0f, -126.5f, -126.0f, -110.0f, -104.5f,
                                 -104.0f,   -103.98f, -103.96f, -103.9f, -102.0f, -100.0f, -95.0f, -90.0f,
                                 -87.5f,    -87.3f,  -87.0f, -50.0f,  -1.0f,   0.0f,    1.0f,    NAN};
    char err[256];
    tj_cpu *cpu = tj_cpu_new(1, err, sizeof err);
    cr_assert(cpu, "%s", err);
    tj_ctx *c = tj_ctx_new();
    tj_binding dims[1];
    cr_assert_eq(tj_bindings_parse(c, "N=32", dims, 1), 1);
    tj_program *p = tj_parse_program(c, "test.tj", UNDERFLOW, strlen(UNDERFLOW));
    tj_binding *config;
    uint32_t nconfig;
    cr_assert(p && !tj_select_config(c, p, 0, NULL, 0, dims, 1, &config, &nconfig), "%s", tj_diag_render(c));
    tj_kernel *k = tj_build_kernel(c, p, 0, config, nconfig, dims, 1);
    cr_assert(k && !tj_pipeline_run(&k, TJ_STEP_OPTIMIZE_TILE, TJ_STEP_FACTS, NULL), "%s", tj_diag_render(c));
    float x[32], o[32], q[32];
    memcpy(x, in, sizeof x);
    int64_t shape[1] = {32};
    tj_arg args[3] = {{.is_tensor = 1, .tensor = tj_tensor_contiguous(x, TJ_DT_F32, 1, shape)},
                      {.is_tensor = 1, .tensor = tj_tensor_contiguous(o, TJ_DT_F32, 1, shape)},
                      {.is_tensor = 1, .tensor = tj_tensor_contiguous(q, TJ_DT_F32, 1, shape)}};
    cr_assert_eq(tj_cpu_run_kernel(cpu, k, args, 3), 0, "%s", tj_diag_render(c));
    for (int i = 0; i < 31; i++) {
        cr_expect(within_ulp(o[i], expf(in[i])), "exp(%g) = %a, libm %a", in[i], o[i], expf(in[i]));
        cr_expect(within_ulp(q[i], exp2f(in[i])), "exp2(%g) = %a, libm %a", in[i], q[i], exp2f(in[i]));
    }
    cr_expect(isnan(o[31]) && isnan(q[31]), "NaN in, %g and %g out", o[31], q[31]);
    cr_expect(o[21] > 0 && q[9] > 0, "the subnormal results are not zeroed: %a %a", o[21], q[9]);
    tj_ctx_free(c);
    tj_cpu_free(cpu);
}
