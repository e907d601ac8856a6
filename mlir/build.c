/* Building a function's body into an array graph: values to arrays, op by
 * op, each family in its file; errors at the op's MLIR location. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlir/mlir_internal.h"

int tj_mlir_fail(mbuild *b, uint32_t op, const char *fmt, ...)
{
    char msg[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const tj_mop *o = &b->m->prog.ops[op];
    if (!b->failed)
        tj_diag_report(b->c, TJ_SEV_ERROR, o->line ? tj_mlir_loc_source(b->c, b->m, o->loc_file, b->file) : 0,
                       o->line, o->col, "'%s': %s",
                       tj_mlir_op_name(b->m, op), msg);
    b->failed = 1;
    return 1;
}

tj_array tj_mlir_check(mbuild *b, uint32_t op, tj_array a)
{
    if (a == TJ_ARRAY_NONE && !b->failed) {
        tj_mlir_fail(b, op, "%s", tj_graph_error(b->g));
        tj_graph_clear_error(b->g);
    }
    return a;
}

tj_array tj_mlir_get(mbuild *b, uint32_t op, uint32_t id)
{
    if (id >= b->m->prog.nvalues || b->env[id] == TJ_ARRAY_NONE) {
        tj_mlir_fail(b, op, "an operand defined by an op that was not imported");
        return TJ_ARRAY_NONE;
    }
    return b->env[id];
}

void tj_mlir_set(mbuild *b, uint32_t id, tj_array a) { b->env[id] = a; }

tj_array tj_mlir_constant(mbuild *b, tj_dtype dt, double v) { return tj_array_scalar(b->g, dt, v, 0); }

void tj_mlir_copy_uniform(mbuild *b, uint32_t to, uint32_t from)
{
    b->uniform[to] = b->uniform[from];
    b->uniform_value[to] = b->uniform_value[from];
}

int tj_mlir_is_identity(const mbuild *b, uint32_t init, tj_aop combine)
{
    if (!b->uniform[init])
        return 0;
    double v = b->uniform_value[init];
    switch (combine) {
    case TJ_AOP_ADD: return v == 0;
    case TJ_AOP_MULTIPLY: return v == 1;
    case TJ_AOP_MAXIMUM: return v == -INFINITY;
    case TJ_AOP_MINIMUM: return v == INFINITY;
    default: return 0;
    }
}

static int build_op(mbuild *b, uint32_t op)
{
    const mop_info *info = tj_mlir_op_info(tj_mlir_op_name(b->m, op));
    if (!info) /* tj_mlir_parse refused it: only a module built otherwise gets here */
        return tj_mlir_fail(b, op, "op not supported by the tilejit importer");
    switch (info->kind) {
    case MK_FUNC:
    case MK_RETURN:
    case MK_YIELD: return 0; /* read by the op that owns the body */
    case MK_GENERIC:
    case MK_MAP:
    case MK_REDUCE:
    case MK_FILL:
    case MK_MATMUL:
    case MK_TRANSPOSE:
    case MK_BROADCAST: return tj_mlir_build_linalg(b, op, info);
    case MK_EMPTY:
    case MK_EXTRACT_SLICE:
    case MK_INSERT_SLICE:
    case MK_RESHAPE:
    case MK_TENSOR_CAST:
    case MK_CONCAT: return tj_mlir_build_tensor(b, op, info);
    default: return tj_mlir_build_elementwise(b, op, info);
    }
}

int tj_mlir_build_ops(mbuild *b, uint32_t first, uint32_t end)
{
    for (uint32_t op = first; op < end && !b->failed; op = b->m->prog.ops[op].body_end)
        if (build_op(b, op))
            return 1;
    return b->failed;
}

/* ---- a function --------------------------------------------------------- */

static int bind_inputs(mbuild *b, uint32_t fn, const tj_array *inputs, uint32_t n)
{
    const tj_mop *o = &b->m->prog.ops[fn];
    if (n != o->nargs)
        return tj_mlir_fail(b, fn, "the function takes %u arguments, %u given", o->nargs, n);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id = b->m->prog.uses[o->args + i];
        const tj_mvalue *v = tj_mlir_value(b->m, id);
        tj_array_info info;
        int rank = v->kind == TJ_MT_TENSOR ? v->rank : 0;
        int same = !tj_array_get_info(b->g, inputs[i], &info) && info.dtype == v->dtype && info.rank == rank;
        for (int d = 0; same && d < rank; d++)
            same = info.shape[d] == v->shape[d];
        if (!same)
            return tj_mlir_fail(b, fn, "argument %u must be %s", i, tj_mprog_str(&b->m->prog, v->text));
        tj_mlir_set(b, id, inputs[i]);
    }
    return 0;
}

static int take_results(mbuild *b, uint32_t fn, tj_array *outputs, uint32_t maxout)
{
    const tj_mop *f = &b->m->prog.ops[fn];
    uint32_t ret = UINT32_MAX;
    for (uint32_t op = fn + 1; op < f->body_end; op = b->m->prog.ops[op].body_end)
        ret = op;
    if (ret == UINT32_MAX || strcmp(tj_mlir_op_name(b->m, ret), "func.return"))
        return tj_mlir_fail(b, fn, "the function does not end in func.return");
    uint32_t n = b->m->prog.ops[ret].noperands;
    if (n > maxout)
        return tj_mlir_fail(b, ret, "%u results, room for %u", n, maxout);
    for (uint32_t i = 0; i < n; i++)
        if ((outputs[i] = tj_mlir_get(b, ret, tj_mlir_operand(b->m, ret, i))) == TJ_ARRAY_NONE)
            return 1;
    return 0;
}

static int build_function(mbuild *b, uint32_t fn, const tj_array *inputs, uint32_t ninputs, tj_array *outputs,
                          uint32_t maxout)
{
    return bind_inputs(b, fn, inputs, ninputs) ||
           tj_mlir_build_ops(b, fn + 1, b->m->prog.ops[fn].body_end) || take_results(b, fn, outputs, maxout);
}

int tj_mlir_build(const tj_mlir_module *m, const char *func, tj_graph *g, const tj_array *inputs, uint32_t ninputs,
                  tj_array *outputs, uint32_t maxout, tj_ctx *c, tj_rt_error *err)
{
    if (!m || !g || !tj_array_ok(inputs, ninputs) || !tj_array_ok(outputs, maxout))
        return tj_rt_fail(err, "tj_mlir_build: NULL module or graph, or NULL inputs or outputs with a count");
    uint32_t fn = tj_mlir_find_function(m, func);
    if (fn == UINT32_MAX)
        return tj_rt_fail(err, "no function '%s' in %s", func ? func : "(any)", m->file);
    tj_ctx *own = c ? NULL : tj_ctx_new();
    mbuild b = {.m = m, .g = g, .c = c ? c : own, .err = err};
    uint32_t nvalues = m->prog.nvalues ? m->prog.nvalues : 1;
    b.env = calloc(nvalues, sizeof *b.env);
    b.uniform = calloc(nvalues, 1);
    b.uniform_value = calloc(nvalues, sizeof *b.uniform_value);
    if (!b.c || !b.env || !b.uniform || !b.uniform_value)
        b.failed = !tj_rt_fail(err, "out of memory importing %s", m->file) || 1;
    else {
        b.file = tj_source_add(b.c, m->file, m->text, m->len);
        build_function(&b, fn, inputs, ninputs, outputs, maxout);
        if (b.failed)
            tj_rt_fail(err, "importing '%s' from %s failed%s%s", func ? func : "(the first function)", m->file,
                       own ? ":\n" : " (diagnostics in the context)", own ? tj_diag_render(own) : "");
    }
    free(b.env);
    free(b.uniform);
    free(b.uniform_value);
    tj_ctx_free(own);
    return b.failed;
}
