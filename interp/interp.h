/* The reference interpreter's private interface, shared by the files of interp/.
 *
 * Every instruction owns one tj_rval for the whole run. A tile keeps its
 * elements in one flat row-major array of 8-byte slots; each slot holds
 * the element already rounded to its dtype (see tj_round_slots), so the op
 * handlers never see an unrounded value:
 *   - signed integers: .i, sign-extended from their width
 *   - unsigned integers: .u, zero-extended
 *   - bool: .i, 0 or 1
 *   - floats: .f, a double holding exactly an f64, f32, f16 or bf16 value
 * Storage for the whole run is planned once (prepare.c) and allocated in
 * one block, so executing an instruction never allocates. */
#ifndef TJ_INTERP_INTERNAL_H
#define TJ_INTERP_INTERNAL_H

#include <math.h>

#include "tilejit/interp.h"

typedef union tj_slot {
    int64_t i;
    uint64_t u;
    double f;
} tj_slot;

/* A view element out of the tensor's bounds. */
#define TJ_OOB INT64_MIN

/* How an op computes on a dtype: f16 and bf16 compute in f32. */
typedef enum tj_class { TJ_CL_SINT, TJ_CL_UINT, TJ_CL_F32, TJ_CL_F64 } tj_class;

typedef struct tj_rval {
    tj_slot *data;           /* TILE: n elements, row-major */
    int64_t *off;            /* VIEW: n element offsets into the tensor, or TJ_OOB */
    const tj_tensor *tensor; /* TENSOR, VIEW */
    struct tj_rval *elems;   /* TUPLE: one value per element */
    void *work;              /* op-specific work space planned with the storage */
    const tj_type_info *ti;
    uint32_t n;              /* TILE, VIEW: element count */
    tj_dtype dt;
} tj_rval;

/* Region nesting deeper than this is refused (the executor recurses). */
enum { TJ_INTERP_MAX_DEPTH = 256 };

typedef struct tj_interp {
    const tj_kernel *k;
    tj_ctx *ctx;
    const tj_arg *args;
    tj_rval *vals;      /* one per instruction */
    void *storage;      /* everything vals point into; freed by tj_interp_release */
    int64_t pid[3];     /* the running program */
    int64_t nprog[3];   /* the grid */
    uint64_t writes;    /* stores and atomics run so far: whether a while iteration changed memory */
} tj_interp;

static inline tj_rval *tj_val(const tj_interp *st, tj_ref r) { return &st->vals[r]; }
static inline const tj_inst *tj_in(const tj_interp *st, tj_ref r) { return &st->k->insts[r]; }
/* The value of operand a of instruction r. */
static inline tj_rval *tj_opnd(const tj_interp *st, tj_ref r, uint32_t a)
{
    return &st->vals[st->k->insts[r].args[a]];
}

/* max/min on floats: NaN if either operand is NaN; +0 is above -0. */
static inline float tj_max_f(float x, float y)
{
    if (x != x || y != y)
        return x != x ? x : y;
    return x > y || (x == y && !signbit(x)) ? x : y;
}
static inline float tj_min_f(float x, float y)
{
    if (x != x || y != y)
        return x != x ? x : y;
    return x < y || (x == y && signbit(x)) ? x : y;
}
static inline double tj_max_d(double x, double y)
{
    if (x != x || y != y)
        return x != x ? x : y;
    return x > y || (x == y && !signbit(x)) ? x : y;
}
static inline double tj_min_d(double x, double y)
{
    if (x != x || y != y)
        return x != x ? x : y;
    return x < y || (x == y && signbit(x)) ? x : y;
}

/* A slot read as the type an op computes in. */
#define TJ_AS_F32(s) ((float)(s).f)
#define TJ_AS_F64(s) ((s).f)
#define TJ_AS_I64(s) ((s).i)
#define TJ_AS_U64(s) ((s).u)

/* Runs BODY for i in [0, n), then returns 0: one loop of an op handler. */
#define TJ_EACH(BODY)                      \
    {                                      \
        for (uint32_t i = 0; i < n; i++) { \
            BODY;                          \
        }                                  \
        return 0;                          \
    }

/* ---- prepare.c: storage, constants, structural checks ---- */
/* Plans and allocates storage for the instructions of the given top-level
 * blocks and computes the values that do not change during a run (const,
 * arange, param, dim). Arguments must have passed tj_check_args. */
int tj_interp_prepare(tj_interp *st, const tj_kernel *k, const tj_arg *args,
                      const tj_block_id *roots, int nroots);
void tj_interp_release(tj_interp *st);
/* Reports an internal error (IR the verifier should have refused). */
int tj_interp_bad_ir(const tj_interp *st, tj_ref r, const char *what);
/* Storage handed out of one block in two passes: with base NULL, takes
 * only add up the bytes; then again with base set to a block of that size.
 * Each take is 16-byte aligned. */
typedef struct tj_plan {
    char *base; /* NULL while counting */
    size_t used;
} tj_plan;
void *tj_plan_take(tj_plan *p, size_t bytes);

/* ---- exec.c ---- */
/* Runs block b; *yield receives its terminator. */
int tj_run_block(tj_interp *st, tj_block_id b, tj_ref *yield);
/* Python range(lo, hi, step): how many iterations (step 0: none). */
uint64_t tj_trip_count(int64_t lo, int64_t hi, int64_t step);

/* ---- value.c: dtypes and slots ---- */
tj_class tj_dtype_class(tj_dtype dt);
/* Rounds or wraps n computed slots to dtype dt (ints computed in 64 bits,
 * f16/bf16 computed in f32). A no-op for i64, u64, f32 and f64. */
void tj_round_slots(tj_dtype dt, tj_slot *s, uint32_t n);
tj_slot tj_slot_from_int(tj_dtype dt, int64_t v);      /* wraps to dt */
tj_slot tj_slot_from_double(tj_dtype dt, double v);    /* dt a float type */
/* An integer slot as int64; an unsigned value above INT64_MAX saturates. */
int64_t tj_slot_to_i64(tj_dtype dt, tj_slot s);
double tj_round_f16(double d);
double tj_round_bf16(double d);

/* ---- op families: each executes instruction r, returns 0 or reports ---- */
int tj_exec_binary(tj_interp *st, tj_ref r);   /* elementwise.c: arithmetic, compare */
int tj_exec_unary(tj_interp *st, tj_ref r);    /* unary.c: neg not abs and math */
int tj_exec_select(tj_interp *st, tj_ref r);   /* unary.c */
int tj_exec_fma(tj_interp *st, tj_ref r);      /* unary.c */
int tj_exec_cast(tj_interp *st, tj_ref r);     /* cast.c */
int tj_exec_bitcast(tj_interp *st, tj_ref r);  /* cast.c */
int tj_exec_broadcast(tj_interp *st, tj_ref r);/* shape.c */
int tj_exec_permute(tj_interp *st, tj_ref r);  /* shape.c */
int tj_exec_gather(tj_interp *st, tj_ref r);   /* shape.c */
int tj_exec_reduce(tj_interp *st, tj_ref r);   /* reduce.c: reduce_*, argmax, argmin */
int tj_exec_cumulative(tj_interp *st, tj_ref r); /* scan.c: cumsum, cumprod */
int tj_exec_scan(tj_interp *st, tj_ref r);     /* scan.c */
int tj_exec_sort(tj_interp *st, tj_ref r);     /* sort.c */
int tj_exec_counting_sort(tj_interp *st, tj_ref r); /* sort.c */
int tj_exec_dot(tj_interp *st, tj_ref r);      /* dot.c */
int tj_exec_view(tj_interp *st, tj_ref r);     /* view.c */
int tj_exec_load(tj_interp *st, tj_ref r);     /* memory.c */
int tj_exec_store(tj_interp *st, tj_ref r);    /* memory.c */
int tj_exec_atomic(tj_interp *st, tj_ref r);   /* memory.c */
/* The handler of an elementwise op (arithmetic, comparisons, math, select,
 * fma, cast), which the Tile and SIMT interpreters share; NULL for other
 * ops (elementwise.c). */
typedef int (*tj_exec_fn)(tj_interp *st, tj_ref r);
tj_exec_fn tj_elementwise_handler(tj_op op);

/* Element off (counted in elements of dt) of the memory at mem as a slot,
 * and back (memcpy: tensor data need not be aligned); memory.c. */
tj_slot tj_mem_read(tj_dtype dt, const void *mem, int64_t off);
void tj_mem_write(tj_dtype dt, void *mem, int64_t off, tj_slot s);

/* r = a OP b over n slots of dtype dt, rounded (elementwise.c; atomics
 * use it one element at a time). Returns -1 when op does not apply. */
int tj_binary_slots(tj_op op, tj_dtype dt, tj_slot *r, const tj_slot *a, const tj_slot *b,
                    uint32_t n);

/* Work space (bytes) an op needs beyond its result, planned with the
 * storage: sort.c, dot.c, view.c. */
size_t tj_sort_work_size(const tj_interp *st, tj_ref r);
size_t tj_dot_work_size(const tj_interp *st, tj_ref r);
size_t tj_view_work_size(const tj_interp *st, tj_ref r);

/* A reduction or scan axis split as [outer, len, inner] (axis -1: all). */
typedef struct tj_lines {
    uint32_t outer, len, inner;
} tj_lines;
tj_lines tj_split_axis(const tj_type_info *ti, int64_t axis);

#endif
