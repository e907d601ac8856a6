/* The graph as text, one node a line in dependency order (producers
 * first, in the order the roots reach them):
 *
 *   %0 = input f32[4, 8]
 *   %1 = full f64[] 0.5 weak
 *   %2 = multiply f32[4, 8] %0, %1
 *   %3 = sum f32[4, 1] %2 axes=[1]
 *   return %3
 *
 * Nodes with data (leaves, evaluated nodes, views resolved over data)
 * print as `input`; reductions print their kept shape (the node's own).
 * parse.c reads it back. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "array/array_internal.h"

int tj_graph_number(const tj_graph *g, const tj_array *roots, uint32_t n, uint32_t *num)
{
    tj_array *order;
    int k = tj_graph_topo(g, roots, n, &order, num);
    if (k >= 0)
        free(order);
    return k;
}

static void print_list64(tj_buf *o, const char *name, const int64_t *v, int n)
{
    tj_buf_printf(o, " %s=[", name);
    for (int i = 0; i < n; i++)
        tj_buf_printf(o, "%s%lld", i ? ", " : "", (long long)v[i]);
    tj_buf_printf(o, "]");
}

void tj_print_value(tj_buf *o, double v)
{
    if (isnan(v))
        tj_buf_printf(o, "nan");
    else if (isinf(v))
        tj_buf_printf(o, "%sinf", v < 0 ? "-" : "");
    else
        tj_buf_printf(o, "%.17g", v);
}

static void print_attrs(tj_buf *o, const tj_anode *x)
{
    int64_t v[TJ_MAX_RANK];
    int n = 0;
    switch (tj_aop_kind_of(x->op)) {
    case TJ_AK_REDUCE:
        for (int i = 0; i < x->rank; i++)
            if (x->axes & (1u << i))
                v[n++] = i;
        print_list64(o, "axes", v, n);
        break;
    case TJ_AK_VIEW:
        if (x->op == TJ_AOP_TRANSPOSE) {
            for (int i = 0; i < x->rank; i++)
                v[i] = x->perm[i];
            print_list64(o, "perm", v, x->rank);
        } else if (x->op == TJ_AOP_SLICE) {
            print_list64(o, "start", x->start, x->rank);
            print_list64(o, "stop", x->stop, x->rank);
            print_list64(o, "step", x->step, x->rank);
        }
        break;
    case TJ_AK_GATHER:
    case TJ_AK_SCATTER:
    case TJ_AK_SCAN:
    case TJ_AK_SORT:
    case TJ_AK_CONCAT:
        if (x->axis == TJ_AXIS_FLAT)
            tj_buf_printf(o, " axis=flat");
        else
            tj_buf_printf(o, " axis=%d", x->axis);
        break;
    default:
        break;
    }
}

static void print_node(tj_buf *o, const tj_graph *g, tj_array a, const uint32_t *num)
{
    const tj_anode *x = &g->nodes[a];
    char type[128];
    tj_shape_str(x->dtype, x->rank, x->shape, type, sizeof type);
    int leaf = x->has_data || x->op == TJ_AOP_INPUT;
    tj_buf_printf(o, "%%%u = %s %s", num[a] - 1, leaf ? "input" : tj_aop_name(x->op), type);
    if (leaf) {
        tj_buf_printf(o, "\n");
        return;
    }
    if (x->op == TJ_AOP_FULL || x->op == TJ_AOP_ARANGE) {
        tj_buf_printf(o, " ");
        tj_print_value(o, x->value);
        if (x->op == TJ_AOP_ARANGE) {
            tj_buf_printf(o, " ");
            tj_print_value(o, x->step_value);
        }
        tj_buf_printf(o, "%s\n", x->weak ? " weak" : "");
        return;
    }
    for (uint32_t i = 0; i < x->nin; i++)
        tj_buf_printf(o, "%s%%%u", i ? ", " : " ", num[tj_anode_input(x, i)] - 1);
    print_attrs(o, x);
    tj_buf_printf(o, "\n");
}

static int roots_ok(const tj_graph *g, const tj_array *roots, uint32_t n, const char *fn, tj_rt_error *err)
{
    if (!g)
        return tj_rt_fail(err, "%s: NULL graph", fn);
    if (!tj_array_ok(roots, n))
        return tj_rt_fail(err, "%s: NULL roots", fn);
    for (uint32_t i = 0; i < n; i++)
        if (!tj_array_valid(g, roots[i]))
            return tj_rt_fail(err, "%s: roots[%u] (%u) is not an array of this graph", fn, i, roots[i]);
    return 0;
}

int tj_graph_print(const tj_graph *g, const tj_array *roots, uint32_t n, tj_buf *out, tj_rt_error *err)
{
    if (roots_ok(g, roots, n, "tj_graph_print", err))
        return 1;
    if (!out)
        return tj_rt_fail(err, "tj_graph_print: NULL output");
    uint32_t *num = malloc(sizeof *num * g->nnodes);
    if (!num)
        return tj_rt_fail(err, "tj_graph_print: out of memory");
    tj_array *order;
    int k = tj_graph_topo(g, roots, n, &order, num);
    if (k < 0) {
        free(num);
        return tj_rt_fail(err, "tj_graph_print: out of memory");
    }
    for (int i = 0; i < k; i++)
        print_node(out, g, order[i], num);
    free(order);
    tj_buf_printf(out, "return");
    for (uint32_t i = 0; i < n; i++)
        tj_buf_printf(out, "%s%%%u", i ? ", " : " ", num[roots[i]] - 1);
    tj_buf_printf(out, "\n");
    free(num);
    return 0;
}

int tj_graph_inputs(const tj_graph *g, const tj_array *roots, uint32_t n, tj_array *out, uint32_t max, tj_rt_error *err)
{
    if (roots_ok(g, roots, n, "tj_graph_inputs", err))
        return -1;
    if (!tj_array_ok(out, max)) {
        tj_rt_fail(err, "tj_graph_inputs: NULL output");
        return -1;
    }
    uint32_t *num = malloc(sizeof *num * g->nnodes);
    tj_array *order = NULL;
    int total = num ? tj_graph_topo(g, roots, n, &order, num) : -1;
    free(num);
    if (total < 0) {
        tj_rt_fail(err, "tj_graph_inputs: out of memory");
        return -1;
    }
    uint32_t k = 0;
    for (int i = 0; i < total; i++) {
        tj_array a = order[i];
        if (g->nodes[a].has_data || g->nodes[a].op == TJ_AOP_INPUT) {
            if (k < max)
                out[k] = a;
            k++;
        }
    }
    free(order);
    return (int)k;
}
