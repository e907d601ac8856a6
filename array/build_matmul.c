/* matmul: NumPy's rules (1-D operands promoted and the axis removed after,
 * the batch axes broadcast). */
#include "array/array_internal.h"

static tj_array promote_1d(tj_graph *g, tj_array a, int as_row)
{
    const tj_anode *x = tj_anode_at(g, a);
    if (x->rank != 1)
        return a;
    int64_t shape[2] = {as_row ? 1 : x->shape[0], as_row ? x->shape[0] : 1};
    return tj_array_reshape(g, a, 2, shape);
}

static tj_array matmul_fail(tj_graph *g, const tj_anode *x, const tj_anode *y, const char *why)
{
    char sa[96], sb[96];
    tj_shape_str(x->dtype, x->rank, x->shape, sa, sizeof sa);
    tj_shape_str(y->dtype, y->rank, y->shape, sb, sizeof sb);
    return tj_graph_fail(g, "matmul: %s (shapes %s and %s)", why, sa, sb);
}

tj_array tj_array_matmul(tj_graph *g, tj_array a, tj_array b)
{
    if (!g || !tj_array_valid(g, a) || !tj_array_valid(g, b))
        return g && !g->error[0] ? tj_graph_fail(g, "matmul: not an array of this graph") : TJ_ARRAY_NONE;
    const tj_anode *x = tj_anode_at(g, a), *y = tj_anode_at(g, b);
    if (x->rank == 0 || y->rank == 0)
        return matmul_fail(g, x, y, "0-d operands (use multiply)");
    int ra = x->rank, rb = y->rank;
    int64_t K = x->shape[ra - 1], Kb = y->shape[rb >= 2 ? rb - 2 : 0];
    if (K != Kb)
        return matmul_fail(g, x, y, "the contracted axes differ");
    tj_dtype dt = tj_promote(x->dtype, y->dtype);
    tj_array pa = promote_1d(g, a, 1), pb = promote_1d(g, b, 0);
    if (!pa || !pb)
        return TJ_ARRAY_NONE;
    x = tj_anode_at(g, pa);
    y = tj_anode_at(g, pb);
    int r = x->rank > y->rank ? x->rank : y->rank;
    int64_t shape[TJ_MAX_RANK];
    for (int i = 0; i < r - 2; i++) {
        int ia = i - (r - x->rank), ib = i - (r - y->rank);
        int64_t da = ia >= 0 ? x->shape[ia] : 1, db = ib >= 0 ? y->shape[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return matmul_fail(g, x, y, "the batch axes do not broadcast");
        shape[i] = da == 1 ? db : da;
    }
    shape[r - 2] = x->shape[x->rank - 2];
    shape[r - 1] = y->shape[y->rank - 1];
    tj_array in[2] = {pa, pb};
    tj_array m = tj_graph_add(g, TJ_AOP_MATMUL, dt, r, shape, in, 2);
    if (pa != a)
        tj_array_release(g, pa);
    if (pb != b)
        tj_array_release(g, pb);
    if (!m || (ra != 1 && rb != 1))
        return m;
    int64_t out[TJ_MAX_RANK];
    int rank = 0;
    for (int i = 0; i < r; i++)
        if (!((ra == 1 && i == r - 2) || (rb == 1 && i == r - 1)))
            out[rank++] = shape[i];
    tj_array v = tj_array_reshape(g, m, rank, out);
    tj_array_release(g, m);
    return v;
}
