/* The kernel ABI of tj_emit_msl (tilejit/metal.h, docs/metal.md): buffer
 * slots, the constant argument block, the kernel signature, the ops that
 * read parameters (param, dim, stride, tensor_ptr), and the host side that
 * packs arguments for it (tj_msl_pack_args). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "codegen/msl/msl.h"

/* ---- which tensors the kernel writes ------------------------------------------ */

/* addr[r] = 1 + the tensor parameter a u64 value r points into, or 0:
 * tensor_ptr starts an address, add/sub/select of one keep it. Operands
 * may follow their users in the array, so this iterates to a fixpoint. */
static void trace_addresses(const tj_kernel *k, int32_t *addr)
{
    for (int changed = 1; changed;) {
        changed = 0;
        for (tj_ref r = 1; r < k->ninsts; r++) {
            const tj_inst *in = &k->insts[r];
            int32_t a = 0;
            if (in->op == TJ_OP_TENSOR_PTR && in->nargs == 1 && in->args[0] < k->ninsts &&
                k->insts[in->args[0]].op == TJ_OP_PARAM)
                a = 1 + (int32_t)k->insts[in->args[0]].imm;
            else if (in->op == TJ_OP_ADD || in->op == TJ_OP_SUB || in->op == TJ_OP_SELECT)
                for (uint32_t i = in->op == TJ_OP_SELECT ? 1 : 0; i < in->nargs && !a; i++)
                    if (in->args[i] < k->ninsts)
                        a = addr[in->args[i]];
            if (a && !addr[r]) {
                addr[r] = a;
                changed = 1;
            }
        }
    }
}

void tj_msl_tensor_writes(const tj_kernel *k, uint8_t *written)
{
    if (!k || !written)
        return;
    int32_t *addr = tj_alloc(k->ctx, sizeof *addr * k->ninsts);
    trace_addresses(k, addr);
    for (tj_ref r = 1; r < k->ninsts; r++) {
        const tj_inst *in = &k->insts[r];
        int update = in->op == TJ_OP_ST_GLOBAL || in->op == TJ_OP_ATOM_ADD || in->op == TJ_OP_ATOM_MAX ||
                     in->op == TJ_OP_ATOM_MIN;
        if (update && in->nargs && in->args[0] < k->ninsts && addr[in->args[0]] > 0 &&
            (uint32_t)addr[in->args[0]] <= k->nparams)
            written[addr[in->args[0]] - 1] = 1;
    }
}

/* ---- the argument block ------------------------------------------------------- */

static int field_size(const tj_param *p) { return p->dtype == TJ_DT_BOOL ? 1 : tj_dtype_size(p->dtype); }

static int32_t place(int32_t *off, int size)
{
    *off = (*off + size - 1) / size * size;
    int32_t at = *off;
    *off += size;
    return at;
}

/* Every tensor's strides (8 bytes each), then every tensor's sizes (4),
 * then the scalars, each group in declaration order: no padding but
 * before scalars that need it. */
int tj_msl_block_layout(const tj_kernel *k, int32_t (*size_off)[TJ_MAX_RANK], int32_t (*stride_off)[TJ_MAX_RANK],
                        int32_t *scalar_off)
{
    if (!k)
        return -1;
    if (k->nparams && (!size_off || !stride_off || !scalar_off)) {
        tj_error(k->ctx, "tj_msl_block_layout: NULL offset arrays for %u parameters", k->nparams);
        return -1;
    }
    int32_t off = 0;
    for (uint32_t p = 0; p < k->nparams; p++) {
        for (int a = 0; a < TJ_MAX_RANK; a++)
            size_off[p][a] = stride_off[p][a] = -1;
        scalar_off[p] = -1;
        for (int a = 0; a < k->params[p].rank && a < TJ_MAX_RANK; a++)
            stride_off[p][a] = place(&off, 8);
    }
    for (uint32_t p = 0; p < k->nparams; p++)
        for (int a = 0; a < k->params[p].rank && a < TJ_MAX_RANK; a++)
            size_off[p][a] = place(&off, 4);
    for (uint32_t p = 0; p < k->nparams && off <= TJ_MSL_MAX_BLOCK; p++)
        if (k->params[p].rank == 0)
            scalar_off[p] = place(&off, field_size(&k->params[p]));
    if (off > TJ_MSL_MAX_BLOCK) {
        tj_error_at(k->ctx, k->loc, "msl: kernel '%s' needs a %d-byte argument block; at most %d fit (setBytes)",
                    k->name, off, TJ_MSL_MAX_BLOCK);
        return -1;
    }
    return off;
}

/* ---- checks and the signature ------------------------------------------------- */

static const char *const reserved[] = {
    "kernel", "vertex", "fragment", "device", "constant", "threadgroup", "thread", "buffer", "texture",
    "sampler", "main", "metal", "precise", "fast", "using", "namespace", "template", "typename", "struct",
    "class", "union", "enum", "const", "static", "inline", "return", "if", "else", "for", "while", "do",
    "switch", "case", "default", "break", "continue", "goto", "sizeof", "true", "false", "operator", "new",
    "delete", "this", "auto", "register", "volatile", "extern", "signed", "unsigned", "typedef", "friend",
    "private", "public", "protected", "virtual", "explicit", "mutable", "throw", "try", "catch", "nullptr",
    "decltype", "constexpr", "static_assert", "alignas", "alignof", "noexcept", "thread_local", "export",
    "import", "void", "size_t", "ptrdiff_t", "host_name", "max_total_threads_per_threadgroup",
    "thread_position_in_grid", "threadgroup_position_in_grid", "thread_position_in_threadgroup",
    "threads_per_threadgroup", "threadgroups_per_grid", "threads_per_grid", "thread_index_in_threadgroup",
    "simdgroup_index_in_threadgroup", "thread_index_in_simdgroup", "simdgroups_per_threadgroup",
    "threads_per_simdgroup", "NAN", "INFINITY", "MAXFLOAT", "HUGE_VALF", NULL};

/* Scalar type names, also with a vector or matrix suffix (float4, half2x2). */
static const char *const type_names[] = {"bool", "char", "uchar", "short", "ushort", "int", "uint", "long",
                                         "ulong", "half", "float", "double", "bfloat", "packed_float", NULL};

static int is_type_name(const char *s)
{
    for (const char *const *t = type_names; *t; t++) {
        size_t n = strlen(*t);
        if (strncmp(s, *t, n))
            continue;
        const char *rest = s + n;
        while (isdigit((unsigned char)*rest) || *rest == 'x')
            rest++;
        if (!*rest)
            return 1;
    }
    return 0;
}

static int check_name(msl_emitter *e, const char *s)
{
    int ok = s && (isalpha((unsigned char)*s) || *s == '_');
    for (const char *q = s; ok && *q; q++)
        ok = isalnum((unsigned char)*q) || *q == '_';
    if (!ok)
        return ms_fail(e, 0, "the kernel name is not an MSL identifier");
    if (!strncmp(s, "tj_", 3) || !strncmp(s, "__", 2) || is_type_name(s))
        return ms_fail(e, 0, "the kernel name '%s' is reserved in the generated MSL", s);
    for (const char *const *w = reserved; *w; w++)
        if (!strcmp(s, *w))
            return ms_fail(e, 0, "the kernel name '%s' is reserved in MSL", s);
    return 0;
}

/* The first instruction that reads parameter p: where an error about the
 * parameter points (the front end gives it the place of that use). */
static tj_ref param_use(const tj_kernel *k, uint32_t p)
{
    for (tj_ref r = 1; r < k->ninsts; r++)
        if (k->insts[r].op == TJ_OP_PARAM && k->insts[r].imm == p)
            return r;
    return TJ_NONE;
}

int ms_plan_params(msl_emitter *e)
{
    const tj_kernel *k = e->k;
    if (check_name(e, k->name))
        return -1;
    e->written = tj_alloc(e->c, k->nparams + 1);
    e->tensor_slot = tj_alloc(e->c, k->nparams + 1);
    uint32_t ntensors = 0;
    for (uint32_t p = 0; p < k->nparams; p++) {
        if (k->params[p].dtype == TJ_DT_F64)
            return ms_fail(e, param_use(k, p), "parameter '%s' is f64, which does not exist in Metal", k->params[p].name);
        if (k->params[p].rank > 0)
            e->tensor_slot[p] = (uint8_t)ntensors++;
        if (ntensors > TJ_MSL_MAX_TENSORS)
            return ms_fail(e, param_use(k, p), "more than %d tensor parameters (Metal binds at most 31 buffers)",
                           TJ_MSL_MAX_TENSORS);
    }
    int32_t (*sizes)[TJ_MAX_RANK] = tj_alloc(e->c, sizeof *sizes * (k->nparams + 1));
    int32_t (*strides)[TJ_MAX_RANK] = tj_alloc(e->c, sizeof *strides * (k->nparams + 1));
    int32_t *scalars = tj_alloc(e->c, sizeof *scalars * (k->nparams + 1));
    if (tj_msl_block_layout(k, sizes, strides, scalars) < 0)
        return e->failed = 1, -1;
    tj_msl_tensor_writes(k, e->written);
    return 0;
}

static uint32_t tensor_count(const tj_kernel *k)
{
    uint32_t n = 0;
    for (uint32_t p = 0; p < k->nparams; p++)
        n += k->params[p].rank > 0;
    return n;
}

/* One field, after explicit padding up to its offset. */
static void write_field(tj_buf *out, int32_t *at, int32_t off, int size, const char *type, const char *name,
                        const char *note)
{
    if (off > *at)
        tj_buf_printf(out, "    uchar tj_pad%d[%d];\n", *at, off - *at);
    tj_buf_printf(out, "    %s %s;%s%s\n", type, name, note ? " // " : "", note ? note : "");
    *at = off + size;
}

void ms_write_args_struct(const msl_emitter *e, tj_buf *out)
{
    const tj_kernel *k = e->k;
    if (!k->nparams)
        return;
    int32_t (*sizes)[TJ_MAX_RANK] = tj_alloc(e->c, sizeof *sizes * k->nparams);
    int32_t (*strides)[TJ_MAX_RANK] = tj_alloc(e->c, sizeof *strides * k->nparams);
    int32_t *scalars = tj_alloc(e->c, sizeof *scalars * k->nparams);
    tj_msl_block_layout(k, sizes, strides, scalars);
    int32_t at = 0;
    char name[48];
    tj_buf_printf(out, "struct tj_args { // buffer(%u)\n", tensor_count(k));
    for (uint32_t p = 0; p < k->nparams; p++)
        for (int a = 0; a < k->params[p].rank; a++) {
            snprintf(name, sizeof name, "p%u_stride%d", p, a);
            write_field(out, &at, strides[p][a], 8, "long", name, a == 0 ? k->params[p].name : NULL);
        }
    for (uint32_t p = 0; p < k->nparams; p++)
        for (int a = 0; a < k->params[p].rank; a++) {
            snprintf(name, sizeof name, "p%u_size%d", p, a);
            write_field(out, &at, sizes[p][a], 4, "int", name, a == 0 ? k->params[p].name : NULL);
        }
    for (uint32_t p = 0; p < k->nparams; p++)
        if (k->params[p].rank == 0) {
            snprintf(name, sizeof name, "p%u", p);
            write_field(out, &at, scalars[p], field_size(&k->params[p]), ms_type(k->params[p].dtype), name,
                        k->params[p].name);
        }
    tj_buf_printf(out, "};\n\n");
}

void ms_write_signature(const msl_emitter *e, tj_buf *out)
{
    const tj_kernel *k = e->k;
    tj_buf_printf(out, "[[max_total_threads_per_threadgroup(%u)]]\nkernel void %s(", k->nthreads, k->name);
    for (uint32_t p = 0; p < k->nparams; p++) {
        const tj_param *pp = &k->params[p];
        if (pp->rank > 0)
            tj_buf_printf(out, "device %s%s *p%u [[buffer(%u)]], // %s\n    ", e->written[p] ? "" : "const ",
                          ms_mem_type(pp->dtype), p, e->tensor_slot[p], pp->name ? pp->name : "");
    }
    if (k->nparams)
        tj_buf_printf(out, "constant tj_args &tj_a [[buffer(%u)]],\n    ", tensor_count(k));
    tj_buf_printf(out, "uint3 tj_pid [[threadgroup_position_in_grid]],\n    uint3 tj_npid [[threadgroups_per_grid]],\n"
                       "    uint tj_tid [[thread_index_in_threadgroup]])\n");
}

void ms_write_prologue(const msl_emitter *e, tj_buf *out)
{
    const tj_kernel *k = e->k;
    for (uint32_t p = 0; p < k->nparams; p++) {
        const char *c = e->written[p] ? "" : "const ";
        if (k->params[p].rank > 0)
            tj_buf_printf(out, "    device %suchar *b%u = (device %suchar *)p%u;\n", c, p, c, p);
    }
}

/* ---- ops reading parameters ---------------------------------------------------- */

static int expect_result(msl_emitter *e, tj_ref r, tj_dtype want)
{
    return simt_expect_scalar(&e->walk, r, want) || ms_define(e, r, ms_inst(e, r)->type) ? -1 : 0;
}

static int emit_param(msl_emitter *e, tj_ref r)
{
    const tj_inst *in = ms_inst(e, r);
    const tj_param *p;
    int tensor = simt_param(&e->walk, r, &p);
    if (tensor)
        return tensor < 0 ? -1 : 0;
    if (expect_result(e, r, p->dtype))
        return -1;
    ms_line(e, "%s v%u = tj_a.p%lld;", ms_type(p->dtype), r, (long long)in->imm);
    return 0;
}

int ms_emit_param_op(msl_emitter *e, tj_ref r)
{
    const tj_inst *in = ms_inst(e, r);
    if (in->op == TJ_OP_PARAM)
        return emit_param(e, r);
    int rank, p = simt_tensor_param(&e->walk, r, &rank);
    if (p < 0)
        return -1;
    switch (in->op) {
    case TJ_OP_TENSOR_PTR:
        if (expect_result(e, r, TJ_DT_U64))
            return -1;
        ms_line(e, "ulong v%u = 0ul; // the base of p%d", r, p);
        e->addr[r] = 1 + p;
        return 0;
    case TJ_OP_DIM:
        if (expect_result(e, r, TJ_DT_I32))
            return -1;
        ms_line(e, "int v%u = tj_a.p%d_size%lld;", r, p, (long long)in->imm);
        return 0;
    default:
        if (expect_result(e, r, TJ_DT_I64))
            return -1;
        ms_line(e, "long v%u = tj_a.p%d_stride%lld;", r, p, (long long)in->imm);
        return 0;
    }
}
