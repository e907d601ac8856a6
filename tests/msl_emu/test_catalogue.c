/* The MSL generator against the SIMT interpreter: every kernel of the
 * hand-built catalogue (tests/unit/simt_kernels.h: every SIMT op and
 * dtype) is emitted as MSL, compiled for the emulator in one batch, run on
 * random data under the forward, reverse and shuffled schedules, and every
 * output tensor must equal the SIMT interpreter's: bit-exact, but for the
 * math functions (libm vs the generator's erf, a few ulps) and float
 * atomics (their order). Butterflies of shuffles, which the generator
 * prints as simd_<op>/quad_<op> reductions, are added here (f32 sums there
 * reassociate: a few ulps). Kernels Metal cannot run (f64, 64-bit atomics,
 * cp_async) must be refused with the reason; deliberately broken SIMT kernels (no
 * barrier, a read of shared memory nobody wrote) must be caught. */
#include "emu_launch.h"
#include "simt_kernels.h"

enum { MAX_KERNELS = 512 };

typedef struct entry {
    tt_kb kb;
    char *msl;
    const char *expect_error; /* a broken kernel: the emulator's report */
} entry;

/* ---- kernels of the catalogue without f64 (Metal has none) ---------------------- */

static const tj_dtype metal_dtypes[] = {TJ_DT_BOOL, TJ_DT_I8,  TJ_DT_I16,  TJ_DT_I32, TJ_DT_I64, TJ_DT_U8,
                                        TJ_DT_U16,  TJ_DT_U32, TJ_DT_U64,  TJ_DT_F16, TJ_DT_BF16, TJ_DT_F32};
enum { N_METAL_DTYPES = sizeof metal_dtypes / sizeof *metal_dtypes };

/* to_DT[i] = cast(a[i]) for every dtype but f64 (sk_build_cast has all). */
static void build_cast(tt_kb *kb, tj_dtype from)
{
    char name[64];
    snprintf(name, sizeof name, "metal_cast_%s", tj_dtype_name(from));
    sk_begin(kb, name, SK_THREADS, SK_PROGRAMS);
    tj_ref a = sk_tensor(kb, "a", from, SK_N), outs[N_METAL_DTYPES];
    for (int o = 0; o < N_METAL_DTYPES; o++) {
        snprintf(name, sizeof name, "to_%s", tj_dtype_name(metal_dtypes[o]));
        outs[o] = sk_tensor(kb, name, metal_dtypes[o], SK_N);
    }
    tj_ref i = sk_index(kb), p = sk_in_bounds(kb, a, i), x = sk_load_at(kb, a, i, p);
    for (int o = 0; o < N_METAL_DTYPES; o++)
        sk_st(kb, sk_addr(kb, outs[o], i), tt_cast(kb, x, metal_dtypes[o]), p);
    tt_end(kb);
}

/* Scalar parameters of every dtype but f64, as sk_build_params. */
static void build_params(tt_kb *kb)
{
    sk_begin(kb, "metal_params", SK_THREADS, SK_PROGRAMS);
    char name[32];
    tj_ref outs[N_METAL_DTYPES], ss[N_METAL_DTYPES];
    for (int o = 0; o < N_METAL_DTYPES; o++) {
        snprintf(name, sizeof name, "out_%s", tj_dtype_name(metal_dtypes[o]));
        outs[o] = sk_tensor(kb, name, metal_dtypes[o], SK_N);
    }
    for (int o = 0; o < N_METAL_DTYPES; o++) {
        snprintf(name, sizeof name, "s_%s", tj_dtype_name(metal_dtypes[o]));
        ss[o] = tt_param(kb, name, metal_dtypes[o], NULL);
    }
    tj_ref i = sk_index(kb), p = sk_in_bounds(kb, outs[0], i);
    for (int o = 0; o < N_METAL_DTYPES; o++) {
        tj_dtype dt = metal_dtypes[o];
        tj_ref iv = dt == TJ_DT_BOOL ? tt_bin(kb, TJ_OP_EQ, tt_bin(kb, TJ_OP_AND, i, sk_i32(kb, 1)), sk_i32(kb, 1))
                                     : tt_cast(kb, i, dt);
        sk_st(kb, sk_addr(kb, outs[o], i), tt_bin(kb, dt == TJ_DT_BOOL ? TJ_OP_XOR : TJ_OP_ADD, ss[o], iv), p);
    }
    tt_end(kb);
}

/* ---- butterflies: reductions across lanes ------------------------------------------ */

static const tj_op butterfly_ops[] = {TJ_OP_ADD, TJ_OP_MUL, TJ_OP_AND, TJ_OP_OR, TJ_OP_XOR, TJ_OP_MAX, TJ_OP_MIN};
static const char *const butterfly_names[] = {"sum", "product", "and", "or", "xor", "max", "min"};
static const tj_dtype butterfly_dtypes[] = {TJ_DT_I32, TJ_DT_U32, TJ_DT_F32};
enum { N_BUTTERFLY_OPS = 7, N_BUTTERFLY_DTYPES = 3 };

/* The butterfly ops on dt: every one on integers; add, mul, max, min on f32. */
static int butterfly_op_ok(tj_dtype dt, tj_op op)
{
    return !tj_dtype_is_float(dt) || op == TJ_OP_ADD || op == TJ_OP_MUL || op == TJ_OP_MAX || op == TJ_OP_MIN;
}

/* Whether the MSL generator prints op's butterflies on dt as simd_ and quad_
 * calls (codegen/msl/msl_reduce.c); f32 mul, max, min stay shuffles. */
static int butterfly_recognized(tj_dtype dt, tj_op op) { return !tj_dtype_is_float(dt) || op == TJ_OP_ADD; }

/* x' = op(x, shfl_xor(x, m)) for each mask m, the shuffle on the left when
 * `swap` (both orders are butterfly steps). */
static tj_ref butterfly(tt_kb *kb, tj_op op, tj_ref x, const int *masks, int n, int swap)
{
    tj_type t = tt_type(kb, x);
    for (int i = 0; i < n; i++) {
        tj_ref s = tt_opi(kb, TJ_OP_SHFL_XOR, t, masks[i], 1, x);
        x = swap ? tt_bin(kb, op, s, x) : tt_bin(kb, op, x, s);
    }
    return x;
}

/* Per op on dt, three butterflies: over the 32 lanes in a shuffled mask
 * order (simd_<op>), over the quad (quad_<op>, operands swapped), over 16
 * lanes (quad_<op>, then two shuffles). f32 sums reassociate: they read
 * u_x (values in [0, 1)) into outputs named *_reassoc, compared within a
 * few ulps; everything else must be bit-exact, NaN included. */
static void build_butterflies(tt_kb *kb, tj_dtype dt)
{
    static const int full[] = {4, 16, 1, 8, 2}, quad[] = {2, 1}, sixteen[] = {1, 2, 4, 8};
    static const char *const shapes[] = {"simd", "quad", "16"};
    char name[64];
    snprintf(name, sizeof name, "butterfly_%s", tj_dtype_name(dt));
    sk_begin(kb, name, SK_THREADS, SK_PROGRAMS);
    int n = SK_THREADS * SK_PROGRAMS, nout = 0;
    int is_float = tj_dtype_is_float(dt);
    tj_ref x = sk_tensor(kb, "x", dt, n), ux = is_float ? sk_tensor(kb, "u_x", dt, n) : TJ_NONE;
    tj_ref outs[N_BUTTERFLY_OPS * 3];
    for (int o = 0; o < N_BUTTERFLY_OPS; o++)
        for (int sh = 0; sh < 3 && butterfly_op_ok(dt, butterfly_ops[o]); sh++) {
            int reassoc = is_float && butterfly_ops[o] == TJ_OP_ADD;
            snprintf(name, sizeof name, "%s_%s%s", butterfly_names[o], shapes[sh], reassoc ? "_reassoc" : "");
            outs[nout++] = sk_tensor(kb, name, dt, n);
        }
    tj_ref i = sk_index(kb), v = sk_load_at(kb, x, i, TJ_NONE), u = is_float ? sk_load_at(kb, ux, i, TJ_NONE) : v;
    nout = 0;
    for (int o = 0; o < N_BUTTERFLY_OPS; o++) {
        tj_op op = butterfly_ops[o];
        if (!butterfly_op_ok(dt, op))
            continue;
        tj_ref in = op == TJ_OP_ADD ? u : v;
        sk_st(kb, sk_addr(kb, outs[nout++], i), butterfly(kb, op, in, full, 5, 0), TJ_NONE);
        sk_st(kb, sk_addr(kb, outs[nout++], i), butterfly(kb, op, in, quad, 2, 1), TJ_NONE);
        sk_st(kb, sk_addr(kb, outs[nout++], i), butterfly(kb, op, in, sixteen, 4, 0), TJ_NONE);
    }
    tt_end(kb);
}

/* The MSL of build_butterflies(dt) calls simd_<op> and quad_<op> for the
 * butterflies the generator recognizes, and neither for the others. */
static void check_butterfly_msl(const char *msl, tj_dtype dt)
{
    char call[64];
    for (int o = 0; o < N_BUTTERFLY_OPS; o++) {
        if (!butterfly_op_ok(dt, butterfly_ops[o]))
            continue;
        int want = butterfly_recognized(dt, butterfly_ops[o]);
        for (int g = 0; g < 2; g++) {
            snprintf(call, sizeof call, "metal::%s_%s(", g ? "quad" : "simd", butterfly_names[o]);
            EU_CHECK(!strstr(msl, call) == !want, "butterfly_%s: %s %s", tj_dtype_name(dt), call,
                     want ? "missing" : "printed, but the shuffles must stay");
        }
    }
}

/* ---- broken kernels --------------------------------------------------------------- */

/* out[i] = shared[nthreads-1-tid] after each thread stored its own slot;
 * `barrier` 0 leaves out the barrier, `unwritten` reads one slot too far. */
static void build_exchange(tt_kb *kb, const char *name, int barrier, int unwritten)
{
    sk_begin(kb, name, SK_THREADS, 1);
    kb->k->smem_bytes = (SK_THREADS + 1) * 4;
    tj_ref x = sk_tensor(kb, "x", TJ_DT_F32, SK_THREADS), out = sk_tensor(kb, "out", TJ_DT_F32, SK_THREADS);
    tj_ref tid = tt_opi(kb, TJ_OP_TID, tt_scalar(kb, TJ_DT_I32), 0, 0), four = tt_ci(kb, TJ_DT_U32, 4);
    tj_ref v = sk_load_at(kb, x, tid, TJ_NONE);
    tt_op(kb, TJ_OP_ST_SHARED, TJ_TYPE_NONE, 2, tt_bin(kb, TJ_OP_MUL, tt_cast(kb, tid, TJ_DT_U32), four), v);
    if (barrier)
        tt_op(kb, TJ_OP_BARRIER, TJ_TYPE_NONE, 0);
    tj_ref other = tt_bin(kb, TJ_OP_SUB, sk_i32(kb, SK_THREADS - 1 + unwritten), tid);
    tj_ref r = tt_op(kb, TJ_OP_LD_SHARED, tt_scalar(kb, TJ_DT_F32), 1,
                     tt_bin(kb, TJ_OP_MUL, tt_cast(kb, other, TJ_DT_U32), four));
    sk_st(kb, sk_addr(kb, out, tid), r, TJ_NONE);
    tt_end(kb);
}

/* ---- checks ---------------------------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

static double tolerance(tj_dtype dt, const char *out)
{
    static const char *const approx[] = {"erf", NULL}; /* the generator's polynomial vs libm's erff */
    if (!tj_dtype_is_float(dt))
        return 0;
    int half = dt == TJ_DT_F16 || dt == TJ_DT_BF16;
    if (!strcmp(out, "u_acc")) /* float atomics add in the order the threads run */
        return half ? 32 : 512;
    if (ends_with(out, "_reassoc")) /* f32 sums as simd_sum/quad_sum in another order: 1 ulp seen */
        return 4;
    for (const char *const *a = approx; *a; a++)
        if (!strcmp(out, *a))
            return half ? 1 : 4;
    return 0;
}

/* Runs entry e under each schedule against the SIMT interpreter. */
static void check_entry(void *so, int source, entry *e, uint64_t seed)
{
    const tj_kernel *k = e->kb.k;
    sk_args ref, got;
    if (sk_make_args(k, seed, &ref)) {
        EU_CHECK(0, "%s: no arguments", k->name);
        return;
    }
    int ref_ok = e->expect_error || !tj_simt_run(k, ref.args, ref.n);
    EU_CHECK(ref_ok, "%s: SIMT interpreter: %s", k->name, tj_diag_render(e->kb.c));
    static const uint32_t schedules[] = {0, 1, 5};
    for (int s = 0; s < 3 && ref_ok; s++) {
        sk_make_args(k, seed, &got);
        char err[1024] = "", what[96];
        int rc = el_run(so, source, k, got.args, got.n, schedules[s], err, sizeof err);
        snprintf(what, sizeof what, "%s (schedule %u)", k->name, schedules[s]);
        if (e->expect_error) {
            EU_CHECK(rc && strstr(err, e->expect_error), "%s: expected \"%s\", got: %s", what, e->expect_error,
                     rc ? err : "no error");
            if (s == 0 && rc)
                printf("caught %s: %s\n", k->name, err);
        } else if (rc) {
            EU_CHECK(0, "%s: %s", what, err);
        } else {
            for (uint32_t p = 0; p < k->nparams; p++)
                if (got.bufs[p] && !ends_with(k->params[p].name, "_nondet") &&
                    !el_compare(what, k->params[p].name, k->params[p].dtype, got.bufs[p], ref.bufs[p],
                                got.bytes[p] / (size_t)tj_dtype_size(k->params[p].dtype),
                                tolerance(k->params[p].dtype, k->params[p].name)))
                    eu_failures++;
        }
        sk_free_args(&got);
    }
    sk_free_args(&ref);
}

/* Adds catalogue kernel i, or checks that Metal's limits refuse it. */
static int add_catalogue(entry *es, int n, int i, int *refused)
{
    tt_kb kb;
    int rc = sk_build(&kb, i);
    if (rc <= 0)
        return rc == 0 ? -1 : n;
    tj_buf b = {0};
    if (tj_emit_msl(kb.k, &b)) {
        const char *d = tj_diag_render(kb.c);
        int metal_limit = strstr(d, "f64 does not exist") || strstr(d, "is f64, which does not exist") ||
                          strstr(d, "64-bit atomics") || strstr(d, "Metal has no asynchronous copies");
        EU_CHECK(metal_limit, "%s: refused for another reason: %s", kb.k->name, d);
        *refused += metal_limit;
        tt_free(&kb);
    } else {
        es[n].kb = kb;
        es[n++].msl = strdup(b.data);
    }
    tj_buf_free(&b);
    return n;
}

int main(void)
{
    static entry es[MAX_KERNELS];
    int n = 0, refused = 0;
    for (int i = 0;; i++) {
        int next = add_catalogue(es, n, i, &refused);
        if (next < 0)
            break;
        n = next;
    }
    for (int f = 0; f < N_METAL_DTYPES; f++)
        build_cast(&es[n++].kb, metal_dtypes[f]);
    build_params(&es[n++].kb);
    int first_butterfly = n;
    for (int d = 0; d < N_BUTTERFLY_DTYPES; d++)
        build_butterflies(&es[n++].kb, butterfly_dtypes[d]);
    build_exchange(&es[n].kb, "no_barrier", 0, 0);
    es[n++].expect_error = "missing barrier";
    build_exchange(&es[n].kb, "unwritten_slot", 1, 1);
    es[n++].expect_error = "uninitialized";
    const char *srcs[MAX_KERNELS];
    for (int i = 0; i < n; i++) {
        if (!es[i].msl)
            es[i].msl = el_emit(es[i].kb.k);
        EU_CHECK(es[i].msl, "%s: no MSL", es[i].kb.k->name);
        srcs[i] = es[i].msl ? es[i].msl : "";
    }
    for (int d = 0; d < N_BUTTERFLY_DTYPES; d++)
        check_butterfly_msl(srcs[first_butterfly + d], butterfly_dtypes[d]);
    double t0 = eu_now();
    void *so = eu_build(srcs, n, "catalogue");
    printf("%d kernels emitted (%d refused: f64, 64-bit atomics, cp_async), compiled in %.1f s\n", n, refused, eu_now() - t0);
    EU_CHECK(so, "the catalogue compiles");
    t0 = eu_now();
    for (int i = 0; so && i < n; i++)
        check_entry(so, i, &es[i], (uint64_t)i + 1);
    printf("ran in %.1f s\n", eu_now() - t0);
    mtl_emu_close(so);
    for (int i = 0; i < n; i++) {
        free(es[i].msl);
        tt_free(&es[i].kb);
    }
    printf("%s: %d failure(s)\n", eu_failures ? "FAIL" : "PASS", eu_failures);
    return eu_failures != 0;
}
