/* MLIR modules: parsing through the reader, MLIR's own diagnostics, the
 * check that every op and type is one tilejit imports, the functions and
 * their signatures. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlir/mlir_internal.h"

static const mop_info op_table[] = {
#define MOP(name, kind, aop) {name, MK_##kind, TJ_AOP_##aop},
#include "mlir/ops.def"
};

const mop_info *tj_mlir_op_info(const char *name)
{
    for (size_t i = 0; i < sizeof op_table / sizeof op_table[0]; i++)
        if (!strcmp(op_table[i].name, name))
            return &op_table[i];
    return NULL;
}

/* ---- the program ---------------------------------------------------------- */

const char *tj_mlir_op_name(const tj_mlir_module *m, uint32_t op) { return tj_mprog_str(&m->prog, m->prog.ops[op].name); }

const tj_mattr *tj_mlir_attr(const tj_mlir_module *m, uint32_t op, const char *name)
{
    const tj_mop *o = &m->prog.ops[op];
    for (uint32_t i = 0; i < o->nattrs; i++)
        if (!strcmp(tj_mprog_str(&m->prog, m->prog.attrs[o->attrs + i].name), name))
            return &m->prog.attrs[o->attrs + i];
    return NULL;
}

uint32_t tj_mlir_operand(const tj_mlir_module *m, uint32_t op, uint32_t i)
{
    return m->prog.uses[m->prog.ops[op].operands + i];
}

const tj_mvalue *tj_mlir_value(const tj_mlir_module *m, uint32_t id) { return &m->prog.values[id]; }

static const char *function_name(const tj_mlir_module *m, uint32_t op)
{
    const tj_mattr *a = tj_mlir_attr(m, op, "sym_name");
    return a && a->kind == TJ_MA_STRING ? tj_mprog_str(&m->prog, a->str) : "";
}

uint32_t tj_mlir_find_function(const tj_mlir_module *m, const char *func)
{
    for (uint32_t i = 0; i < m->nfuncs; i++)
        if (!func || !strcmp(function_name(m, m->funcs[i]), func))
            return m->funcs[i];
    return UINT32_MAX;
}

uint32_t tj_mlir_function_count(const tj_mlir_module *m) { return m ? m->nfuncs : 0; }

const char *tj_mlir_function_name(const tj_mlir_module *m, uint32_t i)
{
    return m && i < m->nfuncs ? function_name(m, m->funcs[i]) : NULL;
}

/* ---- locations ------------------------------------------------------------ */

typedef struct checker {
    tj_mlir_module *m;
    tj_ctx *c;
    uint32_t file; /* the text's source index */
} checker;

uint32_t tj_mlir_loc_source(tj_ctx *c, const tj_mlir_module *m, uint32_t loc_file, uint32_t own)
{
    const char *name = tj_mprog_str(&m->prog, loc_file);
    if (!*name || !strcmp(name, "-") || !strcmp(name, m->file))
        return own;
    return tj_source_add(c, name, "", 0);
}

static void report_mlir_diags(checker *k)
{
    const tj_mprog *p = &k->m->prog;
    for (uint32_t i = 0; i < p->ndiags; i++) {
        const tj_mdiag *d = &p->diags[i];
        tj_diag_report(k->c, d->error ? TJ_SEV_ERROR : TJ_SEV_NOTE, d->line ? k->file : 0, d->line, d->col,
                       "%s", tj_mprog_str(p, d->msg));
    }
    if (!p->parsed && !tj_error_count(k->c))
        tj_diag_report(k->c, TJ_SEV_ERROR, k->file, 0, 0, "MLIR could not parse %s", k->m->file);
}

static void op_error(checker *k, uint32_t op, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void op_error(checker *k, uint32_t op, const char *fmt, ...)
{
    const tj_mop *o = &k->m->prog.ops[op];
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tj_diag_report(k->c, TJ_SEV_ERROR, o->line ? tj_mlir_loc_source(k->c, k->m, o->loc_file, k->file) : k->file, o->line, o->col,
                   "'%s': %s", tj_mprog_str(&k->m->prog, o->name), msg);
}

/* ---- the check ------------------------------------------------------------------ */

static const char *unsupported_type(const tj_mvalue *v)
{
    if (v->kind == TJ_MT_OTHER)
        return "a type tilejit has no counterpart of";
    if (v->dtype == TJ_DT_INVALID)
        return "an element type tilejit has none of";
    if (v->kind == TJ_MT_TENSOR && v->rank < 0)
        return "a tensor of more than 6 dimensions";
    for (int d = 0; v->kind == TJ_MT_TENSOR && d < v->rank; d++)
        if (v->shape[d] == TJ_MDIM_DYNAMIC)
            return "a dynamic dimension (only static shapes are imported)";
    return NULL;
}

/* Values first .. first + n - 1 (results), or the ids at uses[first ...]
 * (block arguments). */
static void check_values(checker *k, uint32_t op, uint32_t first, uint32_t n, int block_args)
{
    const tj_mprog *p = &k->m->prog;
    for (uint32_t i = 0; i < n; i++) {
        const tj_mvalue *v = &p->values[block_args ? p->uses[first + i] : first + i];
        const char *why = unsupported_type(v);
        if (why) {
            op_error(k, op, "%s %u has type %s: %s", block_args ? "argument" : "result", i,
                     tj_mprog_str(p, v->text), why);
            return;
        }
    }
}

/* Whether op sits directly in a function body (not in a linalg body). */
static int at_function_level(const tj_mlir_module *m, uint32_t op)
{
    uint32_t parent = m->prog.ops[op].parent;
    return parent != UINT32_MAX && !strcmp(tj_mlir_op_name(m, parent), "func.func");
}

static void check_op(checker *k, uint32_t op)
{
    tj_mlir_module *m = k->m;
    const tj_mop *o = &m->prog.ops[op];
    const char *name = tj_mlir_op_name(m, op);
    const mop_info *info = tj_mlir_op_info(name);
    if (o->parent == UINT32_MAX) {
        if (!info || info->kind != MK_FUNC)
            op_error(k, op, "only functions are imported at module level");
        else if (o->nblocks > 1)
            op_error(k, op, "a function of %u blocks (only straight-line functions are imported)", o->nblocks);
        else if (o->body_end > op + 1) { /* a definition, not a declaration */
            m->funcs[m->nfuncs++] = op;
            check_values(k, op, o->args, o->nargs, 1);
        }
        return;
    }
    if (!info || info->kind == MK_FUNC) {
        op_error(k, op, "op not imported by tilejit (docs/interop.md lists the func, arith, math, linalg "
                        "and tensor ops it imports)");
        return;
    }
    if (o->nregions > 1 || o->nblocks > 1) /* only one block is read: the rest must not be skipped silently */
        op_error(k, op, "%u regions of %u blocks: only ops of one region of one block are imported", o->nregions,
                 o->nblocks);
    for (uint32_t i = 0; i < o->noperands; i++)
        if (m->prog.uses[o->operands + i] == UINT32_MAX) {
            op_error(k, op, "operand %u is defined where tilejit does not read (another block or region)", i);
            break;
        }
    int tensor_level = info->kind >= MK_GENERIC || info->kind == MK_RETURN;
    if (tensor_level && !at_function_level(m, op))
        op_error(k, op, "inside a linalg body, where only scalar ops are imported");
    if ((info->kind == MK_YIELD || info->kind == MK_INDEX) && at_function_level(m, op))
        op_error(k, op, "outside a linalg body");
    check_values(k, op, o->results, o->nresults, 0);
    check_values(k, op, o->args, o->nargs, 1);
}

static int check_module(checker *k)
{
    tj_mlir_module *m = k->m;
    m->funcs = calloc(m->prog.nops ? m->prog.nops : 1, sizeof *m->funcs);
    if (!m->funcs)
        return 1;
    uint32_t errors = tj_error_count(k->c);
    for (uint32_t op = 0; op < m->prog.nops; op++)
        check_op(k, op);
    return tj_error_count(k->c) != errors;
}

tj_mlir_module *tj_mlir_parse(tj_ctx *c, const char *file, const char *text, size_t len)
{
    if (!c || !text) {
        tj_error(c, "tj_mlir_parse: NULL context or text");
        return NULL;
    }
    file = file ? file : "<mlir>";
    tj_mlir_module *m = calloc(1, sizeof *m);
    tj_rt_error err = {{0}};
    if (!m || !(m->file = malloc(strlen(file) + 1)) || !(m->text = malloc(len + 1))) {
        tj_mlir_module_free(m);
        tj_error(c, "out of memory importing %s", file);
        return NULL;
    }
    strcpy(m->file, file);
    memcpy(m->text, text, len);
    m->text[len] = 0;
    m->len = len;
    checker k = {m, c, tj_source_add(c, file, text, len)};
    int failed = tj_mlir_read(m, text, len, &err);
    if (failed)
        tj_diag_report(c, TJ_SEV_ERROR, 0, 0, 0, "%s", err.msg);
    else {
        report_mlir_diags(&k);
        failed = !m->prog.parsed || tj_error_count(c) || check_module(&k);
    }
    if (failed) {
        tj_mlir_module_free(m);
        return NULL;
    }
    return m;
}

void tj_mlir_module_free(tj_mlir_module *m)
{
    if (!m)
        return;
    if (m->release)
        m->release(&m->prog);
    free(m->funcs);
    free(m->file);
    free(m->text);
    free(m);
}

/* ---- signatures -------------------------------------------------------------------- */

static void value_info(const tj_mvalue *v, const char *prefix, uint32_t i, tj_mlir_value_info *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s%u", prefix, i);
    out->dtype = v->dtype;
    out->rank = v->kind == TJ_MT_TENSOR ? v->rank : 0;
    for (int d = 0; d < out->rank; d++)
        out->shape[d] = v->shape[d];
}

/* The function's func.return (the last op of its body). */
static uint32_t function_return(const tj_mlir_module *m, uint32_t fn)
{
    for (uint32_t op = m->prog.ops[fn].body_end; op-- > fn + 1;)
        if (m->prog.ops[op].parent == fn)
            return strcmp(tj_mlir_op_name(m, op), "func.return") ? UINT32_MAX : op;
    return UINT32_MAX;
}

int tj_mlir_function_signature(const tj_mlir_module *m, const char *func, tj_mlir_value_info *params,
                               uint32_t *nparams, tj_mlir_value_info *results, uint32_t *nresults, uint32_t max,
                               tj_rt_error *err)
{
    if (!m || !nparams || !nresults)
        return tj_rt_fail(err, "tj_mlir_function_signature: NULL module or count");
    uint32_t fn = tj_mlir_find_function(m, func);
    if (fn == UINT32_MAX)
        return tj_rt_fail(err, "no function '%s' in %s", func ? func : "(any)", m->file);
    const tj_mop *o = &m->prog.ops[fn];
    *nparams = o->nargs;
    for (uint32_t i = 0; params && i < o->nargs && i < max; i++)
        value_info(tj_mlir_value(m, m->prog.uses[o->args + i]), "arg", i, &params[i]);
    uint32_t ret = function_return(m, fn);
    if (ret == UINT32_MAX)
        return tj_rt_fail(err, "function '%s' does not end in func.return", function_name(m, fn));
    *nresults = m->prog.ops[ret].noperands;
    for (uint32_t i = 0; results && i < *nresults && i < max; i++)
        value_info(tj_mlir_value(m, tj_mlir_operand(m, ret, i)), "result", i, &results[i]);
    return 0;
}
