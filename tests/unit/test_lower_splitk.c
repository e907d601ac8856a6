/* Split-K (examples/matmul.tj: matmul_splitk, then matmul_splitk_sum):
 * each kernel lowered for sm_90a (wgmma, rings by TMA and by cp.async) and
 * checked against the reference interpreter on the SIMT interpreter; the
 * two launches together equal the plain matmul bit for bit on inputs whose
 * products and sums are exact in f32 (small integers), with partial tiles,
 * K not a multiple of the split and a split whose run of k steps is empty;
 * so does bench/gpu/kernels.tj.in's matmul_splitk_last (the sum in the
 * last arriver), which leaves its flags and counts zero for the next call;
 * the configurations the benchmarks time assemble with ptxas. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include "lower_check.h"
#include "ptxas_util.h"
#include "source_file.h"

static char *matmul_source(void)
{
    char *text = tu_source_file("examples/matmul.tj");
    cr_assert(text, "cannot read examples/matmul.tj");
    return text;
}

static lc_opts wg_opts(const char *defines, const char *shapes, int warps)
{
    lc_opts o = lc_defaults();
    o.wgmma = 1;
    o.defines = defines;
    o.shapes = shapes;
    o.warps[0] = warps;
    o.warps[1] = 0;
    o.rtol = o.atol = 2e-2; /* bf16 inputs, f32 parts */
    return o;
}

/* A kernel's configuration and shapes, lowered for sm_90a at `warps`. */
typedef struct interp_case {
    const char *defines, *shapes;
    int warps;
} interp_case;

/* kernel of src at each case against the reference interpreter, with
 * rings by TMA and (both_rings) again by cp.async; int_range as lc_opts'. */
static void expect_interp(const char *src, const char *kernel, const interp_case *cases, unsigned n,
                          const char *int_range, int both_rings)
{
    for (unsigned i = 0; i < n; i++)
        for (int no_tma = 0; no_tma <= both_rings; no_tma++) {
            lc_opts o = wg_opts(cases[i].defines, cases[i].shapes, cases[i].warps);
            o.no_tma = no_tma;
            o.int_range = int_range;
            cr_expect(lc_check_tj(src, kernel, &o), "%s %s %s%s", kernel, cases[i].defines, cases[i].shapes,
                      no_tma ? " without TMA" : "");
        }
}

/* A split product: the split kernel's configuration, M, N, K, S and warps. */
typedef struct split_case {
    const char *defines;
    int64_t m, n, k, s;
    int warps;
} split_case;

/* The parts against the interpreter's: one and two warpgroups, 64 to 256
 * columns, rings of 3 to 8 slots (by TMA, then by cp.async), a partial
 * last tile on M and N; K = 176 at BK = 64 is 3 steps for 4 splits (the
 * last run empty: its part is zeros), K = 1040 17 steps for 3 (6, 6, 5:
 * each split's ring through its phases more than once). */
Test(lower_splitk, parts_match_the_interpreter)
{
    char *src = matmul_source();
    static const interp_case cases[] = {
        {"BM=64,BN=256,BK=64,stages=4", "M=72,N=272,K=176,S=4", 4},
        {"BM=128,BN=128,BK=64,stages=3", "M=200,N=144,K=176,S=4", 8},
        {"BM=128,BN=256,BK=64,stages=4", "M=136,N=256,K=1040,S=3", 8},
        {"BM=64,BN=128,BK=64,stages=8", "M=64,N=144,K=1040,S=2", 4},
        {"BM=64,BN=64,BK=32,stages=3", "M=70,N=80,K=200,S=3", 4},
    };
    expect_interp(src, "matmul_splitk", cases, sizeof cases / sizeof *cases, NULL, 1);
    free(src);
}

/* The sum: S = 1 (a copy and the cast) to 5, partial tiles, 1 to 8 warps. */
Test(lower_splitk, sum_matches_the_interpreter)
{
    char *src = matmul_source();
    static const char *const shapes[] = {"M=37,N=300,S=3", "M=8,N=256,S=1", "M=20,N=520,S=5"};
    for (unsigned i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        lc_opts o = lc_defaults();
        o.shapes = shapes[i];
        o.defines = "BM=8,BN=256";
        cr_expect(lc_check_tj(src, "matmul_splitk_sum", &o), "%s", shapes[i]);
    }
    free(src);
}

typedef struct product {
    int64_t m, n, k, s;
    uint16_t *a, *b, *c;
    float *w;
} product;

static tj_arg tensor_arg(tj_dtype dt, void *data, int rank, const int64_t *shape)
{
    tj_arg t = {.is_tensor = 1, .tensor = {.dtype = dt, .rank = rank, .data = data}};
    for (int d = rank - 1, stride = 1; d >= 0; d--) {
        t.tensor.shape[d] = shape[d];
        t.tensor.strides[d] = stride;
        stride *= (int)shape[d];
    }
    return t;
}

/* A and B of small integers (every product and sum exact in f32, so any
 * order of summation gives the same bits); C and W filled with NaN, so an
 * element left unwritten shows. */
static product make_product(int64_t m, int64_t n, int64_t k, int64_t s)
{
    product p = {m, n, k, s, malloc((size_t)(m * k) * 2), malloc((size_t)(k * n) * 2), malloc((size_t)(m * n) * 2),
                 malloc((size_t)(s * m * n) * 4)};
    unsigned st = 7;
    for (int64_t i = 0; i < m * k; i++)
        p.a[i] = tj_f32_to_bf16((float)((int)(lc_rand(&st) % 9) - 4));
    for (int64_t i = 0; i < k * n; i++)
        p.b[i] = tj_f32_to_bf16((float)((int)(lc_rand(&st) % 9) - 4));
    for (int64_t i = 0; i < m * n; i++)
        p.c[i] = tj_f32_to_bf16(NAN);
    for (int64_t i = 0; i < s * m * n; i++)
        p.w[i] = NAN;
    return p;
}

static void free_product(product *p)
{
    free(p->a);
    free(p->b);
    free(p->c);
    free(p->w);
}

static tj_kernel *build(tj_ctx *c, const char *src, const char *kernel, const char *defines, const char *shapes)
{
    tj_binding defs[LC_MAX_BIND], dims[LC_MAX_BIND], *config;
    uint32_t nconfig, nd = lc_bindings(c, defines, defs, LC_MAX_BIND), ns = lc_bindings(c, shapes, dims, LC_MAX_BIND);
    tj_program *prog = tj_parse_program(c, "matmul.tj", src, strlen(src));
    int ki = prog ? tj_program_find_kernel(prog, kernel) : -1;
    tj_kernel *k = ki >= 0 && !tj_select_config(c, prog, ki, defs, nd, dims, ns, &config, &nconfig)
                       ? tj_build_kernel(c, prog, ki, config, nconfig, dims, ns)
                       : NULL;
    cr_assert(k, "%s: %s", kernel, tj_diag_render(c));
    return k;
}

/* k lowered for sm_90a with `warps` and run on the SIMT interpreter. */
static int run_simt(tj_ctx *c, const tj_kernel *k, const tj_arg *args, uint32_t nargs, int warps, int no_tma)
{
    lc_run run = {.c = c, .nparams = nargs};
    memcpy(run.simt, args, nargs * sizeof *args);
    lc_opts o = wg_opts(NULL, NULL, warps);
    o.no_tma = no_tma;
    return lc_lower_and_run(&run, k, warps, &o, k->name);
}

/* C of the split product (src's two kernels on the SIMT interpreter)
 * against the plain matmul's (the reference interpreter): the number of
 * elements that differ in their bits. */
static int64_t split_differs(const char *src, const char *defines, int warps, int no_tma, product *p)
{
    tj_ctx *c = tj_ctx_new();
    char shapes[128];
    snprintf(shapes, sizeof shapes, "M=%lld,N=%lld,K=%lld,S=%lld", (long long)p->m, (long long)p->n,
             (long long)p->k, (long long)p->s);
    int64_t sa[] = {p->m, p->k}, sb[] = {p->k, p->n}, sc[] = {p->m, p->n}, sw[] = {p->s, p->m, p->n};
    uint16_t *plain = malloc((size_t)(p->m * p->n) * 2);
    tj_arg a = tensor_arg(TJ_DT_BF16, p->a, 2, sa), b = tensor_arg(TJ_DT_BF16, p->b, 2, sb);
    tj_arg w = tensor_arg(TJ_DT_F32, p->w, 3, sw), out = tensor_arg(TJ_DT_BF16, p->c, 2, sc);
    tj_arg ref[] = {a, b, tensor_arg(TJ_DT_BF16, plain, 2, sc)}, parts[] = {a, b, w}, sum[] = {w, out};
    tj_kernel *mm = build(c, src, "matmul", "BM=64,BN=64,BK=32", shapes);
    cr_assert_eq(tj_interp_run(mm, ref, 3), 0, "%s", tj_diag_render(c));
    char config[128];
    snprintf(config, sizeof config, "%s,warps=%d", defines, warps);
    cr_assert(run_simt(c, build(c, src, "matmul_splitk", config, shapes), parts, 3, warps, no_tma), "%s", config);
    cr_assert(run_simt(c, build(c, src, "matmul_splitk_sum", "BM=8,BN=256", shapes), sum, 2, 4, 0));
    int64_t differ = 0;
    for (int64_t i = 0; i < p->m * p->n; i++)
        differ += plain[i] != p->c[i];
    free(plain);
    tj_ctx_free(c);
    return differ;
}

Test(lower_splitk, equals_the_plain_product)
{
    char *src = matmul_source();
    static const split_case cases[] = {
        {"BM=64,BN=256,BK=64,stages=4", 72, 272, 176, 4, 4},  /* 3 steps for 4 splits: one empty */
        {"BM=128,BN=128,BK=64,stages=3", 130, 144, 200, 3, 8}, /* 4 steps: 2, 2, 0 */
        {"BM=128,BN=256,BK=64,stages=4", 64, 256, 1040, 3, 8}, /* 17 steps: 6, 6, 5 */
        {"BM=64,BN=64,BK=32,stages=3", 70, 80, 200, 1, 4},     /* one part: the plain product */
    };
    for (unsigned i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int no_tma = 0; no_tma < 2; no_tma++) {
            product p = make_product(cases[i].m, cases[i].n, cases[i].k, cases[i].s);
            int64_t differ = split_differs(src, cases[i].defines, cases[i].warps, no_tma, &p);
            cr_expect_eq(differ, 0, "%s S=%lld%s: %lld elements differ", cases[i].defines, (long long)cases[i].s,
                         no_tma ? " without TMA" : "", (long long)differ);
            free_product(&p);
        }
    free(src);
}

/* The check above can fail: with each split running to K (the runs
 * overlap) the sum counts k steps twice. */
Test(lower_splitk, overlapping_runs_are_caught)
{
    char *src = matmul_source();
    const char *bound = "minimum(k0 + steps * BK, K)";
    char *at = strstr(src, bound);
    cr_assert(at, "examples/matmul.tj no longer bounds a split's run by %s", bound);
    memcpy(at, "K                          ", strlen(bound));
    product p = make_product(72, 272, 176, 2);
    cr_expect_gt(split_differs(src, "BM=64,BN=256,BK=64,stages=4", 4, 0, &p), 0);
    free_product(&p);
    free(src);
}

/* bench/gpu/kernels.tj.in with its dtype placeholder as f32 (malloc'ed). */
static char *bench_source(void)
{
    char *src = tu_source_file_f32("bench/gpu/kernels.tj.in");
    cr_assert(src, "cannot read bench/gpu/kernels.tj.in");
    return src;
}

/* The flags F[G, S] and counts T[G] of matmul_splitk_last, G at least the
 * tiles of any BM, BN >= 64, the counts at t_init. */
typedef struct arrivals {
    int64_t g, s;
    int32_t *f, *t;
} arrivals;

static arrivals make_arrivals(const product *p, int32_t t_init)
{
    int64_t g = ((p->m + 63) / 64) * ((p->n + 63) / 64);
    arrivals r = {g, p->s, calloc((size_t)(g * p->s), 4), malloc((size_t)g * 4)};
    for (int64_t i = 0; i < g; i++)
        r.t[i] = t_init;
    return r;
}

/* The words of F and T that are not zero. */
static int64_t nonzero(const arrivals *r)
{
    int64_t n = 0;
    for (int64_t i = 0; i < r->g * r->s; i++)
        n += r->f[i] != 0;
    for (int64_t i = 0; i < r->g; i++)
        n += r->t[i] != 0;
    return n;
}

/* C of one launch of matmul_splitk_last on the SIMT interpreter (over r's
 * flags and counts, as they are) against the plain product's bits: the
 * number of elements that differ. C and W are NaN-filled first. */
static int64_t last_differs(const char *src, const char *mm_src, const char *defines, int warps, product *p,
                            arrivals *r)
{
    tj_ctx *c = tj_ctx_new();
    char shapes[160], config[128];
    snprintf(shapes, sizeof shapes, "M=%lld,N=%lld,K=%lld,S=%lld,G=%lld", (long long)p->m, (long long)p->n,
             (long long)p->k, (long long)p->s, (long long)r->g);
    snprintf(config, sizeof config, "%s,warps=%d", defines, warps);
    int64_t sa[] = {p->m, p->k}, sb[] = {p->k, p->n}, sc[] = {p->m, p->n}, sw[] = {p->s, p->m, p->n},
            sf[] = {r->g, p->s}, st[] = {r->g};
    uint16_t *plain = malloc((size_t)(p->m * p->n) * 2);
    for (int64_t i = 0; i < p->m * p->n; i++)
        p->c[i] = tj_f32_to_bf16(NAN);
    for (int64_t i = 0; i < p->s * p->m * p->n; i++)
        p->w[i] = NAN;
    tj_arg a = tensor_arg(TJ_DT_BF16, p->a, 2, sa), b = tensor_arg(TJ_DT_BF16, p->b, 2, sb);
    tj_arg ref[] = {a, b, tensor_arg(TJ_DT_BF16, plain, 2, sc)};
    tj_arg args[] = {a, b, tensor_arg(TJ_DT_BF16, p->c, 2, sc), tensor_arg(TJ_DT_F32, p->w, 3, sw),
                     tensor_arg(TJ_DT_I32, r->f, 2, sf), tensor_arg(TJ_DT_I32, r->t, 1, st)};
    cr_assert_eq(tj_interp_run(build(c, mm_src, "matmul", "BM=64,BN=64,BK=32", shapes), ref, 3), 0, "%s",
                 tj_diag_render(c));
    cr_assert(run_simt(c, build(c, src, "matmul_splitk_last", config, shapes), args, 6, warps, 0), "%s", config);
    int64_t differ = 0;
    for (int64_t i = 0; i < p->m * p->n; i++)
        differ += plain[i] != p->c[i];
    free(plain);
    tj_ctx_free(c);
    return differ;
}

/* The last arriver's sum: the plain product's bits, and F and T zero again
 * after the call, twice on the same F and T (the second call starts from
 * what the first left); with counts that do not start at zero C is not
 * written, which the comparison sees. */
Test(lower_splitk, last_arriver_sums_in_order)
{
    char *src = bench_source(), *mm = matmul_source();
    static const split_case cases[] = {
        {"BM=64,BN=256,BK=64,stages=4", 72, 272, 176, 4, 4},  /* 3 steps for 4 splits: one empty */
        {"BM=128,BN=128,BK=64,stages=3", 130, 144, 200, 3, 8}, /* 4 steps: 2, 2, 0 */
        {"BM=64,BN=64,BK=32,stages=3", 70, 80, 200, 1, 4},     /* one part */
        {"BM=64,BN=64,BK=32,stages=3", 70, 80, 200, 5, 4},     /* 7 steps: 2, 2, 2, 1, 0; a fifth part */
    };
    for (unsigned i = 0; i < sizeof cases / sizeof *cases; i++) {
        product p = make_product(cases[i].m, cases[i].n, cases[i].k, cases[i].s);
        arrivals r = make_arrivals(&p, 0);
        for (int call = 0; call < 2; call++) {
            int64_t differ = last_differs(src, mm, cases[i].defines, cases[i].warps, &p, &r);
            cr_expect_eq(differ, 0, "%s S=%lld call %d: %lld elements differ", cases[i].defines,
                         (long long)cases[i].s, call, (long long)differ);
            cr_expect_eq(nonzero(&r), 0, "%s S=%lld call %d: flags or counts left nonzero", cases[i].defines,
                         (long long)cases[i].s, call);
        }
        free(r.f);
        free(r.t);
        free_product(&p);
    }
    product p = make_product(72, 272, 176, 4);
    arrivals r = make_arrivals(&p, 4);
    cr_expect_gt(last_differs(src, mm, "BM=64,BN=256,BK=64,stages=4", 4, &p, &r), 0);
    free(r.f);
    free(r.t);
    free_product(&p);
    free(mm);
    free(src);
}

/* The last arriver against the interpreter, as gpu/lower runs it on the
 * device: flags and counts from zero, compared after the run. */
Test(lower_splitk, last_arriver_matches_the_interpreter)
{
    char *src = bench_source();
    static const interp_case cases[] = {
        {"BM=64,BN=256,BK=64,stages=4", "M=72,N=272,K=1040,S=3,G=8", 4},
        {"BM=128,BN=128,BK=64,stages=3", "M=200,N=144,K=176,S=4,G=4", 8},
    };
    expect_interp(src, "matmul_splitk_last", cases, sizeof cases / sizeof *cases, "F=0:1,T=0:1", 0);
    free(src);
}

/* kernel of src at config for M = 128, N = K = 8192 and S parts (G = 256
 * tiles' flags for matmul_splitk_last): wgmma, TMA rings, and ptxas keeps
 * the wgmma pipeline (no "serialized" warning). */
static void expect_assembles(const char *ptxas, const char *src, const char *kernel, const char *config, int s)
{
    tj_ctx *c = tj_ctx_new();
    char shapes[64];
    snprintf(shapes, sizeof shapes, "M=128,N=8192,K=8192,S=%d,G=256", s);
    tj_kernel *k = build(c, src, kernel, config, shapes);
    tj_binding dims[LC_MAX_BIND];
    uint32_t ns = lc_bindings(c, shapes, dims, LC_MAX_BIND);
    cr_assert_eq(tj_facts_contiguous(k, dims, ns, -1), 0);
    tj_pipeline_options po = {.lower.wgmma = 1, .verify = 1};
    tj_kernel *simt = tj_compile_simt(k, &po);
    cr_assert(simt, "%s %s: %s", kernel, config, tj_diag_render(c));
    int wgmma = 0, tma = 0;
    for (tj_ref r = 1; r < simt->ninsts; r++) {
        wgmma += simt->insts[r].op == TJ_OP_WGMMA;
        tma += simt->insts[r].op == TJ_OP_TMA_LOAD;
    }
    cr_expect_gt(wgmma, 0, "%s %s", kernel, config);
    cr_expect_gt(tma, 0, "%s %s", kernel, config);
    tj_buf ptx = {0}, log = {0};
    cr_assert_eq(tj_emit_ptx(simt, "sm_90a", &ptx), 0, "%s", tj_diag_render(c));
    cr_expect_eq(pa_assemble(ptxas, ptx.data, ptx.len, "sm_90a", &log), 0, "%s %s:\n%s", kernel, config,
                 log.data ? log.data : "");
    cr_expect(!log.data || !strstr(log.data, "wgmma"), "%s %s:\n%s", kernel, config, log.data);
    tj_buf_free(&ptx);
    tj_buf_free(&log);
    tj_ctx_free(c);
}

/* The configurations bench/gpu/bench.py times: SPLITK_CONFIGS, and the
 * last arriver's kernel at the two the skinny rows chose. */
Test(lower_splitk, ptxas_takes_the_configs)
{
    static char path[1024];
    const char *ptxas = pa_find_ptxas(path, sizeof path);
    if (!ptxas)
        cr_skip_test("SKIP: ptxas not found on PATH or in /usr/local/cuda/bin (CUDA toolkit)");
    char *src = matmul_source(), *bench = bench_source();
    static const struct {
        const char *config;
        int s;
    } cases[] = {
        {"BM=64,BN=256,BK=64,warps=4,stages=4", 4},  {"BM=64,BN=256,BK=64,warps=4,stages=5", 4},
        {"BM=64,BN=128,BK=64,warps=4,stages=6", 2},  {"BM=64,BN=128,BK=64,warps=4,stages=4", 4},
        {"BM=128,BN=256,BK=64,warps=8,stages=4", 4}, {"BM=128,BN=256,BK=64,warps=8,stages=4", 2},
        {"BM=128,BN=128,BK=64,warps=8,stages=3", 2}, {"BM=128,BN=128,BK=64,warps=8,stages=3", 4},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof *cases; i++)
        expect_assembles(ptxas, src, "matmul_splitk", cases[i].config, cases[i].s);
    expect_assembles(ptxas, bench, "matmul_splitk_last", "BM=64,BN=128,BK=64,warps=4,stages=4", 4);
    expect_assembles(ptxas, bench, "matmul_splitk_last", "BM=128,BN=256,BK=64,warps=8,stages=4", 4);
    free(bench);
    free(src);
}
