/* tj_dispatch's parts (runtime/dispatch*.c). */
#ifndef TJ_DISPATCH_INTERNAL_H
#define TJ_DISPATCH_INTERNAL_H

#include <pthread.h>

#include "runtime/launch_memo.h"
#include "tilejit/dispatch.h"
#include "tilejit/frontend.h"

/* The functions compiled for one signature, and its tuned configuration. */
typedef struct dispatch_entry {
    unsigned char *sig; /* malloc'ed */
    size_t len;
    tj_fn **fns;        /* held */
    uint32_t nfns, cap;
    tj_binding *tuned;  /* every tile parameter (malloc'ed, names too); NULL: not tuned */
    uint32_t ntuned;
} dispatch_entry;

struct tj_dispatch {
    tj_jit *jit;
    tj_ctx *ctx;            /* the program, the request's strings, tuned configurations */
    tj_compile_request req; /* its strings in ctx; args unused */
    const tj_param *params;
    uint32_t nparams;
    pthread_mutex_t lock;   /* everything below */
    tj_launch_memo memo;    /* the last arguments picked for ... */
    uint32_t memo_aligned;  /* ... their tensors' 16-byte alignment (bit i) ... */
    tj_fn *memo_fn;         /* ... and the function picked */
    dispatch_entry *entries;
    uint32_t nentries, cap;
    tj_fn **retired;        /* replaced by a tuning, held until the end */
    uint32_t nretired, retired_cap;
};

/* dispatch.c: the entry of these arguments' signature, added when new
 * (d->lock held); NULL with err. */
dispatch_entry *tj_dispatch_entry(tj_dispatch *d, const tj_arg *args, uint32_t nargs, tj_rt_error *err);
/* "X: f32[<=4,<=1024], n: i32": a signature for reasons. */
void tj_dispatch_signature_text(const tj_dispatch *d, const tj_arg *args, uint32_t nargs, char *buf, size_t size);

/* dispatch_dlpack.c: whether a tensor of DLPack device (type, id) can run
 * where d's jit runs (CUDA device n: kDLCUDA n; the cpu and the
 * interpreter: kDLCPU and kDLCUDAHost; all: kDLCUDAManaged). */
int tj_dispatch_on_device(const tj_dispatch *d, int32_t type, int32_t id);

/* dispatch_tune.c: tunes the entry's signature and keeps the winner in it
 * (d->lock held). */
int tj_dispatch_tune_entry(tj_dispatch *d, dispatch_entry *e, const tj_arg *args, uint32_t nargs,
                           void (*progress)(void *, uint32_t, uint32_t, const tj_tune_result *), void *ud,
                           tj_tune_report *out, tj_rt_error *err);

#endif
