/* Differential testing of the lowering: a kernel (.tj source or Tile IR
 * text) runs in the reference interpreter and, lowered to SIMT IR, in the
 * SIMT interpreter, on the same random arguments; every tensor must come
 * out the same (floats within a tolerance). Header only, for the
 * test_lower*.c executables.
 *
 *   lc_opts o = lc_defaults();
 *   o.defines = "BLOCK=256";      // tile parameters
 *   o.shapes = "M=37,N=100";      // dim sizes (and specializations)
 *   cr_assert(lc_check_tj(SRC, "softmax", &o));
 */
#ifndef TJ_LOWER_CHECK_H
#define TJ_LOWER_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilejit/tilejit.h"

enum { LC_MAX_BIND = 16, LC_MAX_ARGS = 16 };

typedef struct lc_opts {
    const char *defines;   /* "BLOCK=256,BN=32": tile parameters */
    const char *shapes;    /* "M=37,N=100": every dim name's size */
    const char *scalars;   /* "n=100,scale=0.5": scalar parameters */
    int warps[4];          /* each value is tried; 0 ends the list */
    int facts;             /* specialize on the arguments' facts (vector accesses) */
    int no_specialize;     /* lower without the specialize pass */
    int no_optimize;       /* run the SIMT kernel as lowered (no canonicalize, cse, dce) */
    double lo, hi;         /* random floats in [lo, hi) */
    int64_t ilo, ihi;      /* random integers in [ilo, ihi) */
    double rtol, atol;
    unsigned seed;
    int specials;          /* sprinkle NaN, inf, -0 and ties among floats */
    int signed_zeros;      /* -0 and +0 differ (a sort must keep their order) */
    const char *int_range; /* "idx=0:40": a range for one integer tensor */
    int wgmma;             /* lower dot for sm_90a's wgmma (tj_lower_options.wgmma) */
    int no_tma;            /* its rings by cp.async only (tj_lower_options.no_tma) */
} lc_opts;

static inline lc_opts lc_defaults(void)
{
    return (lc_opts){.warps = {1, 4, 8, 0}, .facts = 1, .lo = -2, .hi = 2, .ilo = -50, .ihi = 50,
                     .rtol = 1e-4, .atol = 1e-5, .seed = 1};
}

/* "A=1,B=2" -> bindings; a malformed one counts as none (reported in c). */
static inline uint32_t lc_bindings(tj_ctx *c, const char *s, tj_binding *out, uint32_t max)
{
    int64_t n = tj_bindings_parse(c, s, out, max);
    return n < 0 ? 0 : (uint32_t)n;
}

static inline const char *lc_lookup_str(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *s = list; s && *s;) {
        if (!strncmp(s, name, n) && s[n] == '=')
            return s + n + 1;
        s = strchr(s, ',');
        s = s ? s + 1 : NULL;
    }
    return NULL;
}

static inline unsigned lc_rand(unsigned *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 17;
    *state ^= *state << 5;
    return *state;
}

static inline double lc_uniform(unsigned *state) { return (lc_rand(state) >> 8) / (double)(1u << 24); }

/* sm_90a's lowering (wgmma) on one and two warpgroups, bf16 tolerances. */
static inline lc_opts lc_wgmma_opts(const char *defines, const char *shapes)
{
    lc_opts o = lc_defaults();
    o.wgmma = 1;
    o.defines = defines;
    o.shapes = shapes;
    o.warps[0] = 4;
    o.warps[1] = 8;
    o.warps[2] = 0;
    o.rtol = o.atol = 2e-2; /* bf16 results */
    return o;
}

/* Kernel `name` of src for the tile parameters `defines` (the declared
 * defaults and first tune values for the rest) and the dims `shapes`,
 * specialized for contiguous tensors and compiled to SIMT IR with po;
 * NULL with c's diagnostics. */
static inline tj_kernel *lc_lower_tj(tj_ctx *c, const char *src, const char *name, const char *defines,
                                     const char *shapes, const tj_pipeline_options *po)
{
    tj_binding defs[LC_MAX_BIND], dims[LC_MAX_BIND];
    uint32_t nd = lc_bindings(c, defines, defs, LC_MAX_BIND), ns = lc_bindings(c, shapes, dims, LC_MAX_BIND);
    tj_program *prog = tj_parse_program(c, "k.tj", src, strlen(src));
    int ki = prog ? tj_program_find_kernel(prog, name) : -1;
    tj_binding *config = NULL;
    uint32_t nconfig = 0;
    tj_kernel *k = ki >= 0 && !tj_select_config(c, prog, ki, defs, nd, dims, ns, &config, &nconfig)
                       ? tj_build_kernel(c, prog, ki, config, nconfig, dims, ns)
                       : NULL;
    return k && !tj_facts_contiguous(k, dims, ns, -1) ? tj_compile_simt(k, po) : NULL;
}

/* The nth instruction of kernel k (in a block) that is `op`, or TJ_NONE. */
static inline tj_ref lc_nth_op(const tj_kernel *k, tj_op op, int nth)
{
    for (tj_ref r = 1; r < k->ninsts; r++)
        if (k->insts[r].block && k->insts[r].op == op && nth-- == 0)
            return r;
    return TJ_NONE;
}

/* Takes instruction r out of its block (a test's broken kernel). */
static inline void lc_remove_inst(tj_kernel *k, tj_ref r)
{
    const tj_block *blk = &k->blocks[k->insts[r].block];
    for (uint32_t i = 0; i < blk->ninsts; i++)
        if (blk->insts[i] == r) {
            tj_block_remove(k, k->insts[r].block, i);
            return;
        }
}

/* Whether the n 16-bit words at p are all v (a bf16 result of ones). */
static inline int lc_all_u16(const uint16_t *p, size_t n, uint16_t v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

/* How many instructions of kernel k are `op`. */
static inline int lc_count_op(const tj_kernel *k, tj_op op)
{
    int n = 0;
    for (tj_ref r = 1; r < k->ninsts; r++)
        n += k->insts[r].op == op;
    return n;
}

/* Element i of a tensor as a double. */
static inline double lc_get(tj_dtype dt, const void *p, size_t i)
{
    switch (dt) {
    case TJ_DT_BOOL: return ((const uint8_t *)p)[i] != 0;
    case TJ_DT_I8: return ((const int8_t *)p)[i];
    case TJ_DT_U8: return ((const uint8_t *)p)[i];
    case TJ_DT_I16: return ((const int16_t *)p)[i];
    case TJ_DT_U16: return ((const uint16_t *)p)[i];
    case TJ_DT_I32: return ((const int32_t *)p)[i];
    case TJ_DT_U32: return ((const uint32_t *)p)[i];
    case TJ_DT_I64: return (double)((const int64_t *)p)[i];
    case TJ_DT_U64: return (double)((const uint64_t *)p)[i];
    case TJ_DT_F16: return tj_f16_to_f32(((const uint16_t *)p)[i]);
    case TJ_DT_BF16: return tj_bf16_to_f32(((const uint16_t *)p)[i]);
    case TJ_DT_F32: return ((const float *)p)[i];
    default: return ((const double *)p)[i];
    }
}

static inline void lc_set(tj_dtype dt, void *p, size_t i, double v)
{
    switch (dt) {
    case TJ_DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case TJ_DT_I8: ((int8_t *)p)[i] = (int8_t)v; break;
    case TJ_DT_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case TJ_DT_I16: ((int16_t *)p)[i] = (int16_t)v; break;
    case TJ_DT_U16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case TJ_DT_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case TJ_DT_U32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case TJ_DT_I64: ((int64_t *)p)[i] = (int64_t)v; break;
    case TJ_DT_U64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    case TJ_DT_F16: ((uint16_t *)p)[i] = tj_f32_to_f16((float)v); break;
    case TJ_DT_BF16: ((uint16_t *)p)[i] = tj_f32_to_bf16((float)v); break;
    case TJ_DT_F32: ((float *)p)[i] = (float)v; break;
    default: ((double *)p)[i] = v; break;
    }
}

static inline double lc_random_value(const lc_opts *o, tj_dtype dt, int64_t ilo, int64_t ihi, unsigned *st)
{
    if (dt == TJ_DT_BOOL)
        return lc_rand(st) & 1;
    if (!tj_dtype_is_float(dt)) {
        int64_t lo = ilo, hi = ihi;
        if (!tj_dtype_is_signed(dt) && lo < 0)
            lo = 0;
        return (double)(lo + (int64_t)(lc_rand(st) % (uint64_t)(hi > lo ? hi - lo : 1)));
    }
    double v = o->lo + (o->hi - o->lo) * lc_uniform(st);
    if (o->specials) {
        unsigned k = lc_rand(st) % 16;
        if (k == 0)
            v = NAN;
        else if (k == 1)
            v = INFINITY;
        else if (k == 2)
            v = -0.0;
        else if (k < 6)
            v = (double)(int)(v * 2); /* ties */
    }
    return v;
}

typedef struct lc_run {
    tj_ctx *c;
    tj_arg ref[LC_MAX_ARGS], simt[LC_MAX_ARGS];
    void *pristine[LC_MAX_ARGS];
    size_t bytes[LC_MAX_ARGS], count[LC_MAX_ARGS];
    const tj_param *params;
    uint32_t nparams;
} lc_run;

static inline int lc_make_args(lc_run *run, const lc_opts *o)
{
    unsigned st = o->seed ? o->seed : 1;
    if (run->nparams > LC_MAX_ARGS) {
        fprintf(stderr, "lower_check: the kernel has %u parameters, the checker holds %d\n", run->nparams,
                LC_MAX_ARGS);
        run->nparams = 0; /* nothing was allocated: lc_free frees nothing */
        return 0;
    }
    for (uint32_t p = 0; p < run->nparams; p++) {
        const tj_param *pp = &run->params[p];
        if (!pp->rank) {
            const char *v = lc_lookup_str(o->scalars, pp->name);
            double x = v ? strtod(v, NULL) : 0;
            run->ref[p] = run->simt[p] = tj_dtype_is_float(pp->dtype) ? (tj_arg){.scalar.f = x}
                                                                       : (tj_arg){.scalar.i = (int64_t)x};
            continue;
        }
        tj_tensor t = {.dtype = pp->dtype, .rank = pp->rank};
        size_t n = 1;
        for (int a = 0; a < pp->rank; a++) {
            const char *v = pp->dim_names[a] ? lc_lookup_str(o->shapes, pp->dim_names[a]) : NULL;
            t.shape[a] = pp->dim_names[a] ? (v ? strtoll(v, NULL, 10) : 1) : pp->dim_sizes[a];
            n *= (size_t)t.shape[a];
        }
        for (int a = pp->rank - 1, s = 1; a >= 0; a--) {
            t.strides[a] = s;
            s *= (int)t.shape[a];
        }
        int64_t ilo = o->ilo, ihi = o->ihi;
        const char *r = lc_lookup_str(o->int_range, pp->name);
        if (r) {
            ilo = strtoll(r, NULL, 10);
            ihi = strtoll(strchr(r, ':') + 1, NULL, 10);
        }
        size_t bytes = (n ? n : 1) * (size_t)tj_dtype_size(pp->dtype);
        run->pristine[p] = malloc(bytes);
        for (size_t i = 0; i < n; i++)
            lc_set(pp->dtype, run->pristine[p], i, lc_random_value(o, pp->dtype, ilo, ihi, &st));
        run->bytes[p] = bytes;
        run->count[p] = n;
        run->ref[p] = run->simt[p] = (tj_arg){.is_tensor = 1, .tensor = t};
        run->ref[p].tensor.data = malloc(bytes);
        run->simt[p].tensor.data = malloc(bytes);
    }
    return 1;
}

static inline void lc_reset(lc_run *run)
{
    for (uint32_t p = 0; p < run->nparams; p++)
        if (run->params[p].rank) {
            memcpy(run->ref[p].tensor.data, run->pristine[p], run->bytes[p]);
            memcpy(run->simt[p].tensor.data, run->pristine[p], run->bytes[p]);
        }
}

static inline void lc_free(lc_run *run)
{
    for (uint32_t p = 0; p < run->nparams; p++)
        if (run->params[p].rank) {
            free(run->pristine[p]);
            free(run->ref[p].tensor.data);
            free(run->simt[p].tensor.data);
        }
}

static inline int lc_same(tj_dtype dt, double a, double b, const lc_opts *o)
{
    if (!tj_dtype_is_float(dt))
        return a == b;
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b))
        return a == b;
    if (o->signed_zeros && a == 0 && b == 0)
        return signbit(a) == signbit(b);
    double tol = o->atol + o->rtol * fabs(a);
    if (dt == TJ_DT_F16 || dt == TJ_DT_BF16)
        tol += (dt == TJ_DT_F16 ? 2e-3 : 1.6e-2) * fabs(a) + 1e-3;
    return fabs(a - b) <= tol;
}

/* Compares every tensor; prints the first few differences. */
static inline int lc_compare(lc_run *run, const lc_opts *o, const char *what)
{
    int ok = 1;
    for (uint32_t p = 0; p < run->nparams; p++) {
        if (!run->params[p].rank)
            continue;
        int shown = 0;
        for (size_t i = 0; i < run->count[p]; i++) {
            tj_dtype dt = run->params[p].dtype;
            double a = lc_get(dt, run->ref[p].tensor.data, i), b = lc_get(dt, run->simt[p].tensor.data, i);
            if (lc_same(dt, a, b, o))
                continue;
            if (shown++ < 6)
                fprintf(stderr, "%s: %s[%zu]: interpreter %.9g, simt %.9g\n", what, run->params[p].name, i, a, b);
            ok = 0;
        }
    }
    return ok;
}

static inline void lc_print(const char *title, const tj_kernel *k)
{
    tj_buf b = {0};
    tj_print_kernel(k, &b);
    fprintf(stderr, "---- %s\n%s\n", title, b.data ? b.data : "");
    tj_buf_free(&b);
}

/* Lowers k with `warps` and runs it on the SIMT interpreter over
 * run->simt (as they are); 1 when it ran. */
static inline int lc_lower_and_run(lc_run *run, const tj_kernel *k, int warps, const lc_opts *o, const char *what)
{
    /* the pipeline's steps, less those the options leave out */
    tj_pipeline_options po = {
        .lower.warps = warps, .lower.wgmma = o->wgmma, .lower.no_tma = o->no_tma, .args = o->facts ? run->simt : NULL, .nargs = run->nparams,
        .verify = 1};
    tj_kernel *simt = tj_kernel_clone(k);
    tj_step specialized = o->no_specialize ? TJ_STEP_SPECIALIZE : TJ_STEP_SPECIALIZE + 1;
    if (tj_pipeline_run(&simt, TJ_STEP_FACTS, specialized, &po))
        return 0;
    if (tj_pipeline_run(&simt, TJ_STEP_PREFETCH, o->no_optimize ? TJ_STEP_OPTIMIZE_SIMT : TJ_STEP_END, &po)) {
        fprintf(stderr, "%s: lowering failed:\n%s", what, tj_diag_render(run->c));
        if (simt && getenv("LC_DUMP"))
            lc_print("simt", simt);
        return 0;
    }
    if (getenv("LC_DUMP"))
        lc_print(what, simt);
    if (tj_simt_run(simt, run->simt, run->nparams)) {
        fprintf(stderr, "%s: SIMT run failed:\n%s", what, tj_diag_render(run->c));
        return 0;
    }
    return 1;
}

/* Lowers k with `warps` and runs both sides; 1 when they agree. */
static inline int lc_run_kernel(lc_run *run, const tj_kernel *k, int warps, const lc_opts *o)
{
    char what[256];
    snprintf(what, sizeof what, "%s warps=%d facts=%d", k->name, warps, o->facts);
    lc_reset(run);
    if (tj_interp_run(k, run->ref, run->nparams)) {
        fprintf(stderr, "%s: interpreter failed:\n%s", what, tj_diag_render(run->c));
        return 0;
    }
    return lc_lower_and_run(run, k, warps, o, what) && lc_compare(run, o, what);
}

static inline int lc_warps_of(const lc_opts *o, int i) { return i < 4 ? o->warps[i] : 0; }

/* A .tj kernel: lowered by the front end for each `warps`, then checked. */
static inline int lc_check_tj(const char *src, const char *kernel, const lc_opts *o)
{
    lc_run run = {.c = tj_ctx_new()};
    tj_binding defs[LC_MAX_BIND + 1], dims[LC_MAX_BIND];
    tj_program *prog = tj_parse_program(run.c, "test.tj", src, strlen(src));
    int ki = prog ? tj_program_find_kernel(prog, kernel) : -1;
    int ok = ki >= 0;
    if (ok) {
        run.nparams = tj_kernel_params(prog, ki, &run.params);
        ok = lc_make_args(&run, o);
    }
    uint32_t ndefs = lc_bindings(run.c, o->defines, defs, LC_MAX_BIND);
    uint32_t ndims = lc_bindings(run.c, o->shapes, dims, LC_MAX_BIND);
    for (int i = 0; ok && lc_warps_of(o, i); i++) {
        defs[ndefs] = (tj_binding){"warps", lc_warps_of(o, i)};
        tj_binding *config;
        uint32_t nconfig;
        tj_kernel *k = NULL;
        if (!tj_select_config(run.c, prog, ki, defs, ndefs + 1, dims, ndims, &config, &nconfig))
            k = tj_build_kernel(run.c, prog, ki, config, nconfig, dims, ndims);
        ok = k && !tj_verify(k) && lc_run_kernel(&run, k, lc_warps_of(o, i), o);
    }
    if (!ok)
        fprintf(stderr, "%s: %s", kernel, tj_diag_render(run.c));
    lc_free(&run);
    tj_ctx_free(run.c);
    return ok;
}

/* A Tile IR kernel parsed from text and verified, with arguments made for
 * it in run; NULL after a diagnostic in run->c. */
static inline tj_kernel *lc_parse_kernel(lc_run *run, const char *text, const lc_opts *o)
{
    tj_kernel *k = NULL;
    if (tj_parse_ir(run->c, "test.tjir", text, strlen(text), &k, 1) != 1 || tj_verify(k))
        return NULL;
    run->params = k->params;
    run->nparams = k->nparams;
    return lc_make_args(run, o) ? k : NULL;
}

/* A Tile IR kernel in text form, lowered with each `warps`. */
static inline int lc_check_ir(const char *text, const lc_opts *o)
{
    lc_run run = {.c = tj_ctx_new()};
    tj_kernel *k = lc_parse_kernel(&run, text, o);
    int ok = k != NULL;
    for (int i = 0; ok && lc_warps_of(o, i); i++)
        ok = lc_run_kernel(&run, k, lc_warps_of(o, i), o);
    if (!ok)
        fprintf(stderr, "%s", tj_diag_render(run.c));
    lc_free(&run);
    tj_ctx_free(run.c);
    return ok;
}

#endif
