/* Pieces of the text form shared by the printer, the parser and the verifier
 * (and any pass that wants to name an instruction in a diagnostic the way
 * tj_print_kernel numbers it). */
#ifndef TJ_IR_TEXT_H
#define TJ_IR_TEXT_H

#include "tilejit/ir.h"

/* Deepest region nesting the printer, the parser and the verifier follow. */
#define TJ_MAX_NESTING 256

/* The numbers tj_print_kernel gives values: an arena array of k->ninsts
 * entries, num[r] = printed number + 1, or 0 when r is not printed as a
 * value (no result, or in no block reachable from grid/body). */
uint32_t *tj_number_values(const tj_kernel *k);

/* Appends instruction r's line without its regions and without a newline,
 * e.g. `%12 = add %10, %11 : f32[128]`, numbering values by num. */
void tj_print_inst_head(const tj_kernel *k, const uint32_t *num, tj_ref r, tj_buf *out);

/* Appends the text of type t ("f32[128]", "(f32, i32)"). */
void tj_print_type(const tj_ctx *c, tj_type t, tj_buf *out);

/* The blocks an op's regions occupy: FOR and SCAN have one, IF two. */
int tj_op_region_count(tj_op op);

/* Whether v is a value of integer or bool type dt as CONST stores it: in
 * the type's range, u64 as its bit pattern (any int64). */
int tj_int_fits_dtype(int64_t v, tj_dtype dt);

#endif
