/* A stand-in libnccl.so.2 for tests/unit/test_nccl.c (beside the stand-in
 * libcuda.so.1, whose device pointers are host memory): communicators of
 * one process, and f32 all-reduce (sum) across the ranks of a group, or a
 * copy for one rank; every call's count, dtype and op are recorded. */
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct ncclComm {
    int nranks, rank;
} ncclComm;
typedef struct {
    char internal[128];
} ncclUniqueId;

enum { MAX_PENDING = 16, INVALID_ARGUMENT = 4, INVALID_USAGE = 5 };
static const int sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};

typedef struct pending {
    const float *send;
    float *recv;
    size_t count;
} pending;

/* What the last collective was asked, for the test (not thread-safe: a stand-in). */
static struct {
    size_t count;
    int dtype, op, in_group, npending;
    pending ops[MAX_PENDING];
} fake;

EXPORT int fake_nccl_last(size_t *count, int *dtype, int *op) { return *count = fake.count, *dtype = fake.dtype, *op = fake.op, 0; }
EXPORT const char *ncclGetErrorString(int r) { return r ? "fake NCCL failure" : "no error"; }
EXPORT int ncclGetVersion(int *v) { return (*v = 22703), 0; }
EXPORT int ncclGetUniqueId(ncclUniqueId *id) { return memset(id->internal, 7, sizeof id->internal), 0; }

EXPORT int ncclCommInitRank(ncclComm **c, int nranks, ncclUniqueId id, int rank)
{
    (void)id;
    if (!(*c = malloc(sizeof **c)))
        return 1;
    (*c)->nranks = nranks, (*c)->rank = rank;
    return 0;
}

EXPORT int ncclCommInitAll(ncclComm **comms, int ndev, const int *devs)
{
    for (int i = 0; i < ndev; i++) {
        if (devs[i] < 0 || !(comms[i] = malloc(sizeof **comms)))
            return INVALID_ARGUMENT;
        comms[i]->nranks = ndev, comms[i]->rank = i;
    }
    return 0;
}

EXPORT int ncclCommDestroy(ncclComm *c) { return free(c), 0; }

static void record(size_t count, int dtype, int op) { fake.count = count, fake.dtype = dtype, fake.op = op; }

EXPORT int ncclAllReduce(const void *s, void *r, size_t n, int dt, int op, ncclComm *c, void *stream)
{
    (void)stream;
    record(n, dt, op);
    if (c->nranks == 1)
        return memmove(r, s, n * (size_t)sizes[dt]), 0;
    if (!fake.in_group || dt != 7 || op != 0 || fake.npending == MAX_PENDING)
        return INVALID_USAGE;
    fake.ops[fake.npending++] = (pending){s, r, n};
    return 0;
}

EXPORT int ncclBroadcast(const void *s, void *r, size_t n, int dt, int root, ncclComm *c, void *stream)
{
    (void)root, (void)c, (void)stream;
    record(n, dt, -1);
    return memmove(r, s, n * (size_t)sizes[dt]), 0;
}

EXPORT int ncclAllGather(const void *s, void *r, size_t n, int dt, ncclComm *c, void *stream)
{
    (void)stream;
    record(n, dt, -1);
    return c->nranks == 1 ? (memmove(r, s, n * (size_t)sizes[dt]), 0) : INVALID_USAGE;
}

EXPORT int ncclReduceScatter(const void *s, void *r, size_t n, int dt, int op, ncclComm *c, void *stream)
{
    (void)stream;
    record(n, dt, op);
    return c->nranks == 1 ? (memmove(r, s, n * (size_t)sizes[dt]), 0) : INVALID_USAGE;
}

EXPORT int ncclGroupStart(void) { return fake.in_group = 1, fake.npending = 0, 0; }

/* The group's all-reduces, summed elementwise (each rank's recv gets the sum). */
EXPORT int ncclGroupEnd(void)
{
    fake.in_group = 0;
    if (!fake.npending)
        return 0;
    size_t n = fake.ops[0].count;
    float *sum = calloc(n ? n : 1, sizeof *sum);
    if (!sum)
        return 1;
    for (int i = 0; i < fake.npending; i++)
        for (size_t k = 0; k < n; k++)
            sum[k] += fake.ops[i].send[k];
    for (int i = 0; i < fake.npending; i++)
        memcpy(fake.ops[i].recv, sum, n * sizeof *sum);
    free(sum);
    return 0;
}
