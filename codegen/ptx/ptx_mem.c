/* Loads and stores of global and shared memory, scalar or vector.
 *
 * A vector of w elements is accessed in chunks of at most 16 bytes: typed
 * ld/st.v2/.v4 for 4- and 8-byte elements; 32-bit words (packed and
 * unpacked in registers) for 1- and 2-byte ones; one access per element
 * when w is not a power of two. A vector access assumes the address is
 * aligned to min(w * size, 16) bytes (the lowering guarantees it).
 * Predicated loads set the destination to `other` (or 0) first. */
#include <stdio.h>

#include "codegen/ptx/ptx.h"

typedef struct mem_access {
    const char *space; /* "global" or "shared" */
    ptx_reg addr;      /* u64 for global, u32 for shared */
    ptx_reg pred;
    int has_pred;
    tj_dtype dt;
    uint32_t w;
    int size; /* bytes per element */
} mem_access;

typedef enum chunk_kind { CHUNK_TYPED, CHUNK_WORDS, CHUNK_SCALARS } chunk_kind;

static chunk_kind plan(const mem_access *m)
{
    if (m->w & (m->w - 1))
        return CHUNK_SCALARS;
    if (m->size >= 4)
        return CHUNK_TYPED;
    return (m->w * (uint32_t)m->size) % 4 == 0 ? CHUNK_WORDS : CHUNK_SCALARS;
}

typedef struct addr_text {
    char s[40];
} addr_text;

static addr_text address(const mem_access *m, uint32_t offset)
{
    addr_text t;
    if (offset)
        snprintf(t.s, sizeof t.s, "[%s+%u]", RN(m->addr), offset);
    else
        snprintf(t.s, sizeof t.s, "[%s]", RN(m->addr));
    return t;
}

typedef struct guard_text {
    char s[40];
} guard_text;

/* "@%p3 " or "". */
static guard_text guard(const mem_access *m)
{
    guard_text g = {{0}};
    if (m->has_pred)
        snprintf(g.s, sizeof g.s, "@%s ", RN(m->pred));
    return g;
}

void px_reg_list(char *buf, size_t cap, const ptx_reg *r, uint32_t n)
{
    size_t len = 0;
    if (n > 1)
        len += (size_t)snprintf(buf + len, cap - len, "{");
    for (uint32_t i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", RN(r[i]));
    if (n > 1 && len < cap)
        snprintf(buf + len, cap - len, "}");
}

static void vec_suffix(char *buf, size_t cap, uint32_t n)
{
    if (n > 1)
        snprintf(buf, cap, ".v%u", n);
    else
        buf[0] = 0;
}

/* ---- word packing of 1- and 2-byte elements ---------------------------------- */

static void unpack_word(ptx_emitter *e, const mem_access *m, ptx_reg word, const ptx_reg *d)
{
    uint32_t per = 4 / (uint32_t)m->size;
    if (d[0].cls == PX_B16) {
        px_ins(e, "mov.b32 {%s, %s}, %s", RN(d[0]), RN(d[1]), RN(word));
        return;
    }
    const char *ext = tj_dtype_is_signed(m->dt) ? "s32" : "u32";
    for (uint32_t k = 0; k < per; k++) {
        unsigned pos = k * 8u * (unsigned)m->size, len = 8u * (unsigned)m->size;
        if (m->dt == TJ_DT_BOOL) {
            ptx_reg t = px_tmp(e, PX_B32);
            px_ins(e, "bfe.u32 %s, %s, %u, 8", RN(t), RN(word), pos);
            px_ins(e, "setp.ne.u32 %s, %s, 0", RN(d[k]), RN(t));
        } else {
            px_ins(e, "bfe.%s %s, %s, %u, %u", ext, RN(d[k]), RN(word), pos, len);
        }
    }
}

static void pack_word(ptx_emitter *e, const mem_access *m, ptx_reg word, const ptx_reg *v)
{
    uint32_t per = 4 / (uint32_t)m->size;
    if (v[0].cls == PX_B16) {
        px_ins(e, "mov.b32 %s, {%s, %s}", RN(word), RN(v[0]), RN(v[1]));
        return;
    }
    for (uint32_t k = 0; k < per; k++) {
        ptx_reg x = v[k];
        if (m->dt == TJ_DT_BOOL) {
            x = px_tmp(e, PX_B32);
            px_ins(e, "selp.u32 %s, 1, 0, %s", RN(x), RN(v[k]));
        }
        if (k == 0)
            px_mov(e, word, x);
        else
            px_ins(e, "bfi.b32 %s, %s, %s, %u, %u", RN(word), RN(x), RN(word), k * 8u * (unsigned)m->size,
                   8u * (unsigned)m->size);
    }
}

/* ---- loads ---------------------------------------------------------------------- */

static void load_scalar(ptx_emitter *e, const mem_access *m, ptx_reg d, uint32_t offset)
{
    addr_text a = address(m, offset);
    if (m->dt != TJ_DT_BOOL) {
        px_ins(e, "%sld.%s.%s %s, %s", guard(m).s, m->space, px_mem_type(m->dt), RN(d), a.s);
        return;
    }
    ptx_reg t = px_tmp(e, PX_B32);
    if (m->has_pred)
        px_zero(e, t);
    px_ins(e, "%sld.%s.u8 %s, %s", guard(m).s, m->space, RN(t), a.s);
    px_ins(e, "setp.ne.u32 %s, %s, 0", RN(d), RN(t));
}

static void load_chunks(ptx_emitter *e, const mem_access *m, const ptx_reg *d)
{
    char regs[160], vec[8];
    chunk_kind kind = plan(m);
    if (kind == CHUNK_SCALARS) {
        for (uint32_t i = 0; i < m->w; i++)
            load_scalar(e, m, d[i], i * (uint32_t)m->size);
        return;
    }
    uint32_t per = kind == CHUNK_TYPED ? 1 : 4 / (uint32_t)m->size; /* elements per register */
    uint32_t unit = kind == CHUNK_TYPED ? (uint32_t)m->size : 4;    /* bytes per register */
    uint32_t nregs = m->w / per, max = 16 / unit;
    for (uint32_t first = 0; first < nregs;) {
        uint32_t n = nregs - first < max ? nregs - first : max;
        ptx_reg words[4];
        for (uint32_t j = 0; j < n; j++) {
            words[j] = kind == CHUNK_TYPED ? d[first + j] : px_tmp(e, PX_B32);
            if (kind == CHUNK_WORDS && m->has_pred)
                px_zero(e, words[j]);
        }
        px_reg_list(regs, sizeof regs, words, n);
        vec_suffix(vec, sizeof vec, n);
        px_ins(e, "%sld.%s%s.%s %s, %s", guard(m).s, m->space, vec, kind == CHUNK_TYPED ? px_mem_type(m->dt) : "b32",
               regs, address(m, first * unit).s);
        if (kind == CHUNK_WORDS)
            for (uint32_t j = 0; j < n; j++)
                unpack_word(e, m, words[j], d + (first + j) * per);
        first += n;
    }
}

/* ---- stores ---------------------------------------------------------------------- */

static void store_chunks(ptx_emitter *e, const mem_access *m, const ptx_reg *v)
{
    char regs[160], vec[8];
    chunk_kind kind = plan(m);
    if (kind == CHUNK_SCALARS) {
        for (uint32_t i = 0; i < m->w; i++) {
            ptx_reg x = v[i];
            if (m->dt == TJ_DT_BOOL) {
                x = px_tmp(e, PX_B32);
                px_ins(e, "selp.u32 %s, 1, 0, %s", RN(x), RN(v[i]));
            }
            px_ins(e, "%sst.%s.%s %s, %s", guard(m).s, m->space, px_mem_type(m->dt),
                   address(m, i * (uint32_t)m->size).s, RN(x));
        }
        return;
    }
    uint32_t per = kind == CHUNK_TYPED ? 1 : 4 / (uint32_t)m->size;
    uint32_t unit = kind == CHUNK_TYPED ? (uint32_t)m->size : 4;
    uint32_t nregs = m->w / per, max = 16 / unit;
    for (uint32_t first = 0; first < nregs;) {
        uint32_t n = nregs - first < max ? nregs - first : max;
        ptx_reg words[4];
        for (uint32_t j = 0; j < n; j++) {
            words[j] = kind == CHUNK_TYPED ? v[first + j] : px_tmp(e, PX_B32);
            if (kind == CHUNK_WORDS)
                pack_word(e, m, words[j], v + (first + j) * per);
        }
        px_reg_list(regs, sizeof regs, words, n);
        vec_suffix(vec, sizeof vec, n);
        px_ins(e, "%sst.%s%s.%s %s, %s", guard(m).s, m->space, vec, kind == CHUNK_TYPED ? px_mem_type(m->dt) : "b32",
               address(m, first * unit).s, regs);
        first += n;
    }
}

/* ---- the ops ------------------------------------------------------------------------ */

/* Checks operand a is a scalar of one of the two dtypes (the second may be
 * TJ_DT_INVALID); absent is allowed when `optional`. */
static int scalar_operand(ptx_emitter *e, tj_ref r, uint32_t a, tj_dtype want, tj_dtype also, int optional)
{
    const tj_inst *in = px_inst(e, r);
    if (a >= in->nargs || !in->args[a]) {
        if (optional && a < in->nargs)
            return 0;
        return px_fail(e, r, "operand %u is missing", a);
    }
    tj_dtype dt;
    if (px_elem_type(e, px_inst(e, in->args[a])->type, &dt) != 1 || (dt != want && dt != also))
        return px_fail(e, r, "operand %u must be a %s scalar", a, tj_dtype_name(want));
    return 0;
}

static int access_of(ptx_emitter *e, tj_ref r, tj_type value_type, const char *space, mem_access *m)
{
    m->space = space;
    int w = px_elem_type(e, value_type, &m->dt);
    if (w <= 0)
        return px_fail(e, r, "memory holds scalars or vectors");
    m->w = (uint32_t)w;
    m->size = tj_dtype_size(m->dt);
    return 0;
}

static ptx_reg *registers_of(ptx_emitter *e, tj_ref v)
{
    ptx_reg *out = tj_alloc(e->c, sizeof *out * e->ncomp[v]);
    for (uint32_t i = 0; i < e->ncomp[v]; i++)
        out[i] = px_val(e, v, i);
    return out;
}

int px_emit_load_global(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    mem_access m = {0};
    if (in->nargs != 3 || access_of(e, r, in->type, "global", &m) ||
        scalar_operand(e, r, 0, TJ_DT_U64, TJ_DT_INVALID, 0) || scalar_operand(e, r, 1, TJ_DT_BOOL, TJ_DT_INVALID, 1))
        return e->failed ? -1 : px_fail(e, r, "ld_global takes an address, a predicate and a default");
    tj_ref other = in->args[2];
    if (other && px_operand_check(e, r, 2, m.w, m.dt))
        return -1;
    if (px_define(e, r, in->type))
        return -1;
    m.addr = px_val(e, in->args[0], 0);
    m.has_pred = in->args[1] != TJ_NONE;
    if (m.has_pred)
        m.pred = px_val(e, in->args[1], 0);
    ptx_reg *d = registers_of(e, r);
    int words = plan(&m) == CHUNK_WORDS || m.dt == TJ_DT_BOOL;
    /* Typed loads leave the default in place; packed words and bools are
     * loaded as 0 and the default selected after. */
    if (m.has_pred && !words)
        for (uint32_t i = 0; i < m.w; i++) {
            if (other)
                px_mov(e, d[i], px_operand(e, r, 2, i));
            else
                px_zero(e, d[i]);
        }
    load_chunks(e, &m, d);
    if (m.has_pred && words && other)
        for (uint32_t i = 0; i < m.w; i++)
            px_select(e, d[i], m.pred, d[i], px_operand(e, r, 2, i));
    return 0;
}

int px_emit_store_global(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    mem_access m = {0};
    if (in->nargs != 3 || !in->args[1] || access_of(e, r, px_inst(e, in->args[1])->type, "global", &m) ||
        scalar_operand(e, r, 0, TJ_DT_U64, TJ_DT_INVALID, 0) || scalar_operand(e, r, 2, TJ_DT_BOOL, TJ_DT_INVALID, 1))
        return e->failed ? -1 : px_fail(e, r, "st_global takes an address, a value and a predicate");
    m.addr = px_val(e, in->args[0], 0);
    m.has_pred = in->args[2] != TJ_NONE;
    if (m.has_pred)
        m.pred = px_val(e, in->args[2], 0);
    e->defined[r] = 1;
    store_chunks(e, &m, registers_of(e, in->args[1]));
    return 0;
}

/* The u32 address of a shared-memory operand: tj_smem + offset. */
static int shared_address(ptx_emitter *e, tj_ref r, mem_access *m)
{
    if (scalar_operand(e, r, 0, TJ_DT_U32, TJ_DT_I32, 0))
        return -1;
    m->addr = px_tmp(e, PX_B32);
    px_ins(e, "add.u32 %s, %s, %s", RN(m->addr), RN(e->smem_base), RN(px_val(e, px_inst(e, r)->args[0], 0)));
    return 0;
}

int px_emit_load_shared(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    mem_access m = {0};
    if (in->nargs != 1 || access_of(e, r, in->type, "shared", &m) || shared_address(e, r, &m) ||
        px_define(e, r, in->type))
        return e->failed ? -1 : px_fail(e, r, "ld_shared takes an address");
    load_chunks(e, &m, registers_of(e, r));
    return 0;
}

int px_emit_store_shared(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    mem_access m = {0};
    if (in->nargs != 2 || !in->args[1] || access_of(e, r, px_inst(e, in->args[1])->type, "shared", &m) ||
        shared_address(e, r, &m))
        return e->failed ? -1 : px_fail(e, r, "st_shared takes an address and a value");
    e->defined[r] = 1;
    store_chunks(e, &m, registers_of(e, in->args[1]));
    return 0;
}
