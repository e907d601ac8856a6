/* tilejit Tile IR: types, instructions, blocks, and the builder.
 *
 * Index-based SSA in the style of LuaJIT: every instruction defines at most one
 * value and is named by its index (tj_ref) in the kernel's instruction array;
 * index 0 (TJ_NONE) means "no value". Ops with several results (for, if, scan,
 * sort) produce a tuple that PROJ takes apart. Structured control flow: a FOR
 * or IF instruction owns blocks (regions); a block lists its instructions in
 * order, starts with its ARG instructions and ends with a YIELD.
 *
 * Types are interned in the context: two types are equal iff their tj_type
 * indices are equal. A scalar is a tile of rank 0.
 */
#ifndef TILEJIT_IR_H
#define TILEJIT_IR_H

#include <stddef.h>
#include <stdint.h>

#include "tilejit/diag.h"

#define TILEJIT_VERSION "0.1.0" /* also in the cache key of every compiled binary */

#ifdef __cplusplus
extern "C" {
#endif

#define TJ_MAX_RANK 6
/* Largest number of elements one tile may have; bigger tiles are rejected
 * with a diagnostic (they would not fit any GPU's registers anyway). */
#define TJ_MAX_TILE_ELEMS (1u << 22)

/* ---- element types ---------------------------------------------------- */

#define TJ_DTYPES(X)                                                         \
    X(BOOL, "bool", 1) X(I8, "i8", 1) X(I16, "i16", 2) X(I32, "i32", 4)      \
    X(I64, "i64", 8) X(U8, "u8", 1) X(U16, "u16", 2) X(U32, "u32", 4)        \
    X(U64, "u64", 8) X(F16, "f16", 2) X(BF16, "bf16", 2) X(F32, "f32", 4)    \
    X(F64, "f64", 8)

typedef enum tj_dtype {
    TJ_DT_INVALID = 0,
#define X(e, s, n) TJ_DT_##e,
    TJ_DTYPES(X)
#undef X
    TJ_DT_COUNT
} tj_dtype;

const char *tj_dtype_name(tj_dtype dt);
tj_dtype tj_dtype_from_name(const char *s, size_t len); /* TJ_DT_INVALID if none */
int tj_dtype_size(tj_dtype dt);                          /* bytes */
int tj_dtype_is_float(tj_dtype dt);
int tj_dtype_is_int(tj_dtype dt);   /* signed or unsigned integer, not bool */
int tj_dtype_is_signed(tj_dtype dt);
int tj_dtype_bits(tj_dtype dt);     /* bool: 1 */

/* f16 / bf16 conversions with round-to-nearest-even (ir/half.c). */
uint16_t tj_f32_to_f16(float f);
float tj_f16_to_f32(uint16_t h);
uint16_t tj_f32_to_bf16(float f);
float tj_bf16_to_f32(uint16_t h);
/* From a double in one rounding step (f64 -> f32 -> f16 would round twice). */
uint16_t tj_f64_to_f16(double d);
uint16_t tj_f64_to_bf16(double d);

/* ---- types ---------------------------------------------------------------- */

typedef uint32_t tj_type; /* index into the context's type table */
#define TJ_TYPE_NONE 0u   /* the void type: no value */

typedef enum tj_type_kind {
    TJ_TK_VOID,
    TJ_TK_TILE,   /* dtype + static shape; rank 0 is a scalar */
    TJ_TK_TENSOR, /* a kernel's tensor parameter: dtype + rank, runtime shape */
    TJ_TK_VIEW,   /* a tile-shaped window of a tensor: dtype + static shape */
    TJ_TK_TUPLE,  /* results of for/if/scan/sort */
} tj_type_kind;

typedef struct tj_type_info {
    tj_type_kind kind;
    tj_dtype dtype;        /* TILE, TENSOR, VIEW */
    int rank;              /* TILE, TENSOR, VIEW */
    int32_t shape[TJ_MAX_RANK]; /* TILE, VIEW */
    uint32_t nelems;       /* TUPLE: element count */
    const tj_type *elems;  /* TUPLE: element types */
} tj_type_info;

typedef struct tj_ctx tj_ctx;

/* Interning constructors. A shape with a non-positive extent, a rank over
 * TJ_MAX_RANK, or more than TJ_MAX_TILE_ELEMS elements yields TJ_TYPE_NONE;
 * callers report that as an error. */
tj_type tj_type_tile(tj_ctx *c, tj_dtype dt, int rank, const int32_t *shape);
tj_type tj_type_scalar(tj_ctx *c, tj_dtype dt);
tj_type tj_type_tensor(tj_ctx *c, tj_dtype dt, int rank);
tj_type tj_type_view(tj_ctx *c, tj_dtype dt, int rank, const int32_t *shape);
tj_type tj_type_tuple(tj_ctx *c, uint32_t n, const tj_type *elems);
/* Same kind and shape as t, another element type (TILE and VIEW). */
tj_type tj_type_with_dtype(tj_ctx *c, tj_type t, tj_dtype dt);

const tj_type_info *tj_type_get(const tj_ctx *c, tj_type t);
int tj_type_is_scalar(const tj_ctx *c, tj_type t);
uint64_t tj_type_numel(const tj_ctx *c, tj_type t); /* TILE/VIEW elements */
/* Prints e.g. "f32", "f32[128, 64]", "tensor<bf16, 2>", "view<f32[32, 64]>",
 * "(f32[128], i32)" into buf; returns the length it needed (buf NULL: only
 * that). */
size_t tj_type_str(const tj_ctx *c, tj_type t, char *buf, size_t cap);

/* Matrix fragments (SIMT IR only, docs/simt.md): the operands of one warp's
 * matrix atom D[16, 8] = A[16, K] * B[K, 8] + C[16, 8], K = 256 / bits of the
 * input dtype (f16, bf16: 16; f32: 8), C and D f32. A fragment has a rank-2
 * tile type; which lane holds which element is the target's business. */
enum { TJ_MMA_M = 16, TJ_MMA_N = 8 };
int tj_mma_k(tj_dtype in); /* 0 when `in` is not an input dtype of the atom */
/* The fragment type of an operand role (tj_mma_role) for input dtype `in`;
 * TJ_TYPE_NONE when `in` has no atom. */
tj_type tj_type_fragment(tj_ctx *c, int role, tj_dtype in);
/* Whether t is the type of some fragment. */
int tj_type_is_fragment(const tj_ctx *c, tj_type t);

/* ---- ops ------------------------------------------------------------------ */

typedef enum tj_attr_kind {
    TJ_ATTR_NONE,
    TJ_ATTR_INDEX, /* imm: parameter, block argument or tuple index */
    TJ_ATTR_AXIS,  /* imm: axis (-1: all axes, for reductions) */
    TJ_ATTR_VALUE, /* CONST: imm (integers, bool) or fimm (floats) */
    TJ_ATTR_PERM,  /* list: permutation */
    TJ_ATTR_VIEW,  /* list: one entry per tensor axis, TJ_VIEW_INDEX,
                      TJ_VIEW_GATHER, or a slice extent (> 0) */
    TJ_ATTR_SORT,  /* imm: axis; flags bit 0: descending */
    TJ_ATTR_DOT,   /* imm: tj_dot_precision */
    TJ_ATTR_MMA,   /* imm: tj_mma_role (mma_load) */
    TJ_ATTR_BYTES, /* imm: bytes of one copy (cp_async) */
    TJ_ATTR_PENDING, /* imm: groups that may stay in flight (cp_async_wait) */
    TJ_ATTR_WGMMA, /* imm: input tj_dtype; flags: TJ_WGMMA_* (wgmma) */
    TJ_ATTR_TMA,   /* imm: box cols | rows << 16 | pair << 32; flags: swizzle bytes (tma_load, tma_store) */
} tj_attr_kind;
enum { TJ_ATTR_LAST = TJ_ATTR_TMA };

/* wgmma's operand majors: K-major unless the flag says the M (a) or N (b)
 * axis is the contiguous one in shared memory. TJ_WGMMA_ZERO: a bool
 * operand after the c fragments, where true D = A * B (the c operands are
 * not added: PTX's scale-d 0), so that a persistent matmul's first k step
 * of a tile starts over without writing registers a group in flight owns. */
enum { TJ_WGMMA_A_MN = 1, TJ_WGMMA_B_MN = 2, TJ_WGMMA_ZERO = 4 };

enum { TJ_VIEW_INDEX = -1, TJ_VIEW_GATHER = -2 };
/* cp_async_wait's largest count (PTX allows more; rings never need it) */
enum { TJ_CP_ASYNC_MAX_PENDING = 7 };
typedef enum tj_dot_precision { TJ_DOT_DEFAULT = 0, TJ_DOT_IEEE = 1, TJ_DOT_TF32 = 2 } tj_dot_precision;
enum { TJ_SORT_DESCENDING = 1 };
/* STORE flags: the caller promises that no two stored elements share a
 * place, so the GPU lowering skips the search that makes the later one
 * win (printed `{distinct}`; the interpreter reports a broken promise) */
enum { TJ_STORE_DISTINCT = 1 };
/* Which operand of the matrix atom a fragment is (docs/simt.md); BT: a b
 * fragment loaded from memory that holds its transpose (mma_load only). */
typedef enum tj_mma_role { TJ_MMA_A = 0, TJ_MMA_B = 1, TJ_MMA_C = 2, TJ_MMA_BT = 3 } tj_mma_role;
/* The name of a role ("a", "b", "c", "bt"), NULL for none. */
const char *tj_mma_role_name(int64_t role);
/* VIEW flags, set by the specialize pass (docs/simt.md): bit a (a < 6):
 * tensor axis a needs no bounds check; bits 8-11: log2 of g, where the
 * slice start and the tensor's size along the last axis are multiples of g
 * (bounds are then uniform over aligned chunks of g elements). */
enum { TJ_VIEW_INBOUNDS_MASK = 0x3f, TJ_VIEW_CHUNK_SHIFT = 8, TJ_VIEW_CHUNK_MASK = 0xf00 };

enum {
    TJ_OPF_PURE = 1 << 0,
    TJ_OPF_ELEM = 1 << 1,
    TJ_OPF_TERM = 1 << 2,
    TJ_OPF_REGION = 1 << 3,
    TJ_OPF_MEM = 1 << 4,
    TJ_OPF_CMP = 1 << 5,
    TJ_OPF_READ = 1 << 6,
    TJ_OPF_SIMT = 1 << 7,
    TJ_OPF_TILE = 1 << 8,
};

typedef enum tj_op {
    TJ_OP_INVALID = 0,
#define OP(e, s, n, a, f) TJ_OP_##e,
#include "tilejit/ops.def"
    TJ_OP_COUNT
} tj_op;

typedef struct tj_op_info {
    const char *name;
    int nargs; /* -1: variadic */
    tj_attr_kind attr;
    unsigned flags;
} tj_op_info;

const tj_op_info *tj_op_get(tj_op op);
tj_op tj_op_from_name(const char *s, size_t len); /* TJ_OP_INVALID if none */

/* ---- instructions, blocks, kernels ---------------------------------------- */

typedef uint32_t tj_ref;  /* instruction index; 0 = none */
#define TJ_NONE 0u
typedef uint32_t tj_block_id; /* block index; 0 = none */

typedef struct tj_loc {
    uint32_t file; /* source index in the context (0: none) */
    uint32_t line, col;
} tj_loc;

typedef struct tj_inst {
    tj_op op;
    tj_type type;       /* result type; TJ_TYPE_NONE for none */
    uint32_t nargs;
    tj_ref *args;       /* operands, TJ_NONE for absent optional ones */
    int64_t imm;        /* see tj_attr_kind */
    double fimm;
    uint32_t flags;     /* op-specific bits (TJ_SORT_DESCENDING) */
    uint32_t nlist;
    int32_t *list;      /* PERM and VIEW */
    tj_block_id region[2]; /* FOR: body; IF: then, else; SCAN: combine */
    tj_block_id block;  /* the block that holds this instruction */
    tj_loc loc;
} tj_inst;

typedef struct tj_block {
    tj_ref *insts;
    uint32_t ninsts, cap;
    tj_ref owner; /* the FOR/IF/SCAN instruction owning it; TJ_NONE at top */
} tj_block;

/* A kernel parameter as written in the source: `X: f32[M, 128]` or `n: i32`. */
typedef struct tj_param {
    const char *name;
    tj_dtype dtype;
    int rank;                        /* 0 for a scalar parameter */
    const char *dim_names[TJ_MAX_RANK]; /* NULL where the dim is a literal */
    int64_t dim_sizes[TJ_MAX_RANK];     /* the literal, or -1 */
} tj_param;

/* NAME = VALUE: a bound tile parameter or a specialized dim name. */
typedef struct tj_binding {
    const char *name;
    int64_t value;
} tj_binding;

/* What the runtime knows of one tensor argument, when the kernel is
 * specialized on it (part of the cache key): */
typedef struct tj_facts {
    uint8_t unit_stride;  /* innermost stride is 1 */
    uint8_t aligned16;    /* base address is a multiple of 16 bytes */
    uint8_t dim_div16[TJ_MAX_RANK]; /* size along the axis is a multiple of 16 */
    uint8_t stride_div16[TJ_MAX_RANK]; /* stride (elements) along the axis is a multiple of 16 */
} tj_facts;

/* A kernel is either Tile IR (program-level tiles) or SIMT IR (one thread's
 * scalars and short vectors; see docs/simt.md). */
typedef enum tj_level { TJ_LEVEL_TILE = 0, TJ_LEVEL_SIMT = 1 } tj_level;

/* Shared memory a program may use: CUDA 227 KiB (sm_90 with the opt-in
 * attribute), Metal 32 KiB of threadgroup memory. The lowering plans within
 * them and the code generators check them. */
enum { TJ_SMEM_LIMIT_CUDA = 227 * 1024, TJ_SMEM_LIMIT_METAL = 32 * 1024 };

typedef struct tj_kernel {
    tj_ctx *ctx;
    tj_level level;
    uint32_t nthreads;   /* SIMT: threads per program (warps * 32) */
    uint32_t smem_bytes; /* SIMT: shared memory per program */
    uint32_t programs;   /* SIMT: programs an SM the code must leave registers for
                            (PTX .minnctapersm); 0: no bound */
    const char *name;
    tj_loc loc;          /* the kernel's name in its source, for errors about the whole
                            kernel; none for IR from text or the builder */
    tj_param *params;
    uint32_t nparams;
    tj_binding *config; /* tile parameters this IR was built with */
    uint32_t nconfig;
    tj_binding *spec;   /* dim names specialized to a value */
    uint32_t nspec;
    tj_facts *facts;    /* one per parameter, or NULL: nothing known */
    tj_inst *insts;     /* insts[0] is unused */
    uint32_t ninsts, icap;
    tj_block *blocks;   /* blocks[0] is unused */
    uint32_t nblocks, bcap;
    tj_block_id grid;   /* computes the launch grid: yields 1 to 3 i32 */
    tj_block_id body;   /* what each program runs: ends in an empty yield */
} tj_kernel;

/* The tile parameters the compiler reads itself (docs/language.md): warps
 * and stages are reserved, every kernel has them (the front end binds the
 * defaults where a kernel declares neither); fastmath and vec a kernel may
 * declare (vec: the consecutive elements a thread owns along a tile's last
 * axis in the GPU lowering's canonical layout, a power of two up to
 * TJ_MAX_VEC; without it 16 bytes of the kernel's narrowest tensor dtype). */
#define TJ_PARAM_WARPS "warps"
#define TJ_PARAM_STAGES "stages"
#define TJ_PARAM_FASTMATH "fastmath"
#define TJ_PARAM_VEC "vec"
/* producer (0 or 1, default 0): a producer warp for the TMA rings of
 * wgmma where they fit (docs/simt.md, "A producer warp") */
#define TJ_PARAM_PRODUCER "producer"
/* turns (0 or 1, default 0): the warpgroups of a loop with several wgmma
 * dots take turns issuing them, one turn an iteration (FlashAttention-3's
 * ping-pong; lower/wgmma_turns.c) */
#define TJ_PARAM_TURNS "turns"
/* occupancy (1 to TJ_MAX_OCCUPANCY, default none): the programs an SM
 * should hold at once, the SIMT kernel's `programs` (PTX .minnctapersm:
 * ptxas caps a thread's registers to fit them); other targets ignore it */
#define TJ_PARAM_OCCUPANCY "occupancy"
/* unroll (a power of two up to TJ_MAX_UNROLL): the most k steps an FMA
 * dot's loop unrolls (lower/dot.c; without it up to 64 within 1024 FMAs a
 * thread: a tile's whole k in straight-line code where it fits). Only the
 * schedule changes, never the results: a fast tier's kernel takes 1, which
 * ptxas assembles in less time (array/tier.c). */
#define TJ_PARAM_UNROLL "unroll"
/* calls (0 or 1, default 1): 0 keeps the PTX free of subroutine calls, as
 * a wgmma kernel always is: its f32 divisions (and logs') run in f64
 * instead of div.rn.f32, whose slow path ptxas assembles as a subroutine
 * (about an empty kernel's link more). The same bits; more instructions a
 * division, so for kernels whose divisions are few a thread. */
#define TJ_PARAM_CALLS "calls"
/* tma_store (0 or 1, default 0): 1 has a wgmma kernel's tile stores on
 * sm_90a go through shared memory and the copy engine where they fit
 * (lower/tma_store.c, docs/simt.md "TMA stores"); 0 keeps every thread's
 * stores to global memory (not yet run on a GPU: bench/NOTES.md) */
#define TJ_PARAM_TMA_STORE "tma_store"
enum { TJ_DEFAULT_WARPS = 4, TJ_DEFAULT_STAGES = 2, TJ_MAX_VEC = 64, TJ_MAX_OCCUPANCY = 32, TJ_MAX_UNROLL = 64 };
/* The value k->config binds to `name`, or dflt where it binds none. */
int64_t tj_config_value(const tj_kernel *k, const char *name, int64_t dflt);
static inline int64_t tj_config_warps(const tj_kernel *k)
{
    return tj_config_value(k, TJ_PARAM_WARPS, TJ_DEFAULT_WARPS);
}
static inline int64_t tj_config_stages(const tj_kernel *k)
{
    return tj_config_value(k, TJ_PARAM_STAGES, TJ_DEFAULT_STAGES);
}
static inline int tj_config_fastmath(const tj_kernel *k) { return tj_config_value(k, TJ_PARAM_FASTMATH, 0) != 0; }
/* Whether name is warps or stages. */
int tj_is_reserved_param(const char *name);

/* A kernel lives in its context's arena and dies with the context. The
 * builder refuses a block or instruction the kernel lacks, an op out of
 * range, or a NULL array with a count: reported in the context, nothing
 * done, TJ_NONE (0) returned. */
tj_kernel *tj_kernel_new(tj_ctx *c, const char *name);
tj_block_id tj_block_new(tj_kernel *k, tj_ref owner);

/* Appends a new instruction to block b. Operands are copied. */
tj_ref tj_emit(tj_kernel *k, tj_block_id b, tj_op op, tj_type type,
               const tj_ref *args, uint32_t nargs);
/* Creates an instruction that belongs to no block yet (for passes that
 * insert); tj_block_insert places it. */
tj_ref tj_inst_new(tj_kernel *k, tj_op op, tj_type type, const tj_ref *args,
                   uint32_t nargs);
void tj_block_insert(tj_kernel *k, tj_block_id b, uint32_t pos, tj_ref r);
void tj_block_remove(tj_kernel *k, tj_block_id b, uint32_t pos);
void tj_inst_set_args(tj_kernel *k, tj_ref r, const tj_ref *args, uint32_t nargs);
void tj_inst_set_list(tj_kernel *k, tj_ref r, const int32_t *list, uint32_t n);

tj_ref tj_emit_const_int(tj_kernel *k, tj_block_id b, tj_type t, int64_t v);
tj_ref tj_emit_const_float(tj_kernel *k, tj_block_id b, tj_type t, double v);

static inline tj_inst *tj_inst_at(const tj_kernel *k, tj_ref r) { return &k->insts[r]; }
static inline tj_block *tj_block_at(const tj_kernel *k, tj_block_id b) { return &k->blocks[b]; }

/* Replaces every use of `from` by `to` in the whole kernel. */
void tj_replace_uses(tj_kernel *k, tj_ref from, tj_ref to);
/* How many operands of the kernel's instructions name v. */
uint32_t tj_count_uses(const tj_kernel *k, tj_ref v);

/* Deep copy of a kernel into the same context (the autotuner and the
 * specializer work on copies). */
tj_kernel *tj_kernel_clone(const tj_kernel *k);

/* ---- text form ------------------------------------------------------------- */

typedef struct tj_buf {
    char *data;
    size_t len, cap;
} tj_buf; /* a growing string; free with tj_buf_free */

void tj_buf_printf(tj_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void tj_buf_append(tj_buf *b, const char *s, size_t n);
void tj_buf_free(tj_buf *b);

/* Prints kernel k; values are numbered %0, %1, ... in printing order. */
void tj_print_kernel(const tj_kernel *k, tj_buf *out);
/* Parses IR text holding one or more kernels. Returns the number parsed, or
 * -1 after reporting diagnostics (file: a name for them). */
int tj_parse_ir(tj_ctx *c, const char *file, const char *text, size_t len,
                tj_kernel **out, int max);

/* Checks types, shapes, operand counts, definitions before uses and region
 * structure; reports every problem as a diagnostic; returns 0 when clean. */
int tj_verify(const tj_kernel *k);

/* The TMA tensor maps that a SIMT kernel's tma_load and tma_store instructions name
 * (docs/simt.md, "TMA"): rank-2 tensor parameter `param` in boxes of rows
 * x cols elements (cols along its contiguous last axis), rows of `swizzle`
 * bytes. A kernel takes them after its parameters, one 128-byte
 * CUtensorMap each, in this order (docs/ptx.md). */
enum { TJ_MAX_TENSOR_MAPS = 16 };
typedef struct tj_tensor_map_desc {
    uint32_t param, cols, rows, swizzle;
    uint32_t pair; /* 0: 2-D boxes of cols x rows; else 3-D (columns, rows of a block of
                      `rows`, blocks): a box is two blocks `pair` blocks apart */
} tj_tensor_map_desc;
/* The distinct maps of k's tma_load and tma_store instructions in the order of their
 * first use; their count, or -1 when there are more than TJ_MAX_TENSOR_MAPS. */
int tj_tensor_maps(const tj_kernel *k, tj_tensor_map_desc out[TJ_MAX_TENSOR_MAPS]);
/* The map tma_load or tma_store r names, as a description (0), or -1 when
 * r is neither, of a tensor parameter. */
int tj_tensor_map_desc_of(const tj_kernel *k, tj_ref r, tj_tensor_map_desc *out);

#ifdef __cplusplus
}
#endif
#endif
