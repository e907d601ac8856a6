/* From a .tj file to verified Tile IR of one kernel: what emit and run share. */
#include <string.h>

#include "cli.h"

int cli_open_kernel(tj_ctx *c, const char *path, const char *name, cli_kernel *k)
{
    memset(k, 0, sizeof *k);
    size_t len;
    char *text = cli_read_file(c, path, &len);
    if (!text)
        return -1;
    k->path = cli_source_name(path);
    k->text = text;
    k->len = len;
    k->prog = tj_parse_program(c, k->path, text, len);
    if (!k->prog)
        return -1;
    k->index = tj_program_find_kernel(k->prog, name);
    if (k->index < 0) {
        tj_buf names = {0};
        uint32_t n = tj_program_kernel_count(k->prog);
        for (uint32_t i = 0; i < n; i++)
            tj_buf_printf(&names, "%s%s", i ? ", " : "", tj_program_kernel_name(k->prog, i));
        cli_file_error(c, k->path, "no kernel named '%s' (kernels here: %s)", name,
                       n ? cli_buf_take(c, &names) : "none");
        return -1;
    }
    k->nparams = tj_kernel_params(k->prog, k->index, &k->params);
    k->ntparams = tj_kernel_tile_params(k->prog, k->index, &k->tparams);
    return 0;
}

static int is_tile_param(const cli_kernel *k, const char *name)
{
    for (uint32_t i = 0; i < k->ntparams; i++)
        if (!strcmp(k->tparams[i].name, name))
            return 1;
    /* warps and stages have per-target defaults when not declared. */
    return tj_is_reserved_param(name);
}

static int is_dim_name(const cli_kernel *k, const char *name)
{
    for (uint32_t i = 0; i < k->nparams; i++)
        for (int d = 0; d < k->params[i].rank; d++)
            if (k->params[i].dim_names[d] && !strcmp(k->params[i].dim_names[d], name))
                return 1;
    return 0;
}

static const char *kernel_name(const cli_kernel *k) { return tj_program_kernel_name(k->prog, (uint32_t)k->index); }

int cli_check_names(tj_ctx *c, const cli_kernel *k, const cli_opts *o)
{
    int bad = 0;
    for (uint32_t i = 0; i < o->ndefines; i++) {
        if (is_tile_param(k, o->defines[i].name))
            continue;
        tj_buf names = {0};
        for (uint32_t j = 0; j < k->ntparams; j++)
            tj_buf_printf(&names, "%s%s", j ? ", " : "", k->tparams[j].name);
        tj_error(c, "-D %s: kernel '%s' has no tile parameter '%s' (tile parameters: %s)", o->defines[i].name,
                 kernel_name(k), o->defines[i].name, k->ntparams ? cli_buf_take(c, &names) : "none");
        bad = 1;
    }
    for (uint32_t i = 0; i < o->nshapes; i++) {
        if (is_dim_name(k, o->shapes[i].name))
            continue;
        tj_error(c, "--shape %s: kernel '%s' has no dim named '%s' (parameters: %s)", o->shapes[i].name,
                 kernel_name(k), o->shapes[i].name, cli_param_list(c, k));
        bad = 1;
    }
    return bad ? -1 : 0;
}

tj_kernel *cli_build_kernel(tj_ctx *c, const cli_kernel *k, const tj_binding *defines, uint32_t ndefines,
                            const tj_binding *dims, uint32_t ndims)
{
    tj_binding *config = NULL;
    uint32_t nconfig = 0;
    if (tj_select_config(c, k->prog, k->index, defines, ndefines, dims, ndims, &config, &nconfig))
        return NULL;
    tj_kernel *ir = tj_build_kernel(c, k->prog, k->index, config, nconfig, dims, ndims);
    if (!ir)
        return NULL;
    if (tj_verify(ir)) {
        tj_error(c, "internal error: the front end built invalid IR for kernel '%s' (a bug in tilejit)",
                 kernel_name(k));
        return NULL;
    }
    return ir;
}

/* The parameter index behind a store's view, or -1 when it is not a
 * parameter seen through one view. */
static int stored_param(const tj_kernel *k, tj_ref view)
{
    if (!view || view >= k->ninsts || k->insts[view].op != TJ_OP_VIEW || !k->insts[view].nargs)
        return -1;
    tj_ref t = k->insts[view].args[0];
    if (!t || t >= k->ninsts || k->insts[t].op != TJ_OP_PARAM)
        return -1;
    int64_t i = k->insts[t].imm;
    return i >= 0 && i < (int64_t)k->nparams ? (int)i : -1;
}

void cli_written_params(const tj_kernel *k, unsigned char *written)
{
    memset(written, 0, k->nparams);
    for (tj_ref r = 1; r < k->ninsts; r++) {
        const tj_inst *in = &k->insts[r];
        if (in->op != TJ_OP_STORE && in->op != TJ_OP_STORE_RELEASE && in->op != TJ_OP_STORE_RELAXED &&
            in->op != TJ_OP_ATOMIC_ADD && in->op != TJ_OP_ATOMIC_MAX && in->op != TJ_OP_ATOMIC_MIN)
            continue;
        int p = in->nargs ? stored_param(k, in->args[0]) : -1;
        if (p < 0) { /* not traceable: assume every tensor may change */
            memset(written, 1, k->nparams);
            return;
        }
        written[p] = 1;
    }
}

static void param_str(const tj_param *p, tj_buf *b)
{
    tj_buf_printf(b, "%s: %s", p->name, tj_dtype_name(p->dtype));
    if (!p->rank)
        return;
    tj_buf_append(b, "[", 1);
    for (int d = 0; d < p->rank; d++) {
        if (p->dim_names[d])
            tj_buf_printf(b, "%s%s", d ? ", " : "", p->dim_names[d]);
        else
            tj_buf_printf(b, "%s%lld", d ? ", " : "", (long long)p->dim_sizes[d]);
    }
    tj_buf_append(b, "]", 1);
}

const char *cli_param_list(tj_ctx *c, const cli_kernel *k)
{
    tj_buf b = {0};
    for (uint32_t i = 0; i < k->nparams; i++) {
        if (i)
            tj_buf_append(&b, ", ", 2);
        param_str(&k->params[i], &b);
    }
    return cli_buf_take(c, &b);
}

const char *cli_param_decl(tj_ctx *c, const tj_param *p)
{
    tj_buf b = {0};
    param_str(p, &b);
    return cli_buf_take(c, &b);
}
