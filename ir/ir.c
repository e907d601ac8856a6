/* The op table, the kernel builder, and tj_buf. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ctx_internal.h"

static const tj_op_info op_table[TJ_OP_COUNT] = {
    [TJ_OP_INVALID] = {"invalid", 0, TJ_ATTR_NONE, 0},
#define OP(e, s, n, a, f) [TJ_OP_##e] = {s, n, a, f},
#include "tilejit/ops.def"
};

const tj_op_info *tj_op_get(tj_op op) { return &op_table[op < TJ_OP_COUNT ? op : TJ_OP_INVALID]; }

tj_op tj_op_from_name(const char *s, size_t len)
{
    if (!s)
        return TJ_OP_INVALID;
    for (int o = 1; o < TJ_OP_COUNT; o++)
        if (strlen(op_table[o].name) == len && !memcmp(op_table[o].name, s, len))
            return (tj_op)o;
    return TJ_OP_INVALID;
}

/* ---- kernels and blocks --------------------------------------------------- */

/* The builder's checks of ids: one the kernel does not have is reported in
 * its context, naming the entry point. 0 when it is there. */
static int no_block(const tj_kernel *k, tj_block_id b, const char *func)
{
    if (b && b < k->nblocks)
        return 0;
    tj_error(k->ctx, "%s: kernel '%s' has no block %u", func, k->name, b);
    return 1;
}

static int no_inst(const tj_kernel *k, tj_ref r, const char *func)
{
    if (r && r < k->ninsts)
        return 0;
    tj_error(k->ctx, "%s: kernel '%s' has no instruction %u", func, k->name, r);
    return 1;
}

static int no_array(const tj_kernel *k, const void *a, uint32_t n, const char *func)
{
    if (tj_array_ok(a, n))
        return 0;
    tj_error(k->ctx, "%s: NULL array of %u items", func, n);
    return 1;
}

int64_t tj_config_value(const tj_kernel *k, const char *name, int64_t dflt)
{
    for (uint32_t i = 0; k && name && i < k->nconfig; i++)
        if (k->config[i].name && !strcmp(k->config[i].name, name))
            return k->config[i].value;
    return dflt;
}

int tj_is_reserved_param(const char *name)
{
    return name && (!strcmp(name, TJ_PARAM_WARPS) || !strcmp(name, TJ_PARAM_STAGES));
}

tj_kernel *tj_kernel_new(tj_ctx *c, const char *name)
{
    if (!c)
        return NULL;
    if (!name) {
        tj_error(c, "tj_kernel_new: NULL name");
        return NULL;
    }
    tj_kernel *k = tj_alloc(c, sizeof *k);
    if (!k)
        return NULL; /* out of memory outside a guard (tj_alloc) */
    k->ctx = c;
    k->name = tj_strdup(c, name);
    k->ninsts = 1; /* insts[0] is TJ_NONE */
    k->insts = tj_grow(c, NULL, &k->icap, 64, sizeof *k->insts);
    k->nblocks = 1;
    k->blocks = tj_grow(c, NULL, &k->bcap, 8, sizeof *k->blocks);
    return k->name && k->insts && k->blocks ? k : NULL;
}

tj_block_id tj_block_new(tj_kernel *k, tj_ref owner)
{
    if (!k || (owner && no_inst(k, owner, "tj_block_new")))
        return 0;
    tj_block *blocks = tj_grow(k->ctx, k->blocks, &k->bcap, k->nblocks + 1, sizeof *k->blocks);
    if (!blocks)
        return 0;
    k->blocks = blocks;
    k->blocks[k->nblocks] = (tj_block){.owner = owner};
    return k->nblocks++;
}

tj_ref tj_inst_new(tj_kernel *k, tj_op op, tj_type type, const tj_ref *args, uint32_t nargs)
{
    if (!k || no_array(k, args, nargs, "tj_inst_new"))
        return TJ_NONE;
    if ((unsigned)op >= TJ_OP_COUNT) {
        tj_error(k->ctx, "tj_inst_new: no op %d", (int)op);
        return TJ_NONE;
    }
    tj_inst *insts = tj_grow(k->ctx, k->insts, &k->icap, k->ninsts + 1, sizeof *k->insts);
    if (!insts)
        return TJ_NONE;
    k->insts = insts;
    tj_ref r = k->ninsts++;
    k->insts[r] = (tj_inst){.op = op, .type = type};
    tj_inst_set_args(k, r, args, nargs);
    return k->insts[r].nargs == nargs ? r : TJ_NONE; /* or out of memory */
}

void tj_inst_set_args(tj_kernel *k, tj_ref r, const tj_ref *args, uint32_t nargs)
{
    if (!k || no_inst(k, r, "tj_inst_set_args") || no_array(k, args, nargs, "tj_inst_set_args"))
        return;
    tj_inst *in = &k->insts[r];
    if (nargs > in->nargs) {
        tj_ref *grown = tj_alloc(k->ctx, sizeof(tj_ref) * nargs);
        if (!grown)
            return;
        in->args = grown;
    }
    if (nargs)
        memmove(in->args, args, sizeof(tj_ref) * nargs);
    in->nargs = nargs;
}

void tj_inst_set_list(tj_kernel *k, tj_ref r, const int32_t *list, uint32_t n)
{
    if (!k || no_inst(k, r, "tj_inst_set_list") || no_array(k, list, n, "tj_inst_set_list"))
        return;
    tj_inst *in = &k->insts[r];
    int32_t *copy = n ? tj_alloc(k->ctx, sizeof(int32_t) * n) : NULL;
    if (n && !copy)
        return;
    in->list = copy;
    if (n)
        memcpy(in->list, list, sizeof(int32_t) * n);
    in->nlist = n;
}

void tj_block_insert(tj_kernel *k, tj_block_id b, uint32_t pos, tj_ref r)
{
    if (!k || no_block(k, b, "tj_block_insert") || no_inst(k, r, "tj_block_insert"))
        return;
    tj_block *blk = &k->blocks[b];
    tj_ref *grown = tj_grow(k->ctx, blk->insts, &blk->cap, blk->ninsts + 1, sizeof(tj_ref));
    if (!grown)
        return;
    blk->insts = grown;
    if (pos > blk->ninsts)
        pos = blk->ninsts;
    memmove(blk->insts + pos + 1, blk->insts + pos, sizeof(tj_ref) * (blk->ninsts - pos));
    blk->insts[pos] = r;
    blk->ninsts++;
    k->insts[r].block = b;
}

void tj_block_remove(tj_kernel *k, tj_block_id b, uint32_t pos)
{
    if (!k || no_block(k, b, "tj_block_remove"))
        return;
    tj_block *blk = &k->blocks[b];
    if (pos >= blk->ninsts)
        return;
    k->insts[blk->insts[pos]].block = 0;
    memmove(blk->insts + pos, blk->insts + pos + 1, sizeof(tj_ref) * (blk->ninsts - pos - 1));
    blk->ninsts--;
}

tj_ref tj_emit(tj_kernel *k, tj_block_id b, tj_op op, tj_type type, const tj_ref *args, uint32_t nargs)
{
    if (!k || no_block(k, b, "tj_emit"))
        return TJ_NONE;
    tj_ref r = tj_inst_new(k, op, type, args, nargs);
    if (!r)
        return TJ_NONE;
    tj_block_insert(k, b, k->blocks[b].ninsts, r);
    return k->insts[r].block == b ? r : TJ_NONE; /* or out of memory */
}

tj_ref tj_emit_const_int(tj_kernel *k, tj_block_id b, tj_type t, int64_t v)
{
    tj_ref r = tj_emit(k, b, TJ_OP_CONST, t, NULL, 0);
    if (r)
        k->insts[r].imm = v;
    return r;
}

tj_ref tj_emit_const_float(tj_kernel *k, tj_block_id b, tj_type t, double v)
{
    tj_ref r = tj_emit(k, b, TJ_OP_CONST, t, NULL, 0);
    if (r)
        k->insts[r].fimm = v;
    return r;
}

uint32_t tj_count_uses(const tj_kernel *k, tj_ref v)
{
    uint32_t n = 0;
    for (tj_ref r = 1; r < k->ninsts; r++)
        for (uint32_t a = 0; a < k->insts[r].nargs; a++)
            n += k->insts[r].args[a] == v;
    return n;
}

void tj_replace_uses(tj_kernel *k, tj_ref from, tj_ref to)
{
    if (!k)
        return;
    for (tj_ref r = 1; r < k->ninsts; r++) {
        tj_inst *in = &k->insts[r];
        for (uint32_t a = 0; a < in->nargs; a++)
            if (in->args[a] == from)
                in->args[a] = to;
    }
}

static void *dup_mem(tj_ctx *c, const void *p, size_t n)
{
    if (!p || !n)
        return NULL;
    void *q = tj_alloc(c, n);
    if (q)
        memcpy(q, p, n);
    return q;
}

typedef struct {
    const tj_kernel *from;
    tj_kernel *copy;
} clone_job;

static int clone_kernel(void *arg)
{
    clone_job *j = arg;
    const tj_kernel *k = j->from;
    tj_ctx *c = k->ctx;
    tj_kernel *n = tj_alloc(c, sizeof *n);
    *n = *k;
    n->params = dup_mem(c, k->params, sizeof *k->params * k->nparams);
    n->config = dup_mem(c, k->config, sizeof *k->config * k->nconfig);
    n->spec = dup_mem(c, k->spec, sizeof *k->spec * k->nspec);
    n->insts = dup_mem(c, k->insts, sizeof *k->insts * k->icap);
    n->blocks = dup_mem(c, k->blocks, sizeof *k->blocks * k->bcap);
    for (tj_ref r = 1; r < n->ninsts; r++) {
        tj_inst *in = &n->insts[r];
        in->args = dup_mem(c, in->args, sizeof(tj_ref) * in->nargs);
        in->list = dup_mem(c, in->list, sizeof(int32_t) * in->nlist);
    }
    for (tj_block_id b = 1; b < n->nblocks; b++) {
        tj_block *blk = &n->blocks[b];
        blk->insts = dup_mem(c, blk->insts, sizeof(tj_ref) * blk->cap);
    }
    j->copy = n;
    return 0;
}

tj_kernel *tj_kernel_clone(const tj_kernel *k)
{
    if (!k)
        return NULL;
    /* Guarded here too, so a direct caller gets NULL, not half a copy. */
    clone_job j = {k, NULL};
    return tj_guarded(k->ctx, clone_kernel, &j) ? NULL : j.copy;
}

/* ---- tj_buf ---------------------------------------------------------------- */

static int buf_reserve(tj_buf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return 0; /* out of memory: the text is truncated, never overrun */
    b->data = p;
    b->cap = cap;
    return 1;
}

void tj_buf_append(tj_buf *b, const char *s, size_t n)
{
    if (!b || !tj_array_ok(s, n) || !buf_reserve(b, n))
        return;
    if (n) /* s may be NULL when n is 0 */
        memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

void tj_buf_printf(tj_buf *b, const char *fmt, ...)
{
    if (!b || !fmt)
        return;
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0 && buf_reserve(b, (size_t)n)) {
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
}

void tj_buf_free(tj_buf *b)
{
    if (!b)
        return;
    free(b->data);
    *b = (tj_buf){0};
}
