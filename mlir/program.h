/* An MLIR module as plain C data: what the reader (mlir/plugin/, the one
 * part of tilejit that links MLIR's C API) hands the importer (mlir/).
 * The reader is a shared module loaded with dlopen on first use, so no
 * other tilejit process pays for loading libMLIR (200 ms); this header is
 * the ABI between the two (TJ_MPROG_ABI: bumped on every change).
 *
 * Ops are in pre-order: an op with a region (func.func, linalg.generic,
 * ...; one block) is followed by the ops of its body, which end at
 * `body_end`. Values (block arguments, op results) are numbered in the
 * order they are defined; an op's operands and results, a body's
 * arguments, and attribute payloads are ranges of the pools. Everything is
 * in one malloc'd allocation per pool, freed by tj_mprog_free. */
#ifndef TJ_MLIR_PROGRAM_H
#define TJ_MLIR_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "tilejit/ir.h"

#define TJ_MPROG_ABI 2

typedef enum tj_mtype_kind {
    TJ_MT_SCALAR, /* a float, integer or index */
    TJ_MT_TENSOR, /* a ranked tensor of scalars */
    TJ_MT_OTHER,  /* anything else: `text` says what */
} tj_mtype_kind;

#define TJ_MDIM_DYNAMIC INT64_MIN /* a `?` extent */

typedef struct tj_mvalue {
    tj_mtype_kind kind;
    tj_dtype dtype; /* TJ_DT_INVALID: an element type tilejit has none of */
    int index;      /* the `index` type (dtype i64) */
    int rank;       /* -1: unranked, or over TJ_MAX_RANK */
    int64_t shape[TJ_MAX_RANK];
    uint32_t text;  /* the type as MLIR prints it (strings pool) */
} tj_mvalue;

typedef enum tj_mattr_kind {
    TJ_MA_INT,    /* i: an IntegerAttr, BoolAttr or an enum stored as one */
    TJ_MA_FLOAT,  /* f */
    TJ_MA_STRING, /* str: a StringAttr or FlatSymbolRefAttr */
    TJ_MA_INTS,   /* ints[first, first + count): a DenseI64/I32ArrayAttr or an array of ints */
    TJ_MA_LISTS,  /* `count` lists in ints from first: n, then n ints, ... (reassociations) */
    TJ_MA_MAPS,   /* `count` affine maps in ints from first: ndims, nresults, then per result
                   * the dim it is (d3: 3), TJ_MEXPR_ZERO for the constant 0, or
                   * TJ_MEXPR_OTHER (anything else) */
    TJ_MA_STRINGS, /* `count` strings (string indices in ints from first): iterator types
                    * ("parallel", "reduction"), or what an array of other attributes prints */
    TJ_MA_DENSE,  /* `count` numbers in floats from first (1 when splat): a dense constant of
                   * `dtype`; integers are exact up to 2^53 */
    TJ_MA_OTHER,  /* str: the attribute as MLIR prints it */
} tj_mattr_kind;

#define TJ_MEXPR_ZERO (-1)
#define TJ_MEXPR_OTHER (-2)

typedef struct tj_mattr {
    uint32_t name; /* strings pool */
    tj_mattr_kind kind;
    int64_t i;
    double f;
    uint32_t str;
    uint32_t first, count;
    int splat;
    tj_dtype dtype;
} tj_mattr;

typedef struct tj_mop {
    uint32_t name;          /* "linalg.generic" (strings pool) */
    uint32_t line, col;     /* 0: the location is not FILE:LINE:COL */
    uint32_t loc_file;      /* the location's file (strings pool) */
    uint32_t operands, noperands; /* value ids in `uses` (UINT32_MAX: defined where nothing is read) */
    uint32_t results, nresults;   /* value ids first .. first + n - 1 */
    uint32_t args, nargs;         /* the body's block arguments: value ids */
    uint32_t attrs, nattrs;       /* in `attrs` */
    uint32_t nregions;            /* as MLIR has them (only region 0's first block is read) */
    uint32_t nblocks;             /* blocks in region 0 */
    uint32_t body_end;            /* ops index after the body (this op's index + 1 without one) */
    uint32_t parent;              /* the op whose body holds it; UINT32_MAX: top level */
} tj_mop;

typedef struct tj_mdiag {
    int error;           /* 0: a note or warning */
    uint32_t line, col;
    uint32_t msg;        /* strings pool */
} tj_mdiag;

typedef struct tj_mprog {
    tj_mop *ops;
    uint32_t nops, cap_ops;
    tj_mvalue *values;
    uint32_t nvalues, cap_values;
    uint32_t *uses;
    uint32_t nuses, cap_uses;
    tj_mattr *attrs;
    uint32_t nattrs, cap_attrs;
    int64_t *ints;
    uint32_t nints, cap_ints;
    double *floats;
    uint32_t nfloats, cap_floats;
    char *strings; /* NUL-terminated strings back to back; index 0 is "" */
    uint32_t nstrings, cap_strings;
    tj_mdiag *diags; /* MLIR's own (parse and verify errors), with their locations */
    uint32_t ndiags, cap_diags;
    int parsed;      /* 1 when MLIR parsed and verified the module */
    int oom;         /* an allocation failed: the program is incomplete */
} tj_mprog;

/* The reader's entry points (mlir/plugin/reader.c), found with dlsym. */
typedef int (*tj_mprog_abi_fn)(void);
/* Parses `len` bytes of `text` (named `file` in locations) and fills *out
 * (zeroed first). Returns 0; MLIR's errors are in out->diags. */
typedef int (*tj_mprog_read_fn)(const char *file, const char *text, size_t len, tj_mprog *out);
typedef void (*tj_mprog_free_fn)(tj_mprog *p);

static inline const char *tj_mprog_str(const tj_mprog *p, uint32_t i) { return p->strings + i; }

#endif
