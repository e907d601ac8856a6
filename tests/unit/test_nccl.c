/* Collectives through NCCL (tilejit/nccl.h) against stand-ins for the
 * driver and NCCL (fake_libcuda.c, fake_libnccl.c: device memory is host
 * memory there): communicators of two GPUs, a grouped all-reduce, the
 * tensor checks and their messages, and a missing library. The real NCCL
 * on a GPU: tests/gpu/nccl.c. */
#define _GNU_SOURCE /* setenv, RTLD_NOLOAD */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "tilejit/nccl.h"

typedef struct gpus {
    tj_cuda *cu[2];
    tj_nccl *nccl;
    tj_nccl_comm *comm[2];
} gpus;

/* Two stand-in GPUs with a communicator each; skips outside ctest. */
static void open_two(gpus *g)
{
    setenv("TJ_FAKE_CUDA_DEVICES", "2", 1);
    unsetenv("TILEJIT_NCCL");
    const char *llp = getenv("LD_LIBRARY_PATH");
    if (!llp || !strstr(llp, "fake_driver"))
        cr_skip_test("needs the stand-in driver and NCCL (run through ctest, which sets LD_LIBRARY_PATH)");
    tj_rt_error err = {{0}};
    for (int i = 0; i < 2; i++)
        cr_assert_not_null(g->cu[i] = tj_cuda_open(i, &err), "%s", err.msg);
    cr_assert_not_null(g->nccl = tj_nccl_open(&err), "%s", err.msg);
    cr_assert_eq(tj_nccl_version(g->nccl), 22703, "the stand-in, not a real NCCL");
    cr_assert_eq(tj_nccl_comm_init_all(g->nccl, g->cu, 2, g->comm, &err), 0, "%s", err.msg);
}

static void close_two(gpus *g)
{
    for (int i = 0; i < 2; i++) {
        tj_nccl_comm_free(g->comm[i]);
        tj_cuda_close(g->cu[i]);
    }
    tj_nccl_close(g->nccl);
}

static tj_tensor vec(float *data, int64_t n) { return (tj_tensor){data, TJ_DT_F32, 1, {n}, {1}}; }

Test(nccl, a_grouped_all_reduce_sums_over_the_ranks)
{
    gpus g;
    open_two(&g);
    cr_assert_eq(tj_nccl_comm_size(g.comm[1]), 2);
    cr_assert_eq(tj_nccl_comm_rank(g.comm[1]), 1);
    float a[5] = {1, 2, 3, 4, 5}, b[5] = {10, 20, 30, 40, 50};
    tj_tensor ta = vec(a, 5), tb = vec(b, 5);
    tj_rt_error err = {{0}};
    cr_assert_eq(tj_nccl_group_start(g.nccl, &err), 0);
    cr_assert_eq(tj_nccl_all_reduce(g.comm[0], &ta, &ta, TJ_NCCL_SUM, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(tj_nccl_all_reduce(g.comm[1], &tb, &tb, TJ_NCCL_SUM, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(tj_nccl_group_end(g.nccl, &err), 0, "%s", err.msg);
    for (int i = 0; i < 5; i++)
        cr_expect(a[i] == 11.0f * (float)(i + 1) && b[i] == a[i], "element %d: %g %g", i, a[i], b[i]);
    cr_expect_str_eq(getenv("NCCL_NVLS_ENABLE"), "0");
    close_two(&g);
}

/* The dtype and count NCCL is given come from the tensor. */
Test(nccl, dtypes_and_counts_reach_nccl)
{
    gpus g;
    open_two(&g);
    int (*last)(size_t *, int *, int *) = NULL;
    void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD); /* the one tj_nccl_open loaded */
    cr_assert_not_null(lib);
    *(void **)&last = dlsym(lib, "fake_nccl_last");
    cr_assert_not_null(last);
    uint16_t h[6] = {0};
    tj_tensor send = {h, TJ_DT_BF16, 2, {2, 3}, {3, 1}}, recv = send;
    tj_rt_error err = {{0}};
    tj_nccl_id id;
    cr_assert_eq(tj_nccl_unique_id(g.nccl, &id, &err), 0);
    tj_nccl_comm *solo = tj_nccl_comm_init_rank(g.nccl, g.cu[0], 1, &id, 0, &err);
    cr_assert_not_null(solo, "%s", err.msg);
    cr_assert_eq(tj_nccl_all_reduce(solo, &send, &recv, TJ_NCCL_MAX, NULL, &err), 0, "%s", err.msg);
    size_t count;
    int dtype, op;
    last(&count, &dtype, &op);
    cr_expect(count == 6 && dtype == 9 && op == 2, "count %zu dtype %d op %d", count, dtype, op);
    tj_nccl_comm_free(solo);
    dlclose(lib);
    close_two(&g);
}

static void expect_refused(int rc, const tj_rt_error *err, const char *msg)
{
    cr_expect_neq(rc, 0, "accepted; wanted '%s'", msg);
    cr_expect(strstr(err->msg, msg), "'%s' lacks '%s'", err->msg, msg);
}

Test(nccl, tensors_outside_the_rules_are_refused_by_name)
{
    gpus g;
    open_two(&g);
    float x[8] = {0};
    tj_rt_error err = {{0}};
    tj_tensor strided = {x, TJ_DT_F32, 1, {4}, {2}}, four = vec(x, 4), eight = vec(x, 8);
    tj_tensor flags = {x, TJ_DT_BOOL, 1, {4}, {1}}, ints = {x, TJ_DT_I32, 1, {4}, {1}};
    expect_refused(tj_nccl_all_reduce(g.comm[0], &strided, &four, TJ_NCCL_SUM, NULL, &err), &err,
                   "all_reduce: the send tensor is not row-major contiguous");
    expect_refused(tj_nccl_all_reduce(g.comm[0], &flags, &flags, TJ_NCCL_SUM, NULL, &err), &err,
                   "all_reduce: NCCL has no bool");
    expect_refused(tj_nccl_all_reduce(g.comm[0], &ints, &four, TJ_NCCL_SUM, NULL, &err), &err,
                   "all_reduce: send is i32, recv f32");
    expect_refused(tj_nccl_all_gather(g.comm[0], &four, &four, NULL, &err), &err,
                   "all_gather: recv has 4 elements, it needs 8 (send has 4)");
    expect_refused(tj_nccl_reduce_scatter(g.comm[0], &four, &four, TJ_NCCL_SUM, NULL, &err), &err,
                   "reduce_scatter: recv has 4 elements, it needs 2");
    expect_refused(tj_nccl_broadcast(g.comm[0], &four, &four, 2, NULL, &err), &err, "root 2 not a rank");
    expect_refused(tj_nccl_all_reduce(g.comm[0], &eight, &eight, (tj_nccl_op)9, NULL, &err), &err, "no op 9");
    /* outside a group, two ranks cannot reduce in one thread: NCCL's error, named */
    expect_refused(tj_nccl_all_reduce(g.comm[0], &four, &four, TJ_NCCL_SUM, NULL, &err), &err,
                   "ncclAllReduce: NCCL error 5: fake NCCL failure");
    close_two(&g);
}

Test(nccl, a_missing_library_says_what_to_install)
{
    setenv("TILEJIT_NCCL", "/nonexistent/libnccl.so.2", 1);
    tj_rt_error err = {{0}};
    cr_assert_null(tj_nccl_open(&err));
    cr_expect(strstr(err.msg, "no NCCL: cannot load /nonexistent/libnccl.so.2"), "%s", err.msg);
    cr_expect(strstr(err.msg, "TILEJIT_NCCL"), "%s", err.msg);
    unsetenv("TILEJIT_NCCL");
}

/* NULL handles and out-of-range arguments: refused with a message, never a crash. */
Test(nccl, misuse_is_refused)
{
    tj_rt_error err = {{0}};
    tj_nccl_close(NULL);
    tj_nccl_comm_free(NULL);
    cr_expect_eq(tj_nccl_version(NULL), 0);
    cr_expect_eq(tj_nccl_comm_size(NULL), 0);
    cr_expect_eq(tj_nccl_comm_rank(NULL), -1);
    expect_refused(tj_nccl_unique_id(NULL, NULL, &err), &err, "NULL nccl or id");
    cr_expect_null(tj_nccl_comm_init_rank(NULL, NULL, 1, NULL, 0, &err));
    cr_expect(strstr(err.msg, "tj_nccl_comm_init_rank"), "%s", err.msg);
    expect_refused(tj_nccl_comm_init_all(NULL, NULL, 0, NULL, &err), &err, "0 devices");
    float x[2];
    tj_tensor t = vec(x, 2);
    expect_refused(tj_nccl_all_reduce(NULL, &t, &t, TJ_NCCL_SUM, NULL, &err), &err, "NULL communicator");
    expect_refused(tj_nccl_broadcast(NULL, &t, &t, 0, NULL, &err), &err, "NULL communicator");
    expect_refused(tj_nccl_all_gather(NULL, &t, &t, NULL, &err), &err, "NULL communicator");
    expect_refused(tj_nccl_reduce_scatter(NULL, &t, &t, TJ_NCCL_SUM, NULL, &err), &err, "NULL communicator");
    expect_refused(tj_nccl_group_start(NULL, &err), &err, "NULL nccl");
    expect_refused(tj_nccl_group_end(NULL, &err), &err, "NULL nccl");
}
