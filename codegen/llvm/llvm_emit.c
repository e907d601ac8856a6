/* The whole kernel: the module, the program loop, parameters and the walk
 * over blocks that hands each instruction to its op family.
 *
 *   void tj_programs(const tj_arg *args, i64 begin, i64 end, const i64 *grid, i32 exclusive)
 *
 * runs programs begin..end-1 of the grid in row-major order of the
 * linear id (axis 0 fastest); `tj_frame_bytes` holds the stack its tile
 * buffers take, `tj_atomics` (i32) whether it has atomics, whose plain
 * form runs when `exclusive` is set (llvm_mem.c). Tensor fields are read
 * once, in a prologue before the program loop (the arguments do not change
 * during a launch). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/llvm/llvm.h"

/* Per parameter: the fields the prologue has read. */
typedef struct lg_param_fields {
    LLVMValueRef data, size[TJ_MAX_RANK], stride[TJ_MAX_RANK];
} lg_param_fields;

static lg_param_fields *fields_of(lg *g) { return (lg_param_fields *)g->fields; }

int lg_fail(lg *g, tj_ref r, const char *what)
{
    const tj_inst *in = r ? lg_in(g, r) : NULL;
    if (in)
        tj_error_at(g->ctx, in->loc, "kernel '%s': cpu back end: %%%u (%s): %s", g->k->name, r,
                    tj_op_get(in->op)->name, what);
    else
        tj_error(g->ctx, "kernel '%s': cpu back end: %s", g->k->name, what);
    g->failed = 1;
    return -1;
}

const tj_type_info *lg_ti(const lg *g, tj_ref r) { return tj_type_get(g->ctx, g->k->insts[r].type); }

uint64_t lg_count(const lg *g, tj_ref r)
{
    const tj_type_info *ti = lg_ti(g, r);
    return ti->rank ? tj_type_numel(g->ctx, g->k->insts[r].type) : 0;
}

/* A field of args[param] at byte offset off, read in the prologue. */
static LLVMValueRef arg_field(lg *g, uint32_t param, size_t off, LLVMTypeRef t)
{
    LLVMBuilderRef b = g->pro;
    LLVMValueRef at = lg_i64(g, (int64_t)(param * sizeof(tj_arg) + off));
    LLVMValueRef p = LLVMBuildGEP2(b, g->i8, g->args, &at, 1, "");
    LLVMValueRef v = LLVMBuildLoad2(b, t, p, "");
    LLVMSetAlignment(v, 8);
    return v;
}

LLVMValueRef lg_tensor_data(lg *g, uint32_t param)
{
    lg_param_fields *f = &fields_of(g)[param];
    if (!f->data)
        f->data = arg_field(g, param, offsetof(tj_arg, tensor.data), g->ptr);
    return f->data;
}

LLVMValueRef lg_tensor_size(lg *g, uint32_t param, int axis)
{
    lg_param_fields *f = &fields_of(g)[param];
    if (!f->size[axis])
        f->size[axis] = arg_field(g, param, offsetof(tj_arg, tensor.shape) + sizeof(int64_t) * (size_t)axis, g->i64);
    return f->size[axis];
}

LLVMValueRef lg_tensor_stride(lg *g, uint32_t param, int axis)
{
    lg_param_fields *f = &fields_of(g)[param];
    if (!f->stride[axis])
        f->stride[axis] = arg_field(g, param, offsetof(tj_arg, tensor.strides) + sizeof(int64_t) * (size_t)axis, g->i64);
    return f->stride[axis];
}

/* A scalar parameter, rounded to its dtype as the interpreter does. */
static LLVMValueRef scalar_param(lg *g, uint32_t param, tj_dtype dt)
{
    LLVMBuilderRef saved = g->b;
    g->b = g->pro;
    LLVMValueRef v;
    if (tj_dtype_is_float(dt)) {
        v = arg_field(g, param, offsetof(tj_arg, scalar.f), g->f64);
        if (dt != TJ_DT_F64)
            v = lg_round(g, dt, LLVMBuildFPTrunc(g->b, v, g->f32, ""));
    } else {
        v = arg_field(g, param, offsetof(tj_arg, scalar.i), g->i64);
        v = dt == TJ_DT_BOOL ? lg_bool(g, LLVMBuildICmp(g->b, LLVMIntNE, v, lg_i64(g, 0), ""))
                             : LLVMBuildTrunc(g->b, v, lg_type(g, dt), "");
    }
    g->b = saved;
    return v;
}

static int emit_param(lg *g, tj_ref r)
{
    const tj_inst *in = lg_in(g, r);
    if (in->imm < 0 || in->imm >= g->k->nparams)
        return lg_fail(g, r, "no such parameter");
    if (lg_ti(g, r)->kind != TJ_TK_TENSOR)
        lg_val(g, r)->v = scalar_param(g, (uint32_t)in->imm, lg_ti(g, r)->dtype);
    return 0;
}

static int emit_const(lg *g, tj_ref r)
{
    const tj_inst *in = lg_in(g, r);
    tj_dtype dt = lg_ti(g, r)->dtype;
    LLVMValueRef c = tj_dtype_is_float(dt) ? lg_const_float(g, dt, in->fimm) : lg_const_int(g, dt, in->imm);
    if (lg_ti(g, r)->rank == 0) {
        lg_val(g, r)->v = c;
        return 0;
    }
    lg_alloc_result(g, r); /* a splat constant tile */
    uint64_t n = lg_count(g, r);
    lg_loop l;
    LLVMValueRef i = lg_each_begin(g, &l, n);
    lg_set_elem(g, r, i, c);
    lg_each_end(g, &l, n);
    return 0;
}

static int emit_index(lg *g, tj_ref r)
{
    const tj_inst *in = lg_in(g, r);
    if (in->imm < 0 || in->imm > 2)
        return lg_fail(g, r, "axis must be 0, 1 or 2");
    LLVMValueRef v = in->op == TJ_OP_PROGRAM_ID ? g->pid[in->imm] : g->nprog[in->imm];
    lg_val(g, r)->v = LLVMBuildTrunc(g->b, v, lg_type(g, lg_ti(g, r)->dtype), "");
    return 0;
}

static int emit_dim(lg *g, tj_ref r)
{
    const tj_inst *in = lg_in(g, r);
    const tj_inst *t = lg_in(g, in->args[0]);
    const tj_type_info *tt = lg_ti(g, in->args[0]);
    if (t->op != TJ_OP_PARAM || tt->kind != TJ_TK_TENSOR || in->imm < 0 || in->imm >= tt->rank)
        return lg_fail(g, r, "not an axis of a tensor parameter");
    LLVMValueRef v = lg_tensor_size(g, (uint32_t)t->imm, (int)in->imm);
    lg_val(g, r)->v = LLVMBuildTrunc(g->b, v, lg_type(g, lg_ti(g, r)->dtype), "");
    return 0;
}

/* reshape keeps the row-major order: the same buffer, renamed (a copy
 * only between a scalar and a one-element tile). */
static int emit_reshape(lg *g, tj_ref r)
{
    tj_ref x = lg_in(g, r)->args[0];
    if ((lg_ti(g, x)->rank == 0) == (lg_ti(g, r)->rank == 0)) {
        lg_val(g, r)->v = lg_val(g, x)->v;
        return 0;
    }
    lg_alloc_result(g, r);
    lg_set_elem(g, r, lg_i64(g, 0), lg_elem(g, x, lg_i64(g, 0)));
    return 0;
}

static int emit_proj(lg *g, tj_ref r)
{
    const lval *t = lg_val(g, lg_in(g, r)->args[0]);
    int64_t i = lg_in(g, r)->imm;
    if (!t->elems || i < 0 || (uint32_t)i >= t->nelems)
        return lg_fail(g, r, "index out of the tuple");
    *lg_val(g, r) = t->elems[i];
    return 0;
}

static int emit_inst(lg *g, tj_ref r)
{
    tj_op op = lg_in(g, r)->op;
    switch (op) {
    case TJ_OP_ARG: return 0; /* set by the region's owner */
    case TJ_OP_PARAM: return emit_param(g, r);
    case TJ_OP_CONST: return emit_const(g, r);
    case TJ_OP_PROGRAM_ID:
    case TJ_OP_NUM_PROGRAMS: return emit_index(g, r);
    case TJ_OP_DIM: return emit_dim(g, r);
    case TJ_OP_ARANGE: return lg_emit_arange(g, r);
    case TJ_OP_FOR: return lg_emit_for(g, r);
    case TJ_OP_IF: return lg_emit_if(g, r);
    case TJ_OP_WHILE: return lg_emit_while(g, r);
    case TJ_OP_PROJ: return emit_proj(g, r);
    case TJ_OP_BROADCAST: return lg_emit_broadcast(g, r);
    case TJ_OP_RESHAPE: return emit_reshape(g, r);
    case TJ_OP_PERMUTE: return lg_emit_permute(g, r);
    case TJ_OP_GATHER: return lg_emit_gather(g, r);
    case TJ_OP_REDUCE_SUM: case TJ_OP_REDUCE_PROD: case TJ_OP_REDUCE_MAX:
    case TJ_OP_REDUCE_MIN: case TJ_OP_ARGMAX: case TJ_OP_ARGMIN: return lg_emit_inside(g, r, lg_emit_reduce);
    case TJ_OP_CUMSUM: case TJ_OP_CUMPROD: return lg_emit_cumulative(g, r);
    case TJ_OP_SCAN: return lg_emit_scan(g, r);
    case TJ_OP_SORT: return lg_emit_sort(g, r);
    case TJ_OP_COUNTING_SORT: return lg_emit_counting_sort(g, r);
    case TJ_OP_DOT: return lg_emit_dot(g, r);
    case TJ_OP_VIEW: return lg_emit_view(g, r);
    case TJ_OP_LOAD: return lg_emit_load(g, r);
    case TJ_OP_STORE: return lg_emit_inside(g, r, lg_emit_store); /* lg_emit_inside says why */
    case TJ_OP_LOAD_ACQUIRE: case TJ_OP_STORE_RELEASE: case TJ_OP_LOAD_RELAXED: case TJ_OP_STORE_RELAXED:
        return lg_emit_ordered(g, r);
    case TJ_OP_ATOMIC_ADD: case TJ_OP_ATOMIC_MAX: case TJ_OP_ATOMIC_MIN: return lg_emit_atomic(g, r);
    default:
        if (tj_op_get(op)->flags & TJ_OPF_ELEM)
            return lg_emit_inside(g, r, lg_emit_elementwise);
        return lg_fail(g, r, "op not supported by the cpu back end");
    }
}

int lg_emit_block(lg *g, tj_block_id b, tj_ref *yield)
{
    const tj_block *blk = tj_block_at(g->k, b);
    *yield = TJ_NONE;
    for (uint32_t i = 0; i < blk->ninsts; i++) {
        tj_ref r = blk->insts[i];
        if (lg_in(g, r)->op == TJ_OP_YIELD) {
            *yield = r;
            return 0;
        }
        if (emit_inst(g, r))
            return -1;
        lg_settle(g, r);
    }
    return 0;
}

/* Tuple results get their element slots before anything is emitted. */
static int plan_tuples(lg *g)
{
    uint32_t total = 0;
    for (tj_ref r = 1; r < g->k->ninsts; r++)
        if (lg_ti(g, r)->kind == TJ_TK_TUPLE)
            total += lg_ti(g, r)->nelems;
    g->tuple_slots = calloc(total ? total : 1, sizeof(lval));
    if (!g->tuple_slots)
        return -1;
    lval *next = g->tuple_slots;
    for (tj_ref r = 1; r < g->k->ninsts; r++)
        if (lg_ti(g, r)->kind == TJ_TK_TUPLE) {
            g->vals[r].elems = next;
            g->vals[r].nelems = lg_ti(g, r)->nelems;
            next += g->vals[r].nelems;
        }
    return 0;
}

/* How often each value is an operand, and of what (for fusion). */
static void count_uses(lg *g)
{
    for (tj_ref r = 1; r < g->k->ninsts; r++) {
        const tj_inst *in = lg_in(g, r);
        for (uint32_t a = 0; a < in->nargs; a++)
            if (in->args[a] && in->args[a] < g->k->ninsts) {
                g->uses[in->args[a]]++;
                g->user[in->args[a]] = r;
            }
    }
}

static void add_attr(lg *g, LLVMValueRef fn, unsigned idx, const char *name)
{
    unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
    LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(g->lc, kind, 0));
}

/* The vectorizer and instruction selection use the host's widest vectors:
 * LLVM's tuning for Intel's AVX-512 server cores (icelake-server, skx...)
 * prefers 256 bits (for the frequency drop of older cores), which halved
 * every loop's lanes on an Ice Lake, and the dot's and scans' 16-lane
 * vectors were split in two. What clang's -mprefer-vector-width=512 sets. */
static void prefer_widest_vectors(lg *g)
{
    if (g->vector_bits < 512)
        return;
    static const char key[] = "prefer-vector-width", val[] = "512";
    LLVMAddAttributeAtIndex(g->fn, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(g->lc, key, sizeof key - 1, val, sizeof val - 1));
}

/* The function, its prologue and the loop over the programs; the builder
 * is left at the start of one program's body. */
static lg_loop begin_programs(lg *g, LLVMBasicBlockRef *prologue)
{
    LLVMTypeRef ps[5] = {g->ptr, g->i64, g->i64, g->ptr, g->i32};
    g->fn = LLVMAddFunction(g->mod, "tj_programs", LLVMFunctionType(g->vd, ps, 5, 0));
    add_attr(g, g->fn, 1, "noalias");
    add_attr(g, g->fn, 1, "readonly");
    add_attr(g, g->fn, 4, "readonly");
    add_attr(g, g->fn, LLVMAttributeFunctionIndex, "nounwind");
    prefer_widest_vectors(g);
    g->args = LLVMGetParam(g->fn, 0);
    g->entry = LLVMAppendBasicBlockInContext(g->lc, g->fn, "entry");
    *prologue = LLVMAppendBasicBlockInContext(g->lc, g->fn, "prologue");
    LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(g->lc, g->fn, "programs");
    LLVMPositionBuilderAtEnd(g->pro, *prologue);
    LLVMPositionBuilderAtEnd(g->b, start);
    LLVMValueRef grid = LLVMGetParam(g->fn, 3);
    g->exclusive = LLVMBuildICmp(g->pro, LLVMIntNE, LLVMGetParam(g->fn, 4), lg_i32(g, 0), "exclusive");
    for (int a = 0; a < 3; a++) {
        LLVMValueRef at = lg_i64(g, a);
        g->nprog[a] = LLVMBuildLoad2(g->pro, g->i64, LLVMBuildGEP2(g->pro, g->i64, grid, &at, 1, ""), "");
    }
    lg_loop l = lg_loop_begin(g, LLVMGetParam(g->fn, 1), LLVMGetParam(g->fn, 2), "program");
    LLVMValueRef rest = LLVMBuildUDiv(g->b, l.i, g->nprog[0], "");
    g->pid[0] = LLVMBuildURem(g->b, l.i, g->nprog[0], "");
    g->pid[1] = LLVMBuildURem(g->b, rest, g->nprog[1], "");
    g->pid[2] = LLVMBuildUDiv(g->b, rest, g->nprog[1], "");
    return l;
}

static void end_programs(lg *g, lg_loop *l, LLVMBasicBlockRef prologue)
{
    lg_loop_end(g, l);
    LLVMBuildRetVoid(g->b);
    LLVMBasicBlockRef start = LLVMGetNextBasicBlock(prologue);
    LLVMBuildBr(g->pro, start);
    LLVMPositionBuilderAtEnd(g->b, g->entry);
    LLVMBuildBr(g->b, prologue);
    LLVMValueRef frame = LLVMAddGlobal(g->mod, g->i64, "tj_frame_bytes");
    LLVMSetInitializer(frame, lg_i64(g, (int64_t)g->frame));
    LLVMSetGlobalConstant(frame, 1);
    LLVMValueRef atomics = LLVMAddGlobal(g->mod, g->i32, "tj_atomics");
    LLVMSetInitializer(atomics, lg_i32(g, g->atomics > 0));
    LLVMSetGlobalConstant(atomics, 1);
}

static void init_types(lg *g, LLVMContextRef lc)
{
    g->lc = lc;
    g->i1 = LLVMInt1TypeInContext(lc);
    g->i8 = LLVMInt8TypeInContext(lc);
    g->i16 = LLVMInt16TypeInContext(lc);
    g->i32 = LLVMInt32TypeInContext(lc);
    g->i64 = LLVMInt64TypeInContext(lc);
    g->f32 = LLVMFloatTypeInContext(lc);
    g->f64 = LLVMDoubleTypeInContext(lc);
    g->ptr = LLVMPointerTypeInContext(lc, 0);
    g->vd = LLVMVoidTypeInContext(lc);
}

static void release(lg *g)
{
    free(g->vals);
    free(g->views);
    free(g->fields);
    free(g->tuple_slots);
    free(g->uses);
    free(g->user);
    free(g->row_store);
    free(g->cell_store);
    if (g->b)
        LLVMDisposeBuilder(g->b);
    if (g->pro)
        LLVMDisposeBuilder(g->pro);
}

int lg_build_function(LLVMModuleRef mod, const tj_kernel *k, int vector_bits, int sort_net)
{
    lg g = {.k = k, .ctx = k->ctx, .mod = mod, .vector_bits = vector_bits, .sort_net = sort_net};
    init_types(&g, LLVMGetModuleContext(mod));
    g.vals = calloc(k->ninsts, sizeof *g.vals);
    g.views = calloc(k->ninsts, sizeof *g.views);
    g.fields = calloc(k->nparams ? k->nparams : 1, sizeof(lg_param_fields));
    g.uses = calloc(k->ninsts, sizeof *g.uses);
    g.user = calloc(k->ninsts, sizeof *g.user);
    g.row_store = calloc(k->ninsts, sizeof *g.row_store);
    g.cell_store = calloc(k->ninsts, sizeof *g.cell_store);
    g.b = LLVMCreateBuilderInContext(g.lc);
    g.pro = LLVMCreateBuilderInContext(g.lc);
    if (!g.vals || !g.views || !g.fields || !g.uses || !g.user || !g.row_store || !g.cell_store || plan_tuples(&g) ||
        lg_plan_rows(&g)) {
        release(&g);
        return lg_fail(&g, TJ_NONE, "out of memory");
    }
    count_uses(&g);
    LLVMBasicBlockRef prologue;
    lg_loop programs = begin_programs(&g, &prologue);
    tj_ref y;
    int rc = lg_emit_block(&g, k->body, &y);
    if (!rc)
        end_programs(&g, &programs, prologue);
    release(&g);
    return rc;
}
