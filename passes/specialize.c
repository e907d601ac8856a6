/* The specialize pass (Tile IR): sizes known at compile time (literal dims
 * and k->spec) become constants, and every VIEW records which bounds checks
 * are dead and how coarse the rest are (TJ_VIEW_* flags, docs/simt.md). */
#include "passes/facts.h"
#include "tilejit/passes.h"

enum { MAX_CHUNK_LOG2 = 15 };

static void fold_dims(tj_kernel *k)
{
    for (tj_ref r = 1; r < k->ninsts; r++) {
        tj_inst *in = &k->insts[r];
        uint32_t p;
        int64_t v;
        if (in->op != TJ_OP_DIM || in->nargs != 1 || !tj_param_index(k, in->args[0], &p) ||
            !tj_dim_const(k, p, (int)in->imm, &v) || v < 0 || v > INT32_MAX)
            continue;
        in->op = TJ_OP_CONST; /* in place: every use keeps its reference */
        in->nargs = 0;
        in->imm = v;
        in->fimm = 0;
    }
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Slice [start, start + e) lies inside the tensor along axis a. */
static int slice_in_bounds(const tj_kernel *k, const int64_t *div, tj_ref start, int64_t e, uint32_t p, int a)
{
    int64_t c, size;
    if (tj_eval_const(k, start, &c))
        return tj_dim_const(k, p, a, &size) && c >= 0 && c + e <= size;
    /* 0 <= start < size, both multiples of e: start + e <= size */
    int64_t m = div[start];
    return tj_below_dim(k, start, p, a) && (m == 0 || m % e == 0) && tj_dim_divisor(k, p, a) % e == 0;
}

static uint32_t chunk_log2(const tj_kernel *k, const int64_t *div, tj_ref start, uint32_t p, int a)
{
    int64_t m = div[start] ? div[start] : (int64_t)1 << MAX_CHUNK_LOG2;
    int64_t g = gcd64(m, tj_dim_divisor(k, p, a));
    uint32_t n = 0;
    while (n < MAX_CHUNK_LOG2 && g % ((int64_t)2 << n) == 0)
        n++;
    return n;
}

static uint32_t view_flags(const tj_kernel *k, const int64_t *div, const tj_inst *in)
{
    uint32_t p, flags = 0;
    if (!tj_param_index(k, in->args[0], &p) || in->nlist + 1 != in->nargs)
        return 0;
    for (uint32_t a = 0; a < in->nlist && a < TJ_MAX_RANK; a++) {
        int32_t kind = in->list[a];
        tj_ref opnd = in->args[a + 1];
        if (kind == TJ_VIEW_INDEX && tj_below_dim(k, opnd, p, (int)a))
            flags |= 1u << a;
        if (kind > 0 && slice_in_bounds(k, div, opnd, kind, p, (int)a))
            flags |= 1u << a;
        if (kind > 0 && a + 1 == in->nlist)
            flags |= chunk_log2(k, div, opnd, p, (int)a) << TJ_VIEW_CHUNK_SHIFT;
    }
    return flags;
}

int tj_pass_specialize(tj_kernel *k)
{
    if (!k)
        return 1;
    if (k->level != TJ_LEVEL_TILE) {
        tj_error(k->ctx, "specialize: kernel '%s' is not Tile IR", k->name);
        return 1;
    }
    fold_dims(k);
    const int64_t *div = tj_divisibility(k);
    for (tj_ref r = 1; r < k->ninsts; r++)
        if (k->insts[r].op == TJ_OP_VIEW && k->insts[r].block)
            k->insts[r].flags = view_flags(k, div, &k->insts[r]);
    return 0;
}
