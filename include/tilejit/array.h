/* Lazy NumPy-style arrays (array/, docs/arrays.md): build a graph of array
 * ops, evaluate it explicitly (as in MLX); fusion and tiling passes turn it
 * into a few tiled kernels, which the JIT compiles once and caches.
 *
 *   tj_graph *g = tj_graph_new(TJ_DEVICE_CPU, 0, &err);
 *   tj_array x = tj_array_wrap(g, &xt), y = tj_array_wrap(g, &yt);
 *   tj_array z = tj_array_binary(g, TJ_AOP_MULTIPLY, x, y);
 *   tj_array s = tj_array_reduce(g, TJ_AOP_SUM, z, (int[]){1}, 1, 0);
 *   if (!s) puts(tj_graph_error(g));           // shapes/dtypes: at build time
 *   tj_array_eval(g, &s, 1, &err);             // one fused kernel
 *   tj_array_read(g, s, host, bytes, &err);
 *
 * Arrays are nodes of their graph, named by index (tj_array; 0 is none),
 * LuaJIT style: a graph owns its nodes, its buffers and a JIT for its
 * device; nothing is global. A build call that fails returns 0 and keeps
 * the message (tj_graph_error) naming the op and the shapes; a call given
 * 0 returns 0 and keeps the first message, so a chain is checked once at
 * its end. Broadcasting and type promotion follow NumPy 2 (NEP 50; the
 * rules are in docs/arrays.md). A graph is used by one thread at a time.
 */
#ifndef TILEJIT_ARRAY_H
#define TILEJIT_ARRAY_H

#include "tilejit/args.h"
#include "tilejit/jit.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tj_aop {
    TJ_AOP_INVALID = 0,
#define AOP(e, s, kind, nin) TJ_AOP_##e,
#include "tilejit/array_ops.def"
    TJ_AOP_COUNT
} tj_aop;

/* The op's name ("multiply"), NULL out of range; by name: TJ_AOP_INVALID
 * when none. */
const char *tj_aop_name(tj_aop op);
tj_aop tj_aop_from_name(const char *s, size_t len);

typedef struct tj_graph tj_graph;
typedef uint32_t tj_array;
#define TJ_ARRAY_NONE 0u

/* ---- the graph ---- */

/* The arrays live on `device` (CPU: native code, or the interpreter
 * without LLVM; CUDA: GPU `ordinal`). NULL with the reason. */
tj_graph *tj_graph_new(tj_device_kind device, int ordinal, tj_rt_error *err);
void tj_graph_free(tj_graph *g); /* every node and buffer */
tj_device_kind tj_graph_device(const tj_graph *g);
/* The first build error since the last tj_graph_clear_error ("" if none). */
const char *tj_graph_error(const tj_graph *g);
void tj_graph_clear_error(tj_graph *g);

/* ---- leaves ---- */

/* An array over memory the caller owns (on the graph's device; strides in
 * elements, any sign, 0 to broadcast), which must stay valid and unchanged
 * while any evaluation may read it. */
tj_array tj_array_wrap(tj_graph *g, const tj_tensor *t);
/* The same, copied now from host memory into a buffer of the graph. */
tj_array tj_array_copy(tj_graph *g, const tj_tensor *t);
/* A placeholder with no data (for tracing and graph text): evaluating
 * something that reads it is an error. */
tj_array tj_array_input(tj_graph *g, tj_dtype dt, int rank, const int64_t *shape);
/* Every element `value` (converted to dt like astype). */
tj_array tj_array_full(tj_graph *g, tj_dtype dt, int rank, const int64_t *shape, double value);
/* A 0-d constant; weak (1): a Python scalar, which takes the other
 * operand's dtype in promotion (NEP 50), e.g. x_f16 * 2.0 stays f16. */
tj_array tj_array_scalar(tj_graph *g, tj_dtype dt, double value, int weak);
/* [start, start + step, ...], n elements. */
tj_array tj_array_arange(tj_graph *g, tj_dtype dt, double start, double step, int64_t n);

/* ---- ops (NumPy's names and semantics) ---- */

/* Elementwise with broadcasting: op of the table's kinds with one, two
 * or three inputs (where: cond, a, b; clip: x, lo, hi). */
tj_array tj_array_unary(tj_graph *g, tj_aop op, tj_array a);
tj_array tj_array_binary(tj_graph *g, tj_aop op, tj_array a, tj_array b);
tj_array tj_array_ternary(tj_graph *g, tj_aop op, tj_array a, tj_array b, tj_array c);
tj_array tj_array_astype(tj_graph *g, tj_array a, tj_dtype dt);

/* sum prod max min mean argmax argmin over `axes` (negative counts from
 * the end; naxes 0: every axis). argmax/argmin take one axis, or all
 * (the index into the flattened array). */
tj_array tj_array_reduce(tj_graph *g, tj_aop op, tj_array a, const int *axes, int naxes, int keepdims);

/* Views. reshape: one entry may be -1 (a view where the strides allow,
 * else a copy); transpose: perm NULL reverses; slice: per axis start,
 * stop, step as Python's slice.indices() gives them (step != 0). */
tj_array tj_array_reshape(tj_graph *g, tj_array a, int rank, const int64_t *shape);
tj_array tj_array_transpose(tj_graph *g, tj_array a, const int *perm);
tj_array tj_array_swapaxes(tj_graph *g, tj_array a, int axis1, int axis2);
tj_array tj_array_expand_dims(tj_graph *g, tj_array a, int axis);
tj_array tj_array_squeeze(tj_graph *g, tj_array a, int axis); /* axis -100: every size-1 axis */
tj_array tj_array_broadcast_to(tj_graph *g, tj_array a, int rank, const int64_t *shape);
tj_array tj_array_slice(tj_graph *g, tj_array a, const int64_t *start, const int64_t *stop, const int64_t *step);

/* NumPy's matmul: 1-D operands promoted and the axis removed after, the
 * batch axes broadcast. */
tj_array tj_array_matmul(tj_graph *g, tj_array a, tj_array b);
/* take: axis TJ_AXIS_FLAT takes from the flattened array. Indices out of
 * range are clamped (NumPy's mode='clip'). */
#define TJ_AXIS_FLAT (-1000)
tj_array tj_array_take(tj_graph *g, tj_array a, tj_array indices, int axis);
tj_array tj_array_take_along_axis(tj_graph *g, tj_array a, tj_array indices, int axis);
/* a copy of a with values[i...] added at a[..., indices[i], ...] along axis
 * (np.add.at); indices is 1-D. */
tj_array tj_array_scatter_add(tj_graph *g, tj_array a, tj_array indices, tj_array values, int axis);
tj_array tj_array_cumsum(tj_graph *g, tj_array a, int axis);
tj_array tj_array_sort(tj_graph *g, tj_array a, int axis);
tj_array tj_array_argsort(tj_graph *g, tj_array a, int axis);
tj_array tj_array_concatenate(tj_graph *g, const tj_array *arrays, uint32_t n, int axis);

/* Compositions of the ops above (fused by the passes like any graph). */
tj_array tj_array_softmax(tj_graph *g, tj_array x, int axis);
tj_array tj_array_log_softmax(tj_graph *g, tj_array x, int axis);
tj_array tj_array_logsumexp(tj_graph *g, tj_array x, const int *axes, int naxes, int keepdims);
/* over the last axis; weight and bias may be 0 (none) */
tj_array tj_array_layer_norm(tj_graph *g, tj_array x, tj_array weight, tj_array bias, double eps);
tj_array tj_array_rms_norm(tj_graph *g, tj_array x, tj_array weight, double eps);

/* ---- what an array is ---- */

typedef struct tj_array_info {
    tj_aop op;
    tj_dtype dtype;
    int rank;
    int64_t shape[TJ_MAX_RANK];
    int evaluated; /* it has data (a leaf, or evaluated) */
} tj_array_info;
/* 0, or 1 when a is not an array of g. */
int tj_array_get_info(const tj_graph *g, tj_array a, tj_array_info *out);

/* ---- evaluation ---- */

/* Evaluates the arrays (and what they need): fusion, tiling, one kernel per
 * group, compiled (or found in the graph's cache: a repeated graph compiles
 * nothing) and launched in order; on CUDA on the null stream, without
 * waiting for the kernels (tj_array_read waits; work the caller queues on
 * the null stream, or a blocking stream, comes after them). Afterwards
 * each has data (and forgets how it was made).
 * 0, or 1 with err. */
int tj_array_eval(tj_graph *g, const tj_array *arrays, uint32_t n, tj_rt_error *err);
/* tj_array_eval that first tunes each fused group's kernel for its
 * arguments (tj_dispatch_tune: every configuration of its `tune` lists
 * timed, the fastest kept; on CUDA stored in the disk cache, so later
 * processes compile the winner too). Later evaluations of groups with the
 * same kernel and signature run the winner. 0, or 1 with err. */
int tj_array_tune(tj_graph *g, const tj_array *arrays, uint32_t n, tj_rt_error *err);
/* An evaluated array's memory (device memory on CUDA), valid until the
 * array is released or the graph freed. 0, or 1 with err. */
int tj_array_tensor(const tj_graph *g, tj_array a, tj_tensor *out, tj_rt_error *err);
/* Copies an evaluated array in C order to host memory (bytes: at least
 * its size). 0, or 1 with err. */
int tj_array_read(tj_graph *g, tj_array a, void *dst, size_t bytes, tj_rt_error *err);

/* A node starts with one hold for its creator. Releasing the last hold
 * frees it (and its buffer) once nothing left to evaluate reads it; its
 * index may then name a later node, so it must not be used again. */
void tj_array_retain(tj_graph *g, tj_array a);
void tj_array_release(tj_graph *g, tj_array a);
/* Releases each of a[0..n) in order, as tj_array_release: one call for the
 * nodes a binding let go of since its last evaluation (tilejit.numpy). */
void tj_array_release_n(tj_graph *g, const tj_array *a, uint32_t n);

/* ---- text: the graph prints and parses back ---- */

/* The subgraph the roots need, one node a line, producers first (in the
 * order the roots reach them, so the text does not depend on node
 * indices):
 *   %3 = multiply f32[4, 8] %1, %2
 * 0, or 1 with err. */
int tj_graph_print(const tj_graph *g, const tj_array *roots, uint32_t n, tj_buf *out, tj_rt_error *err);
/* The arrays the text of the roots reads as `input` lines (leaves,
 * evaluated nodes, placeholders), in the text's order: what to pass as
 * tj_graph_parse's inputs to rebuild it (tracing). Returns the count (out
 * gets the first max), or -1 with err. */
int tj_graph_inputs(const tj_graph *g, const tj_array *roots, uint32_t n, tj_array *out, uint32_t max,
                    tj_rt_error *err);
/* Builds nodes from graph text. `input` lines take inputs[0], inputs[1],
 * ... in order while there are some (checked against the line's dtype and
 * shape), placeholders after. outputs[i] gets the node the text's i-th
 * `return` names (or its last node when it has no return line);
 * returns the output count, or -1 with err naming the line. */
int tj_graph_parse(tj_graph *g, const char *text, size_t len, const tj_array *inputs, uint32_t ninputs,
                   tj_array *outputs, uint32_t maxout, tj_rt_error *err);
/* The same in two steps: graph text read once into a program (NULL with
 * err naming the line), whose nodes tj_graph_program_build makes in any
 * graph as often as asked, without reading the text again (tnp.compile's
 * replay); build errors name the text's line too. */
typedef struct tj_graph_program tj_graph_program;
tj_graph_program *tj_graph_program_parse(const char *text, size_t len, tj_rt_error *err);
int tj_graph_program_build(tj_graph *g, const tj_graph_program *p, const tj_array *inputs, uint32_t ninputs,
                           tj_array *outputs, uint32_t maxout, tj_rt_error *err);
void tj_graph_program_free(tj_graph_program *p);

/* What the passes make of the roots, as text, without running anything:
 * stage "fuse" (the groups), "tile" (with decompositions and tile sizes),
 * "emit" (the kernel source of each group). 0, or 1 with err. */
int tj_graph_plan(tj_graph *g, const tj_array *roots, uint32_t n, const char *stage, tj_buf *out,
                  tj_rt_error *err);

typedef struct tj_graph_stats {
    uint64_t nodes;            /* built so far */
    uint64_t evals;            /* tj_array_eval calls */
    uint64_t groups;           /* fused groups evaluated */
    uint64_t kernels_compiled; /* kernels the JIT compiled (memory-cache misses) */
    uint64_t kernels_launched;
    uint64_t cache_hits;       /* groups whose kernel the graph's cache had */
    uint64_t tunings;          /* kernels tuned by tj_array_tune */
    double compile_ms;         /* time in the JIT's compiles (summed over threads) */
    uint64_t kernels_ahead;    /* kernels readied on worker threads before their launches */
    uint64_t kernels_fast;     /* new kernels launched first as their fast tier (docs/arrays.md) */
    uint64_t kernels_swapped;  /* of those, optimized kernels compiled in the background and taken */
    uint64_t plans_reused;     /* evaluations whose plan, tiles and kernels came from the plan memo */
    uint64_t compiles_failed;  /* background compiles of optimized kernels that failed (their fast tier
                                  stays; the message: tj_graph_compile_error) */
    uint64_t kernels_emitted;  /* kernel texts written by emission (the plan memo skips it) */
} tj_graph_stats;
void tj_graph_get_stats(const tj_graph *g, tj_graph_stats *out);
/* The message of the last background compile that failed ("" when none
 * has): such a failure reaches no evaluation, whose kernel stays the fast
 * tier, so it is kept here, counted in compiles_failed and returned by
 * tj_graph_finish_compiles. Valid until the next evaluation or wait. */
const char *tj_graph_compile_error(const tj_graph *g);
/* Waits for the optimized kernels still compiling in the background, so
 * the next evaluation runs them (a benchmark calls it before timing warm
 * calls). 0, or 1 with err when one of the compiles it waited for failed
 * (the evaluations keep that kernel's fast tier, which computes the same
 * bits). */
int tj_graph_finish_compiles(tj_graph *g, tj_rt_error *err);
/* The host cores g counts on for its background compiles: an elementwise
 * group's fast tier (docs/arrays.md) needs 4, its optimized kernel
 * compiling on another core. 0 (the default): the cores of the process's
 * CPU affinity. 0, or 1 with err for a negative count. */
int tj_graph_set_host_cores(tj_graph *g, int cores, tj_rt_error *err);

#ifdef __cplusplus
}
#endif
#endif
