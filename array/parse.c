/* Graph text back into nodes (print.c's format). Every line is rebuilt
 * through the build calls, so the text is checked like a program: each
 * line's type must be what its op gives. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "array/array_internal.h"

typedef struct parser {
    tj_graph *g;
    const char *p, *end;
    int line;
    tj_array *vals; /* %N -> node */
    uint32_t nvals, cap;
    const tj_array *inputs;
    uint32_t ninputs, next_input;
    tj_rt_error *err;
} parser;

/* what, or (NULL) the build call's own message. */
static int fail(parser *ps, const char *what)
{
    if (!what && ps->g->error[0])
        tj_rt_fail(ps->err, "graph text line %d: %s", ps->line, ps->g->error);
    else
        tj_rt_fail(ps->err, "graph text line %d: %s", ps->line, what ? what : "malformed operands or attributes");
    return 1;
}

static void skip_spaces(parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r'))
        ps->p++;
}

static int accept(parser *ps, const char *s)
{
    skip_spaces(ps);
    size_t n = strlen(s);
    if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, s, n) == 0) {
        ps->p += n;
        return 1;
    }
    return 0;
}

static size_t word(parser *ps, const char **start)
{
    skip_spaces(ps);
    *start = ps->p;
    while (ps->p < ps->end && (*ps->p == '_' || (*ps->p >= 'a' && *ps->p <= 'z') || (*ps->p >= 'A' && *ps->p <= 'Z') ||
                               (*ps->p >= '0' && *ps->p <= '9')))
        ps->p++;
    return (size_t)(ps->p - *start);
}

static int number(parser *ps, double *v)
{
    skip_spaces(ps);
    if (accept(ps, "nan")) {
        *v = NAN;
        return 0;
    }
    if (accept(ps, "-inf")) {
        *v = -INFINITY;
        return 0;
    }
    if (accept(ps, "inf")) {
        *v = INFINITY;
        return 0;
    }
    char buf[64];
    size_t n = 0;
    while (ps->p < ps->end && n + 1 < sizeof buf && strchr("0123456789+-.eE", *ps->p))
        buf[n++] = *ps->p++;
    buf[n] = 0;
    char *e;
    *v = strtod(buf, &e);
    return n == 0 || *e != 0;
}

static int int_list(parser *ps, int64_t *v, int *n)
{
    *n = 0;
    if (!accept(ps, "["))
        return 1;
    if (accept(ps, "]"))
        return 0;
    do {
        double d;
        if (*n == TJ_MAX_RANK || number(ps, &d) || d != floor(d))
            return 1;
        v[(*n)++] = (int64_t)d;
    } while (accept(ps, ","));
    return !accept(ps, "]");
}

static int type(parser *ps, tj_dtype *dt, int *rank, int64_t *shape)
{
    const char *w;
    size_t n = word(ps, &w);
    *dt = tj_dtype_from_name(w, n);
    return *dt == TJ_DT_INVALID || int_list(ps, shape, rank);
}

static int value_ref(parser *ps, tj_array *a)
{
    double d;
    if (!accept(ps, "%") || number(ps, &d) || d < 0 || d >= ps->nvals || d != floor(d))
        return 1;
    *a = ps->vals[(uint32_t)d];
    return 0;
}

static int attr_axis(parser *ps, int *axis)
{
    double d;
    if (!accept(ps, "axis="))
        return 1;
    if (accept(ps, "flat")) {
        *axis = TJ_AXIS_FLAT;
        return 0;
    }
    if (number(ps, &d))
        return 1;
    *axis = (int)d;
    return 0;
}

static int define(parser *ps, uint32_t id, tj_array a)
{
    if (id != ps->nvals)
        return fail(ps, "values must be numbered %0, %1, ... in order");
    if (ps->nvals == ps->cap) {
        uint32_t cap = ps->cap ? ps->cap * 2 : 64;
        tj_array *v = realloc(ps->vals, cap * sizeof *v);
        if (!v)
            return fail(ps, "out of memory");
        ps->vals = v;
        ps->cap = cap;
    }
    ps->vals[ps->nvals++] = a;
    return 0;
}

static tj_array parse_input(parser *ps, tj_dtype dt, int rank, const int64_t *shape)
{
    if (ps->next_input >= ps->ninputs)
        return tj_array_input(ps->g, dt, rank, shape);
    tj_array a = ps->inputs[ps->next_input++];
    tj_array_info info;
    if (tj_array_get_info(ps->g, a, &info)) {
        fail(ps, "an input that is not an array of this graph");
        return TJ_ARRAY_NONE;
    }
    if (info.dtype != dt || info.rank != rank || memcmp(info.shape, shape, sizeof(int64_t) * (size_t)rank) != 0) {
        char want[96], got[96];
        tj_shape_str(dt, rank, shape, want, sizeof want);
        tj_shape_str(info.dtype, info.rank, info.shape, got, sizeof got);
        tj_rt_fail(ps->err, "graph text line %d: input %u is %s, the text says %s", ps->line, ps->next_input - 1,
                   got, want);
        return TJ_ARRAY_NONE;
    }
    tj_array_retain(ps->g, a);
    return a;
}

static tj_array build_reduce(parser *ps, tj_aop op, tj_array x)
{
    int64_t ax[TJ_MAX_RANK];
    int n, axes[TJ_MAX_RANK];
    if (!accept(ps, "axes=") || int_list(ps, ax, &n) || n == 0)
        return TJ_ARRAY_NONE;
    for (int i = 0; i < n; i++)
        axes[i] = (int)ax[i];
    return tj_array_reduce(ps->g, op, x, axes, n, 1);
}

static tj_array build_view(parser *ps, tj_aop op, tj_array x, int rank, const int64_t *shape)
{
    int64_t a[TJ_MAX_RANK], b[TJ_MAX_RANK], c[TJ_MAX_RANK];
    int n1, n2, n3;
    switch (op) {
    case TJ_AOP_RESHAPE:
        return tj_array_reshape(ps->g, x, rank, shape);
    case TJ_AOP_BROADCAST_TO:
        return tj_array_broadcast_to(ps->g, x, rank, shape);
    case TJ_AOP_TRANSPOSE: {
        int perm[TJ_MAX_RANK];
        if (!accept(ps, "perm=") || int_list(ps, a, &n1))
            return TJ_ARRAY_NONE;
        for (int i = 0; i < n1; i++)
            perm[i] = (int)a[i];
        return n1 == rank ? tj_array_transpose(ps->g, x, perm) : TJ_ARRAY_NONE;
    }
    default:
        if (!accept(ps, "start=") || int_list(ps, a, &n1) || !accept(ps, "stop=") || int_list(ps, b, &n2) ||
            !accept(ps, "step=") || int_list(ps, c, &n3) || n1 != rank || n2 != rank || n3 != rank)
            return TJ_ARRAY_NONE;
        return tj_array_slice(ps->g, x, a, b, c);
    }
}

static int operands(parser *ps, tj_array *in, int max)
{
    int n = 0;
    do {
        if (n == max || value_ref(ps, &in[n]))
            return -1;
        n++;
    } while (accept(ps, ","));
    return n;
}

enum { MAX_CONCAT = 1024 };

static tj_array build_op(parser *ps, tj_aop op, tj_dtype dt, int rank, const int64_t *shape)
{
    tj_graph *g = ps->g;
    tj_aop_kind k = tj_aop_kind_of(op);
    if (op == TJ_AOP_FULL || op == TJ_AOP_ARANGE) {
        double v, step = 0;
        if (number(ps, &v) || (op == TJ_AOP_ARANGE && number(ps, &step)))
            return TJ_ARRAY_NONE;
        if (op == TJ_AOP_ARANGE)
            return rank == 1 ? tj_array_arange(g, dt, v, step, shape[0]) : TJ_ARRAY_NONE;
        tj_array c = tj_array_full(g, dt, rank, shape, v);
        if (c && accept(ps, "weak"))
            tj_anode_at(g, c)->weak = rank == 0;
        return c;
    }
    if (op == TJ_AOP_CONCATENATE) {
        tj_array *in = malloc(MAX_CONCAT * sizeof *in);
        int n = in ? operands(ps, in, MAX_CONCAT) : -1, axis;
        tj_array r = n > 0 && !attr_axis(ps, &axis) ? tj_array_concatenate(g, in, (uint32_t)n, axis) : TJ_ARRAY_NONE;
        free(in);
        return r;
    }
    tj_array in[3];
    int n = operands(ps, in, 3), axis = 0;
    if (n != tj_aop_nin(op))
        return TJ_ARRAY_NONE;
    switch (k) {
    case TJ_AK_REDUCE: return build_reduce(ps, op, in[0]);
    case TJ_AK_VIEW: return build_view(ps, op, in[0], rank, shape);
    case TJ_AK_CAST: return tj_array_astype(g, in[0], dt);
    case TJ_AK_MATMUL: return tj_array_matmul(g, in[0], in[1]);
    case TJ_AK_SELECT:
    case TJ_AK_CLIP: return tj_array_ternary(g, op, in[0], in[1], in[2]);
    case TJ_AK_GATHER:
    case TJ_AK_SCATTER:
    case TJ_AK_SCAN:
    case TJ_AK_SORT:
        if (attr_axis(ps, &axis))
            return TJ_ARRAY_NONE;
        return op == TJ_AOP_TAKE          ? tj_array_take(g, in[0], in[1], axis)
               : op == TJ_AOP_TAKE_ALONG  ? tj_array_take_along_axis(g, in[0], in[1], axis)
               : op == TJ_AOP_SCATTER_ADD ? tj_array_scatter_add(g, in[0], in[1], in[2], axis)
               : op == TJ_AOP_CUMSUM      ? tj_array_cumsum(g, in[0], axis)
               : op == TJ_AOP_SORT        ? tj_array_sort(g, in[0], axis)
                                          : tj_array_argsort(g, in[0], axis);
    default:
        return n == 1 ? tj_array_unary(g, op, in[0]) : tj_array_binary(g, op, in[0], in[1]);
    }
}

static int check_type(parser *ps, tj_array a, tj_dtype dt, int rank, const int64_t *shape)
{
    const tj_anode *x = tj_anode_at(ps->g, a);
    if (x->dtype == dt && x->rank == rank && memcmp(x->shape, shape, sizeof(int64_t) * (size_t)rank) == 0)
        return 0;
    char want[96], got[96];
    tj_shape_str(dt, rank, shape, want, sizeof want);
    tj_shape_str(x->dtype, x->rank, x->shape, got, sizeof got);
    tj_rt_fail(ps->err, "graph text line %d: %s gives %s, the text says %s", ps->line, tj_aop_name(x->op), got, want);
    return 1;
}

static int parse_line(parser *ps)
{
    double id;
    if (!accept(ps, "%") || number(ps, &id) || !accept(ps, "="))
        return fail(ps, "expected `%N = op type ...`");
    const char *w;
    size_t n = word(ps, &w);
    tj_aop op = tj_aop_from_name(w, n);
    tj_dtype dt;
    int rank;
    int64_t shape[TJ_MAX_RANK];
    if (op == TJ_AOP_INVALID)
        return fail(ps, "unknown op");
    if (type(ps, &dt, &rank, shape))
        return fail(ps, "expected a type such as f32[4, 8]");
    tj_array a = op == TJ_AOP_INPUT ? parse_input(ps, dt, rank, shape) : build_op(ps, op, dt, rank, shape);
    if (!a)
        return ps->err->msg[0] ? 1 : fail(ps, NULL);
    if (check_type(ps, a, dt, rank, shape))
        return 1;
    skip_spaces(ps);
    if (ps->p < ps->end && *ps->p != '\n' && *ps->p != '#')
        return fail(ps, "unexpected text after the node");
    return define(ps, (uint32_t)id, a);
}

static int parse_return(parser *ps, tj_array *outputs, uint32_t maxout, int *nout)
{
    *nout = 0;
    do {
        tj_array a;
        if (value_ref(ps, &a))
            return fail(ps, "return: expected %N");
        if ((uint32_t)*nout < maxout) {
            outputs[*nout] = a;
            tj_array_retain(ps->g, a);
        }
        (*nout)++;
    } while (accept(ps, ","));
    return 0;
}

static void next_line(parser *ps)
{
    while (ps->p < ps->end && *ps->p != '\n')
        ps->p++;
    if (ps->p < ps->end)
        ps->p++;
    ps->line++;
}

int tj_graph_parse(tj_graph *g, const char *text, size_t len, const tj_array *inputs, uint32_t ninputs,
                   tj_array *outputs, uint32_t maxout, tj_rt_error *err)
{
    if (!g || !text || !tj_array_ok(inputs, ninputs) || !tj_array_ok(outputs, maxout)) {
        tj_rt_fail(err, "tj_graph_parse: NULL graph, text, inputs or outputs");
        return -1;
    }
    parser ps = {.g = g, .p = text, .end = text + len, .line = 1, .inputs = inputs, .ninputs = ninputs, .err = err};
    err->msg[0] = 0;
    tj_graph_clear_error(g);
    int nout = -1, bad = 0;
    while (!bad && ps.p < ps.end) {
        skip_spaces(&ps);
        if (ps.p < ps.end && *ps.p != '\n' && *ps.p != '#') {
            if (accept(&ps, "return"))
                bad = parse_return(&ps, outputs, maxout, &nout);
            else
                bad = parse_line(&ps);
        }
        next_line(&ps);
    }
    if (!bad && nout < 0 && ps.nvals > 0) { /* no return: the last node */
        nout = 1;
        if (maxout) {
            outputs[0] = ps.vals[ps.nvals - 1];
            tj_array_retain(g, outputs[0]);
        }
    }
    for (uint32_t i = 0; i < ps.nvals; i++) /* the outputs keep what they need */
        tj_array_release(g, ps.vals[i]);
    free(ps.vals);
    return bad ? -1 : nout < 0 ? 0 : nout;
}
