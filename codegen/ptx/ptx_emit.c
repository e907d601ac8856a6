/* SIMT IR -> PTX: the driver (tj_emit_ptx), registers, values and the
 * instruction dispatch. The op families live in the other ptx_*.c files. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/ptx/ptx.h"
#include "tilejit/codegen.h"

/* The PTX ISA version written for each target: the lowest that has every
 * instruction the generator uses there (sm_90a needs 8.0). */
typedef struct ptx_arch {
    const char *name;
    int sm;
    const char *version;
    int wgmma; /* wgmma.mma_async: sm_90a only (sm_100a has tcgen05 instead) */
} ptx_arch;

static const ptx_arch arch_table[] = {
    {"sm_80", 80, "7.0", 0},    {"sm_86", 86, "7.1", 0},    {"sm_89", 89, "7.8", 0},
    {"sm_90", 90, "7.8", 0},    {"sm_90a", 90, "8.0", 1},   {"sm_100", 100, "8.6", 0},
    {"sm_100a", 100, "8.6", 0}, {"sm_120", 120, "8.7", 0}, {"sm_120a", 120, "8.7", 0},
};

static const char *const cls_prefix[PX_NCLS] = {"%p", "%h", "%r", "%rd", "%f", "%fd"};
static const char *const cls_decl[PX_NCLS] = {".pred", ".b16", ".b32", ".b64", ".f32", ".f64"};

/* ---- registers and text ---------------------------------------------------- */

ptx_rname px_name(ptx_reg r)
{
    ptx_rname n;
    const char *p = cls_prefix[r.cls];
    size_t len = strlen(p);
    memcpy(n.s, p, len);
    char digits[12];
    int nd = 0;
    uint32_t v = r.idx;
    do {
        digits[nd++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (nd)
        n.s[len++] = digits[--nd];
    n.s[len] = 0;
    return n;
}

ptx_reg px_tmp(ptx_emitter *e, ptx_cls cls) { return (ptx_reg){cls, e->nregs[cls]++}; }

void px_ins(ptx_emitter *e, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    line[0] = '\t';
    int n = vsnprintf(line + 1, sizeof line - 3, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof line - 3) {
        memcpy(line + 1 + n, ";\n", 2);
        tj_buf_append(&e->body, line, (size_t)n + 3);
        return;
    }
    char *big = tj_alloc(e->c, (size_t)n + 1); /* rare: a very long line */
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    tj_buf_append(&e->body, "\t", 1);
    tj_buf_append(&e->body, big, (size_t)n);
    tj_buf_append(&e->body, ";\n", 2);
}

uint32_t px_new_label(ptx_emitter *e) { return e->nlabels++; }

void px_label(ptx_emitter *e, uint32_t label) { tj_buf_printf(&e->body, "$L%u:\n", label); }

int px_fail(ptx_emitter *e, tj_ref r, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const tj_inst *in = r ? &e->k->insts[r] : NULL;
    tj_loc loc = in ? in->loc : (tj_loc){0, 0, 0};
    if (in)
        tj_error_at(e->c, loc, "ptx: %s (kernel '%s', %%%u = %s)", msg, e->k->name, r, tj_op_get(in->op)->name);
    else /* about the whole kernel: at its name */
        tj_error_at(e->c, e->k->loc, "ptx: %s (kernel '%s')", msg, e->k->name);
    e->failed = 1;
    return -1;
}

void px_mov(ptx_emitter *e, ptx_reg d, ptx_reg s)
{
    if (d.cls != s.cls || d.idx != s.idx)
        px_ins(e, "mov.%s %s, %s", px_cls_type(d.cls), RN(d), RN(s));
}

void px_zero(ptx_emitter *e, ptx_reg d)
{
    static const char *const zero[PX_NCLS] = {"0", "0", "0", "0", "0f00000000", "0d0000000000000000"};
    px_ins(e, "mov.%s %s, %s", px_cls_type(d.cls), RN(d), zero[d.cls]);
}

/* ---- values ------------------------------------------------------------------ */

const tj_inst *px_inst(const ptx_emitter *e, tj_ref r) { return &e->k->insts[r]; }

int px_elem_type(const ptx_emitter *e, tj_type t, tj_dtype *dt) { return simt_elem_type(e->c, t, dt); }

uint32_t px_type_components(const ptx_emitter *e, tj_type t)
{
    const tj_type_info *ti = tj_type_get(e->c, t);
    if (ti->kind == TJ_TK_TUPLE) {
        uint32_t n = 0;
        for (uint32_t i = 0; i < ti->nelems; i++)
            n += px_type_components(e, ti->elems[i]);
        return n;
    }
    tj_dtype dt;
    return (uint32_t)simt_value_parts(&e->walk, t, &dt);
}

/* Appends one register for a component of dtype dt. */
static void add_register(void *target, tj_dtype dt)
{
    ptx_emitter *e = target;
    e->comps = tj_grow(e->c, e->comps, &e->compcap, e->ncomps + 1, sizeof *e->comps);
    e->comps[e->ncomps++] = px_tmp(e, px_dtype_cls(dt));
}

int px_define(ptx_emitter *e, tj_ref r, tj_type t)
{
    uint32_t start = e->ncomps;
    if (simt_for_each_component(&e->walk, t, PX_MAX_COMPONENTS, add_register)) {
        char ts[64];
        tj_type_str(e->c, t, ts, sizeof ts);
        return px_fail(e, r, "no registers for a value of type %s (scalars, vectors of at most %d, tuples of them)",
                       ts, PX_MAX_COMPONENTS);
    }
    e->first[r] = start;
    e->ncomp[r] = e->ncomps - start;
    e->defined[r] = 1;
    return 0;
}

ptx_reg px_val(const ptx_emitter *e, tj_ref r, uint32_t i) { return e->comps[e->first[r] + i]; }

int px_operand_check(ptx_emitter *e, tj_ref r, uint32_t a, uint32_t w, tj_dtype want)
{
    return simt_operand_check(&e->walk, r, a, w, want);
}

int px_scalar_operand(ptx_emitter *e, tj_ref r, uint32_t a, tj_dtype want)
{
    const tj_inst *in = px_inst(e, r);
    tj_dtype dt;
    if (a >= in->nargs || !in->args[a] || px_elem_type(e, px_inst(e, in->args[a])->type, &dt) != 1 || dt != want)
        return px_fail(e, r, "operand %u must be a %s scalar", a, tj_dtype_name(want));
    return 0;
}

ptx_reg px_operand(const ptx_emitter *e, tj_ref r, uint32_t a, uint32_t i)
{
    tj_ref o = e->k->insts[r].args[a];
    return px_val(e, o, e->ncomp[o] == 1 ? 0 : i);
}

/* ---- dispatch ------------------------------------------------------------------ */

static int emit_op(ptx_emitter *e, tj_ref r, int depth)
{
    tj_op op = e->k->insts[r].op;
    switch (simt_op_family(op)) {
    case SF_CONST: return px_emit_const(e, r);
    case SF_PARAM: return px_emit_param_op(e, r);
    case SF_SPECIAL: return px_emit_special(e, r);
    case SF_BINARY: return px_emit_binary(e, r);
    case SF_COMPARE: return px_emit_compare(e, r);
    case SF_UNARY: return px_emit_unary(e, r);
    case SF_SELECT: return px_emit_select_op(e, r);
    case SF_FMA: return px_emit_fma(e, r);
    case SF_CAST: return px_emit_cast(e, r);
    case SF_LD_GLOBAL: return px_emit_load_global(e, r);
    case SF_ST_GLOBAL: return px_emit_store_global(e, r);
    case SF_LD_SHARED: return px_emit_load_shared(e, r);
    case SF_ST_SHARED: return px_emit_store_shared(e, r);
    case SF_ATOMIC: return px_emit_atomic(e, r);
    case SF_SHUFFLE: return px_emit_shuffle(e, r);
    case SF_VECTOR: return px_emit_vector_op(e, r);
    case SF_FOR: return px_emit_for(e, r, depth);
    case SF_WHILE: return px_emit_while(e, r, depth);
    case SF_ORDERED: return px_emit_ordered(e, r);
    case SF_IF: return px_emit_if(e, r, depth);
    case SF_PROJ: return px_emit_proj(e, r);
    case SF_MMA: return px_emit_mma(e, r);
    case SF_ASYNC: return px_emit_async(e, r);
    case SF_WGMMA: return px_emit_wgmma(e, r);
    case SF_TMA: return px_emit_tma(e, r);
    case SF_OTHER: break;
    }
    return px_fail(e, r, "op '%s' has no PTX form (not a SIMT-level op)", tj_op_get(op)->name);
}

/* Emits r; afterwards its registers must be those of its type, or later
 * uses would read registers that do not exist (e.g. a store whose result
 * type is not void). The walk's emit callback (codegen/simt_walk.h). */
static int emit_inst(void *target, tj_ref r, int depth)
{
    ptx_emitter *e = target;
    if (emit_op(e, r, depth))
        return -1;
    if (e->ncomp[r] != px_type_components(e, e->k->insts[r].type))
        return px_fail(e, r, "the result type does not fit the op");
    return 0;
}

/* The walk's fail callback. */
static int walk_fail(void *target, tj_ref r, const char *msg) { return px_fail(target, r, "%s", msg); }

/* ---- the module ------------------------------------------------------------ */

int px_is_identifier(const char *s)
{
    if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return 1;
}

static int check_kernel(ptx_emitter *e)
{
    const tj_kernel *k = e->k;
    if (simt_check_kernel(&e->walk, &e->uses_smem))
        return -1;
    if (!px_is_identifier(k->name) || !strncmp(k->name, "tj_", 3))
        return px_fail(e, 0, "the kernel name is not a PTX identifier (letters, digits, '_'; not 'tj_...')");
    return 0;
}

static void write_module(ptx_emitter *e, const ptx_arch *arch, tj_buf *out)
{
    const tj_kernel *k = e->k;
    tj_buf_printf(out, "//\n// Generated by tilejit %s from SIMT IR kernel '%s'\n//\n\n", TILEJIT_VERSION,
                  k->name);
    tj_buf_printf(out, ".version %s\n.target %s\n.address_size 64\n\n", arch->version, arch->name);
    if (e->uses_smem) /* wgmma's and TMA's swizzle patterns repeat every 1024 bytes (ptx_wgmma.c) */
        tj_buf_printf(out, ".extern .shared .align %d .b8 tj_smem[];\n\n", px_uses_wgmma(e->k) ? 1024 : 16);
    px_write_tables(e, out);
    tj_buf_printf(out, ".visible .entry %s(\n", k->name);
    px_write_params(e, out);
    tj_buf_printf(out, ")\n.reqntid %u\n", k->nthreads);
    if (k->programs > 1) /* registers for that many programs an SM (lower/wgmma.c, lw_wgmma_programs) */
        tj_buf_printf(out, ".minnctapersm %u\n", k->programs);
    tj_buf_append(out, "{\n", 2);
    for (int c = 0; c < PX_NCLS; c++)
        if (e->nregs[c])
            tj_buf_printf(out, "\t.reg %s %s<%u>;\n", cls_decl[c], cls_prefix[c], e->nregs[c]);
    tj_buf_append(out, "\n", 1);
    tj_buf_append(out, e->body.data, e->body.len);
    tj_buf_append(out, "\tret;\n}\n", 8);
}

static int emit_kernel(ptx_emitter *e, const ptx_arch *arch, tj_buf *out)
{
    uint32_t n = e->k->ninsts;
    e->first = tj_alloc(e->c, sizeof *e->first * n);
    e->ncomp = tj_alloc(e->c, sizeof *e->ncomp * n);
    e->defined = tj_alloc(e->c, n);
    e->walk = (simt_walker){e->k, e->defined, e->ncomp, e, emit_inst, walk_fail, px_fragment_parts};
    if (check_kernel(e))
        return -1;
    if (e->uses_smem) {
        e->smem_base = px_tmp(e, PX_B32);
        px_ins(e, "mov.u32 %s, tj_smem", RN(e->smem_base));
    }
    px_mma_prologue(e);
    if (simt_walk_grid(&e->walk) || simt_walk_block(&e->walk, e->k->body, 0))
        return -1;
    write_module(e, arch, out);
    return 0;
}

typedef struct emit_job {
    ptx_emitter *e;
    const ptx_arch *arch;
    tj_buf *out;
} emit_job;

static int run_emit(void *arg)
{
    emit_job *j = arg;
    return emit_kernel(j->e, j->arch, j->out);
}

static const ptx_arch *find_arch(const char *name)
{
    for (size_t i = 0; name && i < sizeof arch_table / sizeof *arch_table; i++)
        if (!strcmp(name, arch_table[i].name))
            return &arch_table[i];
    return NULL;
}

int tj_ptx_arch_has_wgmma(const char *arch)
{
    const ptx_arch *a = find_arch(arch);
    return a && a->wgmma;
}

int tj_emit_ptx(const tj_kernel *k, const char *arch_name, tj_buf *out)
{
    if (!k)
        return -1;
    if (!out) {
        tj_error(k->ctx, "tj_emit_ptx: NULL out");
        return -1;
    }
    tj_ctx *const c = k->ctx;
    const ptx_arch *const arch = find_arch(arch_name);
    if (!arch) {
        tj_error(c, "ptx: unknown target architecture '%s' (sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100, sm_120, ...)",
                 arch_name ? arch_name : "(null)");
        return -1;
    }
    ptx_emitter *const e = calloc(1, sizeof *e);
    if (!e) {
        tj_error(c, "ptx: out of memory while emitting kernel '%s'", k->name);
        return -1;
    }
    e->k = k;
    e->c = c;
    e->sm = arch->sm;
    e->wgmma = arch->wgmma;
    e->fastmath = tj_config_fastmath(k); /* `const fastmath = 1`, or a tuned value */
    e->no_calls = (arch->wgmma && px_uses_wgmma(k)) || tj_config_value(k, TJ_PARAM_CALLS, 1) == 0;
    emit_job j = {e, arch, out};
    int rc = tj_guarded(c, run_emit, &j);
    tj_buf_free(&e->body);
    free(e);
    return rc;
}
