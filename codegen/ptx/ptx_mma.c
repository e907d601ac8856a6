/* The matrix atom of SIMT IR (docs/simt.md, "The matrix atom"): one warp's
 * D[16, 8] = A[16, K] * B[K, 8] + C[16, 8] as mma.sync (sm_80 and later).
 *
 * Registers: a fragment is numel * size / 128 .b32 registers per lane:
 * 16-bit a 4 and b 2 (element pairs packed, the lower column or row in the
 * low half), f32 a 4 and b 2 (tf32 bit patterns), c 4 (f32). All of them
 * .b32: f32[16, 8] is both the tf32 a and the c type, so both need one
 * class, and ptxas takes only .b32 registers for tf32 operands (.f32 ones
 * for c and d are merely allowed).
 *
 * Lanes (PTX ISA 9.7.14.5.8 "Matrix Fragments for mma.m16n8k16 with
 * floating point type" and 9.7.14.5.7 "Matrix Fragments for mma.m16n8k8",
 * .tf32), with g = %laneid >> 2 ("groupID") and t = %laneid & 3
 * ("threadID_in_group"), (row, column) of A, C or (k, n) of B:
 *   16-bit a: a0,a1 (g, 2t+i)   a2,a3 (g+8, 2t+i)  a4,a5 (g, 2t+8+i)  a6,a7 (g+8, 2t+8+i)
 *   16-bit b: b0,b1 (2t+i, g)   b2,b3 (2t+8+i, g)
 *   tf32 a:   a0 (g, t)  a1 (g+8, t)  a2 (g, t+4)  a3 (g+8, t+4)
 *   tf32 b:   b0 (t, g)  b1 (t+4, g)
 *   c, d:     c0,c1 (g, 2t+i)   c2,c3 (g+8, 2t+i)
 * 16-bit operands come from ldmatrix (9.7.14.5.15): lanes 8j..8j+7 give
 * the addresses of the eight rows of matrix j, and register j of lane l
 * receives row l/4, columns 2(l%4) and 2(l%4)+1 of matrix j (.trans: column
 * l/4, rows 2(l%4), 2(l%4)+1). So a is .x4 over its quadrants (rows 0-7 and
 * 8-15 of columns 0-7, then of columns 8-15): lane l addresses row l%16,
 * column (l/16)*8; b (k x n, row-major) is .x2.trans over rows 0-7 and
 * 8-15: lane l (< 16) addresses row l. f32 operands and c are plain
 * ld.shared / st.shared at the positions above, f32 inputs rounded to tf32
 * with cvt.rna (mma's .tf32 operands are expected in that format).
 *
 * The contract (docs/simt.md): addr and ld * size are multiples of 16
 * bytes (ld > 0, as the SIMT interpreter checks), every lane of a warp
 * passes the same ones, control flow is uniform; constants that break it
 * are reported here. */
#include "codegen/ptx/ptx.h"

enum { WARP_LANES = 32, PART_BYTES = 4, MAX_PARTS = 4, ROW_ALIGN = 16 };

int px_fragment_parts(void *target, tj_type t, tj_dtype *dt)
{
    const ptx_emitter *e = target;
    if (!tj_type_is_fragment(e->c, t))
        return 0;
    uint64_t bytes = tj_type_numel(e->c, t) * (uint64_t)tj_dtype_size(tj_type_get(e->c, t)->dtype);
    *dt = TJ_DT_U32;
    return (int)(bytes / (WARP_LANES * PART_BYTES));
}

static int uses_mma(const tj_kernel *k)
{
    for (tj_ref r = 1; r < k->ninsts; r++)
        if (simt_op_family(k->insts[r].op) == SF_MMA)
            return 1;
    return 0;
}

/* Once per kernel, before the body: the ops may sit in loops and branches,
 * and a register first written there would be undefined after them. */
void px_mma_prologue(ptx_emitter *e)
{
    if (!uses_mma(e->k))
        return;
    ptx_mma_lane *l = &e->lane;
    ptx_reg lane = px_tmp(e, PX_B32);
    l->group = px_tmp(e, PX_B32);
    l->quad = px_tmp(e, PX_B32);
    l->quad2 = px_tmp(e, PX_B32);
    l->row16 = px_tmp(e, PX_B32);
    l->col8 = px_tmp(e, PX_B32);
    px_ins(e, "mov.u32 %s, %%laneid", RN(lane));
    px_ins(e, "shr.u32 %s, %s, 2", RN(l->group), RN(lane));
    px_ins(e, "and.b32 %s, %s, 3", RN(l->quad), RN(lane));
    px_ins(e, "shl.b32 %s, %s, 1", RN(l->quad2), RN(l->quad));
    px_ins(e, "and.b32 %s, %s, 15", RN(l->row16), RN(lane));
    px_ins(e, "and.b32 %s, %s, 16", RN(l->col8), RN(lane));
    px_ins(e, "shr.u32 %s, %s, 1", RN(l->col8), RN(l->col8));
}

/* ---- checks ------------------------------------------------------------------ */

/* Operand a of r has exactly type `want` (a fragment). */
static int fragment_operand(ptx_emitter *e, tj_ref r, uint32_t a, tj_type want)
{
    const tj_inst *in = px_inst(e, r);
    tj_type t = in->args[a] ? px_inst(e, in->args[a])->type : TJ_TYPE_NONE;
    if (t == want)
        return 0;
    char got[64], exp[64];
    tj_type_str(e->c, t, got, sizeof got);
    tj_type_str(e->c, want, exp, sizeof exp);
    return px_fail(e, r, "operand %u is %s, expected %s", a, got, exp);
}

/* r's result has type `want`. */
static int fragment_result(ptx_emitter *e, tj_ref r, tj_type want)
{
    if (px_inst(e, r)->type == want)
        return 0;
    char got[64], exp[64];
    tj_type_str(e->c, px_inst(e, r)->type, got, sizeof got);
    tj_type_str(e->c, want, exp, sizeof exp);
    return px_fail(e, r, "the result is %s, expected %s", got, exp);
}

/* A constant operand a that breaks the 16-byte rule (ldmatrix, v2 accesses);
 * `positive`: so does a value <= 0. */
static int misaligned_constant(const ptx_emitter *e, tj_ref r, uint32_t a, int size, int positive)
{
    const tj_inst *o = px_inst(e, px_inst(e, r)->args[a]);
    return o->op == TJ_OP_CONST && ((o->imm % ROW_ALIGN) * size % ROW_ALIGN != 0 || (positive && o->imm <= 0));
}

/* Operands 0 and 1: the u32 shared-memory address and the i32 row stride
 * (elements) of a matrix of `size`-byte elements. */
static int check_place(ptx_emitter *e, tj_ref r, int size)
{
    if (px_operand_check(e, r, 0, 1, TJ_DT_U32) || px_operand_check(e, r, 1, 1, TJ_DT_I32))
        return -1;
    if (misaligned_constant(e, r, 0, 1, 0))
        return px_fail(e, r, "the address is not a multiple of %d bytes", ROW_ALIGN);
    if (misaligned_constant(e, r, 1, size, 1))
        return px_fail(e, r, "rows of %d-byte elements %lld apart do not start %d-byte aligned", size,
                       (long long)px_inst(e, px_inst(e, r)->args[1])->imm, ROW_ALIGN);
    return 0;
}

/* ---- addresses ----------------------------------------------------------------- */

/* This lane's address of element (row, col) of the matrix at operands
 * addr, ld: tj_smem + addr + (row * ld + col) * size. No col: column 0. */
static ptx_reg lane_address(ptx_emitter *e, tj_ref r, ptx_reg row, const ptx_reg *col, int size)
{
    ptx_reg p = px_tmp(e, PX_B32), o = px_tmp(e, PX_B32);
    ptx_reg addr = px_operand(e, r, 0, 0), ld = px_operand(e, r, 1, 0);
    px_ins(e, "add.u32 %s, %s, %s", RN(p), RN(e->smem_base), RN(addr));
    if (col)
        px_ins(e, "mad.lo.s32 %s, %s, %s, %s", RN(o), RN(row), RN(ld), RN(*col));
    else
        px_ins(e, "mul.lo.s32 %s, %s, %s", RN(o), RN(row), RN(ld));
    px_ins(e, "mad.lo.s32 %s, %s, %d, %s", RN(p), RN(o), size, RN(p));
    return p;
}

/* Whether mma_load r says where rows 8-15 start (operand 2). */
static int has_half(const ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    return in->op == TJ_OP_MMA_LOAD && in->nargs > 2 && in->args[2];
}

/* p moved to row 8 of the matrix: 8 rows down, or to row `half`. */
static ptx_reg second_half(ptx_emitter *e, tj_ref r, ptx_reg p, int size)
{
    ptx_reg q = px_tmp(e, PX_B32), ld = px_operand(e, r, 1, 0);
    if (!has_half(e, r)) {
        px_ins(e, "mad.lo.s32 %s, %s, %d, %s", RN(q), RN(ld), 8 * size, RN(p));
        return q;
    }
    px_ins(e, "mul.lo.s32 %s, %s, %s", RN(q), RN(ld), RN(px_operand(e, r, 2, 0)));
    px_ins(e, "mad.lo.s32 %s, %s, %d, %s", RN(q), RN(q), size, RN(p));
    return q;
}

/* p moved `rows` rows down (within one half). */
static ptx_reg rows_below(ptx_emitter *e, tj_ref r, ptx_reg p, int rows, int size)
{
    ptx_reg q = px_tmp(e, PX_B32);
    px_ins(e, "mad.lo.s32 %s, %s, %d, %s", RN(q), RN(px_operand(e, r, 1, 0)), rows * size, RN(p));
    return q;
}

/* The row whose address lane l gives ldmatrix: l % 16, or with a second
 * half at row `half`: l % 8 + (l / 8 % 2) * half. */
static ptx_reg ldmatrix_row(ptx_emitter *e, tj_ref r)
{
    if (!has_half(e, r))
        return e->lane.row16;
    ptx_reg lo = px_tmp(e, PX_B32), hi = px_tmp(e, PX_B32);
    px_ins(e, "and.b32 %s, %s, 7", RN(lo), RN(e->lane.row16));
    px_ins(e, "shr.u32 %s, %s, 3", RN(hi), RN(e->lane.row16));
    px_ins(e, "mad.lo.s32 %s, %s, %s, %s", RN(lo), RN(hi), RN(px_operand(e, r, 2, 0)), RN(lo));
    return lo;
}

/* The registers of value v (at most MAX_PARTS: fragments only). */
static void parts_of(const ptx_emitter *e, tj_ref v, ptx_reg *out)
{
    for (uint32_t i = 0; i < e->ncomp[v] && i < MAX_PARTS; i++)
        out[i] = px_val(e, v, i);
}

/* ---- mma_load, mma_store --------------------------------------------------------- */

/* b from its transpose (n rows of k, row-major): .x2 without .trans over
 * columns 0-7 and 8-15 of the 8 rows; lane l (< 16) addresses row l % 8,
 * column (l / 8) * 8, and register j of lane l gets row l / 4 (n = g),
 * columns 2(l % 4) + i (k = 2t + i) of matrix j: exactly b's fragment. */
static void load_ldmatrix_bt(ptx_emitter *e, tj_ref r, const ptx_reg *d)
{
    char regs[96];
    ptx_reg row = px_tmp(e, PX_B32), col = px_tmp(e, PX_B32);
    px_ins(e, "and.b32 %s, %s, 7", RN(row), RN(e->lane.row16));
    px_ins(e, "and.b32 %s, %s, 8", RN(col), RN(e->lane.row16));
    ptx_reg p = lane_address(e, r, row, &col, 2);
    px_reg_list(regs, sizeof regs, d, 2);
    px_ins(e, "ldmatrix.sync.aligned.m8n8.x2.shared.b16 %s, [%s]", regs, RN(p));
}

static void load_ldmatrix(ptx_emitter *e, tj_ref r, tj_mma_role role, const ptx_reg *d)
{
    char regs[96];
    if (role == TJ_MMA_BT) {
        load_ldmatrix_bt(e, r, d);
        return;
    }
    ptx_reg row = ldmatrix_row(e, r);
    if (role == TJ_MMA_A) {
        ptx_reg p = lane_address(e, r, row, &e->lane.col8, 2);
        px_reg_list(regs, sizeof regs, d, 4);
        px_ins(e, "ldmatrix.sync.aligned.m8n8.x4.shared.b16 %s, [%s]", regs, RN(p));
    } else {
        ptx_reg p = lane_address(e, r, row, NULL, 2);
        px_reg_list(regs, sizeof regs, d, 2);
        px_ins(e, "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 %s, [%s]", regs, RN(p));
    }
}

static void load_tf32(ptx_emitter *e, tj_ref r, tj_mma_role role, const ptx_reg *d)
{
    uint32_t n = role == TJ_MMA_A ? 4 : 2;
    if (role == TJ_MMA_A) { /* (g, t), (g+8, t), (g, t+4), (g+8, t+4) */
        ptx_reg p = lane_address(e, r, e->lane.group, &e->lane.quad, 4), q = second_half(e, r, p, 4);
        px_ins(e, "ld.shared.f32 %s, [%s]", RN(d[0]), RN(p));
        px_ins(e, "ld.shared.f32 %s, [%s]", RN(d[1]), RN(q));
        px_ins(e, "ld.shared.f32 %s, [%s+16]", RN(d[2]), RN(p));
        px_ins(e, "ld.shared.f32 %s, [%s+16]", RN(d[3]), RN(q));
    } else if (role == TJ_MMA_B) { /* (t, g), (t+4, g) */
        ptx_reg p = lane_address(e, r, e->lane.quad, &e->lane.group, 4), q = rows_below(e, r, p, 4, 4);
        px_ins(e, "ld.shared.f32 %s, [%s]", RN(d[0]), RN(p));
        px_ins(e, "ld.shared.f32 %s, [%s]", RN(d[1]), RN(q));
    } else { /* from the transpose: (g, t), (g, t+4) */
        ptx_reg p = lane_address(e, r, e->lane.group, &e->lane.quad, 4);
        px_ins(e, "ld.shared.f32 %s, [%s]", RN(d[0]), RN(p));
        px_ins(e, "ld.shared.f32 %s, [%s+16]", RN(d[1]), RN(p));
    }
    for (uint32_t i = 0; i < n; i++)
        px_ins(e, "cvt.rna.tf32.f32 %s, %s", RN(d[i]), RN(d[i]));
}

/* c: (g, 2t..2t+1) and (g+8, 2t..2t+1), one 8-byte access each. */
static void access_c(ptx_emitter *e, tj_ref r, int store, const ptx_reg *c)
{
    ptx_reg p = lane_address(e, r, e->lane.group, &e->lane.quad2, 4), q = second_half(e, r, p, 4);
    ptx_reg at[2] = {p, q};
    for (int h = 0; h < 2; h++) {
        if (store)
            px_ins(e, "st.shared.v2.f32 [%s], {%s, %s}", RN(at[h]), RN(c[2 * h]), RN(c[2 * h + 1]));
        else
            px_ins(e, "ld.shared.v2.f32 {%s, %s}, [%s]", RN(c[2 * h]), RN(c[2 * h + 1]), RN(at[h]));
    }
}

static int emit_load(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    tj_type t = in->type;
    if (in->nargs != 3)
        return px_fail(e, r, "mma_load takes an address, a row stride and where rows 8-15 start");
    if (in->imm < TJ_MMA_A || in->imm > TJ_MMA_BT)
        return px_fail(e, r, "role %lld is not a, b, c or bt", (long long)in->imm);
    tj_mma_role role = (tj_mma_role)in->imm;
    tj_dtype dt = tj_type_is_fragment(e->c, t) ? tj_type_get(e->c, t)->dtype : TJ_DT_INVALID;
    if (dt == TJ_DT_INVALID || fragment_result(e, r, tj_type_fragment(e->c, role, dt)))
        return e->failed ? -1 : px_fail(e, r, "the result is not a matrix fragment");
    if (check_place(e, r, tj_dtype_size(dt)) || (has_half(e, r) && px_operand_check(e, r, 2, 1, TJ_DT_I32)))
        return -1;
    if (has_half(e, r) && ((dt == TJ_DT_F32 && role == TJ_MMA_B) || role == TJ_MMA_BT))
        return px_fail(e, r, "this fragment's memory has 8 rows: no second half");
    if (px_define(e, r, t))
        return -1;
    ptx_reg d[MAX_PARTS];
    parts_of(e, r, d);
    if (role == TJ_MMA_C)
        access_c(e, r, 0, d);
    else if (dt == TJ_DT_F32)
        load_tf32(e, r, role, d);
    else
        load_ldmatrix(e, r, role, d);
    return 0;
}

static int emit_store(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    if (in->nargs != 3)
        return px_fail(e, r, "mma_store takes an address, a row stride and a c fragment");
    if (fragment_operand(e, r, 2, tj_type_fragment(e->c, TJ_MMA_C, TJ_DT_F32)) || check_place(e, r, 4))
        return -1;
    e->defined[r] = 1;
    ptx_reg c[MAX_PARTS];
    parts_of(e, in->args[2], c);
    access_c(e, r, 1, c);
    return 0;
}

/* ---- mma, mma_fill ------------------------------------------------------------------ */

static int emit_multiply(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    if (in->nargs != 3 || !in->args[0])
        return px_fail(e, r, "mma takes fragments a, b and c");
    tj_type at = px_inst(e, in->args[0])->type, ct = tj_type_fragment(e->c, TJ_MMA_C, TJ_DT_F32);
    tj_dtype dt = tj_type_is_fragment(e->c, at) ? tj_type_get(e->c, at)->dtype : TJ_DT_INVALID;
    if (dt == TJ_DT_INVALID || at != tj_type_fragment(e->c, TJ_MMA_A, dt))
        return px_fail(e, r, "operand 0 is not an a fragment (f16[16, 16], bf16[16, 16] or f32[16, 8])");
    if (fragment_operand(e, r, 1, tj_type_fragment(e->c, TJ_MMA_B, dt)) || fragment_operand(e, r, 2, ct) ||
        fragment_result(e, r, ct) || px_define(e, r, ct))
        return -1;
    char d[96], a[96], b[96], c[96];
    ptx_reg regs[MAX_PARTS];
    parts_of(e, r, regs);
    px_reg_list(d, sizeof d, regs, e->ncomp[r]);
    for (uint32_t i = 0; i < 3; i++) {
        char *text = i == 0 ? a : i == 1 ? b : c;
        parts_of(e, in->args[i], regs);
        px_reg_list(text, sizeof a, regs, e->ncomp[in->args[i]]);
    }
    const char *shape = dt == TJ_DT_F32 ? "m16n8k8" : "m16n8k16";
    const char *in_type = dt == TJ_DT_F32 ? "tf32" : tj_dtype_name(dt);
    px_ins(e, "mma.sync.aligned.%s.row.col.f32.%s.%s.f32 %s, %s, %s, %s", shape, in_type, in_type, d, a, b, c);
    return 0;
}

static int emit_fill(ptx_emitter *e, tj_ref r)
{
    tj_type ct = tj_type_fragment(e->c, TJ_MMA_C, TJ_DT_F32);
    if (px_inst(e, r)->nargs != 1)
        return px_fail(e, r, "mma_fill takes one f32 value");
    if (px_operand_check(e, r, 0, 1, TJ_DT_F32) || fragment_result(e, r, ct) || px_define(e, r, ct))
        return -1;
    ptx_reg x = px_operand(e, r, 0, 0);
    for (uint32_t i = 0; i < e->ncomp[r]; i++)
        px_ins(e, "mov.b32 %s, %s", RN(px_val(e, r, i)), RN(x));
    return 0;
}

/* ---- mma_pack, mma_unpack: fragment registers <-> the lane's elements ---------------- */

/* Moves between a fragment's .b32 parts and the element vector of its
 * lane: 16-bit elements go in pairs (the first in the low half), f32 ones
 * one a part (tf32 inputs rounded with cvt.rna on the way in). */
static void move_parts(ptx_emitter *e, tj_ref frag, tj_ref elems, int into_fragment, int tf32)
{
    uint32_t nparts = e->ncomp[frag], per = e->ncomp[elems] / (nparts ? nparts : 1);
    for (uint32_t i = 0; i < nparts; i++) {
        ptx_reg part = px_val(e, frag, i), lo = px_val(e, elems, per * i);
        if (per == 2 && into_fragment)
            px_ins(e, "mov.b32 %s, {%s, %s}", RN(part), RN(lo), RN(px_val(e, elems, per * i + 1)));
        else if (per == 2)
            px_ins(e, "mov.b32 {%s, %s}, %s", RN(lo), RN(px_val(e, elems, per * i + 1)), RN(part));
        else if (into_fragment && tf32)
            px_ins(e, "cvt.rna.tf32.f32 %s, %s", RN(part), RN(lo));
        else if (into_fragment)
            px_ins(e, "mov.b32 %s, %s", RN(part), RN(lo));
        else
            px_ins(e, "mov.b32 %s, %s", RN(lo), RN(part));
    }
}

static int emit_repack(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    int pack = in->op == TJ_OP_MMA_PACK;
    if (in->nargs != 1 || !in->args[0])
        return px_fail(e, r, "%s takes one operand", tj_op_get(in->op)->name);
    tj_ref frag = pack ? r : in->args[0], elems = pack ? in->args[0] : r;
    tj_type ft = px_inst(e, frag)->type;
    tj_dtype dt = tj_type_is_fragment(e->c, ft) ? tj_type_get(e->c, ft)->dtype : TJ_DT_INVALID;
    int32_t n = dt ? (int32_t)(tj_type_numel(e->c, ft) / WARP_LANES) : 0;
    if (!dt || px_inst(e, elems)->type != tj_type_tile(e->c, dt, 1, &n))
        return px_fail(e, r, "%s moves a fragment and a vector of its lane's elements",
                       tj_op_get(in->op)->name);
    if (pack && (in->imm < TJ_MMA_A || in->imm > TJ_MMA_C || tj_type_fragment(e->c, (int)in->imm, dt) != ft))
        return px_fail(e, r, "the result is not a fragment of the pack's role");
    if (px_define(e, r, in->type))
        return -1;
    move_parts(e, frag, elems, pack, pack && dt == TJ_DT_F32 && in->imm != TJ_MMA_C);
    return 0;
}

int px_emit_mma(ptx_emitter *e, tj_ref r)
{
    switch (px_inst(e, r)->op) {
    case TJ_OP_MMA_LOAD: return emit_load(e, r);
    case TJ_OP_MMA_STORE: return emit_store(e, r);
    case TJ_OP_MMA: return emit_multiply(e, r);
    case TJ_OP_MMA_PACK: case TJ_OP_MMA_UNPACK: return emit_repack(e, r);
    default: return emit_fill(e, r);
    }
}
