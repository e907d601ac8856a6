/* The autotuner's private parts, shared by runtime/autotune*.c. */
#ifndef TJ_AUTOTUNE_INTERNAL_H
#define TJ_AUTOTUNE_INTERNAL_H

#include <pthread.h>

#include "runtime/cache_jit.h"

enum { TJ_TUNE_MAX_CONFIGS = 4096, TJ_TUNE_MAX_THREADS = 16 };

/* One configuration on its way through the tuner. */
typedef struct tune_item {
    tj_tune_result *r;
    tj_binding *given;   /* the declared tile parameters' values (select_config input) */
    uint32_t ngiven;
    tj_cache_key key;    /* its time record */
    int settled;         /* r->status is final */
    /* built by a worker (autotune_build.c) */
    tj_tune_variant v;
    int64_t grid[3];
    void *cubin;         /* malloc'ed */
    int built;           /* the worker is done with it (settled when it failed) */
} tune_item;

/* The state of one tj_tune call. */
typedef struct tune_run {
    tj_tune_device *dev;
    tj_cache *cache;
    const tj_tune_request *req;
    const tj_arg *args;  /* req->args, with a placeholder for NULL tensor data */
    tj_ctx *c;           /* the report's context */
    const tj_program *p;
    int kernel;
    const char *kernel_name;
    tj_binding *dims;
    uint32_t ndims;
    char bucket[160];
    tune_item *items;
    uint32_t nitems, done;
    /* the workers' queue (autotune_build.c) */
    pthread_mutex_t lock;
    pthread_cond_t ready;
    uint32_t *todo, ntodo, next_todo;
    uint32_t *finished, nfinished; /* built items, in the order they finished */
    uint32_t next_finished;        /* the next one the timing loop takes */
    tj_nvjitlink *linker; /* NULL: variants carry PTX only */
    pthread_t *threads;
    tj_ctx **worker_ctx;
    int nworkers;
} tune_run;

/* ---- autotune_store.c: record keys and contents, shape buckets ---- */

/* "M=8192,N=1024": each distinct dim rounded up to a power of two. */
void tj_tune_bucket(const tj_binding *dims, uint32_t ndims, char *buf, size_t n);
/* Copies msg into a note of n bytes: one line, cut with "..." when long. */
void tj_tune_note(char *note, size_t n, const char *msg);
/* The newest diagnostic of c since `before` (FILE:LINE:COL: MSG), or the
 * fallback, as a note. */
void tj_tune_note_diag(char *note, size_t n, tj_ctx *c, uint32_t before, const char *fallback);
/* The record key of a configuration from its Tile IR. */
void tj_tune_record_key(const tj_kernel *tile, const char *device_id, const char *bucket, tj_cache_key *out);
/* Reads the stored outcome into it->r; 0 when there is one for exactly
 * this configuration. */
int tj_tune_record_load(tune_run *t, tune_item *it);
/* Stores it->r's outcome. */
void tj_tune_record_store(tune_run *t, const tune_item *it);

/* ---- autotune_winner.c: the winner summary ---- */

/* The tuning generation: changes whenever a record is stored (0: none). */
uint64_t tj_tune_generation(tj_cache *cache);
void tj_tune_new_generation(tj_cache *cache);
/* The key of the summary for the exact source text, kernel, fixed
 * parameters, device and bucket. */
void tj_tune_winner_key(const tj_tune_request *req, const char *device_id, const char *bucket, tj_cache_key *out);
/* Stores the winner (best NULL: no configuration has a time), as of the
 * records of `generation`; complete: none was left untimed. */
void tj_tune_winner_store(tj_cache *cache, const tj_cache_key *k, const char *kernel, const tj_tune_result *best,
                          int complete, uint64_t generation);
/* 0 and the winner's configuration (arena memory of c), checked against
 * the kernel's tile parameters; 1: no configuration has a time; -1: no
 * summary of the current generation. *complete: none was left untimed. */
int tj_tune_winner_load(tj_cache *cache, const tj_cache_key *k, tj_ctx *c, const tj_program *p, int kernel,
                        tj_binding **config, uint32_t *n, int *complete);

/* ---- autotune_build.c: building variants on worker threads ---- */

/* Starts the workers on t->todo. */
int tj_tune_build_start(tune_run *t);
/* The next built item (blocking); -1 when all are done. */
int tj_tune_build_next(tune_run *t);
/* Joins the workers and frees what they made. */
void tj_tune_build_finish(tune_run *t);

#endif
