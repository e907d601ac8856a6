/* Emitting SIMT instructions: typed helpers with light folding, hoisted
 * and memoized constants and thread indices. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lower/lower.h"

typedef struct memo_ent {
    int kind;
    const void *p;
    int64_t a, b;
    tj_ref v;
} memo_ent;

struct lw_memo {
    memo_ent *tab;
    uint32_t cap, n;
};

static uint32_t memo_hash(int kind, const void *p, int64_t a, int64_t b)
{
    uint64_t h = (uint64_t)kind * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)(uintptr_t)p + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
    h ^= (uint64_t)a * 0xBF58476D1CE4E5B9ull + (h << 6) + (h >> 2);
    h ^= (uint64_t)b * 0x94D049BB133111EBull + (h << 6) + (h >> 2);
    return (uint32_t)(h ^ (h >> 32));
}

static memo_ent *memo_slot(lw_memo *m, int kind, const void *p, int64_t a, int64_t b)
{
    uint32_t i = memo_hash(kind, p, a, b) & (m->cap - 1);
    for (;; i = (i + 1) & (m->cap - 1)) {
        memo_ent *e = &m->tab[i];
        if (!e->kind || (e->kind == kind && e->p == p && e->a == a && e->b == b))
            return e;
    }
}

tj_ref lw_memo_get(lw *w, int kind, const void *p, int64_t a, int64_t b)
{
    if (!w->memo || !w->memo->cap)
        return TJ_NONE;
    memo_ent *e = memo_slot(w->memo, kind, p, a, b);
    return e->kind ? e->v : TJ_NONE;
}

void lw_memo_put(lw *w, int kind, const void *p, int64_t a, int64_t b, tj_ref v)
{
    lw_memo *m = w->memo;
    if (!m)
        m = w->memo = tj_alloc(w->c, sizeof *m);
    if (2 * (m->n + 1) > m->cap) {
        lw_memo old = *m;
        m->cap = old.cap ? old.cap * 2 : 256;
        m->tab = tj_alloc(w->c, sizeof *m->tab * m->cap);
        m->n = 0;
        for (uint32_t i = 0; i < old.cap; i++)
            if (old.tab[i].kind) {
                *memo_slot(m, old.tab[i].kind, old.tab[i].p, old.tab[i].a, old.tab[i].b) = old.tab[i];
                m->n++;
            }
    }
    memo_ent *e = memo_slot(m, kind, p, a, b);
    if (!e->kind)
        m->n++;
    *e = (memo_ent){kind, p, a, b, v};
}

static void report(lw *w, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (!w->err) /* the first error explains; what follows from it would not */
        tj_error_at(w->c, w->loc.line ? w->loc : w->src->loc, "lower-simt: @%s: %s", w->src->name, msg);
    w->err = 1;
}

void *lw_fail(lw *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(w, fmt, ap);
    va_end(ap);
    return NULL;
}

int lw_error(lw *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(w, fmt, ap);
    va_end(ap);
    return 1;
}

/* ---- instructions --------------------------------------------------------- */

tj_type lw_sty(lw *w, tj_dtype dt) { return tj_type_scalar(w->c, dt); }

tj_dtype lw_dt(const lw *w, tj_ref v) { return tj_type_get(w->c, w->dst->insts[v].type)->dtype; }

tj_ref lw_emit(lw *w, tj_op op, tj_type t, const tj_ref *args, uint32_t n)
{
    tj_ref r;
    if (w->producer) /* warp P may not store, copy, wait or multiply (lower/producer.c) */
        args = lw_producer_mask(w, op, args, n);
    if (w->hoisting) {
        r = tj_inst_new(w->dst, op, t, args, n);
        tj_block_insert(w->dst, w->entry, w->hoist_pos++, r);
    } else {
        r = tj_emit(w->dst, w->cur, op, t, args, n);
    }
    w->dst->insts[r].loc = w->loc;
    return r;
}

/* Emits into the prologue of the body, whatever the current block. */
static tj_ref hoist(lw *w, tj_op op, tj_type t, const tj_ref *args, uint32_t n)
{
    int was = w->hoisting;
    w->hoisting = 1;
    tj_ref r = lw_emit(w, op, t, args, n);
    w->hoisting = was;
    return r;
}

/* Wraps v to the width of an integer dtype (bool: != 0). */
static int64_t wrap_int(tj_dtype dt, int64_t v)
{
    int bits = tj_dtype_bits(dt);
    if (dt == TJ_DT_BOOL)
        return v != 0;
    if (bits >= 64)
        return v;
    uint64_t mask = ((uint64_t)1 << bits) - 1, u = (uint64_t)v & mask;
    if (tj_dtype_is_signed(dt) && (u >> (bits - 1)))
        u |= ~mask;
    return (int64_t)u;
}

tj_ref lw_const_int(lw *w, tj_dtype dt, int64_t v)
{
    if (tj_dtype_is_float(dt))
        return lw_const_float(w, dt, (double)v);
    v = wrap_int(dt, v);
    tj_ref r = lw_memo_get(w, LW_MEMO_CONST_I, NULL, dt, v);
    if (!r) {
        r = hoist(w, TJ_OP_CONST, lw_sty(w, dt), NULL, 0);
        w->dst->insts[r].imm = v;
        lw_memo_put(w, LW_MEMO_CONST_I, NULL, dt, v, r);
    }
    return r;
}

tj_ref lw_const_float(lw *w, tj_dtype dt, double v)
{
    int64_t bits;
    memcpy(&bits, &v, sizeof bits);
    tj_ref r = lw_memo_get(w, LW_MEMO_CONST_F, NULL, dt, bits);
    if (!r) {
        r = hoist(w, TJ_OP_CONST, lw_sty(w, dt), NULL, 0);
        w->dst->insts[r].fimm = v;
        lw_memo_put(w, LW_MEMO_CONST_F, NULL, dt, bits, r);
    }
    return r;
}

int lw_is_const(const lw *w, tj_ref v, int64_t *value)
{
    const tj_inst *in = &w->dst->insts[v];
    if (in->op != TJ_OP_CONST || tj_dtype_is_float(lw_dt(w, v)))
        return 0;
    *value = in->imm;
    return 1;
}

tj_ref lw_op1(lw *w, tj_op op, tj_ref a)
{
    return lw_emit(w, op, w->dst->insts[a].type, &a, 1);
}

/* Folds integer arithmetic on constants and the identities x+0, x*1. */
static int fold2(lw *w, tj_op op, tj_ref a, tj_ref b, tj_ref *out)
{
    int64_t x, y;
    tj_dtype dt = lw_dt(w, a);
    int ca = lw_is_const(w, a, &x), cb = lw_is_const(w, b, &y);
    if (!tj_dtype_is_int(dt))
        return 0;
    if (ca && cb && (op == TJ_OP_ADD || op == TJ_OP_SUB || op == TJ_OP_MUL)) {
        uint64_t u = op == TJ_OP_ADD ? (uint64_t)x + (uint64_t)y
                     : op == TJ_OP_SUB ? (uint64_t)x - (uint64_t)y : (uint64_t)x * (uint64_t)y;
        *out = lw_const_int(w, dt, (int64_t)u);
        return 1;
    }
    if ((op == TJ_OP_ADD || op == TJ_OP_SUB || op == TJ_OP_SHL || op == TJ_OP_SHR) && cb && y == 0) {
        *out = a;
        return 1;
    }
    if (op == TJ_OP_ADD && ca && x == 0) {
        *out = b;
        return 1;
    }
    if (op == TJ_OP_MUL && ((cb && y == 1) || (ca && x == 1))) {
        *out = cb && y == 1 ? a : b;
        return 1;
    }
    if (op == TJ_OP_MUL && ((cb && y == 0) || (ca && x == 0))) {
        *out = lw_const_int(w, dt, 0);
        return 1;
    }
    return 0;
}

tj_ref lw_op2(lw *w, tj_op op, tj_ref a, tj_ref b)
{
    tj_ref out, args[2] = {a, b};
    if (fold2(w, op, a, b, &out))
        return out;
    tj_type t = (tj_op_get(op)->flags & TJ_OPF_CMP) ? lw_sty(w, TJ_DT_BOOL) : w->dst->insts[a].type;
    return lw_emit(w, op, t, args, 2);
}

tj_ref lw_select(lw *w, tj_ref cond, tj_ref a, tj_ref b)
{
    int64_t c;
    if (a == b)
        return a;
    if (lw_is_const(w, cond, &c))
        return c ? a : b;
    tj_ref args[3] = {cond, a, b};
    return lw_emit(w, TJ_OP_SELECT, w->dst->insts[a].type, args, 3);
}

tj_ref lw_cast(lw *w, tj_ref a, tj_dtype dt)
{
    int64_t c;
    tj_dtype from = lw_dt(w, a);
    if (from == dt)
        return a;
    if (lw_is_const(w, a, &c) && (tj_dtype_is_int(dt) || dt == TJ_DT_BOOL) && from != TJ_DT_U64)
        return lw_const_int(w, dt, c);
    return lw_emit(w, TJ_OP_CAST, lw_sty(w, dt), &a, 1);
}

tj_ref lw_and(lw *w, tj_ref a, tj_ref b)
{
    int64_t c;
    if (!a || !b)
        return a ? a : b;
    if (lw_is_const(w, a, &c))
        return c ? b : a;
    if (lw_is_const(w, b, &c))
        return c ? a : b;
    return a == b ? a : lw_op2(w, TJ_OP_AND, a, b);
}

tj_ref lw_or(lw *w, tj_ref a, tj_ref b)
{
    int64_t c;
    if (lw_is_const(w, a, &c))
        return c ? a : b;
    if (lw_is_const(w, b, &c))
        return c ? b : a;
    return a == b ? a : lw_op2(w, TJ_OP_OR, a, b);
}

tj_ref lw_not(lw *w, tj_ref a)
{
    int64_t c;
    if (lw_is_const(w, a, &c))
        return lw_const_int(w, TJ_DT_BOOL, !c);
    return lw_op1(w, TJ_OP_NOT, a);
}

tj_ref lw_add_imm(lw *w, tj_ref a, int64_t imm)
{
    return imm ? lw_op2(w, TJ_OP_ADD, a, lw_const_int(w, lw_dt(w, a), imm)) : a;
}

tj_ref lw_mul_imm(lw *w, tj_ref a, int64_t imm)
{
    return imm == 1 ? a : lw_op2(w, TJ_OP_MUL, a, lw_const_int(w, lw_dt(w, a), imm));
}

/* ---- warp shuffles: 32- and 64-bit values move; narrower ones widen ---- */

static tj_dtype shuffle_dtype(tj_dtype dt)
{
    switch (dt) {
    case TJ_DT_BOOL:
    case TJ_DT_U8:
    case TJ_DT_U16: return TJ_DT_U32;
    case TJ_DT_I8:
    case TJ_DT_I16: return TJ_DT_I32;
    case TJ_DT_F16:
    case TJ_DT_BF16: return TJ_DT_F32;
    default: return dt;
    }
}

static tj_ref shuffle(lw *w, tj_op op, tj_ref v, tj_ref lane, uint32_t imm)
{
    tj_dtype dt = lw_dt(w, v), wide = shuffle_dtype(dt);
    tj_ref args[2] = {lw_cast(w, v, wide), lane};
    tj_ref r = lw_emit(w, op, lw_sty(w, wide), args, lane ? 2 : 1);
    w->dst->insts[r].imm = imm;
    if (dt == TJ_DT_BOOL)
        return lw_op2(w, TJ_OP_NE, r, lw_const_int(w, wide, 0));
    return lw_cast(w, r, dt);
}

tj_ref lw_shfl_xor(lw *w, tj_ref v, uint32_t mask) { return shuffle(w, TJ_OP_SHFL_XOR, v, TJ_NONE, mask); }
tj_ref lw_shfl_up(lw *w, tj_ref v, uint32_t delta) { return shuffle(w, TJ_OP_SHFL_UP, v, TJ_NONE, delta); }
tj_ref lw_shfl_idx(lw *w, tj_ref v, tj_ref lane) { return shuffle(w, TJ_OP_SHFL_IDX, v, lane, 0); }

/* ---- thread indices (hoisted) ------------------------------------------------ */

tj_ref lw_raw_tid(lw *w)
{
    tj_ref r = lw_memo_get(w, LW_MEMO_TID, NULL, LW_TID_RAW, 0);
    if (!r) {
        r = hoist(w, TJ_OP_TID, lw_sty(w, TJ_DT_I32), NULL, 0);
        lw_memo_put(w, LW_MEMO_TID, NULL, LW_TID_RAW, 0, r);
    }
    return r;
}

/* With a producer warp, tid & (32 P - 1): warp P is a replica of warp 0
 * (lower/producer.c). */
tj_ref lw_tid(lw *w)
{
    tj_ref r = lw_memo_get(w, LW_MEMO_TID, NULL, 0, 0);
    if (!r && !w->producer) { /* kept under lw_tid's key too: lw_producer_plan sees it was taken */
        r = lw_raw_tid(w);
        lw_memo_put(w, LW_MEMO_TID, NULL, 0, 0, r);
    }
    if (!r) {
        int was = w->hoisting;
        w->hoisting = 1;
        r = lw_op2(w, TJ_OP_AND, lw_raw_tid(w), lw_const_int(w, TJ_DT_I32, w->nthreads - 1));
        w->hoisting = was;
        lw_memo_put(w, LW_MEMO_TID, NULL, 0, 0, r);
    }
    return r;
}

static tj_ref tid_part(lw *w, int which)
{
    tj_ref r = lw_memo_get(w, LW_MEMO_TID, NULL, which, 0);
    if (!r) {
        int was = w->hoisting;
        w->hoisting = 1;
        tj_ref t = lw_tid(w);
        r = which == 1 ? lw_op2(w, TJ_OP_AND, t, lw_const_int(w, TJ_DT_I32, TJ_WARP_SIZE - 1))
                       : lw_op2(w, TJ_OP_SHR, t, lw_const_int(w, TJ_DT_I32, 5));
        w->hoisting = was;
        lw_memo_put(w, LW_MEMO_TID, NULL, which, 0, r);
    }
    return r;
}

tj_ref lw_lane(lw *w) { return tid_part(w, 1); }
tj_ref lw_warp(lw *w) { return tid_part(w, 2); }
