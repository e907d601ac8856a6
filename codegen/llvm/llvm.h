/* The LLVM back end's private interface, shared by the files of codegen/llvm/.
 *
 * One Tile IR kernel becomes one LLVM function that runs a range of
 * programs. Every tile value owns a buffer (an alloca of the entry block,
 * so LLVM sees distinct objects and needs no alias checks) of its dtype's
 * value type; a scalar (rank 0) is a plain SSA value. Each tile op is a
 * loop (or a loop nest) over such buffers, which -O2 vectorizes for the
 * host CPU. Value types: bool i8 (0 or 1), integers their width, f16/bf16
 * a float holding the rounded value (they compute in f32), f32 float,
 * f64 double. docs/cpu.md describes the scheme. */
#ifndef TJ_CODEGEN_LLVM_H
#define TJ_CODEGEN_LLVM_H

#include <llvm-c/Core.h>

#include "tilejit/cpu.h"

/* A VIEW: the tensor parameter and what each of its axes takes. */
typedef struct lg_view {
    uint32_t param;
    int rank;
    int32_t kind[TJ_MAX_RANK];     /* TJ_VIEW_INDEX, TJ_VIEW_GATHER or a slice extent */
    LLVMValueRef at[TJ_MAX_RANK];  /* index or slice start (i64); gather: NULL */
    tj_ref gather[TJ_MAX_RANK];    /* gather: the index tile */
} lg_view;

/* The LLVM form of one Tile IR value. */
typedef struct lval {
    LLVMValueRef v;       /* rank 0: the value; tile: its buffer */
    int in_memory;        /* rank 0 while its instruction is emitted: v is
                             a one-element buffer (loops store the result) */
    int fused;            /* a tile computed where it is used: no buffer,
                             no loop of its own (llvm_arith.c) */
    lg_view *view;        /* VIEW */
    LLVMValueRef row, row_stride; /* a fused row while its reader is emitted
                             once for every program (lg_emit_inside): its
                             first element and stride, in the tensor or in
                             row_copy */
    LLVMValueRef row_copy; /* the checked copy of a fused row, for edge programs */
    struct lval *elems;   /* TUPLE: one per element */
    uint32_t nelems;
} lval;

/* The most lanes of a vector built lane by lane (shuffle masks, constant
 * vectors: the scans' and the transposes' arrays): 512 bits of i8. A wider
 * vector (a host beyond 512 bits) takes the scalar scan or the strided
 * copy, which are correct at any width. */
enum { LG_MAX_LANES = 64 };

/* One kernel being generated. */
typedef struct lg {
    const tj_kernel *k;
    tj_ctx *ctx;
    LLVMContextRef lc;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMBuilderRef pro;             /* at the end of the prologue */
    LLVMValueRef fn, args;          /* the program function, its tj_arg array */
    LLVMValueRef exclusive;         /* i1: no other thread runs programs of this tj_cpu now */
    int atomics;                    /* atomic ops emitted (each with a plain form for exclusive runs) */
    /* while an op that reads fused rows is emitted twice (lg_emit_inside):
     * LG_INSIDE, the copy for rows wholly inside their tensors, or
     * LG_CHECKED, the other; keep: its result buffer */
    enum { LG_ANY, LG_INSIDE, LG_CHECKED } version;
    tj_ref keep;
    LLVMValueRef row_end;           /* while its rows are made: where a rank-1 reader stops (lg_live_rows) */
    LLVMValueRef pid[3], nprog[3];  /* i64 */
    LLVMBasicBlockRef entry;        /* holds the allocas */
    LLVMTypeRef i1, i8, i16, i32, i64, f32, f64, ptr, vd;
    lval *vals;                     /* one per instruction */
    lg_view *views;                 /* one per instruction (VIEWs use theirs) */
    lval *tuple_slots;              /* the elements of every tuple value */
    uint32_t *uses;                 /* per instruction: operand uses */
    tj_ref *user;                   /* per instruction: its (last) user */
    tj_ref *row_store;              /* per instruction: the store its rows reach memory through
                                       alone (llvm_rows.c); TJ_NONE: any */
    tj_ref *cell_store;             /* the same for its elements (i, j), of a rank-2 tile */
    void *fields;                   /* tensor fields read in the prologue */
    uint64_t frame;                 /* bytes of allocas so far */
    int vector_bits;                /* the host's widest vector (128, 256, 512) */
    int sort_net;                   /* keys alone sort by tj_cpu_sort_keys32 (the host has AVX2) */
    /* the innermost for being emitted (loop_iv 0: none): its induction
     * variable, step (i64) and body, for prefetching (llvm_prefetch.c) */
    tj_ref loop_iv;
    LLVMValueRef loop_step;
    tj_block_id loop_body;
    int failed;
} lg;

/* ---- llvm_types.c: dtypes, constants, rounding, memory form ---- */
LLVMTypeRef lg_type(const lg *g, tj_dtype dt);     /* value type */
LLVMTypeRef lg_mem_type(const lg *g, tj_dtype dt); /* as tensors hold it */
LLVMValueRef lg_const_int(const lg *g, tj_dtype dt, int64_t v);
LLVMValueRef lg_const_float(const lg *g, tj_dtype dt, double v);
LLVMValueRef lg_i64(const lg *g, int64_t v);
LLVMValueRef lg_i32(const lg *g, int64_t v);
/* Rounds a computed value to its dtype: f16/bf16 from f32, bool to 0/1;
 * other dtypes as they are. */
LLVMValueRef lg_round(lg *g, tj_dtype dt, LLVMValueRef v);
/* Memory form <-> value form. */
LLVMValueRef lg_from_mem(lg *g, tj_dtype dt, LLVMValueRef m);
LLVMValueRef lg_to_mem(lg *g, tj_dtype dt, LLVMValueRef v);
/* An integer value as i64 (sign- or zero-extended by dtype). */
LLVMValueRef lg_to_i64(lg *g, tj_dtype dt, LLVMValueRef v);
/* A bool value (i8) as i1, and back. */
LLVMValueRef lg_truth(lg *g, LLVMValueRef v);
LLVMValueRef lg_bool(lg *g, LLVMValueRef c);
/* Calls intrinsic `name` overloaded on the type of args[0]. */
LLVMValueRef lg_intrinsic(lg *g, const char *name, LLVMValueRef *args, unsigned n);
/* Calls (declaring on first use) an external function of type fty. */
LLVMValueRef lg_call_extern(lg *g, const char *name, LLVMTypeRef fty, LLVMValueRef *args, unsigned n);

/* ---- llvm_loop.c: buffers, elements, loops ---- */
/* A buffer of n elements of type t in the entry block. */
LLVMValueRef lg_buffer(lg *g, LLVMTypeRef t, uint64_t n);
/* Element i (i64) of value r: a scalar is every element of itself. */
LLVMValueRef lg_elem(lg *g, tj_ref r, LLVMValueRef i);
void lg_set_elem(lg *g, tj_ref r, LLVMValueRef i, LLVMValueRef v);
/* Lanes of a host vector of dt's value type (lg_type: f16/bf16 as f32,
 * bool as a byte). */
unsigned lg_lanes(const lg *g, tj_dtype dt);
/* A vector of w lanes, each x (a constant x folds to a constant vector). */
LLVMValueRef lg_splat(lg *g, LLVMValueRef x, unsigned w);
/* The scalar every element of y is (y a rank-0 value or the broadcast of
 * one: a loop over y's elements reads it unchanged); NULL if y varies. */
LLVMValueRef lg_same_everywhere(lg *g, tj_ref y);
LLVMValueRef lg_elem_ptr(lg *g, tj_dtype dt, LLVMValueRef buf, LLVMValueRef i);
/* Gives instruction r its buffer before it is computed; a scalar result
 * gets a one-element one, read back once r is emitted (lg_settle). */
void lg_alloc_result(lg *g, tj_ref r);
/* Whether r may compute into the buffer of x, a body argument of a loop
 * (which reads the loop's own carried buffer): x is a tile of r's dtype
 * that nothing but r reads, in r's block (in a nested region r would run
 * more than once a trip, each time from the same x). */
int lg_overwritable_arg(const lg *g, tj_ref r, tj_ref x);
void lg_settle(lg *g, tj_ref r);
/* Copies n elements between buffers of dtype dt. */
void lg_copy(lg *g, tj_dtype dt, LLVMValueRef dst, LLVMValueRef src, uint64_t n);

typedef struct lg_loop {
    LLVMBasicBlockRef head, body, exit;
    LLVMValueRef i, next; /* i64 counter */
} lg_loop;
/* for (i = lo; i < hi; i++): the builder is left in the body. */
lg_loop lg_loop_begin(lg *g, LLVMValueRef lo, LLVMValueRef hi, const char *name);
void lg_loop_end(lg *g, lg_loop *l);
/* The same for a loop that should stay scalar (llvm.loop.vectorize.enable false). */
void lg_loop_end_scalar(lg *g, lg_loop *l);
/* Copies n elements (i64, >= 0) of dt's value type from src to dst
 * (element pointers into distinct objects): whole host vectors, then the
 * last vector's worth again, ending at n (the overlap rewrites the same
 * values), or one by one when n is under a vector. Loops the vectorizer
 * leaves alone: for a runtime count it would add a vector epilogue and a
 * scalar remainder (compile time), and memcpy, which LLVM's loop-idiom
 * pass made of such loops, is a call (the caller's vector registers
 * spilled, its constants reloaded). */
void lg_copy_span(lg *g, tj_dtype dt, LLVMValueRef dst, LLVMValueRef src, LLVMValueRef n);
/* Elements of a tile, 0..n-1: a loop, or the one element of a scalar. */
LLVMValueRef lg_each_begin(lg *g, lg_loop *l, uint64_t n);
void lg_each_end(lg *g, lg_loop *l, uint64_t n);
/* The elements of tile r's rows up to lg_live_rows: a loop over those
 * rows and one over a row (a constant trip count: no vector remainder;
 * a rank-1 tile's rows are blocks of its elements), or lg_each_begin's
 * one loop where every row is read or rows are short. */
typedef struct lg_rows {
    lg_loop row, each;
    uint64_t n;
    int nested;
} lg_rows;
LLVMValueRef lg_rows_begin(lg *g, lg_rows *l, tj_ref r);
/* The flat elements lg_rows_begin runs r's loop over, 0 .. this (i64;
 * NULL: all of r). */
LLVMValueRef lg_live_extent(lg *g, tj_ref r);
void lg_rows_end(lg *g, lg_rows *l);
/* Loops over every coordinate of a shape, outer axes outside; returns the
 * row-major flat index (0, with no loop, for rank 0). */
typedef struct lg_nest {
    int rank;
    lg_loop loop[TJ_MAX_RANK];
    LLVMValueRef c[TJ_MAX_RANK]; /* i64 coordinates */
    LLVMValueRef flat;
} lg_nest;
LLVMValueRef lg_nest_begin(lg *g, lg_nest *n, int rank, const int32_t *shape);
/* The same with axis 0 running to `rows` (i64; NULL: all of it). */
LLVMValueRef lg_nest_begin_rows(lg *g, lg_nest *n, int rank, const int32_t *shape, LLVMValueRef rows);
void lg_nest_end(lg *g, lg_nest *n);
/* A reduction, scan or sort axis of a tile split as [outer, len, inner]
 * (axis -1: all of it is one line). */
typedef struct lg_lines {
    uint64_t outer, len, inner;
    LLVMValueRef live_outer; /* the outer lines to run (i64; NULL: all): the rows read (lg_live_rows) */
} lg_lines;
lg_lines lg_split_axis(const tj_type_info *ti, int64_t axis);
/* The end of the loop over l's outer lines: live_outer or all. */
LLVMValueRef lg_lines_outer(lg *g, lg_lines l);
/* Loops over every line: the builder is left inside, with *base the
 * flat index of the line's first element; step between elements: inner. */
lg_loop lg_lines_begin(lg *g, lg_lines l, LLVMValueRef *base);
/* Reassociation for float reductions (so they vectorize). */
void lg_allow_reassoc(LLVMValueRef inst);

/* ---- llvm_emit.c ---- */
int lg_emit_block(lg *g, tj_block_id b, tj_ref *yield);
int lg_fail(lg *g, tj_ref r, const char *what);
const tj_type_info *lg_ti(const lg *g, tj_ref r);
/* Elements of a tile value; 0 for a scalar (no loop, no buffer). */
uint64_t lg_count(const lg *g, tj_ref r);
static inline const tj_inst *lg_in(const lg *g, tj_ref r) { return &g->k->insts[r]; }
static inline lval *lg_val(const lg *g, tj_ref r) { return &g->vals[r]; }
/* Field of the parameter's tj_arg: the tensor's data pointer, size and
 * stride (i64) along axis a, or the scalar (as the parameter's value type). */
LLVMValueRef lg_tensor_data(lg *g, uint32_t param);
LLVMValueRef lg_tensor_size(lg *g, uint32_t param, int axis);
LLVMValueRef lg_tensor_stride(lg *g, uint32_t param, int axis);

/* ---- op families: each emits instruction r; 0 or lg_fail ---- */
/* llvm_arith.c: binary arithmetic and comparisons, on scalar values. */
LLVMValueRef lg_binary(lg *g, tj_op op, tj_dtype dt, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef lg_compare(lg *g, tj_op op, tj_dtype dt, LLVMValueRef a, LLVMValueRef b);
int lg_emit_elementwise(lg *g, tj_ref r);               /* every TJ_OPF_ELEM op */
/* Whether elementwise instruction r is computed inside its one user's loop. */
int lg_fusable(const lg *g, tj_ref r);
/* Element i of a fused value (elementwise, arange, a scalar's broadcast),
 * computed where it is read. */
LLVMValueRef lg_fused_elem(lg *g, tj_ref r, LLVMValueRef i);
/* Whether an arange or a scalar's broadcast may be fused (one reader). */
int lg_fusable_index(const lg *g, tj_ref r);
/* llvm_unary.c */
LLVMValueRef lg_unary(lg *g, tj_op op, tj_dtype dt, LLVMValueRef a);
/* llvm_math.c: exp, tanh, erf on f32 in vectorizable straight-line code */
LLVMValueRef lg_math_f32(lg *g, tj_op op, LLVMValueRef x);
/* llvm_cast.c */
LLVMValueRef lg_cast(lg *g, tj_dtype to, tj_dtype from, LLVMValueRef v);
/* llvm_shape.c */
int lg_emit_arange(lg *g, tj_ref r);
int lg_emit_broadcast(lg *g, tj_ref r);
int lg_emit_permute(lg *g, tj_ref r);
int lg_emit_gather(lg *g, tj_ref r);
/* llvm_reduce.c */
int lg_emit_reduce(lg *g, tj_ref r);
/* llvm_scan.c */
int lg_emit_cumulative(lg *g, tj_ref r);
int lg_emit_scan(lg *g, tj_ref r);
/* llvm_sort.c */
int lg_emit_sort(lg *g, tj_ref r);
int lg_emit_counting_sort(lg *g, tj_ref r);
/* llvm_dot.c */
int lg_emit_dot(lg *g, tj_ref r);
/* llvm_rows.c: the values whose rows, or elements, reach memory only
 * through one clipped store (g->row_store, g->cell_store); 0, or -1 out
 * of memory. */
int lg_plan_rows(lg *g);
/* How many of r's rows anything reads (i64, evaluated here), or NULL
 * (all, or not known where r is emitted). */
LLVMValueRef lg_live_rows(lg *g, tj_ref r);
/* Whether scalar x's value is already emitted where r is: x lies before
 * r in r's block or one around it. */
int lg_emitted_before(const lg *g, tj_ref x, tj_ref r);
/* Where rank-2 dot r's result reaches memory only through one
 * plain-slice store (element (i, j) as its element (i, j)),
 * how many of its rows and columns lie inside that store's tensor (i64,
 * evaluated here): 1; 0 where that is not proved. */
int lg_dot_read_extent(lg *g, tj_ref r, LLVMValueRef *rows, LLVMValueRef *cols);
/* llvm_mem.c: view, load, store, atomics */
int lg_emit_view(lg *g, tj_ref r);
int lg_emit_load(lg *g, tj_ref r);
/* Where x, a load without a mask of a plain slice along its tile axis
 * `axis` (extent len), stops being inside its tensor: min(max(dim - start,
 * 0), len); every element from there on is `other`, which *other gets
 * (the value, NULL for none: zeros). NULL if x is not such a load. */
LLVMValueRef lg_load_inside_end(lg *g, tj_ref x, int axis, uint64_t len, LLVMValueRef *other);
/* How much of a slice of extent len from start (i64) along axis `axis` of
 * tensor parameter param lies inside it: min(max(dim - start, 0), len). */
LLVMValueRef lg_slice_inside_end(lg *g, uint32_t param, int axis, LLVMValueRef start, uint64_t len);
/* Element i of a fused load, read where it is used. */
LLVMValueRef lg_fused_load(lg *g, tj_ref r, LLVMValueRef i);
int lg_emit_store(lg *g, tj_ref r);
/* Emits r (a reduction or elementwise op) with `emit`, twice when it reads
 * fused rows: without their bounds checks where they all lie inside their
 * tensors, and checked. */
int lg_emit_inside(lg *g, tj_ref r, int (*emit)(lg *, tj_ref));
/* The group lengths of a view (each slice; the gathers together); returns
 * how many. */
int lg_view_groups(lg *g, const lg_view *v, int32_t *len);
/* The element offset at group coordinates gc (no bounds check), and the
 * stride of tensor axis a (the constant 1 where the facts say so). */
LLVMValueRef lg_view_offset(lg *g, const lg_view *v, const LLVMValueRef *gc);
LLVMValueRef lg_view_stride(lg *g, const lg_view *v, int a);
int lg_view_unit_stride(const lg *g, const lg_view *v);
/* llvm_prefetch.c: in a loop, the cache lines of the tile that load r
 * reads in the next iteration (when its view moves by a fixed amount). */
void lg_prefetch_next(lg *g, tj_ref r);
int lg_emit_atomic(lg *g, tj_ref r);
/* llvm_ctrl.c: for, if, proj */
int lg_emit_for(lg *g, tj_ref r);
int lg_emit_while(lg *g, tj_ref r);
int lg_emit_ordered(lg *g, tj_ref r); /* load_acquire, store_release, load/store_relaxed (llvm_mem.c) */
int lg_emit_if(lg *g, tj_ref r);

/* ---- llvm_sort.c: the helper the generated code calls ---- */
/* Stable sort of n (key, index) pairs by key (unsigned order); tmp holds n
 * pairs. Keys and indices are parallel arrays. */
void tj_cpu_sort_pairs(uint64_t *keys, uint32_t *idx, uint32_t n, uint64_t *tmp_keys, uint32_t *tmp_idx);
void tj_cpu_sort_pairs32(uint32_t *keys, uint32_t *idx, uint32_t n, uint32_t *tmp_keys, uint32_t *tmp_idx);
/* The sorting network (llvm_sort_net.c), on x86-64 builds: sorts the n
 * unsigned keys of v ascending into out; v and out hold cap keys (a power
 * of two, at least 64), v's past n are overwritten. Generated code calls
 * it only where the host has AVX2 (tj_cpu_sort_net_host). */
#if defined(__x86_64__) && defined(__GNUC__)
#define TJ_CPU_SORT_NET 1
void tj_cpu_sort_keys32(uint32_t *v, uint32_t n, uint32_t cap, uint32_t *out);
#else
#define TJ_CPU_SORT_NET 0
#endif
/* Whether the host (LLVM's feature string) runs the network. */
int tj_cpu_sort_net_host(const char *features);
/* counting_sort of n buckets (each < nb, at most 256): the stable order and
 * the count of each bucket */
void tj_cpu_counting_sort(const uint32_t *bucket, uint32_t n, uint32_t nb, int32_t *order, int32_t *counts);

/* ---- llvm_emit.c: the whole kernel ---- */
/* Adds "tj_programs", "tj_frame_bytes" and "tj_atomics" for Tile IR kernel k to mod
 * (whose data layout is set); 0, or -1 after a diagnostic. */
int lg_build_function(LLVMModuleRef mod, const tj_kernel *k, int vector_bits, int sort_net);
/* The generated entry point: runs programs [begin, end) of the grid.
 * exclusive != 0: the caller holds its tj_cpu's launch lock and runs these
 * programs alone, so atomics may be plain read-modify-writes (llvm_mem.c). */
typedef void (*tj_cpu_entry)(const tj_arg *args, int64_t begin, int64_t end, const int64_t *grid, int32_t exclusive);

/* ---- llvm_jit.c, llvm_pool.c: the tj_cpu object ---- */
#include <pthread.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/TargetMachine.h>

struct tj_cpu_fn {
    tj_cpu *cpu;
    tj_cpu_entry entry;
    int64_t frame_bytes; /* stack one program's tiles take */
    int atomics;         /* its programs use atomics: a serial launch takes the launch lock */
    _Atomic int64_t ns_per_program; /* measured on the launching thread; 0: not yet */
    struct tj_cpu_fn *next;
};

typedef struct tj_cpu_pool tj_cpu_pool; /* llvm_pool.c */

struct tj_cpu {
    LLVMOrcLLJITRef jit;
    LLVMTargetRef target;
    char *triple, *cpu_name, *features, *target_text;
    int vector_bits;
    pthread_mutex_t lock; /* fns, nloaded, spare */
    tj_cpu_fn *fns;
    unsigned nloaded;
    LLVMOrcJITDylibRef spare; /* emptied by a failed load: the next load reuses it */
    tj_cpu_pool *pool;
    int threads;
};

int tj_cpu_pool_start(tj_cpu *cpu, int threads, char *err, size_t cap);
void tj_cpu_pool_stop(tj_cpu *cpu);
/* 0 when one program's tiles (frame_bytes of stack) fit a worker's
 * stack; else -1 with the reason in err. */
int tj_cpu_pool_fits(int64_t frame_bytes, char *err, size_t cap);

#endif
