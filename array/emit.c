/* Emission: one kernel in the Tile language per fused group (after
 * tiling), which the JIT's front end turns into Tile IR for the pipeline.
 * The text is canonical (values named by their place in the group,
 * constants inline), so it is also the kernel cache's key. Every value is
 * a [BM, BN] tile of the group's space (a reduce group's reduced values
 * [BM, 1]); docs/arrays.md shows the shapes of the kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array_internal.h"

typedef struct em {
    const tj_graph *g;
    const tj_group *grp;
    const tj_group_args *args;
    tj_buf *o;
    int loop;                 /* a reduce group looping over N */
    int side;                 /* matmul: the space of what is being emitted (tj_group.side) */
    char fidx[256], ridx[256];
    uint8_t dep[TJ_GROUP_MAX_NODES]; /* member depends on a reduction */
} em;

static int member_pos(const tj_group *grp, tj_array a)
{
    for (uint32_t i = 0; i < grp->nmembers; i++)
        if (grp->members[i] == a)
            return (int)i;
    return -1;
}

static int input_pos(const tj_group *grp, tj_array a, int side)
{
    for (uint32_t i = 0; i < grp->ninputs; i++)
        if (grp->inputs[i] == a && grp->input_side[i] == side)
            return (int)i;
    return -1;
}

/* A value of the group as `want`: a member, a loaded input, or a constant. */
static void ref(const em *e, tj_array a, tj_dtype want, tj_buf *out)
{
    const tj_anode *x = &e->g->nodes[a];
    int m = member_pos(e->grp, a), i = m < 0 ? input_pos(e->grp, a, e->side) : -1;
    if (m < 0 && i < 0) {
        tj_emit_literal(out, want, x->value);
        return;
    }
    char name[16];
    snprintf(name, sizeof name, "%c%d", m >= 0 ? 'v' : 'x', m >= 0 ? m : i);
    if (want == x->dtype)
        tj_buf_printf(out, "%s", name);
    else
        tj_buf_printf(out, "%s(%s)", tj_dtype_name(want), name);
}

static void operand_text(const em *e, tj_array a, tj_dtype want, char *buf, size_t cap)
{
    tj_buf b = {0};
    ref(e, a, want, &b);
    snprintf(buf, cap, "%s", b.data ? b.data : "");
    tj_buf_free(&b);
}

static int emit_elementwise_member(const em *e, int pos, const char *pad)
{
    const tj_anode *x = &e->g->nodes[e->grp->members[pos]];
    char ops[3][512] = {"", "", ""};
    for (uint32_t i = 0; i < x->nin; i++) {
        tj_dtype want = x->op == TJ_AOP_WHERE && i == 0 ? TJ_DT_BOOL : x->ctype;
        operand_text(e, tj_anode_input(x, i), want, ops[i], sizeof ops[i]);
    }
    tj_buf_printf(e->o, "%sv%d = %s(", pad, pos, tj_dtype_name(x->dtype));
    if (tj_emit_elementwise(e->o, x->op, x->ctype, ops[0], ops[1], ops[2]))
        return 1;
    tj_buf_printf(e->o, ")\n");
    return 0;
}

static const char *reduce_fn(tj_aop op)
{
    switch (op) {
    case TJ_AOP_PROD: return "prod";
    case TJ_AOP_MAX: return "max";
    case TJ_AOP_MIN: return "min";
    case TJ_AOP_ARGMAX:
    case TJ_AOP_ARGMIN: return "argmax"; /* argmin: of the negated values (masked) */
    default: return "sum";
    }
}

static void identity(tj_buf *o, tj_aop op, tj_dtype acc)
{
    if (op == TJ_AOP_MAX || op == TJ_AOP_ARGMAX || op == TJ_AOP_ARGMIN)
        tj_emit_extreme(o, acc, 0);
    else if (op == TJ_AOP_MIN)
        tj_emit_extreme(o, acc, 1);
    else
        tj_emit_literal(o, acc, op == TJ_AOP_PROD ? 1 : 0);
}

/* where(ok, ACC(input), identity): the masked tile a reduction reads.
 * argmin is the argmax of the values reversed (-x, ~x for integers: the
 * order flips, ties stay, and NaN comes first as NumPy's argmin finds it). */
static void masked(const em *e, const tj_anode *x, tj_dtype acc)
{
    tj_buf_printf(e->o, "where(ok, ");
    if (x->op == TJ_AOP_ARGMIN)
        tj_buf_printf(e->o, tj_dtype_is_float(acc) ? "-" : "~");
    ref(e, x->in[0], acc, e->o);
    tj_buf_printf(e->o, ", ");
    identity(e->o, x->op, acc);
    tj_buf_printf(e->o, ")");
}

static void count_text(const em *e, tj_dtype acc)
{
    tj_buf_printf(e->o, "%s(N)", tj_dtype_name(acc));
    for (int r = 0; r + 1 < e->grp->nred; r++)
        tj_buf_printf(e->o, " * %s(R%d)", tj_dtype_name(acc), r);
}

static void emit_row_reduction(const em *e, int pos)
{
    const tj_anode *x = &e->g->nodes[e->grp->members[pos]];
    tj_dtype in = e->g->nodes[x->in[0]].dtype, acc = tj_reduce_acc_dtype(x->op, in);
    tj_buf_printf(e->o, "    v%d = %s(%s(", pos, tj_dtype_name(x->dtype), reduce_fn(x->op));
    masked(e, x, acc);
    tj_buf_printf(e->o, ", 1)[:, None]");
    if (x->op == TJ_AOP_MEAN) {
        tj_buf_printf(e->o, " / ");
        count_text(e, acc);
    }
    tj_buf_printf(e->o, ")\n");
}

static int is_arg(tj_aop op) { return op == TJ_AOP_ARGMAX || op == TJ_AOP_ARGMIN; }

static void emit_acc_init(const em *e, int pos)
{
    const tj_anode *x = &e->g->nodes[e->grp->members[pos]];
    tj_dtype acc = tj_reduce_acc_dtype(x->op, e->g->nodes[x->in[0]].dtype);
    tj_buf_printf(e->o, "    a%d = full(%s[BM, 1], ", pos, tj_dtype_name(acc));
    identity(e->o, x->op, acc);
    tj_buf_printf(e->o, ")\n");
    if (is_arg(x->op))
        tj_buf_printf(e->o, "    ai%d = full(i32[BM, 1], 0)\n", pos);
}

static void emit_acc_update(const em *e, int pos, const char *pad)
{
    const tj_anode *x = &e->g->nodes[e->grp->members[pos]];
    tj_dtype acc = tj_reduce_acc_dtype(x->op, e->g->nodes[x->in[0]].dtype);
    if (is_arg(x->op)) {
        tj_buf_printf(e->o, "%st%d = ", pad, pos);
        masked(e, x, acc);
        tj_buf_printf(e->o, "\n%sbv%d = max(t%d, 1)[:, None]\n", pad, pos, pos);
        tj_buf_printf(e->o, "%sup%d = bv%d > a%d || (bv%d != bv%d && a%d == a%d)\n", pad, pos, pos, pos, pos, pos,
                      pos, pos);
        tj_buf_printf(e->o, "%sai%d = where(up%d, %s(t%d, 1)[:, None] + k, ai%d)\n", pad, pos, pos,
                      reduce_fn(x->op), pos, pos);
        tj_buf_printf(e->o, "%sa%d = where(up%d, bv%d, a%d)\n", pad, pos, pos, pos, pos);
        return;
    }
    const char *fn = reduce_fn(x->op);
    int extreme = x->op == TJ_AOP_MAX || x->op == TJ_AOP_MIN;
    if (extreme)
        tj_buf_printf(e->o, "%sa%d = %s(a%d, %s(", pad, pos, x->op == TJ_AOP_MAX ? "maximum" : "minimum", pos, fn);
    else
        tj_buf_printf(e->o, "%sa%d = a%d %s %s(", pad, pos, pos, x->op == TJ_AOP_PROD ? "*" : "+", fn);
    masked(e, x, acc);
    tj_buf_printf(e->o, ", 1)[:, None]%s\n", extreme ? ")" : "");
}

static void emit_acc_final(const em *e, int pos)
{
    const tj_anode *x = &e->g->nodes[e->grp->members[pos]];
    tj_dtype acc = tj_reduce_acc_dtype(x->op, e->g->nodes[x->in[0]].dtype);
    if (is_arg(x->op)) {
        tj_buf_printf(e->o, "    v%d = %s(ai%d)\n", pos, tj_dtype_name(x->dtype), pos);
        return;
    }
    tj_buf_printf(e->o, "    v%d = %s(a%d", pos, tj_dtype_name(x->dtype), pos);
    if (x->op == TJ_AOP_MEAN) {
        tj_buf_printf(e->o, " / (");
        count_text(e, acc);
        tj_buf_printf(e->o, ")");
    }
    tj_buf_printf(e->o, ")\n");
}

static int reduced_member(const em *e, int pos)
{
    return tj_group_reduced_level(e->g, e->grp, e->grp->members[pos]);
}

static int is_reduction(const em *e, int pos)
{
    return tj_aop_kind_of(e->g->nodes[e->grp->members[pos]].op) == TJ_AK_REDUCE;
}

static void emit_loads(const em *e, int reduced, const char *pad)
{
    for (uint32_t j = 0; j < e->grp->ninputs; j++) {
        if (e->args->reduced[j] != reduced || e->grp->input_side[j] != e->side)
            continue;
        if (reduced)
            tj_buf_printf(e->o, "%sx%u = load(X%u[%s])[:, None]\n", pad, j, j, e->ridx);
        else
            tj_buf_printf(e->o, "%sx%u = load(X%u[%s])\n", pad, j, j, e->fidx);
    }
}

static void mark_deps(em *e)
{
    for (uint32_t i = 0; i < e->grp->nmembers; i++) {
        const tj_anode *x = &e->g->nodes[e->grp->members[i]];
        e->dep[i] = tj_aop_kind_of(x->op) == TJ_AK_REDUCE;
        for (uint32_t j = 0; j < x->nin; j++) {
            int p = member_pos(e->grp, tj_anode_input(x, j));
            if (p >= 0 && e->dep[p])
                e->dep[i] = 1;
        }
    }
}

static int emit_members(em *e, int from_reduced, int to_reduced, int want_dep)
{
    for (uint32_t i = 0; i < e->grp->nmembers; i++) {
        int red = reduced_member(e, (int)i);
        if (red < from_reduced || red > to_reduced || (want_dep >= 0 && e->dep[i] != want_dep))
            continue;
        if (is_reduction(e, (int)i))
            continue;
        if (e->grp->kind == TJ_GROUP_MATMUL && (e->grp->members[i] == e->grp->core || e->grp->side[i] != e->side))
            continue;
        if (emit_elementwise_member(e, (int)i, e->side ? "        " : "    "))
            return 1;
    }
    return 0;
}

static int emit_reduce_loop(em *e)
{
    mark_deps(e);
    emit_loads(e, 1, "    ");
    if (emit_members(e, 1, 1, 0))
        return 1;
    for (uint32_t i = 0; i < e->grp->nmembers; i++)
        if (is_reduction(e, (int)i))
            emit_acc_init(e, (int)i);
    char pad[64] = "    ";
    for (int r = 0; r + 1 < e->grp->nred; r++) {
        tj_buf_printf(e->o, "%sfor j%d in range(R%d) {\n", pad, r, r);
        strcat(pad, "    ");
    }
    tj_buf_printf(e->o, "%sfor k in range(0, N, BN) {\n", pad);
    strcat(pad, "    ");
    tj_buf_printf(e->o, "%sok = broadcast(arange(BN)[None, :] + k < N, [BM, BN])\n", pad);
    emit_loads(e, 0, pad);
    for (uint32_t i = 0; i < e->grp->nmembers; i++) {
        if (is_reduction(e, (int)i))
            emit_acc_update(e, (int)i, pad);
        else if (!reduced_member(e, (int)i) && emit_elementwise_member(e, (int)i, pad))
            return 1;
    }
    for (int r = e->grp->nred - 1; r >= 0; r--) {
        pad[strlen(pad) - 4] = 0;
        tj_buf_printf(e->o, "%s}\n", pad);
    }
    for (uint32_t i = 0; i < e->grp->nmembers; i++) {
        if (is_reduction(e, (int)i))
            emit_acc_final(e, (int)i);
        else if (reduced_member(e, (int)i) && e->dep[i] && emit_elementwise_member(e, (int)i, "    "))
            return 1;
    }
    return 0;
}

static int emit_row(em *e)
{
    tj_buf_printf(e->o, "    ok = broadcast(arange(BN)[None, :] < N, [BM, BN])\n");
    emit_loads(e, 1, "    ");
    emit_loads(e, 0, "    ");
    for (uint32_t i = 0; i < e->grp->nmembers; i++) {
        if (is_reduction(e, (int)i))
            emit_row_reduction(e, (int)i);
        else if (emit_elementwise_member(e, (int)i, "    "))
            return 1;
    }
    return 0;
}

/* The dot's operand and accumulator dtypes for a matmul of dtype dt. */
static void dot_types(tj_dtype dt, tj_dtype *in, tj_dtype *acc)
{
    if (dt == TJ_DT_F16 || dt == TJ_DT_BF16 || dt == TJ_DT_F32) {
        *in = dt;
        *acc = TJ_DT_F32;
    } else if (dt == TJ_DT_I8 || dt == TJ_DT_BOOL) {
        *in = TJ_DT_I8;
        *acc = TJ_DT_I32;
    } else { /* f64, and wider integers: exact in f64 up to 2^53 */
        *in = TJ_DT_F64;
        *acc = TJ_DT_F64;
    }
}

/* Operand side (1: A, 2: B) of a matmul inside the K loop: its inputs'
 * tiles, its prologue, and the operand as the dot reads it (a computed one
 * masked past K, where its padding need not be 0). */
static int emit_operand(em *e, int side, const char *bidx, tj_dtype in, char *out, size_t cap)
{
    const tj_anode *m = &e->g->nodes[e->grp->core];
    char saved[256];
    snprintf(saved, sizeof saved, "%s", e->fidx);
    snprintf(e->fidx, sizeof e->fidx, side == 1 ? "%sm:m+BM, k:k+BK" : "%sk:k+BK, n:n+BN", bidx);
    e->side = side;
    emit_loads(e, 0, "        ");
    int bad = emit_members(e, 0, 0, -1);
    tj_array opnd = m->in[side - 1];
    tj_buf b = {0};
    /* a computed operand (or a constant: then a scalar) as a full tile */
    int computed = input_pos(e->grp, opnd, side) < 0;
    if (computed)
        tj_buf_printf(&b, "where(arange(BK)%s + k < K, broadcast(", side == 1 ? "[None, :]" : "[:, None]");
    ref(e, opnd, in, &b);
    if (computed) {
        tj_buf_printf(&b, ", %s), ", side == 1 ? "[BM, BK]" : "[BK, BN]");
        tj_emit_literal(&b, in, 0);
        tj_buf_printf(&b, ")");
    }
    snprintf(out, cap, "%s", b.data ? b.data : "");
    tj_buf_free(&b);
    e->side = 0;
    snprintf(e->fidx, sizeof e->fidx, "%s", saved);
    return bad;
}

static int emit_matmul(em *e)
{
    const tj_anode *m = &e->g->nodes[e->grp->core];
    tj_dtype in, acc;
    dot_types(m->dtype, &in, &acc);
    char bidx[128] = "", ta[1024], tb[1024];
    for (int i = 0; i < e->grp->nbatch; i++)
        snprintf(bidx + strlen(bidx), sizeof bidx - strlen(bidx), "b%d, ", i);
    tj_buf_printf(e->o, "    acc = zeros(%s[BM, BN])\n", tj_dtype_name(acc));
    tj_buf_printf(e->o, "    for k in range(0, K, BK) {\n");
    if (emit_operand(e, 1, bidx, in, ta, sizeof ta) || emit_operand(e, 2, bidx, in, tb, sizeof tb))
        return 1;
    tj_buf_printf(e->o, "        acc = dot(%s, %s, acc%s)\n    }\n", ta, tb,
                  in == TJ_DT_F32 ? ", precision = \"ieee\"" : "");
    int pos = member_pos(e->grp, e->grp->core);
    if (m->dtype == TJ_DT_BOOL)
        tj_buf_printf(e->o, "    v%d = acc != 0\n", pos);
    else
        tj_buf_printf(e->o, "    v%d = %s(acc)\n", pos, tj_dtype_name(m->dtype));
    emit_loads(e, 0, "    ");
    return emit_members(e, 0, 0, -1);
}

/* ---- the kernel's header ---- */

static void dims_text(const tj_group *grp, int reduced, char *buf, size_t cap)
{
    buf[0] = 0;
    size_t len = 0;
    for (int i = 0; i < grp->nbatch; i++)
        len += (size_t)snprintf(buf + len, cap - len, "B%d, ", i);
    len += (size_t)snprintf(buf + len, cap - len, "M");
    if (reduced)
        return;
    for (int r = 0; grp->kind == TJ_GROUP_REDUCE && r + 1 < grp->nred; r++)
        len += (size_t)snprintf(buf + len, cap - len, ", R%d", r);
    snprintf(buf + len, cap - len, ", N");
}

static void index_texts(em *e)
{
    const tj_group *grp = e->grp;
    char b[128] = "";
    for (int i = 0; i < grp->nbatch; i++)
        snprintf(b + strlen(b), sizeof b - strlen(b), "b%d, ", i);
    snprintf(e->ridx, sizeof e->ridx, "%sm:m+BM", b);
    if (grp->kind != TJ_GROUP_REDUCE) {
        snprintf(e->fidx, sizeof e->fidx, "%sm:m+BM, n:n+BN", b);
        return;
    }
    if (!e->loop) {
        snprintf(e->fidx, sizeof e->fidx, "%sm:m+BM, 0:BN", b);
        return;
    }
    snprintf(e->fidx, sizeof e->fidx, "%sm:m+BM, ", b);
    for (int r = 0; r + 1 < grp->nred; r++)
        snprintf(e->fidx + strlen(e->fidx), sizeof e->fidx - strlen(e->fidx), "j%d, ", r);
    snprintf(e->fidx + strlen(e->fidx), sizeof e->fidx - strlen(e->fidx), "k:k+BN");
}

static void emit_params(const em *e)
{
    const tj_group *grp = e->grp;
    char full[128], red[128], bd[96] = "";
    dims_text(grp, 0, full, sizeof full);
    dims_text(grp, 1, red, sizeof red);
    for (int i = 0; i < grp->nbatch; i++)
        snprintf(bd + strlen(bd), sizeof bd - strlen(bd), "B%d, ", i);
    tj_buf_printf(e->o, "kernel fused(");
    static const char *const side_dims[] = {"M, N", "M, K", "K, N"};
    for (uint32_t j = 0; j < grp->ninputs; j++) {
        tj_dtype dt = e->g->nodes[grp->inputs[j]].dtype;
        if (grp->kind == TJ_GROUP_MATMUL)
            tj_buf_printf(e->o, "X%u: %s[%s%s], ", j, tj_dtype_name(dt), bd, side_dims[grp->input_side[j]]);
        else
            tj_buf_printf(e->o, "X%u: %s[%s], ", j, tj_dtype_name(dt), e->args->reduced[j] ? red : full);
    }
    tj_buf_printf(e->o, "Y: %s[%s])\n", tj_dtype_name(e->g->nodes[grp->root].dtype),
                  e->args->reduced[grp->ninputs] ? red : full);
}

static void tune_list(tj_buf *o, const char *name, int64_t first, int64_t lo, int64_t hi)
{
    tj_buf_printf(o, "%s in [%lld", name, (long long)first);
    if (first / 2 >= lo)
        tj_buf_printf(o, ", %lld", (long long)(first / 2));
    if (first * 2 <= hi)
        tj_buf_printf(o, ", %lld", (long long)(first * 2));
    tj_buf_printf(o, "]");
}

/* Whether a parameter's shape names the reduced dims (R0.., N) of a
 * reduction, or K of a product: not when every input is reduced or, for a
 * product, there is no operand input (operands of constants only). */
static int full_dims_bound(const em *e)
{
    const tj_group *grp = e->grp;
    for (uint32_t j = 0; j < grp->ninputs; j++)
        if (grp->kind == TJ_GROUP_MATMUL ? grp->input_side[j] != 0 : !e->args->reduced[j])
            return 1;
    return grp->kind != TJ_GROUP_MATMUL && !e->args->reduced[grp->ninputs];
}

/* The dims the body reads that no parameter binds, as constants of the
 * group's extents (its shapes are part of the kernel's cache key). */
static void emit_unbound_dims(const em *e)
{
    const tj_group *grp = e->grp;
    if ((grp->kind != TJ_GROUP_REDUCE && grp->kind != TJ_GROUP_MATMUL) || full_dims_bound(e))
        return;
    if (grp->kind == TJ_GROUP_MATMUL) {
        tj_buf_printf(e->o, "\n    const K = %lld", (long long)grp->k_extent);
        return;
    }
    for (int r = 0; r + 1 < grp->nred; r++)
        tj_buf_printf(e->o, "\n    const R%d = %lld", r, (long long)grp->space[grp->nbatch + 1 + r]);
    tj_buf_printf(e->o, "\n    const N = %lld", (long long)grp->space[grp->space_rank - 1]);
}

static void emit_header(const em *e)
{
    const tj_group *grp = e->grp;
    emit_params(e);
    char q[96] = "1";
    for (int i = 0; i < grp->nbatch; i++)
        snprintf(q + (i ? strlen(q) : 0), sizeof q - (i ? strlen(q) : 0), "%sB%d", i ? " * " : "", i);
    tj_buf_printf(e->o, "    grid (%s, cdiv(M, BM), %s)\n", grp->kind == TJ_GROUP_REDUCE ? "1" : "cdiv(N, BN)", q);
    tj_buf_printf(e->o, "    tune ");
    tune_list(e->o, "BM", grp->bm, grp->kind == TJ_GROUP_MATMUL ? 16 : 1, 256);
    tj_buf_printf(e->o, ", ");
    int matmul = grp->kind == TJ_GROUP_MATMUL;
    if (grp->kind == TJ_GROUP_REDUCE && grp->row)
        tj_buf_printf(e->o, "BN in [%lld]", (long long)grp->bn);
    else
        tune_list(e->o, "BN", grp->bn, matmul ? 16 : 1, matmul ? 128 : 2048);
    if (matmul) {
        tj_buf_printf(e->o, ", ");
        tune_list(e->o, "BK", grp->bk, 16, 64);
    }
    tj_buf_printf(e->o, ", ");
    tune_list(e->o, "warps", grp->warps, 4, matmul ? 8 : 16);
    if (matmul)
        tj_buf_printf(e->o, ", stages in [%d, %d]", grp->stages, grp->stages == 3 ? 2 : 3);
    tj_emit_consts(e->o, grp);
    emit_unbound_dims(e);
    tj_buf_printf(e->o, grp->kind == TJ_GROUP_REDUCE && grp->row ? "\n    where BN >= N\n" : "\n");
}

void tj_emit_consts(tj_buf *o, const tj_group *grp)
{
    if (grp->unroll)
        tj_buf_printf(o, "\n    const unroll = %d", grp->unroll);
    if (grp->no_calls)
        tj_buf_printf(o, "\n    const calls = 0");
}

void tj_emit_batch_indices(tj_buf *o, int nbatch)
{
    if (nbatch == 1)
        tj_buf_printf(o, "    b0 = program_id(2)\n");
    else if (nbatch > 1) {
        tj_buf_printf(o, "    q = program_id(2)\n");
        for (int i = nbatch - 1; i > 0; i--)
            tj_buf_printf(o, "    b%d = q %% B%d\n    q = q / B%d\n", i, i, i);
        tj_buf_printf(o, "    b0 = q\n");
    }
}

static void emit_indices(const em *e)
{
    tj_buf_printf(e->o, "{\n    m = program_id(1) * BM\n");
    if (e->grp->kind != TJ_GROUP_REDUCE)
        tj_buf_printf(e->o, "    n = program_id(0) * BN\n");
    tj_emit_batch_indices(e->o, e->grp->nbatch);
}

static void emit_store(const em *e)
{
    int last = (int)e->grp->nmembers - 1;
    if (e->args->reduced[e->grp->ninputs])
        tj_buf_printf(e->o, "    store(Y[%s], reshape(broadcast(v%d, [BM, 1]), [BM]))\n}\n", e->ridx, last);
    else
        tj_buf_printf(e->o, "    store(Y[%s], v%d)\n}\n", e->fidx, last);
}

int tj_emit_group(const tj_graph *g, const tj_group *grp, const tj_group_args *args, tj_buf *out, tj_rt_error *err)
{
    if (grp->kind == TJ_GROUP_ATTENTION)
        return tj_emit_attention(g, grp, args, out);
    em *e = calloc(1, sizeof *e);
    if (!e)
        return tj_rt_fail(err, "emission: out of memory");
    e->g = g;
    e->grp = grp;
    e->args = args;
    e->o = out;
    e->loop = grp->kind == TJ_GROUP_REDUCE && !grp->row;
    index_texts(e);
    emit_header(e);
    emit_indices(e);
    int bad;
    if (grp->kind == TJ_GROUP_MATMUL)
        bad = emit_matmul(e);
    else if (grp->kind == TJ_GROUP_REDUCE)
        bad = e->loop ? emit_reduce_loop(e) : emit_row(e);
    else {
        emit_loads(e, 0, "    ");
        bad = emit_members(e, 0, 0, -1);
    }
    if (!bad)
        emit_store(e);
    else
        tj_rt_fail(err, "emission: %s has no spelling in the Tile language",
                   tj_aop_name(g->nodes[grp->root].op));
    free(e);
    return bad;
}
