/* A function ready to call: one graph kept across calls (so its kernels
 * are compiled once), the body built anew each call on copies of the
 * inputs, evaluated, the results read back, and every node of the call
 * released. */
#include <stdlib.h>
#include <string.h>

#include "mlir/mlir_internal.h"

#define MAX_VALUES 64

struct tj_mlir_fn {
    const tj_mlir_module *m;
    char *func;
    tj_graph *g;
    tj_mlir_value_info params[MAX_VALUES], results[MAX_VALUES];
    uint32_t nparams, nresults;
};

tj_mlir_fn *tj_mlir_fn_new(const tj_mlir_module *m, const char *func, tj_device_kind device, int ordinal,
                           tj_rt_error *err)
{
    if (!m) {
        tj_rt_fail(err, "tj_mlir_fn_new: NULL module");
        return NULL;
    }
    tj_mlir_fn *f = calloc(1, sizeof *f);
    if (!f) {
        tj_rt_fail(err, "out of memory");
        return NULL;
    }
    f->m = m;
    if (tj_mlir_function_signature(m, func, f->params, &f->nparams, f->results, &f->nresults, MAX_VALUES, err))
        goto fail;
    if (f->nparams > MAX_VALUES || f->nresults > MAX_VALUES) {
        tj_rt_fail(err, "a function of more than %d parameters or results", MAX_VALUES);
        goto fail;
    }
    f->func = func ? malloc(strlen(func) + 1) : NULL;
    if (func && f->func)
        strcpy(f->func, func);
    if ((func && !f->func) || !(f->g = tj_graph_new(device, ordinal, err)))
        goto fail;
    return f;
fail:
    tj_mlir_fn_free(f);
    return NULL;
}

void tj_mlir_fn_free(tj_mlir_fn *f)
{
    if (!f)
        return;
    tj_graph_free(f->g);
    free(f->func);
    free(f);
}

tj_graph *tj_mlir_fn_graph(tj_mlir_fn *f) { return f ? f->g : NULL; }

static size_t value_bytes(const tj_mlir_value_info *v)
{
    size_t n = (size_t)tj_dtype_size(v->dtype);
    for (int d = 0; d < v->rank; d++)
        n *= (size_t)v->shape[d];
    return n;
}

static int check_output(const tj_mlir_value_info *want, const tj_tensor *t, uint32_t i, tj_rt_error *err)
{
    int same = t->data && t->dtype == want->dtype && t->rank == want->rank;
    for (int d = 0; same && d < want->rank; d++)
        same = t->shape[d] == want->shape[d];
    return same ? 0 : tj_rt_fail(err, "output %u must be a %s tensor of rank %d with the result's shape", i,
                                 tj_dtype_name(want->dtype), want->rank);
}

static uint64_t node_count(const tj_graph *g)
{
    tj_graph_stats s;
    tj_graph_get_stats(g, &s);
    return s.nodes;
}

static int call(tj_mlir_fn *f, const tj_tensor *inputs, uint32_t ninputs, const tj_tensor *outputs,
                uint32_t noutputs, tj_rt_error *err)
{
    tj_array in[MAX_VALUES], out[MAX_VALUES];
    for (uint32_t i = 0; i < ninputs; i++)
        if (!(in[i] = tj_array_copy(f->g, &inputs[i])))
            return tj_rt_fail(err, "input %u: %s", i, tj_graph_error(f->g));
    if (tj_mlir_build(f->m, f->func, f->g, in, ninputs, out, MAX_VALUES, NULL, err) ||
        tj_array_eval(f->g, out, noutputs, err))
        return 1;
    for (uint32_t i = 0; i < noutputs; i++)
        if (tj_array_read(f->g, out[i], outputs[i].data, value_bytes(&f->results[i]), err))
            return 1;
    return 0;
}

int tj_mlir_fn_call(tj_mlir_fn *f, const tj_tensor *inputs, uint32_t ninputs, const tj_tensor *outputs,
                    uint32_t noutputs, tj_rt_error *err)
{
    if (!f || !tj_array_ok(inputs, ninputs) || !tj_array_ok(outputs, noutputs))
        return tj_rt_fail(err, "tj_mlir_fn_call: NULL function, or NULL inputs or outputs with a count");
    if (ninputs != f->nparams || noutputs != f->nresults)
        return tj_rt_fail(err, "the function takes %u inputs and gives %u results; %u and %u given", f->nparams,
                          f->nresults, ninputs, noutputs);
    for (uint32_t i = 0; i < noutputs; i++)
        if (check_output(&f->results[i], &outputs[i], i, err))
            return 1;
    /* Nodes are numbered in creation order and never reused: those of
     * this call are the ones after `before`. */
    uint64_t before = node_count(f->g);
    int failed = call(f, inputs, ninputs, outputs, noutputs, err);
    uint64_t after = node_count(f->g);
    for (uint64_t a = before + 1; a <= after; a++)
        tj_array_release(f->g, (tj_array)a);
    tj_graph_clear_error(f->g);
    return failed;
}
