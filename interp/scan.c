/* Inclusive scans along an axis: cumsum, cumprod, and scan with a combine
 * region run on scalars. cumsum/cumprod on f16/bf16 accumulate in f32 and
 * round each output. */
#include "interp/interp.h"

/* For every line: acc = first element, then acc = COMBINE(acc, v); every
 * position receives the acc that includes it. */
#define CUM_LINE(T, LOAD, FIELD, COMBINE)                                         \
    {                                                                             \
        for (uint32_t o = 0; o < l.outer; o++)                                    \
            for (uint32_t in = 0; in < l.inner; in++) {                           \
                size_t base = (size_t)o * l.len * l.inner + in;                   \
                T acc = LOAD(x[base]);                                            \
                r[base].FIELD = acc;                                              \
                for (uint32_t j = 1; j < l.len; j++) {                            \
                    T v = LOAD(x[base + (size_t)j * l.inner]);                    \
                    acc = COMBINE;                                                \
                    r[base + (size_t)j * l.inner].FIELD = acc;                    \
                }                                                                 \
            }                                                                     \
        return;                                                                   \
    }

static void cumulate(int sum, tj_dtype dt, tj_slot *r, const tj_slot *x, tj_lines l)
{
    switch (tj_dtype_class(dt)) {
    case TJ_CL_F32:
        if (sum)
            CUM_LINE(float, TJ_AS_F32, f, acc + v)
        CUM_LINE(float, TJ_AS_F32, f, acc * v)
    case TJ_CL_F64:
        if (sum)
            CUM_LINE(double, TJ_AS_F64, f, acc + v)
        CUM_LINE(double, TJ_AS_F64, f, acc * v)
    default: /* integers wrap: computed in 64 bits, wrapped by the caller */
        if (sum)
            CUM_LINE(uint64_t, TJ_AS_U64, u, acc + v)
        CUM_LINE(uint64_t, TJ_AS_U64, u, acc * v)
    }
}

static int check_axis(const tj_interp *st, tj_ref r, const tj_rval *x)
{
    int64_t axis = tj_in(st, r)->imm;
    if (axis < -1 || axis >= x->ti->rank)
        return tj_interp_bad_ir(st, r, "axis does not fit the operand");
    return 0;
}

int tj_exec_cumulative(tj_interp *st, tj_ref r)
{
    tj_rval *rv = tj_val(st, r), *x = tj_opnd(st, r, 0);
    if (check_axis(st, r, x))
        return -1;
    if (x->n != rv->n || x->dt != rv->dt)
        return tj_interp_bad_ir(st, r, "result type differs from the operand's");
    cumulate(tj_in(st, r)->op == TJ_OP_CUMSUM, rv->dt, rv->data, x->data, tj_split_axis(x->ti, tj_in(st, r)->imm));
    tj_round_slots(rv->dt, rv->data, rv->n);
    return 0;
}

/* The shapes scan relies on: n operands and n results of one element
 * count, and a combine region that starts with 2n scalar arguments. */
static int check_scan(const tj_interp *st, tj_ref r)
{
    const tj_inst *in = tj_in(st, r);
    const tj_rval *rv = tj_val(st, r), *x0 = tj_opnd(st, r, 0);
    uint32_t nx = in->nargs;
    const tj_block *blk = in->region[0] ? tj_block_at(st->k, in->region[0]) : NULL;
    if (!nx || !rv->elems || rv->ti->nelems != nx || !blk || blk->ninsts <= 2 * nx)
        return tj_interp_bad_ir(st, r, "results or combine region do not fit the operands");
    for (uint32_t k = 0; k < nx; k++)
        if (tj_opnd(st, r, k)->n != x0->n || rv->elems[k].n != x0->n)
            return tj_interp_bad_ir(st, r, "operand shapes differ");
    for (uint32_t a = 0; a < 2 * nx; a++)
        if (tj_in(st, blk->insts[a])->op != TJ_OP_ARG || tj_val(st, blk->insts[a])->n != 1)
            return tj_interp_bad_ir(st, r, "combine region must start with 2n scalar arguments");
    return check_axis(st, r, x0);
}

/* One step of the combine region: out[at] = combine(out[prev], x[at]). */
static int combine_step(tj_interp *st, tj_ref r, size_t prev, size_t at)
{
    const tj_inst *in = tj_in(st, r);
    tj_rval *rv = tj_val(st, r);
    uint32_t nx = in->nargs;
    const tj_ref *args = st->k->blocks[in->region[0]].insts;
    for (uint32_t k = 0; k < nx; k++) {
        tj_val(st, args[k])->data[0] = rv->elems[k].data[prev];
        tj_val(st, args[nx + k])->data[0] = tj_opnd(st, r, k)->data[at];
    }
    tj_ref y;
    if (tj_run_block(st, in->region[0], &y))
        return -1;
    if (!y || tj_in(st, y)->nargs != nx)
        return tj_interp_bad_ir(st, r, "combine region must yield one value per operand");
    for (uint32_t k = 0; k < nx; k++)
        rv->elems[k].data[at] = tj_opnd(st, y, k)->data[0];
    return 0;
}

int tj_exec_scan(tj_interp *st, tj_ref r)
{
    if (check_scan(st, r))
        return -1;
    const tj_inst *in = tj_in(st, r);
    tj_rval *rv = tj_val(st, r);
    tj_lines l = tj_split_axis(tj_opnd(st, r, 0)->ti, in->imm);
    for (uint32_t o = 0; o < l.outer; o++)
        for (uint32_t i = 0; i < l.inner; i++) {
            size_t base = (size_t)o * l.len * l.inner + i;
            for (uint32_t k = 0; k < in->nargs; k++)
                rv->elems[k].data[base] = tj_opnd(st, r, k)->data[base];
            for (uint32_t j = 1; j < l.len; j++)
                if (combine_step(st, r, base + (size_t)(j - 1) * l.inner, base + (size_t)j * l.inner))
                    return -1;
        }
    return 0;
}
