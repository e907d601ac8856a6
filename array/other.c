/* The ops that are a kernel of their own: gathers, scatter-add, cumsum,
 * sorts and concatenation. */
#include "array/array_internal.h"

int tj_eval_other(tj_graph *g, tj_group *grp, tj_rt_error *err)
{
    return tj_rt_fail(err, "eval: %s is not evaluated yet", tj_aop_name(g->nodes[grp->root].op));
}
