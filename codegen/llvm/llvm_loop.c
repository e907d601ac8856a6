/* Tile buffers, element access and counted loops: what every op family
 * builds its loops from. */
#include <llvm-c/DebugInfo.h>
#include <string.h>

#include "codegen/llvm/llvm.h"

/* Buffers live in the entry block: fixed-size allocas that LLVM treats as
 * distinct objects (no alias checks in the vectorized loops). Aligned to
 * a cache line, so vector accesses never split one. */
LLVMValueRef lg_buffer(lg *g, LLVMTypeRef t, uint64_t n)
{
    LLVMBasicBlockRef here = LLVMGetInsertBlock(g->b);
    LLVMValueRef first = LLVMGetFirstInstruction(g->entry);
    if (first)
        LLVMPositionBuilderBefore(g->b, first);
    else
        LLVMPositionBuilderAtEnd(g->b, g->entry);
    LLVMValueRef a = LLVMBuildAlloca(g->b, LLVMArrayType2(t, n), "tile");
    LLVMSetAlignment(a, 64);
    LLVMPositionBuilderAtEnd(g->b, here);
    g->frame += (n * LLVMABISizeOfType(LLVMGetModuleDataLayout(g->mod), t) + 63) & ~(uint64_t)63;
    return a;
}

LLVMValueRef lg_elem_ptr(lg *g, tj_dtype dt, LLVMValueRef buf, LLVMValueRef i)
{
    return LLVMBuildGEP2(g->b, lg_type(g, dt), buf, &i, 1, "");
}

LLVMValueRef lg_elem(lg *g, tj_ref r, LLVMValueRef i)
{
    const tj_type_info *ti = lg_ti(g, r);
    if (ti->rank == 0 && !lg_val(g, r)->in_memory)
        return lg_val(g, r)->v;
    if (lg_val(g, r)->fused)
        return lg_fused_elem(g, r, i);
    return LLVMBuildLoad2(g->b, lg_type(g, ti->dtype), lg_elem_ptr(g, ti->dtype, lg_val(g, r)->v, i), "");
}

void lg_set_elem(lg *g, tj_ref r, LLVMValueRef i, LLVMValueRef v)
{
    const tj_type_info *ti = lg_ti(g, r);
    if (ti->rank == 0 && !lg_val(g, r)->in_memory)
        lg_val(g, r)->v = v;
    else
        LLVMBuildStore(g->b, v, lg_elem_ptr(g, ti->dtype, lg_val(g, r)->v, i));
}

unsigned lg_lanes(const lg *g, tj_dtype dt)
{
    return (unsigned)(g->vector_bits / (LLVMABISizeOfType(LLVMGetModuleDataLayout(g->mod), lg_type(g, dt)) * 8));
}

LLVMValueRef lg_splat(lg *g, LLVMValueRef x, unsigned w)
{
    LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(x), w);
    LLVMValueRef one = LLVMBuildInsertElement(g->b, LLVMGetPoison(vt), x, lg_i32(g, 0), "");
    return LLVMBuildShuffleVector(g->b, one, LLVMGetPoison(vt), LLVMConstNull(LLVMVectorType(g->i32, w)), "");
}

LLVMValueRef lg_same_everywhere(lg *g, tj_ref y)
{
    if (lg_ti(g, y)->rank == 0)
        return lg_elem(g, y, lg_i64(g, 0));
    const tj_inst *in = lg_in(g, y);
    return in->op == TJ_OP_BROADCAST && lg_ti(g, in->args[0])->rank == 0 ? lg_elem(g, in->args[0], lg_i64(g, 0)) : NULL;
}

void lg_alloc_result(lg *g, tj_ref r)
{
    const tj_type_info *ti = lg_ti(g, r);
    if (ti->kind != TJ_TK_TILE || r == g->keep) /* keep: emitted twice, one buffer */
        return;
    lg_val(g, r)->v = lg_buffer(g, lg_type(g, ti->dtype), tj_type_numel(g->ctx, lg_in(g, r)->type));
    lg_val(g, r)->in_memory = ti->rank == 0;
}

int lg_overwritable_arg(const lg *g, tj_ref r, tj_ref x)
{
    return x && lg_in(g, x)->op == TJ_OP_ARG && g->uses[x] == 1 && lg_in(g, x)->block == lg_in(g, r)->block &&
           lg_ti(g, x)->kind == TJ_TK_TILE && lg_ti(g, x)->rank > 0 && lg_ti(g, x)->dtype == lg_ti(g, r)->dtype;
}

void lg_settle(lg *g, tj_ref r)
{
    lval *v = lg_val(g, r);
    if (v->in_memory) {
        v->v = LLVMBuildLoad2(g->b, lg_type(g, lg_ti(g, r)->dtype), v->v, "");
        v->in_memory = 0;
    }
}

void lg_copy(lg *g, tj_dtype dt, LLVMValueRef dst, LLVMValueRef src, uint64_t n)
{
    uint64_t bytes = n * LLVMABISizeOfType(LLVMGetModuleDataLayout(g->mod), lg_type(g, dt));
    LLVMBuildMemCpy(g->b, dst, 64, src, 64, lg_i64(g, (int64_t)bytes));
}

lg_loop lg_loop_begin(lg *g, LLVMValueRef lo, LLVMValueRef hi, const char *name)
{
    lg_loop l;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
    l.head = LLVMAppendBasicBlockInContext(g->lc, g->fn, name);
    l.body = LLVMAppendBasicBlockInContext(g->lc, g->fn, "body");
    l.exit = LLVMAppendBasicBlockInContext(g->lc, g->fn, "exit");
    LLVMBuildBr(g->b, l.head);
    LLVMPositionBuilderAtEnd(g->b, l.head);
    l.i = LLVMBuildPhi(g->b, g->i64, "i");
    LLVMAddIncoming(l.i, &lo, &pre, 1);
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, l.i, hi, ""), l.body, l.exit);
    LLVMPositionBuilderAtEnd(g->b, l.body);
    l.next = NULL;
    return l;
}

/* The loop's ID (llvm.loop metadata naming itself) with one hint. */
static void hint_loop(lg *g, LLVMValueRef latch_br, const char *name, LLVMValueRef value)
{
    LLVMMetadataRef self = LLVMTemporaryMDNode(g->lc, NULL, 0);
    LLVMMetadataRef hint[2] = {LLVMMDStringInContext2(g->lc, name, strlen(name)), LLVMValueAsMetadata(value)};
    LLVMMetadataRef ops[2] = {self, LLVMMDNodeInContext2(g->lc, hint, 2)};
    LLVMMetadataRef id = LLVMMDNodeInContext2(g->lc, ops, 2);
    LLVMMetadataReplaceAllUsesWith(self, id); /* the loop ID names itself */
    LLVMSetMetadata(latch_br, LLVMGetMDKindIDInContext(g->lc, "llvm.loop", 9), LLVMMetadataAsValue(g->lc, id));
}

static LLVMValueRef close_loop(lg *g, lg_loop *l)
{
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
    l->next = LLVMBuildNSWAdd(g->b, l->i, lg_i64(g, 1), "");
    LLVMValueRef br = LLVMBuildBr(g->b, l->head);
    LLVMAddIncoming(l->i, &l->next, &latch, 1);
    LLVMPositionBuilderAtEnd(g->b, l->exit);
    return br;
}

/* A loop of the checked copy of a fused-row reader (lg_emit_inside) runs
 * only in the edge programs: vectorized but not interleaved, which halves
 * the machine code that copy costs to compile (the vectorizer interleaved
 * it 4 times, the masked loads' index lanes and compares with it). */
void lg_loop_end(lg *g, lg_loop *l)
{
    LLVMValueRef br = close_loop(g, l);
    if (g->version == LG_CHECKED)
        hint_loop(g, br, "llvm.loop.interleave.count", lg_i32(g, 1));
}

void lg_loop_end_scalar(lg *g, lg_loop *l)
{
    hint_loop(g, close_loop(g, l), "llvm.loop.vectorize.enable", LLVMConstInt(g->i1, 0, 0));
}

/* One vector of dt's value type from src to dst at element at. */
static void copy_vector(lg *g, tj_dtype dt, LLVMTypeRef vt, LLVMValueRef dst, LLVMValueRef src, LLVMValueRef at)
{
    unsigned esize = (unsigned)LLVMABISizeOfType(LLVMGetModuleDataLayout(g->mod), lg_type(g, dt));
    LLVMValueRef v = LLVMBuildLoad2(g->b, vt, lg_elem_ptr(g, dt, src, at), "");
    LLVMSetAlignment(v, esize);
    LLVMSetAlignment(LLVMBuildStore(g->b, v, lg_elem_ptr(g, dt, dst, at)), esize);
}

void lg_copy_span(lg *g, tj_dtype dt, LLVMValueRef dst, LLVMValueRef src, LLVMValueRef n)
{
    unsigned w = lg_lanes(g, dt);
    LLVMTypeRef vt = LLVMVectorType(lg_type(g, dt), w);
    LLVMValueRef wide = LLVMBuildICmp(g->b, LLVMIntSGE, n, lg_i64(g, w), "");
    LLVMBasicBlockRef vectors = LLVMAppendBasicBlockInContext(g->lc, g->fn, "copy_vectors");
    LLVMBasicBlockRef elements = LLVMAppendBasicBlockInContext(g->lc, g->fn, "copy_elements");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->lc, g->fn, "copied");
    LLVMBuildCondBr(g->b, wide, vectors, elements);
    LLVMPositionBuilderAtEnd(g->b, vectors);
    lg_loop vl = lg_loop_begin(g, lg_i64(g, 0), LLVMBuildUDiv(g->b, n, lg_i64(g, w), ""), "copy_vector");
    copy_vector(g, dt, vt, dst, src, LLVMBuildNUWMul(g->b, vl.i, lg_i64(g, w), ""));
    lg_loop_end_scalar(g, &vl);
    copy_vector(g, dt, vt, dst, src, LLVMBuildSub(g->b, n, lg_i64(g, w), "")); /* the last w, again where they overlap */
    LLVMBuildBr(g->b, done);
    LLVMPositionBuilderAtEnd(g->b, elements);
    lg_loop el = lg_loop_begin(g, lg_i64(g, 0), n, "copy_element");
    LLVMValueRef x = LLVMBuildLoad2(g->b, lg_type(g, dt), lg_elem_ptr(g, dt, src, el.i), "");
    LLVMBuildStore(g->b, x, lg_elem_ptr(g, dt, dst, el.i));
    lg_loop_end_scalar(g, &el);
    LLVMBuildBr(g->b, done);
    LLVMPositionBuilderAtEnd(g->b, done);
}

LLVMValueRef lg_each_begin(lg *g, lg_loop *l, uint64_t n)
{
    if (n == 0) { /* a scalar: no loop */
        l->head = NULL;
        return lg_i64(g, 0);
    }
    *l = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)n), "each");
    return l->i;
}

void lg_each_end(lg *g, lg_loop *l, uint64_t n)
{
    if (n && l->head)
        lg_loop_end(g, l);
}

/* Shorter rows stay in one loop over the tile. A rank-1 tile's elements
 * are its rows, in blocks of LIVE_BLOCK (lg_live_extent): a loop to a
 * runtime count takes a vector epilogue and a scalar remainder. */
enum { MIN_ROW = 8, LIVE_BLOCK = 64 };

/* Tile r's live rows, and how long a row is (*row); NULL: every row. */
static LLVMValueRef live_rows(lg *g, tj_ref r, uint64_t n, uint64_t *row)
{
    const tj_type_info *t = lg_ti(g, r);
    *row = n && t->rank >= 1 ? n / (uint64_t)t->shape[0] : 0;
    if (t->rank != 1)
        return t->rank >= 2 ? lg_live_rows(g, r) : NULL;
    LLVMValueRef live = n % LIVE_BLOCK || n <= LIVE_BLOCK ? NULL : lg_live_rows(g, r);
    *row = LIVE_BLOCK;
    return live ? LLVMBuildUDiv(g->b, LLVMBuildAdd(g->b, live, lg_i64(g, LIVE_BLOCK - 1), ""), lg_i64(g, LIVE_BLOCK), "") : NULL;
}

LLVMValueRef lg_live_extent(lg *g, tj_ref r)
{
    uint64_t row;
    LLVMValueRef live = live_rows(g, r, lg_count(g, r), &row);
    return live && row >= MIN_ROW ? LLVMBuildNUWMul(g->b, live, lg_i64(g, (int64_t)row), "") : NULL;
}

LLVMValueRef lg_rows_begin(lg *g, lg_rows *l, tj_ref r)
{
    uint64_t row;
    l->n = lg_count(g, r);
    LLVMValueRef live = live_rows(g, r, l->n, &row);
    l->nested = live && row >= MIN_ROW;
    if (!l->nested)
        return lg_each_begin(g, &l->each, l->n);
    l->row = lg_loop_begin(g, lg_i64(g, 0), live, "live_rows");
    l->each = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)row), "each");
    return LLVMBuildNSWAdd(g->b, LLVMBuildNSWMul(g->b, l->row.i, lg_i64(g, (int64_t)row), ""), l->each.i, "");
}

void lg_rows_end(lg *g, lg_rows *l)
{
    if (!l->nested) {
        lg_each_end(g, &l->each, l->n);
        return;
    }
    lg_loop_end(g, &l->each);
    lg_loop_end(g, &l->row);
}

void lg_allow_reassoc(LLVMValueRef inst)
{
    if (LLVMCanValueUseFastMathFlags(inst))
        LLVMSetFastMathFlags(inst, LLVMFastMathAllowReassoc | LLVMFastMathAllowContract);
}

LLVMValueRef lg_nest_begin(lg *g, lg_nest *n, int rank, const int32_t *shape)
{
    return lg_nest_begin_rows(g, n, rank, shape, NULL);
}

LLVMValueRef lg_nest_begin_rows(lg *g, lg_nest *n, int rank, const int32_t *shape, LLVMValueRef rows)
{
    n->rank = rank;
    LLVMValueRef flat = lg_i64(g, 0);
    for (int a = 0; a < rank; a++) {
        n->loop[a] = lg_loop_begin(g, lg_i64(g, 0), a == 0 && rows ? rows : lg_i64(g, shape[a]), "nest");
        n->c[a] = n->loop[a].i;
        flat = LLVMBuildNSWAdd(g->b, LLVMBuildNSWMul(g->b, flat, lg_i64(g, shape[a]), ""), n->c[a], "");
    }
    n->flat = flat;
    return flat;
}

void lg_nest_end(lg *g, lg_nest *n)
{
    for (int a = n->rank - 1; a >= 0; a--)
        lg_loop_end(g, &n->loop[a]);
}

lg_lines lg_split_axis(const tj_type_info *ti, int64_t axis)
{
    lg_lines l = {1, 1, 1, NULL};
    for (int a = 0; a < ti->rank; a++)
        *(axis < 0 || a == axis ? &l.len : a < axis ? &l.outer : &l.inner) *= (uint64_t)ti->shape[a];
    return l;
}

LLVMValueRef lg_lines_outer(lg *g, lg_lines l)
{
    return l.live_outer ? l.live_outer : lg_i64(g, (int64_t)l.outer);
}

lg_loop lg_lines_begin(lg *g, lg_lines l, LLVMValueRef *base)
{
    LLVMValueRef lines = LLVMBuildNSWMul(g->b, lg_lines_outer(g, l), lg_i64(g, (int64_t)l.inner), "");
    lg_loop o = lg_loop_begin(g, lg_i64(g, 0), lines, "lines");
    LLVMValueRef oo = LLVMBuildUDiv(g->b, o.i, lg_i64(g, (int64_t)l.inner), "");
    LLVMValueRef ii = LLVMBuildURem(g->b, o.i, lg_i64(g, (int64_t)l.inner), "");
    *base = LLVMBuildNSWAdd(g->b, LLVMBuildNSWMul(g->b, oo, lg_i64(g, (int64_t)(l.len * l.inner)), ""), ii, "");
    return o;
}
