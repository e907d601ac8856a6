/* NCCL collectives over every GPU of the host, one process driving all
 * (exits 77 with the reason where there is no device or no NCCL; set
 * TILEJIT_NCCL to a libnccl.so.2, bench/gpu/run_all.sh finds PyTorch's):
 * rank r holds r + 1 + i/N; a grouped all-reduce (sum and max), all-gather,
 * reduce-scatter and broadcast are compared element by element with what
 * the host computes. On one GPU each is a copy, which still checks that
 * the library, the communicators and the streams work. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilejit/nccl.h"

enum { N = 1 << 20, MAX_GPUS = 16 };

#include "gpu_check.h"

typedef struct host {
    int ndev;
    tj_cuda *cu[MAX_GPUS];
    tj_nccl *nccl;
    tj_nccl_comm *comm[MAX_GPUS];
    void *stream[MAX_GPUS];
    float *send[MAX_GPUS], *recv[MAX_GPUS]; /* device memory, N x ndev floats each */
} host;

static float value(int rank, int i) { return (float)(rank + 1) + (float)i / N; }

static tj_tensor vec(float *data, int64_t n) { return (tj_tensor){data, TJ_DT_F32, 1, {n}, {1}}; }

static int fill(host *h, tj_rt_error *err)
{
    float *buf = malloc(sizeof *buf * N);
    CHECK(buf, "out of memory");
    for (int r = 0; r < h->ndev; r++) {
        for (int i = 0; i < N; i++)
            buf[i] = value(r, i);
        CHECK(!tj_cuda_memcpy_htod(h->cu[r], h->send[r], buf, sizeof *buf * N, err), "%s", err->msg);
    }
    free(buf);
    return 0;
}

/* recv of each rank, n floats, against want(rank, i). */
static int compare(host *h, size_t n, float (*want)(const host *, int, size_t), const char *what, tj_rt_error *err)
{
    float *buf = malloc(sizeof *buf * n);
    CHECK(buf, "out of memory");
    for (int r = 0; r < h->ndev; r++) {
        CHECK(!tj_cuda_stream_synchronize(h->cu[r], h->stream[r], err), "%s", err->msg);
        CHECK(!tj_cuda_memcpy_dtoh(h->cu[r], buf, h->recv[r], sizeof *buf * n, err), "%s", err->msg);
        for (size_t i = 0; i < n; i++)
            CHECK(fabsf(buf[i] - want(h, r, i)) <= 1e-5f * fabsf(want(h, r, i)), "%s: rank %d element %zu: %g, want %g",
                  what, r, i, buf[i], want(h, r, i));
    }
    free(buf);
    return 0;
}

static float sum_of_ranks(const host *h, int r, size_t i)
{
    (void)r;
    float s = 0;
    for (int q = 0; q < h->ndev; q++)
        s += value(q, (int)i);
    return s;
}
static float max_of_ranks(const host *h, int r, size_t i) { return (void)r, value(h->ndev - 1, (int)i); }
static float gathered(const host *h, int r, size_t i) { return (void)h, (void)r, value((int)(i / N), (int)(i % N)); }
static float scattered(const host *h, int r, size_t i) { return sum_of_ranks(h, r, (size_t)r * (N / h->ndev) + i); }
static float from_root(const host *h, int r, size_t i) { return (void)h, (void)r, value(0, (int)i); }

/* One collective on every rank, grouped: kind 0 all-reduce sum, 1 max,
 * 2 all-gather, 3 reduce-scatter, 4 broadcast from rank 0. */
static int collective(host *h, int kind, tj_rt_error *err)
{
    CHECK(!tj_nccl_group_start(h->nccl, err), "%s", err->msg);
    size_t per = N / (size_t)h->ndev;
    for (int r = 0; r < h->ndev; r++) {
        tj_tensor s = vec(h->send[r], N), all = vec(h->recv[r], (int64_t)N * h->ndev), part = vec(h->recv[r], (int64_t)per);
        tj_tensor one = vec(h->recv[r], N);
        int rc = kind == 0 ? tj_nccl_all_reduce(h->comm[r], &s, &one, TJ_NCCL_SUM, h->stream[r], err)
               : kind == 1 ? tj_nccl_all_reduce(h->comm[r], &s, &one, TJ_NCCL_MAX, h->stream[r], err)
               : kind == 2 ? tj_nccl_all_gather(h->comm[r], &s, &all, h->stream[r], err)
               : kind == 3 ? tj_nccl_reduce_scatter(h->comm[r], &s, &part, TJ_NCCL_SUM, h->stream[r], err)
                           : tj_nccl_broadcast(h->comm[r], &s, &one, 0, h->stream[r], err);
        CHECK(!rc, "collective %d on rank %d: %s", kind, r, err->msg);
    }
    CHECK(!tj_nccl_group_end(h->nccl, err), "%s", err->msg);
    return 0;
}

static int open_all(host *h, tj_rt_error *err)
{
    for (int r = 0; r < h->ndev; r++) {
        CHECK((h->cu[r] = tj_cuda_open(r, err)), "%s", err->msg);
        h->stream[r] = tj_cuda_stream_create(h->cu[r], 1, err);
        h->send[r] = tj_cuda_malloc(h->cu[r], sizeof(float) * N, err);
        h->recv[r] = tj_cuda_malloc(h->cu[r], sizeof(float) * N * (size_t)h->ndev, err);
        CHECK(h->stream[r] && h->send[r] && h->recv[r], "%s", err->msg);
    }
    CHECK(!tj_nccl_comm_init_all(h->nccl, h->cu, h->ndev, h->comm, err), "%s", err->msg);
    return 0;
}

int main(void)
{
    tj_rt_error err = {{0}};
    host h = {0};
    tj_cuda *probe = tj_cuda_open(0, &err);
    if (!probe) {
        printf("SKIP: %s\n", err.msg);
        return 77;
    }
    h.ndev = tj_cuda_device_count(probe);
    tj_cuda_close(probe);
    if (h.ndev > MAX_GPUS)
        h.ndev = MAX_GPUS;
    if (!(h.nccl = tj_nccl_open(&err))) {
        printf("SKIP: %s\n", err.msg);
        return 77;
    }
    printf("NCCL %d, %d GPU(s)\n", tj_nccl_version(h.nccl), h.ndev);
    if (open_all(&h, &err) || fill(&h, &err))
        return 1;
    if (collective(&h, 0, &err) || compare(&h, N, sum_of_ranks, "all_reduce sum", &err) ||
        collective(&h, 1, &err) || compare(&h, N, max_of_ranks, "all_reduce max", &err) ||
        collective(&h, 2, &err) || compare(&h, (size_t)N * h.ndev, gathered, "all_gather", &err) ||
        collective(&h, 3, &err) || compare(&h, N / (size_t)h.ndev, scattered, "reduce_scatter", &err) ||
        collective(&h, 4, &err) || compare(&h, N, from_root, "broadcast", &err))
        return 1;
    for (int r = 0; r < h.ndev; r++) {
        tj_nccl_comm_free(h.comm[r]);
        tj_cuda_free(h.cu[r], h.send[r], &err);
        tj_cuda_free(h.cu[r], h.recv[r], &err);
        tj_cuda_stream_destroy(h.cu[r], h.stream[r], &err);
        tj_cuda_close(h.cu[r]);
    }
    tj_nccl_close(h.nccl);
    printf("PASS: all_reduce (sum, max), all_gather, reduce_scatter, broadcast over %d GPU(s)\n", h.ndev);
    return 0;
}
