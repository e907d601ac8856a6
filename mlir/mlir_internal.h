/* What the MLIR importer's files share (mlir/). */
#ifndef TJ_MLIR_INTERNAL_H
#define TJ_MLIR_INTERNAL_H

#include "mlir/program.h"
#include "tilejit/mlir.h"

struct tj_mlir_module {
    tj_mprog prog;
    void (*release)(tj_mprog *); /* the reader's */
    char *file;                  /* the name locations are reported under */
    char *text;                  /* the source, for quoting in later diagnostics */
    size_t len;
    uint32_t *funcs;             /* op indices of the func.func ops */
    uint32_t nfuncs;
};

/* ---- the reader (load.c) ---- */

/* Reads text into m->prog through the reader module. 0, or 1 with err. */
int tj_mlir_read(tj_mlir_module *m, const char *text, size_t len, tj_rt_error *err);

/* ---- the op table (ops.def) ---- */

typedef enum mop_kind {
#define MKIND(k) MK_##k,
#include "mlir/kinds.def"
    MK_COUNT
} mop_kind;

typedef struct mop_info {
    const char *name; /* "arith.addf" */
    mop_kind kind;
    tj_aop aop;       /* the array op, for the elementwise kinds */
} mop_info;

/* The table's entry for an op name; NULL when tilejit does not import it. */
const mop_info *tj_mlir_op_info(const char *name);

/* ---- the program ---- */

const char *tj_mlir_op_name(const tj_mlir_module *m, uint32_t op);
/* The source index in c for an op's location file: `own` (the text's) for
 * the name the reader gives a buffer ("-") or the module's file, another
 * one (without text) for locations that point elsewhere (the Python a
 * front end traced). */
uint32_t tj_mlir_loc_source(tj_ctx *c, const tj_mlir_module *m, uint32_t loc_file, uint32_t own);
const tj_mattr *tj_mlir_attr(const tj_mlir_module *m, uint32_t op, const char *name);
uint32_t tj_mlir_operand(const tj_mlir_module *m, uint32_t op, uint32_t i);
const tj_mvalue *tj_mlir_value(const tj_mlir_module *m, uint32_t id);
/* The function op named func (NULL: the first); UINT32_MAX when none. */
uint32_t tj_mlir_find_function(const tj_mlir_module *m, const char *func);

/* ---- building (build*.c) ---- */

/* One build: the module, the graph, the values' arrays, where to report. */
typedef struct mbuild {
    const tj_mlir_module *m;
    tj_graph *g;
    tj_array *env;      /* value id -> its array (TJ_ARRAY_NONE: not built) */
    uint8_t *uniform;   /* value id -> 1 when every element is known to be uniform_value[id] */
    double *uniform_value; /* (a constant or a fill: the init of a reduction may then be skipped) */
    tj_ctx *c;
    uint32_t file;      /* the source's index in c */
    tj_rt_error *err;
    int failed;
    /* inside a linalg body: the iteration space */
    int in_body;
    int nloops;
    int64_t loops[TJ_MAX_RANK];
} mbuild;

/* Reports an error at op's location ("op 'NAME': ..."); returns 1. */
int tj_mlir_fail(mbuild *b, uint32_t op, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Reports the graph's error for op when `a` is TJ_ARRAY_NONE; returns a. */
tj_array tj_mlir_check(mbuild *b, uint32_t op, tj_array a);

/* Builds the ops of a body, ops [first, end), in order; 0 or 1. */
int tj_mlir_build_ops(mbuild *b, uint32_t first, uint32_t end);
/* The array of value `id`, or a failure at op when it was never built. */
tj_array tj_mlir_get(mbuild *b, uint32_t op, uint32_t id);
void tj_mlir_set(mbuild *b, uint32_t id, tj_array a);

/* One op of each family; 0 or 1. */
int tj_mlir_build_elementwise(mbuild *b, uint32_t op, const mop_info *info);
int tj_mlir_build_linalg(mbuild *b, uint32_t op, const mop_info *info);
int tj_mlir_build_tensor(mbuild *b, uint32_t op, const mop_info *info);

/* Whether a combine of init with a reduction of it is the reduction
 * alone: init known to be the combine's identity (0 for add, 1 for mul,
 * -inf for max, +inf for min). */
int tj_mlir_is_identity(const mbuild *b, uint32_t init, tj_aop combine);
/* Value `to` is uniform when `from` is (a fill, a yield of it). */
void tj_mlir_copy_uniform(mbuild *b, uint32_t to, uint32_t from);

/* A scalar constant of dtype dt as an array (a 0-d, or full over the
 * body's iteration space inside a body). */
tj_array tj_mlir_constant(mbuild *b, tj_dtype dt, double v);

#endif
