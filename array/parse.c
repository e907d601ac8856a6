/* Graph text back into nodes (print.c's format), in two steps: the text is
 * read into a program (one step a line: op, type, operands, attributes),
 * and the program's steps are built through the build calls, so the text
 * is checked like a program: each line's type must be what its op gives.
 * tj_graph_parse does both; tnp.compile's replay reads a trace's text once
 * and builds its program at every call. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "array/array_internal.h"

enum { MAX_CONCAT = 1024 };

/* One line `%N = op type operands attributes` (N: the step's index). */
typedef struct gp_step {
    tj_aop op;
    tj_dtype dt;
    int rank;
    int64_t shape[TJ_MAX_RANK];
    int line;
    uint32_t in_at, nin;         /* operands: program->operands[in_at ..], value indices */
    double value, step;          /* full's value (weak: a weak scalar), arange's start and step */
    int weak, axis;              /* axis: take, take_along, scatter_add, cumsum, sort, argsort, concatenate */
    int nlists, nlist;           /* reduce's axes, transpose's perm (1 list), slice's start, stop, step (3) */
    int64_t list[3][TJ_MAX_RANK];
} gp_step;

struct tj_graph_program {
    gp_step *steps;
    uint32_t nsteps, cap;
    uint32_t *operands;
    uint32_t noperands, operands_cap;
    uint32_t *returns; /* value indices */
    uint32_t nreturns, returns_cap;
    int has_return;
};

/* ---- reading the text ----------------------------------------------------------------------- */

typedef struct reader {
    const char *p, *end;
    int line;
    tj_graph_program *prog;
    tj_rt_error *err;
} reader;

static int fail_line(tj_rt_error *err, int line, const char *what)
{
    tj_rt_fail(err, "graph text line %d: %s", line, what);
    return 1;
}

static int fail(reader *rd, const char *what) { return fail_line(rd->err, rd->line, what); }

static void skip_spaces(reader *rd)
{
    while (rd->p < rd->end && (*rd->p == ' ' || *rd->p == '\t' || *rd->p == '\r'))
        rd->p++;
}

static int accept(reader *rd, const char *s)
{
    skip_spaces(rd);
    size_t n = strlen(s);
    if ((size_t)(rd->end - rd->p) >= n && memcmp(rd->p, s, n) == 0) {
        rd->p += n;
        return 1;
    }
    return 0;
}

static size_t word(reader *rd, const char **start)
{
    skip_spaces(rd);
    *start = rd->p;
    while (rd->p < rd->end && (*rd->p == '_' || (*rd->p >= 'a' && *rd->p <= 'z') || (*rd->p >= 'A' && *rd->p <= 'Z') ||
                               (*rd->p >= '0' && *rd->p <= '9')))
        rd->p++;
    return (size_t)(rd->p - *start);
}

static int number(reader *rd, double *v)
{
    skip_spaces(rd);
    if (accept(rd, "nan")) {
        *v = NAN;
        return 0;
    }
    if (accept(rd, "-inf")) {
        *v = -INFINITY;
        return 0;
    }
    if (accept(rd, "inf")) {
        *v = INFINITY;
        return 0;
    }
    char buf[64];
    size_t n = 0;
    while (rd->p < rd->end && n + 1 < sizeof buf && strchr("0123456789+-.eE", *rd->p))
        buf[n++] = *rd->p++;
    buf[n] = 0;
    char *e;
    *v = strtod(buf, &e);
    return n == 0 || *e != 0;
}

static int int_list(reader *rd, int64_t *v, int *n)
{
    *n = 0;
    if (!accept(rd, "["))
        return 1;
    if (accept(rd, "]"))
        return 0;
    do {
        double d;
        if (*n == TJ_MAX_RANK || number(rd, &d) || d != floor(d))
            return 1;
        v[(*n)++] = (int64_t)d;
    } while (accept(rd, ","));
    return !accept(rd, "]");
}

static int type(reader *rd, tj_dtype *dt, int *rank, int64_t *shape)
{
    const char *w;
    size_t n = word(rd, &w);
    *dt = tj_dtype_from_name(w, n);
    return *dt == TJ_DT_INVALID || int_list(rd, shape, rank);
}

/* %N naming a value defined before: its index */
static int value_ref(reader *rd, uint32_t *v)
{
    double d;
    if (!accept(rd, "%") || number(rd, &d) || d < 0 || d >= rd->prog->nsteps || d != floor(d))
        return 1;
    *v = (uint32_t)d;
    return 0;
}

static int attr_axis(reader *rd, int *axis)
{
    double d;
    if (!accept(rd, "axis="))
        return 1;
    if (accept(rd, "flat")) {
        *axis = TJ_AXIS_FLAT;
        return 0;
    }
    if (number(rd, &d))
        return 1;
    *axis = (int)d;
    return 0;
}

/* Operands up to `max` (-1: malformed, -2: out of memory), appended to the
 * program's list from s->in_at. */
static int operands(reader *rd, gp_step *s, uint32_t max)
{
    tj_graph_program *pr = rd->prog;
    s->in_at = pr->noperands;
    s->nin = 0;
    do {
        uint32_t v;
        if (s->nin == max || value_ref(rd, &v))
            return -1;
        if (tj_heap_grow_in_place((void **)&pr->operands, &pr->operands_cap, pr->noperands + 1, sizeof *pr->operands))
            return -2;
        pr->operands[pr->noperands++] = v;
        s->nin++;
    } while (accept(rd, ","));
    return (int)s->nin;
}

/* The attributes of a view after its operand: 0, or 1 when malformed. */
static int view_attributes(reader *rd, gp_step *s)
{
    if (s->op == TJ_AOP_RESHAPE || s->op == TJ_AOP_BROADCAST_TO)
        return 0;
    if (s->op == TJ_AOP_TRANSPOSE) {
        s->nlists = 1;
        return !accept(rd, "perm=") || int_list(rd, s->list[0], &s->nlist) || s->nlist != s->rank;
    }
    static const char *names[] = {"start=", "stop=", "step="};
    s->nlists = 3;
    for (int i = 0; i < 3; i++)
        if (!accept(rd, names[i]) || int_list(rd, s->list[i], &s->nlist) || s->nlist != s->rank)
            return 1;
    return 0;
}

/* What follows the type: 0, 1 when malformed, 2 when out of memory. */
static int step_body(reader *rd, gp_step *s)
{
    if (s->op == TJ_AOP_INPUT)
        return 0;
    if (s->op == TJ_AOP_FULL) {
        if (number(rd, &s->value))
            return 1;
        s->weak = accept(rd, "weak");
        return 0;
    }
    if (s->op == TJ_AOP_ARANGE)
        return number(rd, &s->value) || number(rd, &s->step) || s->rank != 1;
    int concat = s->op == TJ_AOP_CONCATENATE;
    int n = operands(rd, s, concat ? MAX_CONCAT : 3);
    if (n == -2)
        return 2;
    if (concat)
        return n <= 0 || attr_axis(rd, &s->axis);
    if (n != tj_aop_nin(s->op))
        return 1;
    switch (tj_aop_kind_of(s->op)) {
    case TJ_AK_REDUCE:
        s->nlists = 1;
        return !accept(rd, "axes=") || int_list(rd, s->list[0], &s->nlist) || s->nlist == 0;
    case TJ_AK_VIEW: return view_attributes(rd, s);
    case TJ_AK_GATHER:
    case TJ_AK_SCATTER:
    case TJ_AK_SCAN:
    case TJ_AK_SORT: return attr_axis(rd, &s->axis);
    default: return 0;
    }
}

static int read_step(reader *rd)
{
    double id;
    if (!accept(rd, "%") || number(rd, &id) || !accept(rd, "="))
        return fail(rd, "expected `%N = op type ...`");
    gp_step s = {.line = rd->line};
    const char *w;
    size_t n = word(rd, &w);
    s.op = tj_aop_from_name(w, n);
    if (s.op == TJ_AOP_INVALID)
        return fail(rd, "unknown op");
    if (type(rd, &s.dt, &s.rank, s.shape))
        return fail(rd, "expected a type such as f32[4, 8]");
    int bad = step_body(rd, &s);
    if (bad)
        return fail(rd, bad == 2 ? "out of memory" : "malformed operands or attributes");
    skip_spaces(rd);
    if (rd->p < rd->end && *rd->p != '\n' && *rd->p != '#')
        return fail(rd, "unexpected text after the node");
    tj_graph_program *pr = rd->prog;
    if (id != pr->nsteps)
        return fail(rd, "values must be numbered %0, %1, ... in order");
    if (tj_heap_grow_in_place((void **)&pr->steps, &pr->cap, pr->nsteps + 1, sizeof *pr->steps))
        return fail(rd, "out of memory");
    pr->steps[pr->nsteps++] = s;
    return 0;
}

static int read_return(reader *rd)
{
    tj_graph_program *pr = rd->prog;
    pr->has_return = 1;
    do {
        uint32_t v;
        if (value_ref(rd, &v))
            return fail(rd, "return: expected %N");
        if (tj_heap_grow_in_place((void **)&pr->returns, &pr->returns_cap, pr->nreturns + 1, sizeof *pr->returns))
            return fail(rd, "out of memory");
        pr->returns[pr->nreturns++] = v;
    } while (accept(rd, ","));
    return 0;
}

static void next_line(reader *rd)
{
    while (rd->p < rd->end && *rd->p != '\n')
        rd->p++;
    if (rd->p < rd->end)
        rd->p++;
    rd->line++;
}

void tj_graph_program_free(tj_graph_program *p)
{
    if (!p)
        return;
    free(p->steps);
    free(p->operands);
    free(p->returns);
    free(p);
}

tj_graph_program *tj_graph_program_parse(const char *text, size_t len, tj_rt_error *err)
{
    if (!text) {
        tj_rt_fail(err, "tj_graph_program_parse: NULL text");
        return NULL;
    }
    tj_graph_program *p = calloc(1, sizeof *p);
    if (!p) {
        tj_rt_fail(err, "tj_graph_program_parse: out of memory");
        return NULL;
    }
    reader rd = {.p = text, .end = text + len, .line = 1, .prog = p, .err = err};
    int bad = 0;
    while (!bad && rd.p < rd.end) {
        skip_spaces(&rd);
        if (rd.p < rd.end && *rd.p != '\n' && *rd.p != '#')
            bad = accept(&rd, "return") ? read_return(&rd) : read_step(&rd);
        next_line(&rd);
    }
    if (bad) {
        tj_graph_program_free(p);
        return NULL;
    }
    return p;
}

/* ---- building the nodes --------------------------------------------------------------------- */

typedef struct builder {
    tj_graph *g;
    const tj_graph_program *prog;
    tj_array *vals; /* step -> node */
    const tj_array *inputs;
    uint32_t ninputs, next_input;
    tj_rt_error *err;
} builder;

static tj_array build_input(builder *b, const gp_step *s)
{
    if (b->next_input >= b->ninputs)
        return tj_array_input(b->g, s->dt, s->rank, s->shape);
    tj_array a = b->inputs[b->next_input++];
    tj_array_info info;
    if (tj_array_get_info(b->g, a, &info)) {
        fail_line(b->err, s->line, "an input that is not an array of this graph");
        return TJ_ARRAY_NONE;
    }
    if (info.dtype != s->dt || info.rank != s->rank ||
        memcmp(info.shape, s->shape, sizeof(int64_t) * (size_t)s->rank) != 0) {
        char want[96], got[96];
        tj_shape_str(s->dt, s->rank, s->shape, want, sizeof want);
        tj_shape_str(info.dtype, info.rank, info.shape, got, sizeof got);
        tj_rt_fail(b->err, "graph text line %d: input %u is %s, the text says %s", s->line, b->next_input - 1, got,
                   want);
        return TJ_ARRAY_NONE;
    }
    tj_array_retain(b->g, a);
    return a;
}

static tj_array build_full(builder *b, const gp_step *s)
{
    tj_array c = tj_array_full(b->g, s->dt, s->rank, s->shape, s->value);
    if (c && s->weak)
        tj_anode_at(b->g, c)->weak = s->rank == 0;
    return c;
}

static tj_array build_view(builder *b, const gp_step *s, tj_array x)
{
    switch (s->op) {
    case TJ_AOP_RESHAPE: return tj_array_reshape(b->g, x, s->rank, s->shape);
    case TJ_AOP_BROADCAST_TO: return tj_array_broadcast_to(b->g, x, s->rank, s->shape);
    case TJ_AOP_TRANSPOSE: {
        int perm[TJ_MAX_RANK];
        for (int i = 0; i < s->nlist; i++)
            perm[i] = (int)s->list[0][i];
        return tj_array_transpose(b->g, x, perm);
    }
    default: return tj_array_slice(b->g, x, s->list[0], s->list[1], s->list[2]);
    }
}

static tj_array build_concatenate(builder *b, const gp_step *s)
{
    tj_array *in = malloc(s->nin * sizeof *in);
    for (uint32_t i = 0; in && i < s->nin; i++)
        in[i] = b->vals[b->prog->operands[s->in_at + i]];
    tj_array r = in ? tj_array_concatenate(b->g, in, s->nin, s->axis) : TJ_ARRAY_NONE;
    free(in);
    return r;
}

static tj_array build_op(builder *b, const gp_step *s)
{
    tj_graph *g = b->g;
    switch (s->op) {
    case TJ_AOP_INPUT: return build_input(b, s);
    case TJ_AOP_FULL: return build_full(b, s);
    case TJ_AOP_ARANGE: return tj_array_arange(g, s->dt, s->value, s->step, s->shape[0]);
    case TJ_AOP_CONCATENATE: return build_concatenate(b, s);
    default: break;
    }
    tj_array in[3] = {0};
    for (uint32_t i = 0; i < s->nin; i++)
        in[i] = b->vals[b->prog->operands[s->in_at + i]];
    switch (tj_aop_kind_of(s->op)) {
    case TJ_AK_REDUCE: {
        int axes[TJ_MAX_RANK];
        for (int i = 0; i < s->nlist; i++)
            axes[i] = (int)s->list[0][i];
        return tj_array_reduce(g, s->op, in[0], axes, s->nlist, 1);
    }
    case TJ_AK_VIEW: return build_view(b, s, in[0]);
    case TJ_AK_CAST: return tj_array_astype(g, in[0], s->dt);
    case TJ_AK_MATMUL: return tj_array_matmul(g, in[0], in[1]);
    case TJ_AK_SELECT:
    case TJ_AK_CLIP: return tj_array_ternary(g, s->op, in[0], in[1], in[2]);
    case TJ_AK_GATHER:
    case TJ_AK_SCATTER:
    case TJ_AK_SCAN:
    case TJ_AK_SORT:
        return s->op == TJ_AOP_TAKE          ? tj_array_take(g, in[0], in[1], s->axis)
               : s->op == TJ_AOP_TAKE_ALONG  ? tj_array_take_along_axis(g, in[0], in[1], s->axis)
               : s->op == TJ_AOP_SCATTER_ADD ? tj_array_scatter_add(g, in[0], in[1], in[2], s->axis)
               : s->op == TJ_AOP_CUMSUM      ? tj_array_cumsum(g, in[0], s->axis)
               : s->op == TJ_AOP_SORT        ? tj_array_sort(g, in[0], s->axis)
                                             : tj_array_argsort(g, in[0], s->axis);
    default: return s->nin == 1 ? tj_array_unary(g, s->op, in[0]) : tj_array_binary(g, s->op, in[0], in[1]);
    }
}

static int check_type(builder *b, const gp_step *s, tj_array a)
{
    const tj_anode *x = tj_anode_at(b->g, a);
    if (x->dtype == s->dt && x->rank == s->rank && memcmp(x->shape, s->shape, sizeof(int64_t) * (size_t)s->rank) == 0)
        return 0;
    char want[96], got[96];
    tj_shape_str(s->dt, s->rank, s->shape, want, sizeof want);
    tj_shape_str(x->dtype, x->rank, x->shape, got, sizeof got);
    tj_rt_fail(b->err, "graph text line %d: %s gives %s, the text says %s", s->line, tj_aop_name(x->op), got, want);
    return 1;
}

/* Step i's node into b->vals[i]: 0, or 1 with err. */
static int build_step(builder *b, uint32_t i)
{
    const gp_step *s = &b->prog->steps[i];
    tj_array a = build_op(b, s);
    if (!a) {
        if (!b->err->msg[0])
            fail_line(b->err, s->line, b->g->error[0] ? b->g->error : "malformed operands or attributes");
        return 1;
    }
    b->vals[i] = a;
    return check_type(b, s, a);
}

int tj_graph_program_build(tj_graph *g, const tj_graph_program *p, const tj_array *inputs, uint32_t ninputs,
                           tj_array *outputs, uint32_t maxout, tj_rt_error *err)
{
    if (!g || !p || !tj_array_ok(inputs, ninputs) || !tj_array_ok(outputs, maxout)) {
        tj_rt_fail(err, "tj_graph_program_build: NULL graph, program, inputs or outputs");
        return -1;
    }
    tj_rt_error scratch; /* build_step reads back whether a step already said why */
    if (!err)
        err = &scratch;
    err->msg[0] = 0;
    tj_graph_clear_error(g);
    tj_array *vals = calloc(p->nsteps + 1, sizeof *vals);
    if (!vals) {
        tj_rt_fail(err, "tj_graph_program_build: out of memory");
        return -1;
    }
    builder b = {.g = g, .prog = p, .vals = vals, .inputs = inputs, .ninputs = ninputs, .err = err};
    uint32_t built = 0;
    int bad = 0;
    while (!bad && built < p->nsteps)
        bad = build_step(&b, built++);
    int nout = p->has_return ? (int)p->nreturns : p->nsteps > 0; /* no return: the last node */
    for (uint32_t i = 0; !bad && i < (uint32_t)nout && i < maxout; i++) {
        outputs[i] = vals[p->has_return ? p->returns[i] : p->nsteps - 1];
        tj_array_retain(g, outputs[i]);
    }
    for (uint32_t i = 0; i < built; i++) /* the outputs keep what they need */
        if (vals[i])
            tj_array_release(g, vals[i]);
    free(vals);
    return bad ? -1 : nout;
}

int tj_graph_parse(tj_graph *g, const char *text, size_t len, const tj_array *inputs, uint32_t ninputs,
                   tj_array *outputs, uint32_t maxout, tj_rt_error *err)
{
    if (!g || !text || !tj_array_ok(inputs, ninputs) || !tj_array_ok(outputs, maxout)) {
        tj_rt_fail(err, "tj_graph_parse: NULL graph, text, inputs or outputs");
        return -1;
    }
    if (err)
        err->msg[0] = 0;
    tj_graph_program *p = tj_graph_program_parse(text, len, err);
    int n = p ? tj_graph_program_build(g, p, inputs, ninputs, outputs, maxout, err) : -1;
    tj_graph_program_free(p);
    return n;
}
