/* The .tj abstract syntax tree (arena memory; built by parser.c, read by the
 * building and the configuration code). */
#ifndef TJ_FRONTEND_AST_H
#define TJ_FRONTEND_AST_H

#include "frontend/lexer.h"
#include "frontend/strmap.h"
#include "tilejit/frontend.h"

typedef enum fe_expr_kind {
    E_INT,    /* ival */
    E_FLOAT,  /* fval (inf and nan too) */
    E_BOOL,   /* ival: 0 or 1 */
    E_STRING, /* name: the text */
    E_NAME,   /* name */
    E_NONE,   /* `None`, only inside an index: a new axis */
    E_UNARY,  /* op (T_MINUS, T_NOT, T_TILDE), lhs */
    E_BINARY, /* op, lhs, rhs */
    E_CALL,   /* name, items (positional), kw */
    E_INDEX,  /* lhs (the indexed value), items (E_SLICE, E_NONE or index) */
    E_SLICE,  /* lhs (start, may be NULL), rhs (stop, may be NULL) */
    E_TUPLE,  /* items */
    E_LIST,   /* items: `[1, 2]` */
    E_TYPE,   /* dtype, items (the extents; none for a scalar type) */
} fe_expr_kind;

typedef struct fe_expr fe_expr;

typedef struct fe_kwarg {
    const char *name;
    tj_loc loc;
    fe_expr *value;
} fe_kwarg;

struct fe_expr {
    fe_expr_kind kind;
    tj_loc loc;          /* operators: the operator; calls: the callee */
    uint32_t begin, end; /* source span, for quoting */
    uint32_t height;     /* nesting: a binary operator's left operand is not nested */
    uint32_t size;       /* the number of nodes (saturating) */
    int64_t ival;
    double fval;
    const char *name;
    fe_tok_kind op;
    tj_dtype dtype;
    fe_expr *lhs, *rhs;
    /* The left operand of a binary operator points to it: a long chain
     * `a + b + c ...` is a deep tree, which walkers climb without recursion
     * (fe_expr_chain_leaf). NULL elsewhere. */
    const fe_expr *up;
    fe_expr **items;
    uint32_t nitems;
    fe_kwarg *kw;
    uint32_t nkw;
};

typedef enum fe_stmt_kind { S_ASSIGN, S_EXPR, S_FOR, S_WHILE, S_IF, S_RETURN } fe_stmt_kind;

typedef struct fe_stmt fe_stmt;

typedef struct fe_block {
    fe_stmt **stmts;
    uint32_t n;
    tj_loc open;
} fe_block;

/* An assignment target; name NULL for `_`. */
typedef struct fe_target {
    const char *name;
    tj_loc loc;
} fe_target;

struct fe_stmt {
    fe_stmt_kind kind;
    tj_loc loc;
    /* S_ASSIGN: targets = value (tuple destructuring when `tuple`) */
    fe_target *targets;
    uint32_t ntargets;
    int tuple;
    fe_expr *value; /* S_ASSIGN, S_EXPR, S_RETURN; S_IF, S_WHILE: the condition */
    /* S_FOR: `for var in range(range[0..nrange])` body */
    fe_target var;
    fe_expr *range[3];
    uint32_t nrange;
    fe_block body;      /* S_FOR, S_WHILE; S_IF: then */
    fe_block orelse;    /* S_IF */
    int has_else;
};

/* `X: f32[M, 128]` or `n: i32`. */
typedef struct fe_kparam {
    tj_loc loc;
    tj_loc dim_locs[TJ_MAX_RANK];
} fe_kparam;

typedef struct fe_fparam {
    const char *name;
    tj_loc loc;
    fe_expr *type; /* E_TYPE */
} fe_fparam;

typedef struct fe_fn {
    const char *name;
    tj_loc loc;
    fe_fparam *params;
    uint32_t nparams;
    fe_expr *ret; /* E_TYPE, E_TUPLE of E_TYPE, or NULL */
    fe_block body;
} fe_fn;

typedef struct fe_kernel {
    const char *name;
    tj_loc loc;
    tj_param *params; /* as declared (tj_kernel_params) */
    fe_kparam *plocs;
    uint32_t nparams;
    fe_expr **grid;
    uint32_t ngrid;
    tj_loc grid_loc;
    tj_tile_param *tiles; /* const and tune, in source order */
    tj_loc *tile_locs;
    uint32_t ntiles;
    fe_expr **where;
    uint32_t nwhere;
    fe_block body;
} fe_kernel;

struct tj_program {
    tj_ctx *ctx;
    uint32_t file;
    const char *text; /* the registered source, for quoting */
    fe_kernel *kernels;
    uint32_t nkernels;
    fe_fn *fns;
    uint32_t nfns;
    uint32_t kcap, fcap;
    /* name -> index of its first declaration, so that name checks and
     * lookups stay linear in the size of the file */
    fe_strmap kernel_index, fn_index;
};

/* Limits that keep hostile input from exhausting the stack, the memory or
 * the time of a compilation. */
enum {
    FE_MAX_DEPTH = 200,       /* nesting of expressions and blocks */
    FE_MAX_ERRORS = 50,       /* the parser stops after this many */
    FE_MAX_INLINE = 64,       /* nested fn calls */
    FE_MAX_PARAMS = 256,      /* parameters and tile parameters of a kernel */
    FE_MAX_FN_PARAMS = 1024,  /* parameters of an fn helper */
    FE_MAX_INSTS = 1 << 20,   /* instructions of a built kernel */
    FE_MAX_WORK = 1 << 21,    /* AST nodes visited to build a kernel (inlining included) */
    /* what the back end supports; the front end cannot see its headers,
     * test_frontend checks these against them */
    FE_MAX_WARPS = 32,        /* TJ_MAX_WARPS: warps of 32 threads, 1024 threads */
    FE_MAX_STAGES = 8,        /* TJ_MAX_STAGES: slots of a copy ring */
    FE_MAX_VEC = 64,          /* TJ_MAX_VEC: consecutive elements a thread owns */
    FE_MAX_OCCUPANCY = 32,    /* TJ_MAX_OCCUPANCY: programs an SM holds at once */
};

/* Bytes of a source file: token offsets and columns are 32-bit. */
#define FE_MAX_SOURCE (1u << 31)

const fe_fn *fe_find_fn(const tj_program *p, const char *name);
/* The index of kernel `name`, or -1. */
int fe_find_kernel(const tj_program *p, const char *name);
/* The first (param, axis) that declares dim `name`; 0 if none. */
int fe_find_dim(const fe_kernel *kd, const char *name, uint32_t *param, int *axis);
/* The declared tile parameter `name`, or NULL. */
const tj_tile_param *fe_find_tile(const fe_kernel *kd, const char *name);
/* The binding of `name` in b[0..n), or NULL (entries may have NULL names). */
const tj_binding *fe_find_binding(const tj_binding *b, uint32_t n, const char *name);
/* The index of the parameter `name`; 0 if none. */
int fe_find_param(const fe_kernel *kd, const char *name, uint32_t *index);

/* The names bound by assignments in `b` and in the blocks nested in it
 * (not the loop variables), each once, in order of first assignment. */
void fe_assigned_names(tj_ctx *c, const fe_block *b, fe_names *out);
int fe_name_in(const char *name, const char *const *names, uint32_t n);

/* warps and stages: tile parameters every kernel has, with these defaults
 * when it does not declare them. */
enum { FE_NDEFAULT_TILES = 2 };
extern const tj_binding fe_default_tiles[FE_NDEFAULT_TILES];
/* warps, stages and fastmath take only the values the back end supports:
 * 1 when `name = v` is fine, else 0 with the rule in why[cap]. */
int fe_check_tile_value(const char *name, int64_t v, char *why, size_t cap);

/* The first operand of the chain of binary operators headed by e (e itself
 * when e is no binary operator): a walker evaluates it, then climbs back
 * to e through `up`, so chains cost no stack. */
const fe_expr *fe_expr_chain_leaf(const fe_expr *e);

/* Whether e uses the name `name` anywhere. */
int fe_expr_mentions(const fe_expr *e, const char *name);

/* Whether two expressions are spelled the same (up to white space). */
int fe_expr_same(const fe_expr *a, const fe_expr *b);

/* Where an expression starts (operators carry their operator's location). */
tj_loc fe_expr_start(const fe_expr *e);

/* The text of an expression as written, for messages (arena). */
const char *fe_expr_text(const tj_program *p, const fe_expr *e);

#endif
