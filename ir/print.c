/* The Tile IR printer: the text form of docs/ir.md.
 *
 * Beyond docs/ir.md, the kernel header shows a SIMT kernel's level,
 * threads and shared memory (docs/simt.md) and the runtime facts:
 *   kernel @k(X: f32[M, 64], n: i32) simt(threads = 128, smem = 0)
 *       config(BM = 32) spec(M = 128) facts(X = {unit_stride, dim_div16 = [1]}, n = {}) {
 * and a view what specialize proved: {axes = [32, 64], inbounds = [0, 1], chunk = 4}.
 *
 * Values are renumbered %0, %1, ... in printing order (tj_number_values).
 * The printer also has to show broken IR (a pass dumping what it just
 * produced), so it never trusts a reference: bad operands print as `%!N`,
 * and missing, shared or too deeply nested blocks as `#` comments, which
 * the parser skips and the verifier then reports. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ctx_internal.h"
#include "ir/text.h"

int tj_op_region_count(tj_op op)
{
    return op == TJ_OP_IF ? 2 : op == TJ_OP_FOR || op == TJ_OP_WHILE || op == TJ_OP_SCAN ? 1 : 0;
}

static int valid_block(const tj_kernel *k, tj_block_id b) { return b && b < k->nblocks; }
static int valid_ref(const tj_kernel *k, tj_ref r) { return r && r < k->ninsts; }

/* ---- numbering ------------------------------------------------------------ */

typedef struct numbering {
    const tj_kernel *k;
    uint32_t *num;
    uint8_t *seen; /* blocks already walked: a block is printed once */
    uint32_t next;
} numbering;

static void number_block(numbering *n, tj_block_id b, int depth)
{
    const tj_kernel *k = n->k;
    if (!valid_block(k, b) || n->seen[b] || depth > TJ_MAX_NESTING)
        return;
    n->seen[b] = 1;
    const tj_block *blk = tj_block_at(k, b);
    for (uint32_t i = 0; i < blk->ninsts; i++) {
        tj_ref r = blk->insts[i];
        if (!valid_ref(k, r))
            continue;
        const tj_inst *in = tj_inst_at(k, r);
        if (in->type != TJ_TYPE_NONE && !n->num[r])
            n->num[r] = ++n->next;
        for (int g = 0; g < tj_op_region_count(in->op); g++)
            number_block(n, in->region[g], depth + 1);
    }
}

uint32_t *tj_number_values(const tj_kernel *k)
{
    numbering n = {k, tj_alloc(k->ctx, sizeof(uint32_t) * k->ninsts),
                   tj_alloc(k->ctx, k->nblocks ? k->nblocks : 1), 0};
    number_block(&n, k->grid, 0);
    number_block(&n, k->body, 0);
    return n.num;
}

/* ---- pieces ----------------------------------------------------------------- */

void tj_print_type(const tj_ctx *c, tj_type t, tj_buf *out)
{
    char small[128];
    size_t n = tj_type_str(c, t, small, sizeof small);
    if (n < sizeof small) {
        tj_buf_append(out, small, n);
        return;
    }
    char *big = malloc(n + 1);
    if (!big)
        return; /* out of memory: the text is truncated, like tj_buf's */
    tj_type_str(c, t, big, n + 1);
    tj_buf_append(out, big, n);
    free(big);
}

static void print_ref(const tj_kernel *k, const uint32_t *num, tj_ref r, tj_buf *out)
{
    if (r == TJ_NONE)
        tj_buf_append(out, "_", 1);
    else if (r < k->ninsts && num[r])
        tj_buf_printf(out, "%%%" PRIu32, num[r] - 1);
    else
        tj_buf_printf(out, "%%!%" PRIu32, r);
}

/* The fewest %g digits that read back as exactly v. */
static void print_double(double v, tj_buf *out)
{
    if (isnan(v)) {
        tj_buf_append(out, "nan", 3);
        return;
    }
    if (isinf(v)) {
        tj_buf_printf(out, "%s", v > 0 ? "inf" : "-inf");
        return;
    }
    char s[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(s, sizeof s, "%.*g", prec, v);
        if (strtod(s, NULL) == v)
            break;
    }
    tj_buf_printf(out, "%s", s);
}

static void print_const_value(const tj_kernel *k, const tj_inst *in, tj_buf *out)
{
    tj_dtype dt = tj_type_get(k->ctx, in->type)->dtype;
    if (tj_dtype_is_float(dt))
        print_double(in->fimm, out);
    else if (dt == TJ_DT_U64)
        tj_buf_printf(out, "%" PRIu64, (uint64_t)in->imm);
    else
        tj_buf_printf(out, "%" PRId64, in->imm);
}

static void print_list(const tj_inst *in, int view_axes, tj_buf *out)
{
    tj_buf_append(out, "[", 1);
    for (uint32_t i = 0; i < in->nlist; i++) {
        int32_t e = in->list[i];
        if (i)
            tj_buf_append(out, ", ", 2);
        if (view_axes && e == TJ_VIEW_INDEX)
            tj_buf_append(out, "index", 5);
        else if (view_axes && e == TJ_VIEW_GATHER)
            tj_buf_append(out, "gather", 6);
        else
            tj_buf_printf(out, "%" PRId32, e);
    }
    tj_buf_append(out, "]", 1);
}

/* What specialize proved of a view (ir.h): `inbounds = [axes]`, `chunk = g`. */
static void print_view_flags(uint32_t flags, tj_buf *out)
{
    if (flags & TJ_VIEW_INBOUNDS_MASK) {
        tj_buf_append(out, ", inbounds = [", 14);
        for (int a = 0, n = 0; a < TJ_MAX_RANK; a++)
            if (flags & (1u << a))
                tj_buf_printf(out, "%s%d", n++ ? ", " : "", a);
        tj_buf_append(out, "]", 1);
    }
    if (flags & TJ_VIEW_CHUNK_MASK)
        tj_buf_printf(out, ", chunk = %u", 1u << ((flags & TJ_VIEW_CHUNK_MASK) >> TJ_VIEW_CHUNK_SHIFT));
}

static const char *precision_name(int64_t p)
{
    return p == TJ_DOT_IEEE ? "ieee" : p == TJ_DOT_TF32 ? "tf32" : NULL;
}

/* ` {...}` after the operands; const values are printed in their place. */
static void print_attr(const tj_inst *in, tj_buf *out)
{
    switch (tj_op_get(in->op)->attr) {
    case TJ_ATTR_NONE:
        if (in->op == TJ_OP_STORE && in->flags & TJ_STORE_DISTINCT)
            tj_buf_append(out, " {distinct}", 11);
        break;
    case TJ_ATTR_VALUE:
        break;
    case TJ_ATTR_INDEX:
        tj_buf_printf(out, " {index = %" PRId64 "}", in->imm);
        break;
    case TJ_ATTR_AXIS:
        tj_buf_printf(out, " {axis = %" PRId64 "}", in->imm);
        break;
    case TJ_ATTR_PERM:
        tj_buf_append(out, " {perm = ", 9);
        print_list(in, 0, out);
        tj_buf_append(out, "}", 1);
        break;
    case TJ_ATTR_VIEW:
        tj_buf_append(out, " {axes = ", 9);
        print_list(in, 1, out);
        print_view_flags(in->flags, out);
        tj_buf_append(out, "}", 1);
        break;
    case TJ_ATTR_SORT:
        tj_buf_printf(out, " {axis = %" PRId64 "%s}", in->imm,
                      in->flags & TJ_SORT_DESCENDING ? ", descending = true" : "");
        break;
    case TJ_ATTR_DOT:
        if (in->imm == TJ_DOT_DEFAULT)
            break;
        if (precision_name(in->imm))
            tj_buf_printf(out, " {precision = %s}", precision_name(in->imm));
        else
            tj_buf_printf(out, " {precision = %" PRId64 "}", in->imm);
        break;
    case TJ_ATTR_MMA:
        if (tj_mma_role_name(in->imm))
            tj_buf_printf(out, " {role = %s}", tj_mma_role_name(in->imm));
        else
            tj_buf_printf(out, " {role = %" PRId64 "}", in->imm);
        break;
    case TJ_ATTR_BYTES:
        tj_buf_printf(out, " {bytes = %" PRId64 "}", in->imm);
        break;
    case TJ_ATTR_PENDING:
        tj_buf_printf(out, " {pending = %" PRId64 "}", in->imm);
        break;
    case TJ_ATTR_WGMMA: {
        const char *dt = tj_dtype_name((tj_dtype)in->imm);
        tj_buf_printf(out, " {in = %s, a = %s, b = %s%s}", dt ? dt : "?", in->flags & TJ_WGMMA_A_MN ? "mn" : "k",
                      in->flags & TJ_WGMMA_B_MN ? "mn" : "k", in->flags & TJ_WGMMA_ZERO ? ", zero" : "");
        break;
    }
    case TJ_ATTR_TMA:
        tj_buf_printf(out, " {cols = %" PRId64 ", rows = %" PRId64 ", swizzle = %u", in->imm & 0xffff,
                      in->imm >> 16 & 0xffff, in->flags);
        if (in->imm >> 32 & 0xff)
            tj_buf_printf(out, ", pair = %" PRId64, in->imm >> 32 & 0xff);
        tj_buf_append(out, "}", 1);
        break;
    }
}

void tj_print_inst_head(const tj_kernel *k, const uint32_t *num, tj_ref r, tj_buf *out)
{
    const tj_inst *in = tj_inst_at(k, r);
    if (in->type != TJ_TYPE_NONE) {
        print_ref(k, num, r, out);
        tj_buf_append(out, " = ", 3);
    }
    tj_buf_printf(out, "%s", tj_op_get(in->op)->name);
    if (in->op == TJ_OP_CONST) {
        tj_buf_append(out, " ", 1);
        print_const_value(k, in, out);
    }
    for (uint32_t a = 0; a < in->nargs; a++) {
        tj_buf_append(out, a ? ", " : " ", a ? 2 : 1);
        print_ref(k, num, in->args[a], out);
    }
    print_attr(in, out);
    if (in->type != TJ_TYPE_NONE) {
        tj_buf_append(out, " : ", 3);
        tj_print_type(k->ctx, in->type, out);
    }
}

/* ---- blocks ------------------------------------------------------------------ */

typedef struct printer {
    const tj_kernel *k;
    const uint32_t *num;
    uint8_t *seen;
    tj_buf *out;
} printer;

static void indent(tj_buf *out, int depth)
{
    for (int i = 0; i < depth; i++)
        tj_buf_append(out, "  ", 2);
}

static int is_arg(const tj_kernel *k, tj_ref r)
{
    return valid_ref(k, r) && tj_inst_at(k, r)->op == TJ_OP_ARG;
}

/* `^(%15: i32, %16: f32[128]):` for a region block's leading arguments;
 * returns how many instructions it printed. */
static uint32_t print_block_args(printer *p, const tj_block *blk, int depth)
{
    uint32_t n = 0;
    while (n < blk->ninsts && is_arg(p->k, blk->insts[n]))
        n++;
    if (!n)
        return 0;
    indent(p->out, depth);
    tj_buf_append(p->out, "^(", 2);
    for (uint32_t i = 0; i < n; i++) {
        tj_ref r = blk->insts[i];
        if (i)
            tj_buf_append(p->out, ", ", 2);
        print_ref(p->k, p->num, r, p->out);
        tj_buf_append(p->out, ": ", 2);
        tj_print_type(p->k->ctx, tj_inst_at(p->k, r)->type, p->out);
    }
    tj_buf_append(p->out, "):\n", 3);
    return n;
}

static void print_insts(printer *p, tj_block_id b, uint32_t from, int depth);

/* A `#` line standing for block b, which cannot be printed (`what` says why). */
static void print_comment(printer *p, int depth, tj_block_id b, const char *what)
{
    indent(p->out, depth);
    tj_buf_printf(p->out, "# block %" PRIu32 " %s\n", b, what);
}

/* ` {` ... `}` around region block b, the closing brace at `depth`. */
static void print_region(printer *p, tj_block_id b, int depth)
{
    tj_buf_append(p->out, " {\n", 3);
    if (!valid_block(p->k, b))
        print_comment(p, depth + 1, b, "does not exist");
    else if (p->seen[b])
        print_comment(p, depth + 1, b, "is printed above: two regions share it");
    else if (depth > TJ_MAX_NESTING)
        print_comment(p, depth + 1, b, "is nested too deeply");
    else {
        p->seen[b] = 1;
        uint32_t nargs = print_block_args(p, tj_block_at(p->k, b), depth);
        print_insts(p, b, nargs, depth + 1);
    }
    indent(p->out, depth);
    tj_buf_append(p->out, "}", 1);
}

static void print_inst(printer *p, tj_ref r, int depth)
{
    indent(p->out, depth);
    if (!valid_ref(p->k, r)) {
        tj_buf_printf(p->out, "# bad instruction %" PRIu32 "\n", r);
        return;
    }
    const tj_inst *in = tj_inst_at(p->k, r);
    tj_print_inst_head(p->k, p->num, r, p->out);
    int nregions = tj_op_region_count(in->op);
    for (int g = 0; g < nregions; g++) {
        if (g)
            tj_buf_append(p->out, " else", 5);
        print_region(p, in->region[g], depth);
    }
    tj_buf_append(p->out, "\n", 1);
}

static void print_insts(printer *p, tj_block_id b, uint32_t from, int depth)
{
    const tj_block *blk = tj_block_at(p->k, b);
    for (uint32_t i = from; i < blk->ninsts; i++)
        print_inst(p, blk->insts[i], depth);
}

static void print_top_block(printer *p, const char *label, tj_block_id b)
{
    tj_buf_printf(p->out, "%s:\n", label);
    if (!valid_block(p->k, b) || p->seen[b]) {
        print_comment(p, 1, b, valid_block(p->k, b) ? "is printed above: grid and body share it"
                                                    : "does not exist");
        return;
    }
    p->seen[b] = 1;
    print_insts(p, b, 0, 1);
}

/* ---- the kernel header ------------------------------------------------------- */

static void print_param(const tj_param *pm, tj_buf *out)
{
    tj_buf_printf(out, "%s: %s", pm->name ? pm->name : "_", tj_dtype_name(pm->dtype));
    if (pm->rank <= 0)
        return;
    tj_buf_append(out, "[", 1);
    for (int d = 0; d < pm->rank && d < TJ_MAX_RANK; d++) {
        if (d)
            tj_buf_append(out, ", ", 2);
        if (pm->dim_names[d])
            tj_buf_printf(out, "%s", pm->dim_names[d]);
        else if (pm->dim_sizes[d] >= 0)
            tj_buf_printf(out, "%" PRId64, pm->dim_sizes[d]);
        else
            tj_buf_append(out, "?", 1);
    }
    tj_buf_append(out, "]", 1);
}

static void print_bindings(const char *label, const tj_binding *b, uint32_t n, tj_buf *out)
{
    if (!n)
        return;
    tj_buf_printf(out, " %s(", label);
    for (uint32_t i = 0; i < n; i++)
        tj_buf_printf(out, "%s%s = %" PRId64, i ? ", " : "", b[i].name ? b[i].name : "_", b[i].value);
    tj_buf_append(out, ")", 1);
}

static void print_axis_set(const char *key, const uint8_t *flags, int rank, int *n, tj_buf *out)
{
    int any = 0;
    for (int a = 0; a < rank && a < TJ_MAX_RANK; a++)
        any |= flags[a] != 0;
    if (!any)
        return;
    tj_buf_printf(out, "%s%s = [", (*n)++ ? ", " : "", key);
    for (int a = 0, m = 0; a < rank && a < TJ_MAX_RANK; a++)
        if (flags[a])
            tj_buf_printf(out, "%s%d", m++ ? ", " : "", a);
    tj_buf_append(out, "]", 1);
}

/* ` facts(X = {unit_stride, aligned16, dim_div16 = [0, 1], ...}, n = {})`:
 * what the runtime told the specializer, one entry per parameter. */
static void print_facts(const tj_kernel *k, tj_buf *out)
{
    if (!k->facts)
        return;
    tj_buf_append(out, " facts(", 7);
    for (uint32_t i = 0; i < k->nparams; i++) {
        const tj_facts *f = &k->facts[i];
        int n = 0;
        tj_buf_printf(out, "%s%s = {", i ? ", " : "", k->params[i].name ? k->params[i].name : "_");
        if (f->unit_stride)
            tj_buf_printf(out, "%sunit_stride", n++ ? ", " : "");
        if (f->aligned16)
            tj_buf_printf(out, "%saligned16", n++ ? ", " : "");
        print_axis_set("dim_div16", f->dim_div16, k->params[i].rank, &n, out);
        print_axis_set("stride_div16", f->stride_div16, k->params[i].rank, &n, out);
        tj_buf_append(out, "}", 1);
    }
    tj_buf_append(out, ")", 1);
}

/* `kernel @name(params) [simt(...)] [config(...)] [spec(...)] [facts(...)] {` */
static void print_header(const tj_kernel *k, tj_buf *out)
{
    tj_buf_printf(out, "kernel @%s(", k->name ? k->name : "_");
    for (uint32_t i = 0; i < k->nparams; i++) {
        if (i)
            tj_buf_append(out, ", ", 2);
        print_param(&k->params[i], out);
    }
    tj_buf_append(out, ")", 1);
    if (k->level == TJ_LEVEL_SIMT)
        tj_buf_printf(out, " simt(threads = %u, smem = %u%s", k->nthreads, k->smem_bytes, k->programs ? "" : ")");
    if (k->level == TJ_LEVEL_SIMT && k->programs)
        tj_buf_printf(out, ", programs = %u)", k->programs);
    print_bindings("config", k->config, k->nconfig, out);
    print_bindings("spec", k->spec, k->nspec, out);
    print_facts(k, out);
    tj_buf_append(out, " {\n", 3);
}

static void print_kernel_unguarded(const tj_kernel *k, tj_buf *out)
{
    printer p = {k, tj_number_values(k), tj_alloc(k->ctx, k->nblocks ? k->nblocks : 1), out};
    print_header(k, out);
    print_top_block(&p, "grid", k->grid);
    print_top_block(&p, "body", k->body);
    tj_buf_append(out, "}\n", 2);
}

typedef struct print_job {
    const tj_kernel *k;
    tj_buf *out;
} print_job;

static int run_print(void *arg)
{
    print_job *j = arg;
    print_kernel_unguarded(j->k, j->out);
    return 0;
}

void tj_print_kernel(const tj_kernel *k, tj_buf *out)
{
    if (!k || !out)
        return;
    print_job j = {k, out};
    if (tj_guarded(k->ctx, run_print, &j))
        tj_buf_append(out, "\n# out of memory\n", 17);
}
