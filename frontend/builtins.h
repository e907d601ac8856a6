/* The table of built-in functions: name, arity, keyword arguments, and the
 * function that builds a call (builtins.c); the building functions live
 * with their op family (builtins_*.c, memory.c, fn.c). */
#ifndef TJ_FRONTEND_BUILTINS_H
#define TJ_FRONTEND_BUILTINS_H

#include "frontend/build.h"

typedef struct fe_builtin fe_builtin;
typedef fe_val (*fe_builtin_fn)(fe_builder *lw, const fe_expr *call, const fe_builtin *b);

struct fe_builtin {
    const char *name;
    uint8_t min_args, max_args; /* positional */
    const char *kw[3];          /* the keyword arguments it accepts */
    fe_builtin_fn build;
    tj_op op;                   /* for families that share a building function */
    int grid_ok;                /* allowed in grid expressions */
};

/* NULL when `name` is no built-in. */
const fe_builtin *fe_builtin_find(const char *name);
/* Lowers a call: a dtype cast, a fn helper (inlined) or a built-in. */
fe_val fe_build_call(fe_builder *lw, const fe_expr *call);

/* Argument helpers for the building functions. */
const fe_expr *fe_call_kw(const fe_expr *call, const char *name);
fe_val fe_arg(fe_builder *lw, const fe_expr *call, uint32_t i);
/* An axis of a tile of type t, given as a compile-time integer, counted
 * from the end when negative; reports and returns 0 when out of range. */
int fe_axis(fe_builder *lw, const fe_expr *e, tj_type t, const char *fn, int *axis);
/* A typed tile or scalar argument (literals become i32 / f32). */
fe_val fe_tile_arg(fe_builder *lw, const fe_expr *call, uint32_t i);

/* Family building functions. */
fe_val fe_bi_math(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
fe_val fe_bi_abs(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
fe_val fe_bi_bitcast(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
fe_val fe_bi_minmax(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
fe_val fe_bi_where(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
fe_val fe_bi_fma(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
fe_val fe_bi_reduce(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
fe_val fe_bi_cumulative(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
fe_val fe_bi_sort(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
fe_val fe_bi_counting_sort(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
fe_val fe_bi_scan(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
fe_val fe_bi_trans(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
fe_val fe_bi_permute(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
fe_val fe_bi_gather(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
fe_val fe_bi_reshape(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
fe_val fe_bi_broadcast(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
fe_val fe_bi_dot(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
fe_val fe_bi_load(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
fe_val fe_bi_store(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
fe_val fe_bi_atomic(fe_builder *lw, const fe_expr *call, const fe_builtin *b);

#endif
