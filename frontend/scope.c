/* Names while building: local bindings (a stack of frames), kernel
 * parameters and dims (emitted as PARAM / DIM where used), tile parameters
 * (integer literals), and the dims that become specializations. */
#include <string.h>

#include "frontend/builtins.h"
#include "frontend/build.h"

/* The latest binding of a name is the visible one, unless it lies below
 * scope_base (a caller's, while inlining a fn): then none is. */
int fe_find_local(const fe_builder *lw, const char *name)
{
    const int32_t *latest = fe_strmap_find(&lw->index, name);
    return latest && *latest >= (int32_t)lw->scope_base ? *latest : -1;
}

void fe_bind(fe_builder *lw, const char *name, fe_val v)
{
    int32_t *latest = fe_strmap_put(lw->c, &lw->index, name);
    lw->vars = tj_grow(lw->c, lw->vars, &lw->vcap, lw->nvars + 1, sizeof *lw->vars);
    lw->vars[lw->nvars] = (fe_binding){name, v, *latest};
    *latest = (int32_t)lw->nvars++;
}

uint32_t fe_push_frame(fe_builder *lw)
{
    uint32_t saved = lw->frame_base;
    lw->frame_base = lw->nvars;
    return saved;
}

void fe_pop_frame(fe_builder *lw, uint32_t saved)
{
    for (uint32_t i = lw->nvars; i-- > lw->frame_base;)
        *fe_strmap_find(&lw->index, lw->vars[i].name) = lw->vars[i].shadowed;
    lw->nvars = lw->frame_base;
    lw->frame_base = saved;
}

int fe_tile_value(const fe_builder *lw, const char *name, int64_t *out)
{
    const tj_binding *b = fe_find_binding(lw->k->config, lw->k->nconfig, name);
    if (b)
        *out = b->value;
    return b != NULL;
}

static void record_spec(fe_builder *lw, const char *name, int64_t value)
{
    tj_kernel *k = lw->k;
    if (!fe_find_binding(k->spec, k->nspec, name) && k->nspec < lw->spec_cap)
        k->spec[k->nspec++] = (tj_binding){name, value};
}

int fe_dim_value(fe_builder *lw, const char *name, tj_loc loc, int64_t *out)
{
    const tj_binding *b = fe_find_binding(lw->dims, lw->ndims, name);
    if (b) {
        *out = b->value;
        record_spec(lw, name, *out);
        return 1;
    }
    if (!fe_name_in(name, lw->unbound, lw->nunbound) && lw->nunbound < lw->spec_cap) { /* once per dim */
        lw->unbound[lw->nunbound++] = name;
        fe_err(lw, loc, "dim '%s' is used as a compile-time constant here, so its size must be given (e.g. --shape %s=64)",
               name, name);
    }
    return 0;
}

tj_ref fe_emit_param(fe_builder *lw, uint32_t i)
{
    const tj_param *p = &lw->kd->params[i];
    tj_type t = p->rank ? tj_type_tensor(lw->c, p->dtype, p->rank) : tj_type_scalar(lw->c, p->dtype);
    tj_ref r = fe_emit(lw, TJ_OP_PARAM, t, NULL, 0);
    lw->k->insts[r].imm = i;
    return r;
}

static fe_val param_val(fe_builder *lw, uint32_t i)
{
    if (lw->kd->params[i].rank)
        return (fe_val){.kind = V_TENSOR, .param = i, .type = tj_type_tensor(lw->c, lw->kd->params[i].dtype, lw->kd->params[i].rank)};
    tj_ref r = fe_emit_param(lw, i);
    return fe_value(r, lw->k->insts[r].type);
}

static fe_val dim_val(fe_builder *lw, uint32_t param, int axis)
{
    tj_ref t = fe_emit_param(lw, param);
    tj_type i32 = tj_type_scalar(lw->c, TJ_DT_I32);
    tj_ref r = fe_emit(lw, TJ_OP_DIM, i32, &t, 1);
    lw->k->insts[r].imm = axis;
    return fe_value(r, i32);
}

/* Why a name that is no local, parameter or tile parameter fails. */
static fe_val unknown_name(fe_builder *lw, const char *name, tj_loc loc)
{
    uint32_t i;
    int axis;
    if (!strcmp(name, "_"))
        return fe_err(lw, loc, "'_' can only be assigned to");
    if (tj_dtype_from_name(name, strlen(name)))
        return fe_err(lw, loc, "'%s' is a type; write %s(x) to convert a value", name, name);
    if (fe_builtin_find(name) || fe_find_fn(lw->prog, name))
        return fe_err(lw, loc, "'%s' is a function; call it with arguments", name);
    if (lw->ninlining && (fe_find_param(lw->kd, name, &i) || fe_find_dim(lw->kd, name, &i, &axis)))
        return fe_err(lw, loc, "'%s' belongs to the kernel; a fn helper sees only its parameters and the tile parameters", name);
    return fe_err(lw, loc, "unknown name '%s'", name);
}

int fe_name_known(const fe_builder *lw, const char *name)
{
    uint32_t i;
    int axis;
    int64_t v;
    if (fe_find_local(lw, name) >= 0 || fe_tile_value(lw, name, &v))
        return 1;
    return !lw->ninlining && (fe_find_param(lw->kd, name, &i) || fe_find_dim(lw->kd, name, &i, &axis));
}

fe_val fe_lookup(fe_builder *lw, const char *name, tj_loc loc)
{
    int local = fe_find_local(lw, name);
    if (local >= 0)
        return lw->vars[local].val;
    int64_t v;
    if (fe_tile_value(lw, name, &v))
        return (fe_val){.kind = V_INT, .i = v};
    uint32_t i;
    int axis;
    if (!lw->ninlining && fe_find_param(lw->kd, name, &i))
        return param_val(lw, i);
    if (!lw->ninlining && fe_find_dim(lw->kd, name, &i, &axis))
        return dim_val(lw, i, axis);
    return unknown_name(lw, name, loc);
}

void fe_assign(fe_builder *lw, const fe_target *t, fe_val v)
{
    if (!t->name)
        return;
    uint32_t i;
    int axis;
    int64_t tv;
    const char *what = NULL;
    if (fe_tile_value(lw, t->name, &tv))
        what = "tile parameter";
    else if (!lw->ninlining && fe_find_param(lw->kd, t->name, &i))
        what = "parameter";
    else if (!lw->ninlining && fe_find_dim(lw->kd, t->name, &i, &axis))
        what = "dim";
    else if (tj_dtype_from_name(t->name, strlen(t->name)))
        what = "type name";
    if (what) {
        fe_err(lw, t->loc, "cannot assign to %s '%s'", what, t->name);
        return;
    }
    int local = fe_find_local(lw, t->name);
    if (local >= 0)
        lw->vars[local].val = v;
    else
        fe_bind(lw, t->name, v);
}
