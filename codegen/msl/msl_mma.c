/* The matrix atom of SIMT IR (docs/simt.md) as Metal simdgroup matrices.
 *
 * A fragment is its 8 x 8 tiles, row-major over tiles, each one variable of
 * type simdgroup_half8x8, simdgroup_bfloat8x8 or simdgroup_float8x8:
 *
 *   a  f16/bf16[16, 16]: 2 x 2 tiles     f32[16, 8]: 2 x 1
 *   b  f16/bf16[16, 8]:  2 x 1           f32[8, 8]:  1
 *   c  f32[16, 8]:       2 x 1
 *
 * mma_load and mma_store move each tile with simdgroup_load/store through a
 * pointer of the element type into threadgroup memory; mma chains
 * simdgroup_multiply_accumulate over the k tiles (half or bfloat inputs
 * with a float accumulator: Metal takes mixed types); mma_fill is
 * make_filled_simdgroup_matrix. Which lane holds what is Metal's business:
 * the IR never looks inside a fragment. bfloat needs MSL 3.1, so a kernel
 * with bfloat matrices says so on its first line (tj_msl_version). */
#include "codegen/msl/msl.h"

enum { MS_TILE = 8 };

/* The tile grid of a fragment type: rows x cols tiles of dtype *dt; 0 when
 * t is not a fragment. */
static int tile_grid(const msl_emitter *e, tj_type t, int *rows, int *cols, tj_dtype *dt)
{
    if (!tj_type_is_fragment(e->c, t))
        return 0;
    const tj_type_info *ti = tj_type_get(e->c, t);
    *rows = ti->shape[0] / MS_TILE;
    *cols = ti->shape[1] / MS_TILE;
    *dt = ti->dtype;
    return *rows * *cols;
}

int ms_fragment_parts(void *target, tj_type t, tj_dtype *dt)
{
    int rows, cols;
    return tile_grid(target, t, &rows, &cols, dt);
}

uint32_t ms_mark_matrices(msl_emitter *e, tj_type t, uint32_t first)
{
    const tj_type_info *ti = tj_type_get(e->c, t);
    uint32_t n = 0;
    if (ti->kind == TJ_TK_TUPLE) {
        for (uint32_t i = 0; i < ti->nelems; i++)
            n += ms_mark_matrices(e, ti->elems[i], first + n);
        return n;
    }
    tj_dtype dt;
    n = (uint32_t)simt_value_parts(&e->walk, t, &dt);
    for (uint32_t i = 0; tj_type_is_fragment(e->c, t) && i < n; i++)
        e->comps[first + i].matrix = 1;
    return n;
}

const char *ms_matrix_type(tj_dtype dt)
{
    switch (dt) {
    case TJ_DT_F16: return "metal::simdgroup_half8x8";
    case TJ_DT_BF16: return "metal::simdgroup_bfloat8x8";
    default: return "metal::simdgroup_float8x8";
    }
}

/* The element type of a matrix in memory (bf16 is bfloat here, not the
 * ushort bits of the scalar code: the memory holds the same bits). */
static const char *element_type(tj_dtype dt)
{
    switch (dt) {
    case TJ_DT_F16: return "half";
    case TJ_DT_BF16: return "bfloat";
    default: return "float";
    }
}

void ms_plan_matrices(msl_emitter *e)
{
    for (tj_ref r = 1; r < e->k->ninsts; r++) {
        const tj_inst *in = &e->k->insts[r];
        int rows, cols;
        tj_dtype dt;
        if (in->op == TJ_OP_MMA_LOAD && tile_grid(e, in->type, &rows, &cols, &dt) && dt == TJ_DT_BF16)
            e->needs_msl_3_1 = 1;
    }
}

/* ---- the ops ------------------------------------------------------------------ */

/* Operands 0 and 1 of a load or a store: the byte offset into threadgroup
 * memory (u32) and the row stride in elements (i32). Declares the element
 * pointer; *ptr and *ld are the expressions simdgroup_load/store take. */
static int matrix_place(msl_emitter *e, tj_ref r, tj_dtype dt, msl_str *ptr, msl_str *ld)
{
    if (ms_operand_check(e, r, 0, 1, TJ_DT_U32) || ms_operand_check(e, r, 1, 1, TJ_DT_I32))
        return -1;
    const char *t = element_type(dt);
    *ptr = ms_tmp(e);
    *ld = ms_fmt("ulong(%s)", ms_arg(e, r, 1, 0).s);
    ms_line(e, "threadgroup %s *%s = (threadgroup %s *)(tj_smem + %s);", t, ptr->s, t, ms_arg(e, r, 0, 0).s);
    return 0;
}

static int emit_load(msl_emitter *e, tj_ref r)
{
    const tj_inst *in = ms_inst(e, r);
    int rows, cols;
    tj_dtype dt;
    msl_str ptr, ld;
    if (!tile_grid(e, in->type, &rows, &cols, &dt) || in->imm < TJ_MMA_A || in->imm > TJ_MMA_BT ||
        tj_type_fragment(e->c, (int)in->imm, dt) != in->type)
        return ms_fail(e, r, "the result is not a fragment of the load's role");
    if (matrix_place(e, r, dt, &ptr, &ld) || ms_define(e, r, in->type))
        return -1;
    if (in->imm == TJ_MMA_BT) { /* memory holds B^T: tile i is columns 8i.. of it, loaded transposed */
        for (int i = 0; i < rows; i++) {
            msl_str v = ms_var(e, r, (uint32_t)i);
            ms_line(e, "%s %s;", ms_matrix_type(dt), v.s);
            ms_line(e, "metal::simdgroup_load(%s, %s, %s, ulong2(%d, 0), true);", v.s, ptr.s, ld.s, i * MS_TILE);
        }
        return 0;
    }
    /* rows 8-15 start at row `half` when given */
    msl_str half = in->nargs > 2 && in->args[2] ? ms_fmt("ulong(%s)", ms_arg(e, r, 2, 0).s) : ms_fmt("%d", MS_TILE);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            msl_str v = ms_var(e, r, (uint32_t)(i * cols + j));
            ms_line(e, "%s %s;", ms_matrix_type(dt), v.s);
            ms_line(e, "metal::simdgroup_load(%s, %s, %s, ulong2(%d, %s));", v.s, ptr.s, ld.s, j * MS_TILE,
                    i ? half.s : "0");
        }
    return 0;
}

static int emit_store(msl_emitter *e, tj_ref r)
{
    const tj_inst *in = ms_inst(e, r);
    tj_ref c = in->nargs == 3 ? in->args[2] : TJ_NONE;
    int rows, cols;
    tj_dtype dt;
    msl_str ptr, ld;
    if (!c || ms_inst(e, c)->type != tj_type_fragment(e->c, TJ_MMA_C, TJ_DT_F32) ||
        !tile_grid(e, ms_inst(e, c)->type, &rows, &cols, &dt))
        return ms_fail(e, r, "mma_store takes an address, a row stride and a c fragment");
    if (matrix_place(e, r, dt, &ptr, &ld))
        return -1;
    for (int i = 0; i < rows; i++)
        ms_line(e, "metal::simdgroup_store(%s, %s, %s, ulong2(0, %d));", ms_var(e, c, (uint32_t)i).s, ptr.s, ld.s,
                i * MS_TILE);
    e->defined[r] = 1;
    return 0;
}

/* d = a * b + c: for each row of tiles i, the k tiles accumulate in turn,
 * the first onto c_i, the next onto d_i. */
static int emit_multiply(msl_emitter *e, tj_ref r)
{
    const tj_inst *in = ms_inst(e, r);
    if (in->nargs != 3 || !in->args[0] || !in->args[1] || !in->args[2])
        return ms_fail(e, r, "mma takes a, b and c");
    tj_type ta = ms_inst(e, in->args[0])->type, tc = tj_type_fragment(e->c, TJ_MMA_C, TJ_DT_F32);
    int rows, ktiles;
    tj_dtype dt;
    if (!tile_grid(e, ta, &rows, &ktiles, &dt) || ta != tj_type_fragment(e->c, TJ_MMA_A, dt) ||
        ms_inst(e, in->args[1])->type != tj_type_fragment(e->c, TJ_MMA_B, dt) ||
        ms_inst(e, in->args[2])->type != tc || in->type != tc)
        return ms_fail(e, r, "mma takes a, b and c fragments of one input dtype and gives a c fragment");
    if (ms_define(e, r, in->type))
        return -1;
    for (int i = 0; i < rows; i++) {
        msl_str d = ms_var(e, r, (uint32_t)i);
        ms_line(e, "%s %s;", ms_matrix_type(TJ_DT_F32), d.s);
        for (int k = 0; k < ktiles; k++)
            ms_line(e, "metal::simdgroup_multiply_accumulate(%s, %s, %s, %s);", d.s,
                    ms_var(e, in->args[0], (uint32_t)(i * ktiles + k)).s, ms_var(e, in->args[1], (uint32_t)k).s,
                    k ? d.s : ms_var(e, in->args[2], (uint32_t)i).s);
    }
    return 0;
}

static int emit_fill(msl_emitter *e, tj_ref r)
{
    const tj_inst *in = ms_inst(e, r);
    if (ms_operand_check(e, r, 0, 1, TJ_DT_F32))
        return -1;
    if (in->type != tj_type_fragment(e->c, TJ_MMA_C, TJ_DT_F32))
        return ms_fail(e, r, "mma_fill gives a c fragment");
    if (ms_define(e, r, in->type))
        return -1;
    for (uint32_t i = 0; i < e->ncomp[r]; i++)
        ms_line(e, "%s %s = metal::make_filled_simdgroup_matrix<float, 8, 8>(%s);", ms_matrix_type(TJ_DT_F32),
                ms_var(e, r, i).s, ms_arg(e, r, 0, 0).s);
    return 0;
}

int ms_emit_mma(msl_emitter *e, tj_ref r)
{
    switch (ms_inst(e, r)->op) {
    case TJ_OP_MMA_LOAD: return emit_load(e, r);
    case TJ_OP_MMA_STORE: return emit_store(e, r);
    case TJ_OP_MMA: return emit_multiply(e, r);
    case TJ_OP_MMA_FILL: return emit_fill(e, r);
    default: /* mma_pack, mma_unpack: the PTX lane order; Apple's is not documented */
        return ms_fail(e, r, "'%s' needs the PTX lane layout of fragments; lower for Metal "
                       "(tj_lower_options.target = TJ_LOWER_METAL) to keep fragments opaque",
                       tj_op_get(ms_inst(e, r)->op)->name);
    }
}
