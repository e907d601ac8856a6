/* Collectives over the GPUs of a host through NCCL (docs/runtime.md,
 * "Several GPUs"): all-reduce, all-gather, reduce-scatter and broadcast of
 * tensors in device memory, on the caller's streams.
 *
 * NCCL is loaded with dlopen when tj_nccl_open is called: libnccl.so.2 on
 * the loader's path, or the file $TILEJIT_NCCL names (a pip install of
 * nvidia-nccl-cu13, or PyTorch's copy, puts one in site-packages). Without
 * it, opening fails with the reason and the rest of the library works.
 * NVLink SHARP (NCCL_NVLS_ENABLE) is turned off unless the environment
 * already sets it: tj_nccl_open sets NCCL_NVLS_ENABLE=0 where it is unset.
 *
 *   one process driving every GPU:
 *     tj_nccl_comm_init_all(n, cus, ndev, comms, &err);   // cus[i]: GPU i
 *     tj_nccl_group_start(n);
 *     for (i...) tj_nccl_all_reduce(comms[i], &x[i], &x[i], TJ_NCCL_SUM, streams[i], &err);
 *     tj_nccl_group_end(n, &err);
 *   one process per GPU: rank 0 makes an id (tj_nccl_unique_id), sends it
 *   to the others (any channel), each calls tj_nccl_comm_init_rank.
 *
 * Tensors must be row-major contiguous, on the communicator's device, of
 * one dtype NCCL knows (i8 u8 i32 u32 i64 u64 f16 bf16 f32 f64); sizes are
 * checked against the collective (all-gather: recv = nranks x send;
 * reduce-scatter: send = nranks x recv). Errors name the collective and
 * NCCL's message. A communicator is used by one thread at a time.
 */
#ifndef TILEJIT_NCCL_H
#define TILEJIT_NCCL_H

#include "tilejit/args.h"
#include "tilejit/cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tj_nccl tj_nccl;
typedef struct tj_nccl_comm tj_nccl_comm;

/* NCCL's ncclUniqueId, passed between processes as bytes. */
typedef struct tj_nccl_id {
    char bytes[128];
} tj_nccl_id;

typedef enum tj_nccl_op { TJ_NCCL_SUM, TJ_NCCL_PROD, TJ_NCCL_MAX, TJ_NCCL_MIN, TJ_NCCL_AVG } tj_nccl_op;

/* NULL with the reason ("no NCCL: cannot load libnccl.so.2 (...)"). */
tj_nccl *tj_nccl_open(tj_rt_error *err);
void tj_nccl_close(tj_nccl *n); /* after every communicator is freed */
int tj_nccl_version(const tj_nccl *n); /* e.g. 22703 for 2.27.3; NULL: 0 */

int tj_nccl_unique_id(tj_nccl *n, tj_nccl_id *id, tj_rt_error *err);
/* Rank `rank` of `nranks`, on cu's device (cu stays open while the
 * communicator lives). NULL with the reason. */
tj_nccl_comm *tj_nccl_comm_init_rank(tj_nccl *n, tj_cuda *cu, int nranks, const tj_nccl_id *id, int rank,
                                     tj_rt_error *err);
/* One communicator per device of cus[0..ndev), rank i on cus[i]; 0, or 1
 * with the reason (and no communicator made). */
int tj_nccl_comm_init_all(tj_nccl *n, tj_cuda *const *cus, int ndev, tj_nccl_comm **comms, tj_rt_error *err);
void tj_nccl_comm_free(tj_nccl_comm *comm);
int tj_nccl_comm_size(const tj_nccl_comm *comm); /* NULL: 0 */
int tj_nccl_comm_rank(const tj_nccl_comm *comm); /* NULL: -1 */

/* Collectives: enqueued on `stream` (NULL: the device's null stream);
 * send may equal recv (in place). 0, or 1 with err. */
int tj_nccl_all_reduce(tj_nccl_comm *comm, const tj_tensor *send, const tj_tensor *recv, tj_nccl_op op,
                       void *stream, tj_rt_error *err);
int tj_nccl_broadcast(tj_nccl_comm *comm, const tj_tensor *send, const tj_tensor *recv, int root, void *stream,
                      tj_rt_error *err);
int tj_nccl_all_gather(tj_nccl_comm *comm, const tj_tensor *send, const tj_tensor *recv, void *stream,
                       tj_rt_error *err);
int tj_nccl_reduce_scatter(tj_nccl_comm *comm, const tj_tensor *send, const tj_tensor *recv, tj_nccl_op op,
                           void *stream, tj_rt_error *err);

/* Several collectives (one per device, from one thread) as one operation. */
int tj_nccl_group_start(tj_nccl *n, tj_rt_error *err);
int tj_nccl_group_end(tj_nccl *n, tj_rt_error *err);

#ifdef __cplusplus
}
#endif
#endif
