/* Addresses, and loads and stores of device and threadgroup memory.
 *
 * A global address is a byte offset from one tensor's base (msl.h);
 * `tensor_ptr %t` starts one at 0, add/sub of an integer moves it, select
 * picks between two of one tensor. Any other use of an address as a
 * number is rejected: MSL cannot turn an integer back into a pointer.
 *
 * A vector of w elements is accessed in chunks of the element's MSL
 * vector type (2 or 4 elements, at most 16 bytes) when w is a power of
 * two, else element by element; the lowering guarantees the alignment
 * (min(w * size, 16) bytes). Predicated loads are `p ? *ptr : other`, so a
 * false predicate reads nothing. Booleans are one byte in memory. */
#include "codegen/msl/msl.h"

int ms_is_address(const msl_emitter *e, tj_ref v, int *param)
{
    if (!v || !e->addr[v])
        return 0;
    *param = e->addr[v] - 1;
    return 1;
}

msl_str ms_device_ptr(const msl_emitter *e, tj_ref addr)
{
    return ms_fmt("(b%d + %s)", e->addr[addr] - 1, ms_var(e, addr, 0).s);
}

int ms_emit_address(msl_emitter *e, tj_ref r)
{
    const tj_inst *in = ms_inst(e, r);
    if (in->nargs != (in->op == TJ_OP_SELECT ? 3u : 2u))
        return ms_fail(e, r, "wrong operand count");
    int pa = -1, pb = -1;
    int a_addr = ms_is_address(e, in->args[in->op == TJ_OP_SELECT ? 1 : 0], &pa);
    int b_addr = ms_is_address(e, in->args[in->op == TJ_OP_SELECT ? 2 : 1], &pb);
    tj_dtype dt;
    if (ms_elem_type(e, in->type, &dt) != 1 || dt != TJ_DT_U64)
        return ms_fail(e, r, "a global address must stay a u64 scalar");
    if (ms_define(e, r, in->type))
        return -1;
    msl_str d = ms_var(e, r, 0);
    if (in->op == TJ_OP_SELECT) {
        if (!a_addr || !b_addr || pa != pb)
            return ms_fail(e, r, "select between addresses of different tensors (not expressible in MSL)");
        if (ms_operand_check(e, r, 0, 1, TJ_DT_BOOL))
            return -1;
        ms_line(e, "ulong %s = %s ? %s : %s;", d.s, ms_arg(e, r, 0, 0).s, ms_arg(e, r, 1, 0).s, ms_arg(e, r, 2, 0).s);
    } else if (a_addr && b_addr) {
        return ms_fail(e, r, "'%s' of two global addresses (not expressible in MSL)", tj_op_get(in->op)->name);
    } else if (in->op == TJ_OP_SUB && b_addr) {
        return ms_fail(e, r, "an integer minus a global address (not expressible in MSL)");
    } else {
        ms_line(e, "ulong %s = %s %c %s;", d.s, ms_arg(e, r, 0, 0).s, in->op == TJ_OP_SUB ? '-' : '+',
                ms_arg(e, r, 1, 0).s);
    }
    e->addr[r] = 1 + (a_addr ? pa : pb);
    return 0;
}

/* ---- access plans ----------------------------------------------------------- */

typedef struct mem_access {
    tj_dtype dt;
    uint32_t w;     /* elements */
    uint32_t chunk; /* elements per access: 1, 2 or 4 */
    const char *space; /* "device" or "threadgroup" */
    msl_str base;   /* byte pointer expression */
} mem_access;

static int plan(msl_emitter *e, tj_ref r, tj_type value_type, mem_access *m)
{
    int w = ms_elem_type(e, value_type, &m->dt);
    if (w <= 0)
        return ms_fail(e, r, "memory holds scalars or vectors");
    if (ms_check_dtype(e, r, m->dt))
        return -1;
    m->w = (uint32_t)w;
    m->chunk = (m->w & (m->w - 1)) ? 1 : m->w < 4 ? m->w : 4;
    return 0;
}

/* The MSL type of one chunk: "float", "float4", "uchar2" ... */
static msl_str chunk_type(const mem_access *m)
{
    if (m->chunk == 1)
        return ms_fmt("%s", ms_mem_type(m->dt));
    return ms_fmt("%s%u", ms_mem_type(m->dt), m->chunk);
}

/* "*(device const float4 *)(b0 + v12 + 16)" */
static msl_str deref(const mem_access *m, int is_const, uint32_t first)
{
    uint32_t bytes = first * (uint32_t)tj_dtype_size(m->dt);
    msl_str ct = chunk_type(m);
    if (bytes)
        return ms_fmt("*(%s %s%s *)(%s + %u)", m->space, is_const ? "const " : "", ct.s, m->base.s, bytes);
    return ms_fmt("*(%s %s%s *)%s", m->space, is_const ? "const " : "", ct.s, m->base.s);
}

static const char *const lanes = "xyzw";

/* A loaded element in its variable type (bytes of bools compared). */
static msl_str from_memory(const mem_access *m, const char *x)
{
    return m->dt == TJ_DT_BOOL ? ms_fmt("(%s) != 0", x) : ms_fmt("%s", x);
}

static msl_str to_memory(const mem_access *m, const char *x)
{
    return m->dt == TJ_DT_BOOL ? ms_fmt("uchar(%s)", x) : ms_fmt("%s", x);
}

/* Loads r (w elements) from m; `pred` and `other` (TJ_NONE: none). */
static void load(msl_emitter *e, tj_ref r, const mem_access *m, tj_ref pred, tj_ref other)
{
    const tj_inst *in = ms_inst(e, r);
    for (uint32_t first = 0; first < m->w; first += m->chunk) {
        msl_str src = deref(m, 1, first), ct = chunk_type(m);
        msl_str val = src;
        if (pred) { /* the default, chunk-shaped: other's elements, or a zero splat */
            msl_str dflt = ms_fmt("%s(%s", ct.s, m->dt == TJ_DT_BOOL ? "uchar(0)" : ms_zero(m->dt).s);
            for (uint32_t j = 0; other && j < m->chunk; j++) {
                msl_str o = to_memory(m, ms_arg(e, r, 2, first + j).s);
                msl_str next = j ? ms_fmt("%s, %s", dflt.s, o.s) : ms_fmt("%s(%s", ct.s, o.s);
                dflt = next;
            }
            val = ms_fmt("%s ? %s : %s)", ms_var(e, in->args[1], 0).s, src.s, dflt.s);
        }
        if (m->chunk == 1) {
            ms_line(e, "%s %s = %s;", ms_type(m->dt), ms_var(e, r, first).s, from_memory(m, val.s).s);
            continue;
        }
        msl_str t = ms_tmp(e);
        ms_line(e, "%s %s = %s;", ct.s, t.s, val.s);
        for (uint32_t j = 0; j < m->chunk; j++)
            ms_line(e, "%s %s = %s;", ms_type(m->dt), ms_var(e, r, first + j).s,
                    from_memory(m, ms_fmt("%s.%c", t.s, lanes[j]).s).s);
    }
}

/* Stores the components of value v to m. */
static void store(msl_emitter *e, tj_ref v, const mem_access *m)
{
    for (uint32_t first = 0; first < m->w; first += m->chunk) {
        msl_str dst = deref(m, 0, first);
        if (m->chunk == 1) {
            ms_line(e, "%s = %s;", dst.s, to_memory(m, ms_var(e, v, first).s).s);
            continue;
        }
        msl_str val = ms_fmt("%s(", chunk_type(m).s);
        for (uint32_t j = 0; j < m->chunk; j++) {
            msl_str next = ms_fmt("%s%s%s", val.s, j ? ", " : "", to_memory(m, ms_var(e, v, first + j).s).s);
            val = next;
        }
        ms_line(e, "%s = %s);", dst.s, val.s);
    }
}

/* ---- the ops ------------------------------------------------------------------ */

/* Operand a of r: a scalar of dtype `want`, or absent when `optional`. */
static int scalar_operand(msl_emitter *e, tj_ref r, uint32_t a, tj_dtype want, int optional)
{
    const tj_inst *in = ms_inst(e, r);
    if (a >= in->nargs || !in->args[a])
        return optional && a < in->nargs ? 0 : ms_fail(e, r, "operand %u is missing", a);
    tj_dtype dt;
    if (ms_elem_type(e, ms_inst(e, in->args[a])->type, &dt) != 1 || dt != want)
        return ms_fail(e, r, "operand %u must be a %s scalar", a, tj_dtype_name(want));
    return 0;
}

static int global_address(msl_emitter *e, tj_ref r, mem_access *m)
{
    int p;
    tj_ref a = ms_inst(e, r)->args[0];
    if (!ms_is_address(e, a, &p))
        return ms_fail(e, r, "the address does not derive from a tensor_ptr (MSL needs the tensor it points into)");
    m->space = "device";
    m->base = ms_device_ptr(e, a);
    return 0;
}

int ms_emit_load_global(msl_emitter *e, tj_ref r)
{
    const tj_inst *in = ms_inst(e, r);
    mem_access m = {0};
    if (in->nargs != 3 || plan(e, r, in->type, &m) || global_address(e, r, &m) ||
        scalar_operand(e, r, 1, TJ_DT_BOOL, 1))
        return e->failed ? -1 : ms_fail(e, r, "ld_global takes an address, a predicate and a default");
    if (in->args[2] && ms_operand_check(e, r, 2, m.w, m.dt))
        return -1;
    if (ms_define(e, r, in->type))
        return -1;
    load(e, r, &m, in->args[1], in->args[2]);
    return 0;
}

int ms_emit_store_global(msl_emitter *e, tj_ref r)
{
    const tj_inst *in = ms_inst(e, r);
    mem_access m = {0};
    if (in->nargs != 3 || !in->args[1] || plan(e, r, ms_inst(e, in->args[1])->type, &m) ||
        global_address(e, r, &m) || scalar_operand(e, r, 2, TJ_DT_BOOL, 1))
        return e->failed ? -1 : ms_fail(e, r, "st_global takes an address, a value and a predicate");
    if (ms_operand_check(e, r, 1, m.w, m.dt))
        return -1;
    e->defined[r] = 1;
    if (!in->args[2]) {
        store(e, in->args[1], &m);
        return 0;
    }
    ms_line(e, "if (%s) {", ms_var(e, in->args[2], 0).s);
    e->indent++;
    store(e, in->args[1], &m);
    e->indent--;
    ms_line(e, "}");
    return 0;
}

static int shared_address(msl_emitter *e, tj_ref r, mem_access *m)
{
    if (scalar_operand(e, r, 0, TJ_DT_U32, 0))
        return -1;
    m->space = "threadgroup";
    m->base = ms_fmt("(tj_smem + %s)", ms_var(e, ms_inst(e, r)->args[0], 0).s);
    return 0;
}

int ms_emit_load_shared(msl_emitter *e, tj_ref r)
{
    const tj_inst *in = ms_inst(e, r);
    mem_access m = {0};
    if (in->nargs != 1 || plan(e, r, in->type, &m) || shared_address(e, r, &m) || ms_define(e, r, in->type))
        return e->failed ? -1 : ms_fail(e, r, "ld_shared takes an address");
    load(e, r, &m, TJ_NONE, TJ_NONE);
    return 0;
}

int ms_emit_store_shared(msl_emitter *e, tj_ref r)
{
    const tj_inst *in = ms_inst(e, r);
    mem_access m = {0};
    if (in->nargs != 2 || !in->args[1] || plan(e, r, ms_inst(e, in->args[1])->type, &m) ||
        shared_address(e, r, &m))
        return e->failed ? -1 : ms_fail(e, r, "st_shared takes an address and a value");
    if (ms_operand_check(e, r, 1, m.w, m.dt))
        return -1;
    e->defined[r] = 1;
    store(e, in->args[1], &m);
    return 0;
}
