/* The array graph's internals (array/): nodes in an arena indexed by
 * tj_array, buffers, and the plan the passes make (fuse.c, tile.c, emit.c,
 * eval.c). docs/arrays.md describes it. */
#ifndef TJ_ARRAY_INTERNAL_H
#define TJ_ARRAY_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "tilejit/array.h"
#include "tilejit/dispatch.h"
#include "tilejit/lib.h"

typedef enum tj_aop_kind {
    TJ_AK_LEAF, TJ_AK_UNARY, TJ_AK_MATH, TJ_AK_ROUND, TJ_AK_LOGIC1, TJ_AK_BITS1, TJ_AK_TEST, TJ_AK_CAST,
    TJ_AK_ARITH, TJ_AK_DIVIDE, TJ_AK_COMPARE, TJ_AK_LOGIC2, TJ_AK_BITS2, TJ_AK_SELECT, TJ_AK_CLIP,
    TJ_AK_REDUCE, TJ_AK_VIEW, TJ_AK_MATMUL, TJ_AK_GATHER, TJ_AK_SCATTER, TJ_AK_SCAN, TJ_AK_SORT, TJ_AK_CONCAT,
} tj_aop_kind;

tj_aop_kind tj_aop_kind_of(tj_aop op);
int tj_aop_nin(tj_aop op);
int tj_aop_is_elementwise(tj_aop op);

/* Memory of the graph's device: owned (freed with the last reference) or
 * borrowed from the caller. */
typedef struct tj_abuf {
    void *data;
    size_t bytes;      /* owned: what was allocated (a multiple of 256) */
    int owned;
    int refs;
} tj_abuf;

enum { TJ_ANODE_MAX_IN = 3 };

typedef struct tj_anode {
    tj_aop op;
    tj_dtype dtype;
    tj_dtype ctype;    /* elementwise: the dtype its operands are computed in */
    int rank;
    int64_t shape[TJ_MAX_RANK];
    uint32_t nin;
    tj_array in[TJ_ANODE_MAX_IN];
    tj_array *more_in; /* concatenate: every input (nin of them), malloc'ed */
    /* attributes */
    uint32_t axes;     /* reductions: bit a = axis a reduced */
    int keepdims;
    int axis;          /* take, take_along_axis, scatter_add, cumsum, sort, concatenate */
    int perm[TJ_MAX_RANK];
    int64_t start[TJ_MAX_RANK], stop[TJ_MAX_RANK], step[TJ_MAX_RANK];
    double value, step_value; /* full, scalar: value; arange: start, step */
    int weak;
    /* data, once it has some */
    int has_data;
    tj_abuf *buf;
    int64_t offset;    /* elements from buf->data */
    int64_t strides[TJ_MAX_RANK];
    /* lifetime */
    int holds;         /* the caller's */
    int users;         /* pending (unevaluated) nodes reading it */
    int dead;
    int force_root;    /* the planner wants it materialized (a copy) */
} tj_anode;

typedef struct tj_tier tj_tier;

/* One kernel of the graph's cache (eval.c): its source and dispatch. */
typedef struct tj_kernel_entry {
    uint64_t hash;
    char *source;
    tj_dispatch *dispatch;
    int ahead;     /* made by tj_graph_compile_ahead, not looked up since: no cache hit yet */
    int quick;     /* a fast tier's variant: its dispatch compiles quick (tj_compile_request.quick) */
    tj_tier *tier; /* tier.c: the fast variant while the dispatch's kernel compiles, or NULL */
} tj_kernel_entry;

/* buffer.c's pool of freed device memory */
typedef struct tj_pool_block {
    void *data;
    size_t bytes;
} tj_pool_block;
enum { TJ_POOL_BLOCKS = 64 };
#define TJ_POOL_BYTES ((size_t)4 << 30)
void tj_graph_pool_free(tj_graph *g);

struct tj_graph {
    tj_device_kind device;
    int ordinal;
    tj_jit *jit;
    tj_anode *nodes; /* nodes[0] unused */
    uint32_t nnodes, cap;
    tj_array *free;  /* dead nodes' slots, for new nodes */
    uint32_t nfree, free_cap;
    char error[1024];
    char compile_error[640];  /* tier.c: the last background compile's failure (a tj_rt_error and a preamble) */
    tj_graph_stats stats;
    pthread_mutex_t stats_lock; /* the compile counts (the JIT's event handler) */
    tj_kernel_entry *kernels; /* the kernel cache: a hash table by source */
    uint32_t nkernels, kcap;
    tj_lib *lib;              /* cumsum and sorts, opened when first needed */
    int tuning;               /* inside tj_array_tune */
    int host_cores;           /* tj_graph_set_host_cores (tier.c); 0: the process's CPU affinity */
    tj_pool_block pool[TJ_POOL_BLOCKS];
    uint32_t npool;
    size_t pool_bytes;
    struct tj_plan_memo *memo;     /* memo.c: plans by subgraph structure, or NULL */
    /* eval.c, during a view or other.c step: the memo's record of its
     * kernels being written, or the one being replayed (at: the next) */
    struct tj_step_kernels *step_record;
    const struct tj_step_kernels *step_replay;
    uint32_t step_at;
};

static inline tj_anode *tj_anode_at(const tj_graph *g, tj_array a) { return &g->nodes[a]; }
/* Whether a names a live node of g. */
int tj_array_valid(const tj_graph *g, tj_array a);
/* The input i of node n (concatenate: from more_in). */
tj_array tj_anode_input(const tj_anode *n, uint32_t i);

/* The nodes the roots need (not past nodes with data), producers first,
 * into *order (malloc'ed); pos[a] (g->nnodes of them) = 1 + a's place, 0
 * where a is not needed. The count, or -1 out of memory. Node indices say
 * nothing of the order: dead nodes' slots are reused. */
int tj_graph_topo(const tj_graph *g, const tj_array *roots, uint32_t n, tj_array **order, uint32_t *pos);

/* Records the first build error (printf-style); returns TJ_ARRAY_NONE. */
tj_array tj_graph_fail(tj_graph *g, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* A new node (inputs retained as users); 0 when out of memory. */
tj_array tj_graph_add(tj_graph *g, tj_aop op, tj_dtype dt, int rank, const int64_t *shape, const tj_array *in,
                      uint32_t nin);
/* "f32[4, 8]" into buf (cap bytes). */
void tj_shape_str(tj_dtype dt, int rank, const int64_t *shape, char *buf, size_t cap);
int64_t tj_shape_numel(int rank, const int64_t *shape);
/* Row-major strides of shape. */
void tj_contiguous_strides(int rank, const int64_t *shape, int64_t *strides);

/* ---- dtypes (dtype_rules.c): NumPy 2's promotion ---- */
tj_dtype tj_promote(tj_dtype a, tj_dtype b);
/* Promotion of two operands with NEP 50's weak scalars; 0 with an error
 * into g when a weak integer does not fit the other's dtype. */
tj_dtype tj_promote_nodes(tj_graph *g, const char *opname, tj_array a, tj_array b);
tj_dtype tj_float_of(tj_dtype dt); /* the float NumPy's math gives for dt */
/* The accumulator dtype of a reduction of dt, and its result dtype. */
tj_dtype tj_reduce_acc_dtype(tj_aop op, tj_dtype dt);
tj_dtype tj_reduce_result_dtype(tj_aop op, tj_dtype dt);

/* ---- buffers (buffer.c) ---- */
tj_abuf *tj_abuf_new(tj_graph *g, size_t bytes, tj_rt_error *err);
tj_abuf *tj_abuf_borrow(void *data);
void tj_abuf_unref(tj_graph *g, tj_abuf *b);
/* Gives node a a fresh contiguous buffer of its shape. 0, or 1 with err. */
int tj_anode_alloc(tj_graph *g, tj_array a, tj_rt_error *err);
/* Host <-> device copies (plain memcpy on the cpu). */
int tj_graph_to_device(tj_graph *g, void *dst, const void *src, size_t bytes, tj_rt_error *err);
int tj_graph_to_host(tj_graph *g, void *dst, const void *src, size_t bytes, tj_rt_error *err);
/* Marks a node evaluated: drops its input edges (freeing what nobody
 * needs any more). */
void tj_anode_settle(tj_graph *g, tj_array a);
/* Copies a strided host tensor into contiguous host memory. */
void tj_gather_host(const tj_tensor *t, char *dst);
/* An evaluated tensor of the graph's device, in C order into host dst. */
int tj_read_strided(tj_graph *g, const tj_tensor *t, void *dst, tj_rt_error *err);
/* v converted to dt (as astype does) into p. */
void tj_store_scalar(void *p, tj_dtype dt, double v);
/* Compile events counted in g's stats. */
void tj_graph_watch_compiles(tj_graph *g);
/* A tensor of n's data. */
tj_tensor tj_anode_tensor(const tj_anode *n);

/* ---- views (build_view.c): strides of a view over data ---- */
/* Computes a's data from its input's when the view can be expressed by
 * strides; 1 when it cannot (a reshape of non-contiguous data). */
int tj_view_resolve(tj_graph *g, tj_array a);
/* The strides a's data has or will have (a view of a value still to
 * compute: over its contiguous result), for planning. */
void tj_node_strides(const tj_graph *g, tj_array a, int64_t *strides);

/* ---- the plan (fuse.c, tile.c, emit.c) ---- */

/* ELEMWISE, REDUCE, MATMUL: a fused kernel; ATTENTION: softmax(q @ k * s)
 * @ v as one flash-attention kernel (attention.c); VIEW: strides over the input's
 * data (or a copy where they cannot say it); HOST: a constant or range
 * filled on the host; OTHER: one op with a kernel of its own (gathers,
 * scans, sorts, concatenation). */
typedef enum tj_group_kind {
    TJ_GROUP_ELEMWISE, TJ_GROUP_REDUCE, TJ_GROUP_MATMUL, TJ_GROUP_ATTENTION, TJ_GROUP_VIEW, TJ_GROUP_HOST, TJ_GROUP_OTHER
} tj_group_kind;
enum { TJ_GROUP_MAX_NODES = 256, TJ_GROUP_MAX_INPUTS = 64 };

typedef struct tj_group {
    tj_group_kind kind;
    tj_array root;
    uint32_t nmembers;              /* in dependency order; the root last */
    tj_array members[TJ_GROUP_MAX_NODES];
    uint32_t ninputs;               /* materialized nodes it reads, first use first */
    tj_array inputs[TJ_GROUP_MAX_INPUTS];
    /* matmul: which space each member and input lives in: 0 the output's
     * (and its epilogue), 1 operand A's prologue, 2 operand B's */
    uint8_t side[TJ_GROUP_MAX_NODES];
    uint8_t input_side[TJ_GROUP_MAX_INPUTS];
    tj_array core;                  /* reduce: the first reduction; matmul: the matmul */
    int row;                        /* reduce: needs the whole row in one tile */
    /* tile.c: the coalesced index space and the tiles */
    int nbatch;                     /* batch axes, indexed through program_id(2) */
    int nred;                       /* reduce: reduced axes (the last is N, the others loops) */
    int space_rank;                 /* batch..., M, [outer reduced...], N */
    int64_t space[TJ_MAX_RANK + 2];
    int64_t k_extent;               /* matmul: K */
    int64_t bm, bn, bk;
    int warps;                      /* the cost model's threads per program / 32 */
    int stages;                     /* matmul: the copy ring's slots */
    int unroll;                     /* the dots' k steps unrolled (`const unroll`), 0: the compiler's */
    int no_calls;                   /* `const calls = 0`: f32 divisions in f64 (few a thread: per row, a fast tier) */
    double scale;                   /* attention: s */
    int64_t bd, be;                 /* attention: tiles of the head dims */
    char why[96];                   /* the cost model's reason, for the plan text */
} tj_group;

typedef struct tj_plan {
    tj_group *groups;
    uint32_t ngroups, cap;
} tj_plan;

/* fuse.c: the groups that evaluate `roots`, in dependency order. 0, or 1
 * with err. */
int tj_fuse(tj_graph *g, const tj_array *roots, uint32_t n, tj_plan *plan, tj_rt_error *err);
void tj_plan_free(tj_plan *plan);
/* Whether a node of group grp is at the reduced level ([..., 1] along the
 * reduced axes). */
int tj_group_reduced_level(const tj_graph *g, const tj_group *grp, tj_array a);
/* The full shape of a group's space, before coalescing. */
void tj_group_full_shape(const tj_graph *g, const tj_group *grp, int *rank, int64_t *shape, uint32_t *axes);

/* tile.c: the decomposition and tile sizes of each group (after its
 * inputs have data: strides decide). */
typedef struct tj_group_args {
    uint32_t nargs;                 /* the inputs, then the output */
    tj_tensor t[TJ_GROUP_MAX_INPUTS + 1];
    int reduced[TJ_GROUP_MAX_INPUTS + 1]; /* its tensor is [..., M, 1] */
} tj_group_args;
/* The strides of every input and the output in the group's coalesced
 * space, and the tile sizes. Inputs without data (planning only) count as
 * contiguous. */
int tj_tile(tj_graph *g, tj_group *grp, tj_group_args *args, tj_rt_error *err);
/* The warps of a program whose tile has elems elements (the cost model's). */
int tj_warps_for_tile(int64_t elems);
const char *tj_group_kind_name(tj_group_kind k);
/* Whether a group of kind k is a fused kernel (tiled and emitted). */
static inline int tj_group_is_kernel(tj_group_kind k) { return k <= TJ_GROUP_ATTENTION; }

/* emit.c: the kernel source of a group (after tj_tile). */
int tj_emit_group(const tj_graph *g, const tj_group *grp, const tj_group_args *args, tj_buf *out,
                  tj_rt_error *err);

/* emit_expr.c: an elementwise op over operands in its compute dtype ct
 * (1 when the op has no spelling), typed literals, reduction extremes. */
int tj_emit_elementwise(tj_buf *out, tj_aop op, tj_dtype ct, const char *a, const char *b, const char *c);
void tj_emit_literal(tj_buf *out, tj_dtype dt, double v);
void tj_emit_extreme(tj_buf *out, tj_dtype dt, int highest);
/* emit.c: b0, b1, ... of the batch axes B0, B1, ... from program_id(2). */
void tj_emit_batch_indices(tj_buf *o, int nbatch);
/* emit.c: the header's `const unroll` and `const calls` lines that grp asks for. */
void tj_emit_consts(tj_buf *o, const tj_group *grp);

/* other.c: the ops that are a kernel of their own (gathers, scans, sorts,
 * concatenation). 0, or 1 with err. */
int tj_eval_other(tj_graph *g, tj_group *grp, tj_rt_error *err);
/* eval.c: runs the kernel `write` emits (into an empty buffer, from ctx)
 * over tensors t, through the cache; a step the plan memo replays takes
 * its recorded kernel instead and writes nothing. */
typedef void (*tj_kernel_writer)(const void *ctx, tj_buf *out);
int tj_graph_launch(tj_graph *g, tj_kernel_writer write, const void *ctx, const tj_tensor *t, uint32_t n,
                    tj_rt_error *err);
/* The graph's kernel entry for source src, made (*made = 1) if it has
 * none; valid until the next call (the entries may move). A lookup counts
 * a cache hit unless `ahead` (tj_graph_compile_ahead) made the entry or
 * makes this lookup; a `quick` entry (a fast tier's) is another than the
 * same source's default one. NULL with err. */
tj_kernel_entry *tj_graph_kernel(tj_graph *g, const tj_buf *src, int ahead, int quick, int *made, tj_rt_error *err);
/* The arguments of a compile for a group's tensors (args->nargs of them):
 * memory still to allocate as a placeholder aligned as the device's
 * allocations, never dereferenced. */
void tj_compile_args(const tj_group_args *args, tj_arg *argv);

/* tier.c: tiered compiles on CUDA. Whether grp's kernel (new to the
 * graph) first runs as a fast variant; starting it: the variant's entry,
 * and the optimized kernel of entry `at` compiling on a thread of its own
 * (nothing started without a thread, nor where the variant does not
 * compile: then the optimized kernel runs untiered). 0, or 1 with err. */
int tj_tier_applies(const tj_graph *g, const tj_group *grp);
/* Whether the host has the cores an elementwise group's fast tier needs
 * (its optimized compile runs beside it): 4 or more, g's host_cores where
 * set, else those of the process's CPU affinity. */
int tj_tier_spare_cores(const tj_graph *g);
int tj_tier_start(tj_graph *g, uint32_t at, const tj_group *grp, const tj_group_args *args, tj_rt_error *err);
/* The dispatch a launch of entry e takes: the variant while the optimized
 * kernel compiles (or after its compile failed), else e's own. */
tj_dispatch *tj_tier_pick(tj_graph *g, tj_kernel_entry *e);
/* Waits for every background compile (the next launches take them); the
 * count of those that failed (each also counted and kept in g). */
uint32_t tj_tier_finish(tj_graph *g);
void tj_tier_free(tj_kernel_entry *e);
/* compile_ahead.c: on CUDA, compiles the plan's new kernels for the shapes
 * they will run at, on worker threads at once, before the plan runs (its
 * launches then find them); failures are left to the launches to report. */
void tj_graph_compile_ahead(tj_graph *g, tj_plan *plan);
/* A copy of src (evaluated) converted to dt by an elementwise kernel:
 * into fresh contiguous memory, or where `place` has its data. The new
 * node (held: release it), or 0 with err. */
tj_array tj_graph_copy(tj_graph *g, tj_array src, tj_dtype dt, const tj_anode *place, tj_rt_error *err);

/* print.c: num[a] = 1 + a's number in the text of the roots' subgraph
 * (0: not in it); returns the count, -1 out of memory. */
int tj_graph_number(const tj_graph *g, const tj_array *roots, uint32_t n, uint32_t *num);
void tj_print_value(tj_buf *o, double v);

/* attention.c: whether a (a matmul) ends softmax(q @ k * s, -1) @ v, made
 * of nodes nothing else reads; fills grp (kind, members, inputs q, k, v,
 * which the caller materializes, and scale). Its tiling and its kernel. */
int tj_match_attention(const tj_graph *g, tj_array a, const uint8_t *needed, const uint8_t *root,
                       const uint32_t *nusers, tj_group *grp);
int tj_tile_attention(const tj_graph *g, tj_group *grp, tj_group_args *args, tj_rt_error *err);
int tj_emit_attention(const tj_graph *g, const tj_group *grp, const tj_group_args *args, tj_buf *out);

/* memo.c: the plans of evaluated subgraphs by their structure. A key:
 * the subgraph of the roots as the passes read it, in tj_graph_topo's
 * order (pos: 1 + each node's place). One group of a memoized plan: after
 * tiling, node indices as places; a fused kernel's arguments without their
 * data and its entry in g->kernels (-1: it launches nothing; -2 while
 * recording: the plan cannot be memoized). */
typedef struct tj_plan_memo_key {
    uint64_t hash;
    tj_buf text;
    tj_array *order;
    uint32_t norder;
    uint32_t *pos;
} tj_plan_memo_key;
enum { TJ_STEP_KERNELS = 16 };
/* The kernels a view or other.c step launched, in order (entries of
 * g->kernels): what its replay launches without emitting their texts.
 * overflow: more than fit, so the replay emits as before. */
typedef struct tj_step_kernels {
    int32_t entry[TJ_STEP_KERNELS];
    uint32_t n;
    int overflow;
} tj_step_kernels;
typedef struct tj_plan_memo_group {
    tj_group grp;
    tj_group_args args;
    int32_t kernel;
    tj_step_kernels step;
} tj_plan_memo_group;
typedef struct tj_plan_memo_entry tj_plan_memo_entry;
/* 0, or 1 out of memory (then nothing to free). */
int tj_plan_memo_key_make(const tj_graph *g, const tj_array *roots, uint32_t n, tj_plan_memo_key *k);
void tj_plan_memo_key_free(tj_plan_memo_key *k);
const tj_plan_memo_entry *tj_plan_memo_find(const tj_graph *g, const tj_plan_memo_key *k);
/* Keeps groups (n, malloc'ed, recorded with node indices) under key k:
 * takes them (freed when they cannot be kept). */
void tj_plan_memo_store(tj_graph *g, const tj_plan_memo_key *k, tj_plan_memo_group *groups, uint32_t n);
uint32_t tj_plan_memo_groups(const tj_plan_memo_entry *e);
/* Group i of e over the nodes of k's graph into *grp; *mg its record. */
void tj_plan_memo_group_at(const tj_plan_memo_entry *e, uint32_t i, const tj_plan_memo_key *k, tj_group *grp,
                      const tj_plan_memo_group **mg);
void tj_plan_memo_free(tj_graph *g);

/* compose.c helpers shared by the builders */
tj_array tj_array_scalar_like(tj_graph *g, tj_array like, double value);

#endif
