/* Building Tile IR from the AST: the state and helpers shared by build*.c,
 * scope.c, convert.c, memory.c, fn.c and the builtins. */
#ifndef TJ_FRONTEND_BUILD_H
#define TJ_FRONTEND_BUILD_H

#include "frontend/ast.h"
#include "frontend/consteval.h"

/* What an expression evaluates to while building. Literals stay untyped
 * until they meet a typed operand (or are used alone: then i32 / f32). */
typedef enum fe_val_kind {
    V_ERROR,  /* an error was reported: anything built on it is quietly V_ERROR */
    V_VALUE,  /* a scalar or tile: ref, type */
    V_INT,    /* an integer literal or tile parameter: i */
    V_FLOAT,  /* a float literal: f */
    V_TENSOR, /* a tensor parameter: param */
    V_VIEW,   /* a window of a tensor: ref, type */
    V_TUPLE,  /* elems[n] */
    V_VOID,   /* what store() returns */
} fe_val_kind;

typedef struct fe_val {
    fe_val_kind kind;
    tj_type type;
    tj_ref ref;
    int64_t i;
    double f;
    uint32_t param;
    struct fe_val *elems;
    uint32_t n;
} fe_val;

typedef struct fe_binding {
    const char *name;
    fe_val val;
    int32_t shadowed; /* the binding of the same name it hides, or -1 */
} fe_binding;

typedef struct fe_builder {
    tj_ctx *c;
    const tj_program *prog;
    const fe_kernel *kd;
    tj_kernel *k;
    tj_block_id block; /* where instructions go */
    tj_loc loc;        /* the location they get */
    const tj_binding *dims;
    uint32_t ndims;
    uint32_t spec_cap;     /* the kernel's number of dim names */
    const char **unbound;  /* dims reported as unbound (once each) */
    uint32_t nunbound;
    /* local names: a stack of bindings; [frame_base, nvars) is the innermost
     * block, [scope_base, nvars) what the current fn (or kernel) sees */
    fe_binding *vars;
    uint32_t nvars, vcap;
    uint32_t frame_base, scope_base;
    fe_strmap index;   /* name -> its latest binding in vars, or -1 */
    const fe_fn *inlining[FE_MAX_INLINE]; /* fn calls being inlined */
    const fe_expr *calls[FE_MAX_INLINE];  /* and the calls, outermost first */
    uint32_t ninlining;
    const fe_fn **failed; /* fns whose body reported errors when inlined (arena) */
    uint32_t nfailed, failed_cap;
    /* expressions and statements built so far, fn bodies once per call:
     * bounded by FE_MAX_WORK even where inlining emits nothing */
    uint64_t work;
    int in_grid;       /* building the grid: integer arithmetic only */
    uint32_t depth;    /* recursion budget, FE_MAX_LOWER_DEPTH */
    int too_deep;      /* too deep or too large: reported once, then stop */
} fe_builder;

enum { FE_MAX_LOWER_DEPTH = 2000 };

/* ---- values and errors (build.c) ---------------------------------------- */

fe_val fe_value(tj_ref ref, tj_type type);
fe_val fe_error_val(void);
/* Reports an error at loc and returns V_ERROR. */
fe_val fe_err(fe_builder *lw, tj_loc loc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Whether any operand is V_ERROR (then the caller returns V_ERROR quietly). */
int fe_any_error(const fe_val *v, uint32_t n);

tj_ref fe_emit(fe_builder *lw, tj_op op, tj_type type, const tj_ref *args, uint32_t nargs);
fe_val fe_emit_val(fe_builder *lw, tj_op op, tj_type type, const tj_ref *args, uint32_t nargs);
tj_ref fe_const_int(fe_builder *lw, tj_dtype dt, int64_t v);
tj_ref fe_const_float(fe_builder *lw, tj_dtype dt, double v);

const tj_type_info *fe_info(const fe_builder *lw, tj_type t);
/* "f32[32, 64]" etc. (arena) */
const char *fe_type_name(fe_builder *lw, tj_type t);
/* What a value is, for messages: "f32[32]", "an integer literal", "a view". */
const char *fe_val_desc(fe_builder *lw, fe_val v);

/* ---- names (scope.c) ------------------------------------------------------ */

fe_val fe_lookup(fe_builder *lw, const char *name, tj_loc loc);
/* Whether `name` is a visible local, parameter, dim or tile parameter. */
int fe_name_known(const fe_builder *lw, const char *name);
/* The index in lw->vars of the visible local `name`, or -1. */
int fe_find_local(const fe_builder *lw, const char *name);
void fe_bind(fe_builder *lw, const char *name, fe_val v);
/* Assignment: checks the name may be assigned, then rebinds it. */
void fe_assign(fe_builder *lw, const fe_target *t, fe_val v);
/* Enters a block: returns the saved frame base for fe_pop_frame. */
uint32_t fe_push_frame(fe_builder *lw);
void fe_pop_frame(fe_builder *lw, uint32_t saved);
/* Value of a tile parameter (after config); 0 if `name` is none. */
int fe_tile_value(const fe_builder *lw, const char *name, int64_t *out);
/* Value of a dim used as a compile-time constant: records the
 * specialization; reports an error (and returns 0) when it is unbound. */
int fe_dim_value(fe_builder *lw, const char *name, tj_loc loc, int64_t *out);
/* PARAM for kernel parameter i, in the current block (CSE merges copies). */
tj_ref fe_emit_param(fe_builder *lw, uint32_t i);

/* ---- types (convert.c) ---------------------------------------------------- */

tj_dtype fe_promote(tj_dtype a, tj_dtype b);
/* The dtype of a typed value; TJ_DT_INVALID for literals and the rest. */
tj_dtype fe_val_dtype(const fe_builder *lw, fe_val v);
int fe_is_literal(fe_val v);
/* A tile type, or an error ("tile too large") at loc and TJ_TYPE_NONE. */
tj_type fe_tile_type(fe_builder *lw, tj_dtype dt, int rank, const int32_t *shape, tj_loc loc);
tj_type fe_tile_type64(fe_builder *lw, tj_dtype dt, int rank, const int64_t *shape, tj_loc loc);
/* Shapes aligned on the right; 0 if they do not broadcast. */
int fe_broadcast_shapes(int ra, const int32_t *a, int rb, const int32_t *b, int *rank, int32_t *out);
/* A typed scalar or tile of dtype dt: literals become constants (an error
 * when the value does not fit); typed values are cast. `explicit_cast`:
 * a float literal may be truncated to an integer. */
fe_val fe_cast(fe_builder *lw, fe_val v, tj_dtype dt, int explicit_cast, tj_loc loc);
/* Broadcasts a scalar or tile to the shape (an error when incompatible). */
fe_val fe_broadcast_to(fe_builder *lw, fe_val v, int rank, const int32_t *shape, tj_loc loc);
/* Cast and broadcast to a tile type. */
fe_val fe_convert(fe_builder *lw, fe_val v, tj_type to, tj_loc loc);
/* A typed scalar or tile: literals take i32 / f32; errors for the rest. */
fe_val fe_to_value(fe_builder *lw, fe_val v, tj_loc loc);
/* Brings n operands to one dtype and shape (literals adopt the typed
 * operands' dtype; `bool_literal_int`: an int literal with bool operands
 * makes them i32, as arithmetic wants). Replaces args[]; 0 on error. */
int fe_unify(fe_builder *lw, fe_val *args, uint32_t n, int bool_literal_int, tj_loc loc);

/* ---- expressions (build_expr.c) ------------------------------------------- */

fe_val fe_build_expr(fe_builder *lw, const fe_expr *e);
fe_val fe_binop(fe_builder *lw, fe_tok_kind op, fe_val a, fe_val b, tj_loc loc);
/* Evaluates e as a compile-time integer over tile parameters, names bound
 * to literals and (allow_dims) dims bound in `dims`, which become
 * specializations. FE_CONST_NOT is not reported; FE_CONST_ERR was. */
fe_const_status fe_build_const(fe_builder *lw, const fe_expr *e, int allow_dims, int64_t *out);
/* The same with dims, reporting "WHAT must be a compile-time constant". */
int fe_require_const(fe_builder *lw, const fe_expr *e, const char *what, int64_t *out);
/* An integer scalar (index, bound, ...): literals become i32. */
fe_val fe_build_int_scalar(fe_builder *lw, const fe_expr *e, const char *what);

/* ---- statements (build_stmt.c), fn helpers (fn.c), memory (memory.c) ----- */

void fe_build_block(fe_builder *lw, const fe_block *b);
void fe_build_for(fe_builder *lw, const fe_stmt *s);
void fe_build_while(fe_builder *lw, const fe_stmt *s);
void fe_build_if(fe_builder *lw, const fe_stmt *s); /* if.c */
/* A name's value about to flow into a region (loop or if): literals get
 * their default type; views and tuples cannot (an error naming `where`). */
int fe_region_value(fe_builder *lw, const char *name, fe_val *v, tj_loc loc, const char *where);
/* The ref to yield for a name expected to have type `want` (literals are
 * converted); TJ_NONE after reporting a type change. */
tj_ref fe_yield_value(fe_builder *lw, const char *name, fe_val v, tj_type want, tj_loc loc, const char *where);
tj_ref fe_emit_arg(fe_builder *lw, uint32_t index, tj_type t);
tj_ref fe_emit_proj(fe_builder *lw, tj_ref tuple, uint32_t index, tj_type t);
int fe_build_enter(fe_builder *lw, tj_loc loc);
void fe_build_leave(fe_builder *lw);
/* Inlines fn at `call`; args[0..nargs) are converted in place. */
fe_val fe_inline_fn(fe_builder *lw, const fe_fn *fn, const fe_expr *call, fe_val *args, uint32_t nargs);
fe_val fe_build_index(fe_builder *lw, const fe_expr *e);

#endif
