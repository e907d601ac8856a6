/* SIMT IR -> MSL: the driver (tj_emit_msl), values and their variables,
 * and the instruction dispatch. The op families live in the other msl_*.c
 * files; the text helpers in msl_text.c. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "codegen/msl/msl.h"
#include "tilejit/codegen.h"

/* ---- diagnostics ------------------------------------------------------------ */

int ms_fail(msl_emitter *e, tj_ref r, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const tj_inst *in = r ? &e->k->insts[r] : NULL;
    if (in)
        tj_error_at(e->c, in->loc, "msl: %s (kernel '%s', %%%u = %s)", msg, e->k->name, r, tj_op_get(in->op)->name);
    else /* about the whole kernel: at its name */
        tj_error_at(e->c, e->k->loc, "msl: %s (kernel '%s')", msg, e->k->name);
    e->failed = 1;
    return -1;
}

void ms_need(msl_emitter *e, msl_helper h) { e->helpers |= 1u << h; }

/* ---- values ------------------------------------------------------------------ */

const tj_inst *ms_inst(const msl_emitter *e, tj_ref r) { return &e->k->insts[r]; }

int ms_elem_type(const msl_emitter *e, tj_type t, tj_dtype *dt) { return simt_elem_type(e->c, t, dt); }

/* Appends one variable for a component of dtype dt. */
static void add_variable(void *target, tj_dtype dt)
{
    msl_emitter *e = target;
    e->comps = tj_grow(e->c, e->comps, &e->compcap, e->ncomps + 1, sizeof *e->comps);
    e->comps[e->ncomps++] = (msl_comp){dt, 0};
}

int ms_define(msl_emitter *e, tj_ref r, tj_type t)
{
    uint32_t start = e->ncomps;
    if (simt_for_each_component(&e->walk, t, MS_MAX_COMPONENTS, add_variable)) {
        char ts[64];
        tj_type_str(e->c, t, ts, sizeof ts);
        return ms_fail(e, r,
                       "no variables for a value of type %s (scalars, vectors of at most %d, matrix fragments, tuples "
                       "of them)",
                       ts, MS_MAX_COMPONENTS);
    }
    ms_mark_matrices(e, t, start);
    for (uint32_t i = start; i < e->ncomps; i++)
        if (ms_check_dtype(e, r, e->comps[i].dt))
            return -1;
    e->first[r] = start;
    e->ncomp[r] = e->ncomps - start;
    e->defined[r] = 1;
    return 0;
}

tj_dtype ms_comp_dtype(const msl_emitter *e, tj_ref r, uint32_t i) { return e->comps[e->first[r] + i].dt; }

const char *ms_var_type(const msl_emitter *e, tj_ref r, uint32_t i)
{
    const msl_comp *c = &e->comps[e->first[r] + i];
    return c->matrix ? ms_matrix_type(c->dt) : ms_type(c->dt);
}

msl_str ms_arg(const msl_emitter *e, tj_ref r, uint32_t a, uint32_t i)
{
    tj_ref o = e->k->insts[r].args[a];
    return ms_var(e, o, e->ncomp[o] == 1 ? 0 : i);
}

int ms_operand_check(msl_emitter *e, tj_ref r, uint32_t a, uint32_t w, tj_dtype want)
{
    if (simt_operand_check(&e->walk, r, a, w, want))
        return -1;
    tj_ref o = e->k->insts[r].args[a];
    if (e->addr[o])
        return ms_fail(e, r, "operand %u is a global address used as a number (MSL has no such cast)", a);
    return 0;
}

/* ---- dispatch ------------------------------------------------------------------ */

/* add, sub and select build addresses when an operand is one. */
static int builds_address(const msl_emitter *e, tj_ref r)
{
    const tj_inst *in = &e->k->insts[r];
    if (in->op != TJ_OP_ADD && in->op != TJ_OP_SUB && in->op != TJ_OP_SELECT)
        return 0;
    for (uint32_t a = in->op == TJ_OP_SELECT ? 1 : 0; a < in->nargs; a++)
        if (in->args[a] && e->addr[in->args[a]])
            return 1;
    return 0;
}

/* The walk's emit callback (codegen/simt_walk.h). */
static int emit_inst(void *target, tj_ref r, int depth)
{
    msl_emitter *e = target;
    if (e->reduce_role[r] != MS_RED_NONE)
        return ms_emit_reduction(e, r);
    if (builds_address(e, r))
        return ms_emit_address(e, r);
    tj_op op = e->k->insts[r].op;
    switch (simt_op_family(op)) {
    case SF_CONST: return ms_emit_const(e, r);
    case SF_PARAM: return ms_emit_param_op(e, r);
    case SF_SPECIAL: return ms_emit_special(e, r);
    case SF_BINARY: return ms_emit_binary(e, r);
    case SF_COMPARE: return ms_emit_compare(e, r);
    case SF_UNARY: return ms_emit_unary(e, r);
    case SF_SELECT: return ms_emit_select_op(e, r);
    case SF_FMA: return ms_emit_fma(e, r);
    case SF_CAST: return ms_emit_cast(e, r);
    case SF_LD_GLOBAL: return ms_emit_load_global(e, r);
    case SF_ST_GLOBAL: return ms_emit_store_global(e, r);
    case SF_LD_SHARED: return ms_emit_load_shared(e, r);
    case SF_ST_SHARED: return ms_emit_store_shared(e, r);
    case SF_ATOMIC: return ms_emit_atomic(e, r);
    case SF_SHUFFLE: return ms_emit_shuffle(e, r);
    case SF_VECTOR: return ms_emit_vector_op(e, r);
    case SF_FOR: return ms_emit_for(e, r, depth);
    case SF_WHILE: return ms_emit_while(e, r, depth);
    case SF_ORDERED: /* Metal's device atomics are relaxed only: no acquire or release to map them to */
        return ms_fail(e, r, "'%s' has no Metal form: Metal's device atomics are relaxed only, so an acquire or "
                       "release on device memory cannot be expressed, and the relaxed accesses (which need no "
                       "more) are not emitted for Metal either (the library keeps its multi-phase path on "
                       "Metal)", tj_op_get(op)->name);
    case SF_IF: return ms_emit_if(e, r, depth);
    case SF_PROJ: return ms_emit_proj(e, r);
    case SF_MMA: return ms_emit_mma(e, r);
    case SF_ASYNC: /* the Metal lowering (TJ_LOWER_METAL) never makes them */
        return ms_fail(e, r, "'%s' has no Metal form: Metal has no asynchronous copies; lower for Metal",
                       tj_op_get(op)->name);
    case SF_WGMMA: /* sm_90a only: the Metal lowering never makes them */
    case SF_TMA:
        return ms_fail(e, r, "'%s' has no Metal form: it is an sm_90a tensor-core op; lower for Metal",
                       tj_op_get(op)->name);
    case SF_OTHER: break;
    }
    return ms_fail(e, r, "op '%s' has no MSL form (not a SIMT-level op)", tj_op_get(op)->name);
}

/* The walk's fail callback. */
static int walk_fail(void *target, tj_ref r, const char *msg) { return ms_fail(target, r, "%s", msg); }

/* ---- the kernel ------------------------------------------------------------ */

static int check_kernel(msl_emitter *e)
{
    const tj_kernel *k = e->k;
    if (simt_check_kernel(&e->walk, &e->uses_smem))
        return -1;
    if (k->smem_bytes > TJ_SMEM_LIMIT_METAL)
        return ms_fail(e, 0, "needs %u bytes of threadgroup memory; Metal allows %d (lower with "
                       "target = TJ_LOWER_METAL)", k->smem_bytes, TJ_SMEM_LIMIT_METAL);
    if (e->uses_smem && !k->smem_bytes)
        return ms_fail(e, 0, "uses threadgroup memory but smem_bytes is 0");
    ms_plan_matrices(e);
    return ms_plan_params(e);
}

/* The first line of every source: the MSL version it needs (tj_msl_version). */
static const char version_line[] = "// tilejit: MSL ";

uint32_t tj_msl_version(const char *msl)
{
    if (!msl)
        return TJ_MSL_3_0;
    size_t n = sizeof version_line - 1;
    const char *v = msl + n; /* read only past a matching prefix */
    if (strncmp(msl, version_line, n) || strncmp(v, "3.1", 3) || (v[3] && v[3] != '\n'))
        return TJ_MSL_3_0;
    return TJ_MSL_3_1;
}

static void write_source(const msl_emitter *e, tj_buf *out)
{
    const tj_kernel *k = e->k;
    tj_buf_printf(out, "%s%s\n", version_line, e->needs_msl_3_1 ? "3.1" : "3.0");
    tj_buf_printf(out, "// Generated by tilejit %s from SIMT IR kernel '%s'.\n", TILEJIT_VERSION, k->name);
    tj_buf_printf(out, "// Dispatch: threadgroups = the kernel's grid, %u threads per threadgroup, SIMD width 32;\n",
                  k->nthreads);
    tj_buf_printf(out, "// buffers as docs/metal.md describes. Compile with fast math off.\n");
    tj_buf_printf(out, "#include <metal_stdlib>\nusing namespace metal;\n\n");
    ms_write_helpers(e, out);
    if (e->atomics.len)
        tj_buf_append(out, e->atomics.data, e->atomics.len);
    ms_write_args_struct(e, out);
    ms_write_signature(e, out);
    tj_buf_printf(out, "{\n");
    ms_write_prologue(e, out);
    if (e->uses_smem) {
        /* float4 storage keeps every vector access 16-byte aligned */
        tj_buf_printf(out, "    threadgroup float4 tj_smem_v[%u];\n", (k->smem_bytes + 15) / 16);
        tj_buf_printf(out, "    threadgroup uchar *tj_smem = (threadgroup uchar *)tj_smem_v;\n");
    }
    tj_buf_append(out, e->body.data, e->body.len);
    tj_buf_printf(out, "}\n");
}

static int emit_kernel(msl_emitter *e, tj_buf *out)
{
    uint32_t n = e->k->ninsts;
    e->first = tj_alloc(e->c, sizeof *e->first * n);
    e->ncomp = tj_alloc(e->c, sizeof *e->ncomp * n);
    e->defined = tj_alloc(e->c, n);
    e->addr = tj_alloc(e->c, sizeof *e->addr * n);
    e->indent = 1;
    e->walk = (simt_walker){e->k, e->defined, e->ncomp, e, emit_inst, walk_fail, ms_fragment_parts};
    if (check_kernel(e))
        return -1;
    ms_plan_reductions(e);
    if (simt_walk_grid(&e->walk) || simt_walk_block(&e->walk, e->k->body, 0))
        return -1;
    write_source(e, out);
    return 0;
}

typedef struct emit_job {
    msl_emitter *e;
    tj_buf *out;
} emit_job;

static int run_emit(void *arg)
{
    emit_job *j = arg;
    return emit_kernel(j->e, j->out);
}

int tj_emit_msl(const tj_kernel *k, tj_buf *out)
{
    if (!k)
        return -1;
    if (!out) {
        tj_error(k->ctx, "tj_emit_msl: NULL out");
        return -1;
    }
    tj_ctx *c = k->ctx;
    msl_emitter *e = tj_alloc(c, sizeof *e);
    e->k = k;
    e->c = c;
    emit_job j = {e, out};
    int rc = tj_guarded(c, run_emit, &j);
    tj_buf_free(&e->body);
    tj_buf_free(&e->atomics);
    return rc;
}
