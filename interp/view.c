/* view: the element offsets of a tile-shaped window of a tensor.
 *
 * Each tensor axis is an index (a scalar: the axis is dropped), a slice
 * (start + [0, S)), or a gather (an integer tile; all gather axes share one
 * shape, which takes the place of the first gather axis). The view's
 * offsets are computed once per VIEW, in elements: a table per result
 * axis group (slice: S entries; gathers together: one entry per gather
 * element), then expanded to one offset per element in row-major order. An
 * element any of whose coordinates falls outside [0, dim) is TJ_OOB, and
 * loads and stores skip it. tj_check_args bounds every in-range offset, so
 * no sum here overflows. */
#include "interp/interp.h"

typedef struct view_axis {
    const int64_t *tab;
    uint32_t len;
} view_axis;

/* Starts beyond this are out of bounds for any dim (dims fit in i32), and
 * keep start + j from overflowing. */
#define FAR_START ((int64_t)1 << 40)

size_t tj_view_work_size(const tj_interp *st, tj_ref r)
{
    const tj_inst *in = tj_in(st, r);
    size_t n = 0;
    int gathered = 0;
    for (uint32_t a = 0; a < in->nlist && a + 1 < in->nargs; a++) {
        if (in->list[a] > 0)
            n += (size_t)in->list[a];
        else if (in->list[a] == TJ_VIEW_GATHER && !gathered++)
            n += tj_opnd(st, r, a + 1)->n;
    }
    return sizeof(int64_t) * n;
}

static void slice_table(int64_t *tab, int64_t start, uint32_t len, int64_t dim, int64_t stride)
{
    int far = start <= -FAR_START || start >= FAR_START;
    for (uint32_t j = 0; j < len; j++) {
        int64_t c = far ? -1 : start + j;
        tab[j] = c >= 0 && c < dim ? c * stride : TJ_OOB;
    }
}

/* Adds one gather axis's contribution to the gather group's table. */
static void gather_table(int64_t *tab, const tj_rval *idx, int64_t dim, int64_t stride)
{
    for (uint32_t g = 0; g < idx->n; g++) {
        int64_t c = tj_slot_to_i64(idx->dt, idx->data[g]);
        tab[g] = tab[g] != TJ_OOB && c >= 0 && c < dim ? tab[g] + c * stride : TJ_OOB;
    }
}

/* off[i] = base + the sum of the tables' entries at i's coordinates. */
static void expand(int64_t *off, int64_t base, const view_axis *axes, int nax)
{
    off[0] = base;
    size_t m = 1;
    for (int k = 0; k < nax; k++) {
        const int64_t *tab = axes[k].tab;
        uint32_t len = axes[k].len;
        /* In place, backwards over a: off[a] is read before row a (at
         * a * len >= a) is written, and rows below a are still unread. */
        for (size_t a = m; a-- > 0;) {
            int64_t v = off[a], *row = off + a * len;
            if (v == TJ_OOB)
                for (uint32_t j = 0; j < len; j++)
                    row[j] = TJ_OOB;
            else
                for (uint32_t j = 0; j < len; j++)
                    row[j] = tab[j] == TJ_OOB ? TJ_OOB : v + tab[j];
        }
        m *= len;
    }
}

int tj_exec_view(tj_interp *st, tj_ref r)
{
    const tj_inst *in = tj_in(st, r);
    tj_rval *rv = tj_val(st, r);
    const tj_tensor *t = tj_opnd(st, r, 0)->tensor;
    if (!t || in->nlist != (uint32_t)t->rank || in->nargs != in->nlist + 1)
        return tj_interp_bad_ir(st, r, "needs one operand per axis of a tensor");
    view_axis axes[TJ_MAX_RANK];
    int nax = 0, oob = 0;
    int64_t base = 0, *tab = rv->work, *gather = NULL;
    uint32_t gather_len = 0;
    uint64_t count = 1;
    for (int a = 0; a < t->rank; a++) {
        const tj_rval *x = tj_opnd(st, r, (uint32_t)a + 1);
        int32_t kind = in->list[a];
        if (!x->data || !tj_dtype_is_int(x->dt) || (kind != TJ_VIEW_GATHER && x->n != 1))
            return tj_interp_bad_ir(st, r, "an axis operand is not an integer scalar or tile");
        if (kind == TJ_VIEW_INDEX) {
            int64_t c = tj_slot_to_i64(x->dt, x->data[0]);
            oob |= c < 0 || c >= t->shape[a];
            base += oob ? 0 : c * t->strides[a];
        } else if (kind > 0) {
            slice_table(tab, tj_slot_to_i64(x->dt, x->data[0]), (uint32_t)kind, t->shape[a], t->strides[a]);
            axes[nax++] = (view_axis){tab, (uint32_t)kind};
            count *= (uint32_t)kind; /* no overflow: checked against n below, each step */
            tab += kind;
        } else if (kind == TJ_VIEW_GATHER) {
            if (!gather) {
                gather = tab;
                gather_len = x->n;
                for (uint32_t g = 0; g < x->n; g++)
                    gather[g] = 0;
                axes[nax++] = (view_axis){gather, x->n};
                count *= x->n;
                tab += x->n;
            }
            if (x->n != gather_len)
                return tj_interp_bad_ir(st, r, "gather operands differ in shape");
            gather_table(gather, x, t->shape[a], t->strides[a]);
        } else {
            return tj_interp_bad_ir(st, r, "unknown axis kind");
        }
        if (count > rv->n)
            break;
    }
    if (count != rv->n)
        return tj_interp_bad_ir(st, r, "axes do not give the view's shape");
    if (oob) /* an index out of range: the whole view is */
        for (uint32_t i = 0; i < rv->n; i++)
            rv->off[i] = TJ_OOB;
    else
        expand(rv->off, base, axes, nax);
    rv->tensor = t;
    return 0;
}
