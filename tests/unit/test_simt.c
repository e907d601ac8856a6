/* The SIMT interpreter (tj_simt_run): hand-built kernels with shuffles,
 * shared memory, vectors, predicates, atomics and loops against expected
 * values computed here; every kernel of the catalogue runs; and what the
 * lowering could get wrong (out-of-bounds or misaligned accesses, reads of
 * unwritten shared memory, non-uniform branches) is reported, not run. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>

#include "simt_kernels.h"

static int param_index(const tj_kernel *k, const char *name)
{
    for (uint32_t i = 0; i < k->nparams; i++)
        if (!strcmp(k->params[i].name, name))
            return (int)i;
    cr_assert_fail("no parameter %s", name);
    return -1;
}

/* Builds catalogue kernel `name` (searching the catalogue). */
static void build_named(tt_kb *kb, const char *name)
{
    for (int i = 0;; i++) {
        int rc = sk_build(kb, i);
        cr_assert_neq(rc, 0, "no catalogue kernel %s", name);
        if (rc < 0)
            continue;
        if (!strcmp(kb->k->name, name))
            return;
        tt_free(kb);
    }
}

static void run_ok(tt_kb *kb, sk_args *a)
{
    cr_assert_eq(tj_verify(kb->k), 0, "%s", tj_diag_render(kb->c));
    cr_assert_eq(tj_simt_run(kb->k, a->args, a->n), 0, "%s", tj_diag_render(kb->c));
}

#define BUF(a, k, name, T) ((T *)(a).bufs[param_index((k), (name))])

Test(simt, catalogue_runs_deterministically)
{
    for (int i = 0;; i++) {
        tt_kb kb;
        int rc = sk_build(&kb, i);
        if (rc == 0)
            break;
        if (rc < 0)
            continue;
        sk_args a, b;
        cr_assert_eq(sk_make_args(kb.k, (uint64_t)i + 7, &a), 0);
        sk_copy_args(&b, &a);
        cr_expect_eq(tj_simt_run(kb.k, a.args, a.n), 0, "%s: %s", kb.k->name, tj_diag_render(kb.c));
        cr_expect_eq(tj_simt_run(kb.k, b.args, b.n), 0);
        for (uint32_t p = 0; p < a.n; p++)
            if (a.bufs[p])
                cr_expect(!memcmp(a.bufs[p], b.bufs[p], a.bytes[p]), "%s: output %s differs between runs",
                          kb.k->name, kb.k->params[p].name);
        sk_free_args(&a);
        sk_free_args(&b);
        tt_free(&kb);
    }
}

/* ---- warps ---------------------------------------------------------------------- */

Test(simt, shuffles_read_lanes_of_the_same_warp)
{
    tt_kb kb;
    build_named(&kb, "shuffle_i32_x1");
    sk_args a;
    sk_make_args(kb.k, 3, &a);
    run_ok(&kb, &a);
    const int32_t *x = BUF(a, kb.k, "x", int32_t), *lanes = BUF(a, kb.k, "lanes", int32_t);
    const int32_t *xr = BUF(a, kb.k, "xor", int32_t), *up = BUF(a, kb.k, "up", int32_t);
    const int32_t *idx = BUF(a, kb.k, "idx", int32_t), *idx2 = BUF(a, kb.k, "idx2", int32_t);
    for (int i = 0; i < SK_THREADS * SK_PROGRAMS; i++) {
        int lane = i % 32, warp = i - lane, tid = i % SK_THREADS;
        cr_assert_eq(xr[i], x[warp + (lane ^ 5)], "xor at %d", i);
        cr_assert_eq(up[i], x[lane >= 3 ? i - 3 : i], "up at %d", i);
        cr_assert_eq(idx[i], x[warp + (lanes[i] & 31)], "idx at %d (lane %d)", i, lanes[i]);
        cr_assert_eq(idx2[i], x[warp + ((tid * 7 + 3) & 31)], "idx2 at %d", i);
    }
    sk_free_args(&a);
    tt_free(&kb);
}

Test(simt, shuffles_of_vectors_move_every_element)
{
    tt_kb kb;
    build_named(&kb, "shuffle_f64_x2");
    sk_args a;
    sk_make_args(kb.k, 5, &a);
    run_ok(&kb, &a);
    const uint64_t *x = BUF(a, kb.k, "x", uint64_t), *xr = BUF(a, kb.k, "xor", uint64_t);
    for (int i = 0; i < SK_THREADS * SK_PROGRAMS; i++) {
        int src = i - i % 32 + ((i % 32) ^ 5);
        cr_assert_eq(xr[2 * i], x[2 * src]);
        cr_assert_eq(xr[2 * i + 1], x[2 * src + 1]);
    }
    sk_free_args(&a);
    tt_free(&kb);
}

/* ---- memory ---------------------------------------------------------------------- */

Test(simt, shared_memory_exchanges_between_threads)
{
    static const char *const names[] = {"shared_i32_x4", "shared_u8_x16", "shared_f16_x8"};
    for (int n = 0; n < 3; n++) {
        tt_kb kb;
        build_named(&kb, names[n]);
        sk_args a;
        sk_make_args(kb.k, 11, &a);
        run_ok(&kb, &a);
        int p = param_index(kb.k, "x"), size = tj_dtype_size(kb.k->params[p].dtype);
        int w = (int)(16 / size);
        const unsigned char *x = a.bufs[p], *rev = BUF(a, kb.k, "rev", unsigned char);
        const unsigned char *nb = BUF(a, kb.k, "nb", unsigned char);
        for (int i = 0; i < SK_THREADS * SK_PROGRAMS; i++) {
            int tid = i % SK_THREADS, prog = i - tid, other = prog + SK_THREADS - 1 - tid;
            cr_assert(!memcmp(rev + (size_t)i * 16, x + (size_t)other * 16, 16), "%s: rev at %d", names[n], i);
            cr_assert(!memcmp(nb + (size_t)i * size, x + (size_t)(prog + (tid ^ 1)) * w * size, (size_t)size),
                      "%s: nb at %d", names[n], i);
        }
        sk_free_args(&a);
        tt_free(&kb);
    }
}

/* cp_async_B: thread t copies (4 t) % (B + 4) of its B bytes (zeros after);
 * `first` reads the neighbour's first group after a wait leaving one group
 * in flight, `second` its full second copy after waiting for all. */
Test(simt, async_copies_land_zero_filled_at_their_wait)
{
    static const char *const names[] = {"cp_async_4", "cp_async_8", "cp_async_16"};
    for (int n = 0; n < 3; n++) {
        tt_kb kb;
        build_named(&kb, names[n]);
        sk_args a;
        sk_make_args(kb.k, 5, &a);
        run_ok(&kb, &a);
        size_t bytes = (size_t)4 << n;
        const unsigned char *x = BUF(a, kb.k, "x", unsigned char), *first = BUF(a, kb.k, "first", unsigned char);
        const unsigned char *second = BUF(a, kb.k, "second", unsigned char);
        for (int i = 0; i < SK_THREADS * SK_PROGRAMS; i++) {
            int tid = i % SK_THREADS, from = i - tid + (tid ^ 1);
            size_t count = (size_t)(4 * (tid ^ 1)) % (bytes + 4);
            const unsigned char *got = first + (size_t)i * bytes, *src = x + (size_t)from * bytes;
            cr_assert(!memcmp(got, src, count), "%s: first at %d", names[n], i);
            for (size_t b = count; b < bytes; b++)
                cr_assert_eq(got[b], 0, "%s: byte %zu at %d is not zero-filled", names[n], b, i);
            cr_assert(!memcmp(second + (size_t)i * bytes, src, bytes), "%s: second at %d", names[n], i);
        }
        sk_free_args(&a);
        tt_free(&kb);
    }
}

/* A wait that leaves both groups in flight: nothing has landed where the
 * kernel reads. */
Test(simt, reports_a_read_of_copies_still_in_flight)
{
    tt_kb kb;
    build_named(&kb, "cp_async_16");
    for (tj_ref r = 1; r < kb.k->ninsts; r++)
        if (kb.k->insts[r].op == TJ_OP_CP_ASYNC_WAIT && kb.k->insts[r].imm == 1)
            kb.k->insts[r].imm = 2;
    sk_args a;
    sk_make_args(kb.k, 5, &a);
    cr_assert_eq(tj_verify(kb.k), 0, "%s", tj_diag_render(kb.c));
    cr_assert_neq(tj_simt_run(kb.k, a.args, a.n), 0, "a read of bytes still in flight went unnoticed");
    cr_assert(strstr(tj_diag_render(kb.c), "which no thread has written"), "%s", tj_diag_render(kb.c));
    sk_free_args(&a);
    tt_free(&kb);
}

/* Without the barrier after the first wait, a thread reads bytes its
 * neighbour's copy landed: on a GPU they may not be visible yet. */
Test(simt, reports_a_read_of_another_threads_copy_before_a_barrier)
{
    tt_kb kb;
    build_named(&kb, "cp_async_16");
    const tj_block *body = &kb.k->blocks[kb.k->body];
    for (uint32_t i = 0; i + 1 < body->ninsts; i++) {
        const tj_inst *in = &kb.k->insts[body->insts[i]];
        if (in->op == TJ_OP_CP_ASYNC_WAIT && in->imm == 1) {
            tj_block_remove(kb.k, kb.k->body, i + 1); /* the barrier */
            break;
        }
    }
    sk_args a;
    sk_make_args(kb.k, 5, &a);
    cr_assert_eq(tj_verify(kb.k), 0, "%s", tj_diag_render(kb.c));
    cr_assert_neq(tj_simt_run(kb.k, a.args, a.n), 0, "a read of another thread's landed copy went unnoticed");
    cr_assert(strstr(tj_diag_render(kb.c), "landed with no barrier since"), "%s", tj_diag_render(kb.c));
    sk_free_args(&a);
    tt_free(&kb);
}

/* vector_*: out = (i % 3 != 0 ? x : 1) + element index; plain = x below n - 5 */
Test(simt, vector_loads_with_predicates_and_defaults)
{
    tt_kb kb;
    build_named(&kb, "vector_f32_x4");
    sk_args a, orig;
    sk_make_args(kb.k, 13, &a);
    sk_copy_args(&orig, &a);
    run_ok(&kb, &a);
    const float *x = BUF(a, kb.k, "x", float), *out = BUF(a, kb.k, "out", float);
    const float *plain = BUF(a, kb.k, "plain", float), *plain0 = BUF(orig, kb.k, "plain", float);
    int n = SK_THREADS * SK_PROGRAMS;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 4; k++) {
            float want = (i % 3 ? x[4 * i + k] : 1.0f) + (float)k;
            float got = out[4 * i + k];
            cr_assert(got == want || (isnan(got) && isnan(want)), "out[%d][%d] = %g, not %g", i, k, got, want);
            const float *p = i < n - 5 ? &x[4 * i + k] : &plain0[4 * i + k];
            cr_assert(!memcmp(&plain[4 * i + k], p, 4), "plain[%d][%d]", i, k);
        }
    sk_free_args(&orig);
    sk_free_args(&a);
    tt_free(&kb);
}

Test(simt, byte_and_bool_vectors)
{
    tt_kb kb;
    build_named(&kb, "vector_i8_x16");
    sk_args a;
    sk_make_args(kb.k, 17, &a);
    run_ok(&kb, &a);
    const int8_t *x = BUF(a, kb.k, "x", int8_t), *out = BUF(a, kb.k, "out", int8_t);
    for (int i = 0; i < SK_THREADS * SK_PROGRAMS; i++)
        for (int k = 0; k < 16; k++)
            cr_assert_eq(out[16 * i + k], (int8_t)((i % 3 ? x[16 * i + k] : 1) + k));
    sk_free_args(&a);
    tt_free(&kb);
    build_named(&kb, "vector_bool_x16");
    sk_make_args(kb.k, 19, &a);
    run_ok(&kb, &a);
    const uint8_t *bx = BUF(a, kb.k, "x", uint8_t), *bo = BUF(a, kb.k, "out", uint8_t);
    for (int i = 0; i < SK_THREADS * SK_PROGRAMS; i++)
        for (int k = 0; k < 16; k++)
            cr_assert_eq(bo[16 * i + k], (uint8_t)((i % 3 ? bx[16 * i + k] != 0 : 1) ^ (k & 1)));
    sk_free_args(&a);
    tt_free(&kb);
}

/* ---- atomics ---------------------------------------------------------------------- */

Test(simt, atomics_update_in_thread_order)
{
    tt_kb kb;
    build_named(&kb, "atom_add_i32");
    sk_args a, orig;
    sk_make_args(kb.k, 23, &a);
    sk_copy_args(&orig, &a);
    run_ok(&kb, &a);
    const int32_t *vals = BUF(a, kb.k, "vals", int32_t), *acc0 = BUF(orig, kb.k, "acc", int32_t);
    const int32_t *acc = BUF(a, kb.k, "acc", int32_t), *olds = BUF(a, kb.k, "olds_nondet", int32_t);
    uint32_t sum[4];
    for (int s = 0; s < 4; s++)
        sum[s] = (uint32_t)acc0[s];
    for (int i = 0; i < SK_N; i++) { /* programs run in order, threads in order */
        int on = i % 3 != 0;
        cr_assert_eq(olds[i], on ? (int32_t)sum[i % 4] : 0, "old value at %d", i);
        if (on)
            sum[i % 4] += (uint32_t)vals[i];
    }
    for (int s = 0; s < 4; s++)
        cr_assert_eq(acc[s], (int32_t)sum[s]);
    sk_free_args(&orig);
    sk_free_args(&a);
    tt_free(&kb);
}

Test(simt, float_atomic_max_propagates_nan)
{
    tt_kb kb;
    build_named(&kb, "atom_max_f32");
    sk_args a, orig;
    sk_make_args(kb.k, 29, &a);
    sk_copy_args(&orig, &a);
    run_ok(&kb, &a);
    const float *vals = BUF(a, kb.k, "vals", float), *acc0 = BUF(orig, kb.k, "acc", float);
    const float *acc = BUF(a, kb.k, "acc", float);
    for (int s = 0; s < 4; s++) {
        float m = acc0[s];
        for (int i = s; i < SK_N; i += 4)
            if (i % 3)
                m = isnan(m) || isnan(vals[i]) ? NAN : fmaxf(m, vals[i]);
        cr_assert(acc[s] == m || (isnan(acc[s]) && isnan(m)), "acc[%d] = %g, not %g", s, acc[s], m);
    }
    sk_free_args(&orig);
    sk_free_args(&a);
    tt_free(&kb);
}

/* ---- control flow, parameters, the grid ----------------------------------------------- */

Test(simt, loops_with_runtime_steps_branches_and_swaps)
{
    static const int bounds[][3] = {{0, 10, 1}, {10, -3, -2}, {5, 5, 1}, {0, 7, 0}, {-4, 9, 5}};
    for (int b = 0; b < 5; b++) {
        tt_kb kb;
        build_named(&kb, "loops");
        sk_args a;
        sk_make_args(kb.k, 31, &a);
        a.args[param_index(kb.k, "small_lo")].scalar.i = bounds[b][0];
        a.args[param_index(kb.k, "small_hi")].scalar.i = bounds[b][1];
        a.args[param_index(kb.k, "small_step")].scalar.i = bounds[b][2];
        run_ok(&kb, &a);
        for (int i = 0; i < SK_N; i++) {
            int32_t x = i;
            float y = 1.0f;
            for (int j = bounds[b][0]; bounds[b][2] && (bounds[b][2] > 0 ? j < bounds[b][1] : j > bounds[b][1]);
                 j += bounds[b][2]) {
                if (j % 3 == 0) {
                    int32_t nx = x + j;
                    y = y * 1.5f;
                    x = nx;
                } else {
                    y = y + (float)x;
                    x = x - 1;
                }
            }
            cr_assert_eq(BUF(a, kb.k, "oa", int32_t)[i], x, "bounds %d: oa[%d]", b, i);
            cr_assert_eq(BUF(a, kb.k, "ob", float)[i], y, "bounds %d: ob[%d]", b, i);
            cr_assert_eq(BUF(a, kb.k, "ox", int32_t)[i], 0); /* (i, 0) swapped five times */
            cr_assert_eq(BUF(a, kb.k, "oy", int32_t)[i], i);
            cr_assert_eq(BUF(a, kb.k, "oc", int32_t)[i], 15);
            uint32_t down = (uint32_t)i, up = (uint32_t)i; /* wrapping like i32 */
            for (int j = bounds[b][1]; j > bounds[b][0]; j--)
                down = down * 3 + (uint32_t)j;
            for (int j = bounds[b][0]; j < bounds[b][1]; j += 3)
                up = up * 3 + (uint32_t)j;
            cr_assert_eq(BUF(a, kb.k, "od", int32_t)[i], (int32_t)down, "bounds %d: od[%d]", b, i);
            cr_assert_eq(BUF(a, kb.k, "oe", int32_t)[i], (int32_t)up, "bounds %d: oe[%d]", b, i);
        }
        sk_free_args(&a);
        tt_free(&kb);
    }
}

Test(simt, scalar_parameters_of_every_dtype)
{
    tt_kb kb;
    build_named(&kb, "params");
    sk_args a;
    sk_make_args(kb.k, 37, &a);
    a.args[param_index(kb.k, "s_i8")].scalar.i = -100;
    a.args[param_index(kb.k, "s_u16")].scalar.i = 65535;
    a.args[param_index(kb.k, "s_f32")].scalar.f = 0.25;
    a.args[param_index(kb.k, "s_bool")].scalar.i = 1;
    run_ok(&kb, &a);
    for (int i = 0; i < SK_N; i++) {
        cr_assert_eq(BUF(a, kb.k, "out_i8", int8_t)[i], (int8_t)(-100 + i));
        cr_assert_eq(BUF(a, kb.k, "out_u16", uint16_t)[i], (uint16_t)(65535 + i));
        cr_assert_eq(BUF(a, kb.k, "out_f32", float)[i], 0.25f + (float)i);
        cr_assert_eq(BUF(a, kb.k, "out_bool", uint8_t)[i], (uint8_t)(1 ^ (i & 1)));
    }
    sk_free_args(&a);
    tt_free(&kb);
}

Test(simt, program_ids_dims_and_strides)
{
    tt_kb kb;
    build_named(&kb, "grid3");
    sk_args a;
    sk_make_args(kb.k, 41, &a);
    run_ok(&kb, &a);
    const int64_t *out = BUF(a, kb.k, "out", int64_t);
    for (int z = 0; z < 2; z++)
        for (int y = 0; y < 3; y++)
            for (int x = 0; x < 2; x++)
                for (int t = 0; t < 32; t++) {
                    const int64_t *o = &out[(((z * 3 + y) * 2 + x) * 32 + t) * 8];
                    int64_t want[8] = {x, y, z, 12, 3, 5, 5, 1};
                    for (int k = 0; k < 8; k++)
                        cr_assert_eq(o[k], want[k], "program (%d, %d, %d) thread %d value %d", x, y, z, t, k);
                }
    sk_free_args(&a);
    tt_free(&kb);
}

/* ---- what the interpreter refuses ---------------------------------------------------- */

/* A kernel storing v (i32) at byte offset `off` of out (i32[64]) under
 * predicate tid < `upto`. With smem_read, v comes from shared memory (256
 * bytes): each thread stores at tid*4, then loads at tid*4 + smem_read. */
static void build_store(tt_kb *kb, int64_t off, int upto, int smem_read)
{
    sk_begin(kb, "probe", 32, 1);
    tj_ref out = sk_tensor(kb, "out", TJ_DT_I32, 64);
    tj_ref tid = tt_opi(kb, TJ_OP_TID, tt_scalar(kb, TJ_DT_I32), 0, 0);
    tj_ref ptr = tt_op(kb, TJ_OP_TENSOR_PTR, tt_scalar(kb, TJ_DT_U64), 1, out);
    tj_ref addr = tt_bin(kb, TJ_OP_ADD, ptr, tt_ci(kb, TJ_DT_U64, off));
    tj_ref v = tid;
    if (smem_read) {
        kb->k->smem_bytes = 256;
        tj_ref a4 = tt_bin(kb, TJ_OP_MUL, tt_cast(kb, tid, TJ_DT_U32), tt_ci(kb, TJ_DT_U32, 4));
        tt_op(kb, TJ_OP_ST_SHARED, TJ_TYPE_NONE, 2, a4, tid);
        tj_ref far = tt_bin(kb, TJ_OP_ADD, a4, tt_ci(kb, TJ_DT_U32, smem_read));
        v = tt_op(kb, TJ_OP_LD_SHARED, tt_scalar(kb, TJ_DT_I32), 1, far);
    }
    sk_st(kb, addr, v, tt_bin(kb, TJ_OP_LT, tid, sk_i32(kb, upto)));
    tt_end(kb);
}

static void expect_error(tt_kb *kb, const char *what)
{
    int32_t out[64] = {0};
    tj_arg args[1] = {tt_tensor(out, TJ_DT_I32, 1, 64)};
    cr_assert_eq(tj_verify(kb->k), 0, "%s", tj_diag_render(kb->c));
    cr_assert_neq(tj_simt_run(kb->k, args, 1), 0, "expected an error about '%s'", what);
    const char *msg = tj_diag_render(kb->c);
    cr_assert(strstr(msg, what), "expected '%s' in:\n%s", what, msg);
}

Test(simt, predicated_off_accesses_are_not_checked)
{
    tt_kb kb;
    build_store(&kb, -4096, 0, 0); /* every thread off: the address is never used */
    int32_t out[64] = {0};
    tj_arg args[1] = {tt_tensor(out, TJ_DT_I32, 1, 64)};
    cr_assert_eq(tj_simt_run(kb.k, args, 1), 0, "%s", tj_diag_render(kb.c));
    tt_free(&kb);
}

Test(simt, reports_out_of_bounds_and_misaligned_accesses)
{
    tt_kb kb;
    build_store(&kb, 256, 1, 0); /* one past the end */
    expect_error(&kb, "outside every tensor argument");
    tt_free(&kb);
    build_store(&kb, 2, 1, 0);
    expect_error(&kb, "not aligned to 4 bytes");
    tt_free(&kb);
}

Test(simt, reports_shared_accesses_out_of_range_or_unwritten)
{
    tt_kb kb;
    build_store(&kb, 0, 1, 256); /* threads store [0, 128) and read 256 bytes further */
    expect_error(&kb, "outside the 256 bytes of shared memory");
    tt_free(&kb);
    build_store(&kb, 0, 1, 128); /* shared memory starts poisoned: [128, 256) was never stored */
    expect_error(&kb, "which no thread has written");
    tt_free(&kb);
}

/* Two warps exchange through shared memory: each thread stores tid at its
 * word, reads the word of thread 63 - tid (the other warp; with `xor1`,
 * tid ^ 1, its own warp), then, with rewrite >= 0, stores tid + rewrite
 * at its own word again, and writes what it read to out. */
static void build_exchange(tt_kb *kb, int barrier, int xor1, int rewrite)
{
    sk_begin(kb, "exchange", 64, 1);
    kb->k->smem_bytes = 256;
    tj_ref out = sk_tensor(kb, "out", TJ_DT_I32, 64);
    tj_ref tid = tt_opi(kb, TJ_OP_TID, tt_scalar(kb, TJ_DT_I32), 0, 0);
    tj_ref four = tt_ci(kb, TJ_DT_U32, 4), mine = tt_bin(kb, TJ_OP_MUL, tt_cast(kb, tid, TJ_DT_U32), four);
    tt_op(kb, TJ_OP_ST_SHARED, TJ_TYPE_NONE, 2, mine, tid);
    if (barrier)
        tt_op(kb, TJ_OP_BARRIER, TJ_TYPE_NONE, 0);
    tj_ref other = xor1 ? tt_bin(kb, TJ_OP_XOR, tid, sk_i32(kb, 1)) : tt_bin(kb, TJ_OP_SUB, sk_i32(kb, 63), tid);
    tj_ref v = tt_op(kb, TJ_OP_LD_SHARED, tt_scalar(kb, TJ_DT_I32), 1,
                     tt_bin(kb, TJ_OP_MUL, tt_cast(kb, other, TJ_DT_U32), four));
    if (rewrite >= 0)
        tt_op(kb, TJ_OP_ST_SHARED, TJ_TYPE_NONE, 2, mine, tt_bin(kb, TJ_OP_ADD, tid, sk_i32(kb, rewrite)));
    tj_ref ptr = tt_op(kb, TJ_OP_TENSOR_PTR, tt_scalar(kb, TJ_DT_U64), 1, out);
    tj_ref addr = tt_bin(kb, TJ_OP_ADD, ptr, tt_cast(kb, tt_bin(kb, TJ_OP_MUL, tid, sk_i32(kb, 4)), TJ_DT_U64));
    sk_st(kb, addr, v, TJ_NONE);
    tt_end(kb);
}

static void exchange_runs(int barrier, int xor1, int rewrite)
{
    tt_kb kb;
    build_exchange(&kb, barrier, xor1, rewrite);
    int32_t out[64] = {0};
    tj_arg args[1] = {tt_tensor(out, TJ_DT_I32, 1, 64)};
    cr_assert_eq(tj_verify(kb.k), 0, "%s", tj_diag_render(kb.c));
    cr_assert_eq(tj_simt_run(kb.k, args, 1), 0, "%s", tj_diag_render(kb.c));
    for (int t = 0; t < 64; t++)
        cr_assert_eq(out[t], xor1 ? t ^ 1 : 63 - t);
    tt_free(&kb);
}

/* Warps are not in lockstep on a GPU: a read of another warp's store, or a
 * store over a word another warp read, with no barrier between is a race
 * (as removing a staging barrier of lower/dot.c's regions makes one:
 * test_lower's fma_pinned_operands then fails here). Accesses within a
 * warp and stores of what is already there are not. */
Test(simt, reports_races_between_warps)
{
    tt_kb kb;
    build_exchange(&kb, 0, 0, -1);
    expect_error(&kb, "reads shared byte 252, which warp 1 wrote with no barrier between");
    tt_free(&kb);
    build_exchange(&kb, 1, 0, 1);
    expect_error(&kb, "writes shared byte 0, which warp 1 read with no barrier between");
    tt_free(&kb);
    exchange_runs(1, 0, 0); /* the rewrite stores what is there */
    exchange_runs(1, 0, -1);
    exchange_runs(0, 1, 1); /* within a warp */
}

Test(simt, reports_non_uniform_control_flow)
{
    tt_kb kb;
    sk_begin(&kb, "diverge", 32, 1);
    tj_ref o = sk_tensor(&kb, "out", TJ_DT_I32, 64);
    tj_ref tid = tt_opi(&kb, TJ_OP_TID, tt_scalar(&kb, TJ_DT_I32), 0, 0);
    tj_type i32 = tt_scalar(&kb, TJ_DT_I32);
    tj_ref br = tt_if(&kb, tt_bin(&kb, TJ_OP_LT, tid, sk_i32(&kb, 16)), 1, &i32);
    tt_yield(&kb, 1, sk_i32(&kb, 1));
    tt_else(&kb);
    tt_yield(&kb, 1, sk_i32(&kb, 2));
    sk_st(&kb, sk_addr(&kb, o, tid), tt_proj(&kb, br, 0), TJ_NONE);
    tt_end(&kb);
    expect_error(&kb, "control flow must be uniform");
    tt_free(&kb);
}

Test(simt, refuses_tile_ir)
{
    tt_kb kb;
    tt_begin(&kb, "tile", 1, 0, 0);
    tt_end(&kb);
    cr_assert_neq(tj_simt_run(kb.k, NULL, 0), 0);
    cr_assert(strstr(tj_diag_render(kb.c), "is not a SIMT kernel"));
    tt_free(&kb);
}

/* ---- the matrix atom ------------------------------------------------------------- */

__extension__ typedef _Float16 ref_half;

static double element(const unsigned char *buf, tj_dtype dt, size_t i)
{
    if (dt == TJ_DT_F32) {
        float f;
        memcpy(&f, buf + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, buf + 2 * i, 2);
    if (dt == TJ_DT_BF16) {
        uint32_t bits = (uint32_t)h << 16;
        float f;
        memcpy(&f, &bits, 4);
        return f;
    }
    ref_half x;
    memcpy(&x, &h, 2);
    return (double)x;
}

/* mma_<dt>: each warp's 16 x 8 output is 2 * A * B + 0.5 (simt_kernels.h). */
Test(simt, matrix_atom_multiplies_every_warp)
{
    static const char *const names[] = {"mma_f16", "mma_bf16", "mma_f32", "mma_bt_f16", "mma_bt_f32"};
    static const tj_dtype dts[] = {TJ_DT_F16, TJ_DT_BF16, TJ_DT_F32, TJ_DT_F16, TJ_DT_F32};
    for (int n = 0; n < 5; n++) {
        int bt = n >= 3; /* u_b holds B^T */
        tt_kb kb;
        build_named(&kb, names[n]);
        sk_args a;
        sk_make_args(kb.k, 5, &a);
        run_ok(&kb, &a);
        int k = tj_mma_k(dts[n]);
        const unsigned char *A = a.bufs[param_index(kb.k, "u_a")], *B = a.bufs[param_index(kb.k, "u_b")];
        const float *out = (const float *)a.bufs[2];
        for (int g = 0; g < 4; g++) {
            for (int i = 0; i < 16; i++) {
                for (int j = 0; j < 8; j++) {
                    double want = 0.5;
                    for (int kk = 0; kk < k; kk++)
                        want += 2 * element(A, dts[n], (size_t)(g * 16 * k + i * k + kk)) *
                                element(B, dts[n], (size_t)(g * k * 8 + (bt ? j * k + kk : kk * 8 + j)));
                    double got = out[g * 128 + i * 8 + j];
                    cr_assert(fabs(got - want) <= 1e-5 * want, "%s warp %d (%d, %d): %g, want %g", names[n], g, i,
                              j, got, want);
                }
            }
        }
        sk_free_args(&a);
        tt_free(&kb);
    }
}

/* An a fragment loaded from shared memory at `addr` (from the thread id
 * when `per_lane`), after every thread stored its 16 bytes. */
static void build_atom_load(tt_kb *kb, uint32_t addr, int per_lane, int ld)
{
    sk_begin(kb, "atom_load", 32, 1);
    kb->k->smem_bytes = 2048;
    tj_ref o = sk_tensor(kb, "out", TJ_DT_I32, 64);
    tj_ref tid = tt_opi(kb, TJ_OP_TID, tt_scalar(kb, TJ_DT_I32), 0, 0);
    tj_ref mine = tt_cast(kb, tt_bin(kb, TJ_OP_MUL, tid, sk_i32(kb, 64)), TJ_DT_U32);
    tj_ref z = tt_cf(kb, TJ_DT_F32, 0);
    tj_ref zeros = tt_op(kb, TJ_OP_PACK, tt_tile(kb, TJ_DT_F32, 1, 4), 4, z, z, z, z);
    for (int q = 0; q < 4; q++)
        tt_op(kb, TJ_OP_ST_SHARED, TJ_TYPE_NONE, 2, tt_bin(kb, TJ_OP_ADD, mine, tt_ci(kb, TJ_DT_U32, 16 * q)), zeros);
    tj_ref at = tt_ci(kb, TJ_DT_U32, addr);
    if (per_lane)
        at = tt_bin(kb, TJ_OP_ADD, at, tt_cast(kb, tt_bin(kb, TJ_OP_AND, tid, sk_i32(kb, 1)), TJ_DT_U32));
    tt_opi(kb, TJ_OP_MMA_LOAD, tj_type_fragment(kb->c, TJ_MMA_A, TJ_DT_F16), TJ_MMA_A, 3, at, sk_i32(kb, ld), TJ_NONE);
    sk_st(kb, sk_addr(kb, o, tid), tid, TJ_NONE);
    tt_end(kb);
}

Test(simt, reports_misplaced_matrix_atoms)
{
    tt_kb kb;
    build_atom_load(&kb, 0, 1, 16);
    expect_error(&kb, "addr and ld differ between lanes of warp 0");
    tt_free(&kb);
    build_atom_load(&kb, 8, 0, 16);
    expect_error(&kb, "is not 16-byte aligned");
    tt_free(&kb);
    build_atom_load(&kb, 0, 0, 12); /* rows of 24 bytes */
    expect_error(&kb, "is not 16-byte aligned");
    tt_free(&kb);
    build_atom_load(&kb, 1536, 0, 64); /* rows past the 2048 bytes */
    expect_error(&kb, "outside the 2048 bytes of shared memory");
    tt_free(&kb);
}
