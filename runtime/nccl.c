/* NCCL loaded with dlopen (tilejit/nccl.h): communicators and the four
 * collectives, each made with its device's context current. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cuda_internal.h"
#include "tilejit/nccl.h"

typedef int ncclResult_t;
typedef struct ncclComm *ncclComm_t;
typedef struct {
    char internal[128];
} ncclUniqueId;
enum { NCCL_SUCCESS = 0 };

/* X(field, symbol, parameters): the entry points used (nccl.h 2.x). */
#define TJ_NCCL_FUNCS(X)                                                                             \
    X(GetVersion, "ncclGetVersion", (int *))                                                         \
    X(GetUniqueId, "ncclGetUniqueId", (ncclUniqueId *))                                              \
    X(CommInitRank, "ncclCommInitRank", (ncclComm_t *, int, ncclUniqueId, int))                      \
    X(CommInitAll, "ncclCommInitAll", (ncclComm_t *, int, const int *))                              \
    X(CommDestroy, "ncclCommDestroy", (ncclComm_t))                                                  \
    X(AllReduce, "ncclAllReduce", (const void *, void *, size_t, int, int, ncclComm_t, void *))      \
    X(Broadcast, "ncclBroadcast", (const void *, void *, size_t, int, int, ncclComm_t, void *))      \
    X(AllGather, "ncclAllGather", (const void *, void *, size_t, int, ncclComm_t, void *))           \
    X(ReduceScatter, "ncclReduceScatter", (const void *, void *, size_t, int, int, ncclComm_t, void *)) \
    X(GroupStart, "ncclGroupStart", (void))                                                          \
    X(GroupEnd, "ncclGroupEnd", (void))

struct tj_nccl {
    void *lib;
    const char *(*GetErrorString)(ncclResult_t);
#define X(field, sym, params) ncclResult_t(*field) params;
    TJ_NCCL_FUNCS(X)
#undef X
};

struct tj_nccl_comm {
    tj_nccl *nccl;
    tj_cuda *cu;
    ncclComm_t comm;
    int nranks, rank;
};

static int nccl_check(const tj_nccl *n, ncclResult_t r, const char *what, tj_rt_error *err)
{
    if (r == NCCL_SUCCESS)
        return 0;
    const char *msg = n->GetErrorString ? n->GetErrorString(r) : NULL;
    return tj_rt_fail(err, "%s: NCCL error %d: %s", what, r, msg ? msg : "(no message)");
}

/* ---- the library ---- */

static int load_symbols(tj_nccl *n, tj_rt_error *err)
{
    *(void **)&n->GetErrorString = dlsym(n->lib, "ncclGetErrorString");
#define X(field, sym, params)                                                                        \
    if (!(*(void **)&n->field = dlsym(n->lib, sym)))                                                 \
        return tj_rt_fail(err, "no NCCL: the library has no %s", sym);
    TJ_NCCL_FUNCS(X)
#undef X
    return 0;
}

tj_nccl *tj_nccl_open(tj_rt_error *err)
{
    const char *path = getenv("TILEJIT_NCCL");
    if (!path || !*path)
        path = "libnccl.so.2";
    tj_nccl *n = calloc(1, sizeof *n);
    if (!n) {
        tj_rt_fail(err, "tj_nccl_open: out of memory");
        return NULL;
    }
    if (!(n->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
        const char *why = dlerror();
        tj_rt_fail(err, "no NCCL: cannot load %s (%s); install it (e.g. pip install nvidia-nccl-cu13) or set "
                   "TILEJIT_NCCL to the library's path", path, why ? why : "dlopen failed");
        free(n);
        return NULL;
    }
    if (load_symbols(n, err)) {
        tj_nccl_close(n);
        return NULL;
    }
    setenv("NCCL_NVLS_ENABLE", "0", 0); /* NVLink SHARP off unless asked for */
    return n;
}

void tj_nccl_close(tj_nccl *n)
{
    if (!n)
        return;
    dlclose(n->lib);
    free(n);
}

int tj_nccl_version(const tj_nccl *n)
{
    int v = 0;
    return n && n->GetVersion(&v) == NCCL_SUCCESS ? v : 0;
}

int tj_nccl_unique_id(tj_nccl *n, tj_nccl_id *id, tj_rt_error *err)
{
    if (!n || !id)
        return tj_rt_fail(err, "tj_nccl_unique_id: NULL nccl or id");
    ncclUniqueId u;
    if (nccl_check(n, n->GetUniqueId(&u), "ncclGetUniqueId", err))
        return 1;
    memcpy(id->bytes, u.internal, sizeof id->bytes);
    return 0;
}

/* ---- communicators ---- */

static tj_nccl_comm *comm_new(tj_nccl *n, tj_cuda *cu, ncclComm_t comm, int nranks, int rank, tj_rt_error *err)
{
    tj_nccl_comm *c = calloc(1, sizeof *c);
    if (!c) {
        tj_rt_fail(err, "NCCL communicator: out of memory");
        return NULL;
    }
    *c = (tj_nccl_comm){n, cu, comm, nranks, rank};
    return c;
}

tj_nccl_comm *tj_nccl_comm_init_rank(tj_nccl *n, tj_cuda *cu, int nranks, const tj_nccl_id *id, int rank,
                                     tj_rt_error *err)
{
    if (!n || !cu || !id || nranks < 1 || rank < 0 || rank >= nranks) {
        tj_rt_fail(err, "tj_nccl_comm_init_rank: NULL nccl, device or id, or rank %d not in [0, %d)", rank, nranks);
        return NULL;
    }
    ncclUniqueId u;
    memcpy(u.internal, id->bytes, sizeof u.internal);
    ncclComm_t comm = NULL;
    int pushed;
    if (tj_cu_enter(cu, &pushed, err))
        return NULL;
    ncclResult_t r = n->CommInitRank(&comm, nranks, u, rank); /* on the current context's device */
    tj_cu_leave(cu, pushed);
    if (nccl_check(n, r, "ncclCommInitRank", err))
        return NULL;
    tj_nccl_comm *c = comm_new(n, cu, comm, nranks, rank, err);
    if (!c)
        n->CommDestroy(comm);
    return c;
}

int tj_nccl_comm_init_all(tj_nccl *n, tj_cuda *const *cus, int ndev, tj_nccl_comm **comms, tj_rt_error *err)
{
    enum { MAX_DEVICES = 64 };
    if (!n || !cus || !comms || ndev < 1 || ndev > MAX_DEVICES)
        return tj_rt_fail(err, "tj_nccl_comm_init_all: NULL nccl, devices or comms, or %d devices (1 to %d)", ndev,
                          MAX_DEVICES);
    int ordinals[MAX_DEVICES];
    ncclComm_t raw[MAX_DEVICES] = {0};
    for (int i = 0; i < ndev; i++)
        if ((ordinals[i] = tj_cuda_ordinal(cus[i])) < 0)
            return tj_rt_fail(err, "tj_nccl_comm_init_all: device %d is NULL", i);
    if (nccl_check(n, n->CommInitAll(raw, ndev, ordinals), "ncclCommInitAll", err))
        return 1;
    for (int i = 0; i < ndev; i++)
        if (!(comms[i] = comm_new(n, cus[i], raw[i], ndev, i, err))) {
            for (int j = 0; j < ndev; j++) {
                if (j < i)
                    free(comms[j]);
                n->CommDestroy(raw[j]);
                comms[j] = NULL;
            }
            return 1;
        }
    return 0;
}

void tj_nccl_comm_free(tj_nccl_comm *c)
{
    if (!c)
        return;
    int pushed;
    tj_rt_error ignored;
    int entered = !tj_cu_enter(c->cu, &pushed, &ignored);
    c->nccl->CommDestroy(c->comm);
    if (entered)
        tj_cu_leave(c->cu, pushed);
    free(c);
}

int tj_nccl_comm_size(const tj_nccl_comm *c) { return c ? c->nranks : 0; }
int tj_nccl_comm_rank(const tj_nccl_comm *c) { return c ? c->rank : -1; }

/* ---- tensors ---- */

/* NCCL's ncclDataType_t for dt, or -1. */
static int nccl_dtype(tj_dtype dt)
{
    switch (dt) {
    case TJ_DT_I8: return 0;
    case TJ_DT_U8: return 1;
    case TJ_DT_I32: return 2;
    case TJ_DT_U32: return 3;
    case TJ_DT_I64: return 4;
    case TJ_DT_U64: return 5;
    case TJ_DT_F16: return 6;
    case TJ_DT_F32: return 7;
    case TJ_DT_F64: return 8;
    case TJ_DT_BF16: return 9;
    default: return -1;
    }
}

/* The element count of a row-major contiguous tensor (size-1 axes may have
 * any stride), or -1. */
static int64_t contiguous_numel(const tj_tensor *t)
{
    if (t->rank < 0 || t->rank > TJ_MAX_RANK)
        return -1;
    int64_t n = 1;
    for (int k = t->rank; k-- > 0;) {
        if (t->shape[k] < 0 || (t->shape[k] > 1 && t->strides[k] != n))
            return -1;
        n *= t->shape[k];
    }
    return n;
}

typedef struct buffers {
    int dtype;
    size_t send, recv; /* element counts */
} buffers;

static int check_tensors(const char *what, const tj_tensor *send, const tj_tensor *recv, buffers *b, tj_rt_error *err)
{
    if (!send || !recv)
        return tj_rt_fail(err, "%s: NULL send or recv tensor", what);
    int64_t ns = contiguous_numel(send), nr = contiguous_numel(recv);
    if (ns < 0 || nr < 0)
        return tj_rt_fail(err, "%s: the %s tensor is not row-major contiguous", what, ns < 0 ? "send" : "recv");
    if (send->dtype != recv->dtype)
        return tj_rt_fail(err, "%s: send is %s, recv %s", what, tj_dtype_name(send->dtype), tj_dtype_name(recv->dtype));
    if ((b->dtype = nccl_dtype(send->dtype)) < 0)
        return tj_rt_fail(err, "%s: NCCL has no %s (i8 u8 i32 u32 i64 u64 f16 bf16 f32 f64)", what,
                          tj_dtype_name(send->dtype));
    b->send = (size_t)ns, b->recv = (size_t)nr;
    return 0;
}

/* The sizes a collective needs: recv = send * r_per_s / s_per_r. */
static int check_sizes(const char *what, const buffers *b, size_t want_recv, tj_rt_error *err)
{
    if (b->recv == want_recv)
        return 0;
    return tj_rt_fail(err, "%s: recv has %zu elements, it needs %zu (send has %zu)", what, b->recv, want_recv,
                      b->send);
}

/* Runs `call` (an ncclResult_t expression) with the comm's context current. */
#define COLLECTIVE(c, what, err, call)                                                               \
    do {                                                                                             \
        int pushed_;                                                                                 \
        if (tj_cu_enter((c)->cu, &pushed_, (err)))                                                   \
            return 1;                                                                                \
        ncclResult_t r_ = (call);                                                                    \
        tj_cu_leave((c)->cu, pushed_);                                                               \
        return nccl_check((c)->nccl, r_, (what), (err));                                             \
    } while (0)

static int valid_op(tj_nccl_op op) { return op >= TJ_NCCL_SUM && op <= TJ_NCCL_AVG; }

int tj_nccl_all_reduce(tj_nccl_comm *c, const tj_tensor *send, const tj_tensor *recv, tj_nccl_op op, void *stream,
                       tj_rt_error *err)
{
    buffers b;
    if (!c || !valid_op(op))
        return tj_rt_fail(err, "tj_nccl_all_reduce: NULL communicator or no op %d", (int)op);
    if (check_tensors("all_reduce", send, recv, &b, err) || check_sizes("all_reduce", &b, b.send, err))
        return 1;
    COLLECTIVE(c, "ncclAllReduce", err,
               c->nccl->AllReduce(send->data, recv->data, b.send, b.dtype, (int)op, c->comm, stream));
}

int tj_nccl_broadcast(tj_nccl_comm *c, const tj_tensor *send, const tj_tensor *recv, int root, void *stream,
                      tj_rt_error *err)
{
    buffers b;
    if (!c || root < 0 || root >= c->nranks)
        return tj_rt_fail(err, "tj_nccl_broadcast: NULL communicator or root %d not a rank", root);
    if (check_tensors("broadcast", send, recv, &b, err) || check_sizes("broadcast", &b, b.send, err))
        return 1;
    COLLECTIVE(c, "ncclBroadcast", err,
               c->nccl->Broadcast(send->data, recv->data, b.send, b.dtype, root, c->comm, stream));
}

int tj_nccl_all_gather(tj_nccl_comm *c, const tj_tensor *send, const tj_tensor *recv, void *stream,
                       tj_rt_error *err)
{
    buffers b;
    if (!c)
        return tj_rt_fail(err, "tj_nccl_all_gather: NULL communicator");
    if (check_tensors("all_gather", send, recv, &b, err) ||
        check_sizes("all_gather", &b, b.send * (size_t)c->nranks, err))
        return 1;
    COLLECTIVE(c, "ncclAllGather", err, c->nccl->AllGather(send->data, recv->data, b.send, b.dtype, c->comm, stream));
}

int tj_nccl_reduce_scatter(tj_nccl_comm *c, const tj_tensor *send, const tj_tensor *recv, tj_nccl_op op,
                           void *stream, tj_rt_error *err)
{
    buffers b;
    if (!c || !valid_op(op))
        return tj_rt_fail(err, "tj_nccl_reduce_scatter: NULL communicator or no op %d", (int)op);
    if (check_tensors("reduce_scatter", send, recv, &b, err))
        return 1;
    if (b.send % (size_t)c->nranks)
        return tj_rt_fail(err, "reduce_scatter: send has %zu elements, not a multiple of the %d ranks", b.send,
                          c->nranks);
    if (check_sizes("reduce_scatter", &b, b.send / (size_t)c->nranks, err))
        return 1;
    COLLECTIVE(c, "ncclReduceScatter", err,
               c->nccl->ReduceScatter(send->data, recv->data, b.recv, b.dtype, (int)op, c->comm, stream));
}

int tj_nccl_group_start(tj_nccl *n, tj_rt_error *err)
{
    if (!n)
        return tj_rt_fail(err, "tj_nccl_group_start: NULL nccl");
    return nccl_check(n, n->GroupStart(), "ncclGroupStart", err);
}

int tj_nccl_group_end(tj_nccl *n, tj_rt_error *err)
{
    if (!n)
        return tj_rt_fail(err, "tj_nccl_group_end: NULL nccl");
    return nccl_check(n, n->GroupEnd(), "ncclGroupEnd", err);
}
