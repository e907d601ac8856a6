/* view, load, store and atomics.
 *
 * A VIEW emits nothing: it records each tensor axis's index, slice start
 * or gather tile, and the memory ops loop over the view's groups (each
 * slice, and all gather axes together as one group of the gather tile's
 * elements) in row-major order, as the interpreter's offset tables do.
 * An element is touched only when every coordinate is inside its dim and
 * its mask is set; masked-off or out-of-bounds loads give `other` (absent:
 * 0), atomics give 0. When a view without gathers or a mask lies wholly
 * inside the tensor (the common case: every program but the last), a
 * second loop nest without any check runs instead, which LLVM vectorizes.
 * Stores and atomics go in row-major order: the last duplicate wins. */
#include "codegen/llvm/llvm.h"

int lg_emit_view(lg *g, tj_ref r)
{
    const tj_inst *in = lg_in(g, r);
    const tj_inst *t = lg_in(g, in->args[0]);
    const tj_type_info *tt = lg_ti(g, in->args[0]);
    if (t->op != TJ_OP_PARAM || tt->kind != TJ_TK_TENSOR || in->nlist != (uint32_t)tt->rank ||
        in->nargs != in->nlist + 1)
        return lg_fail(g, r, "needs a tensor parameter and one operand per axis");
    lg_view *v = &g->views[r];
    v->param = (uint32_t)t->imm;
    v->rank = tt->rank;
    for (int a = 0; a < tt->rank; a++) {
        tj_ref x = in->args[a + 1];
        v->kind[a] = in->list[a];
        if (v->kind[a] == TJ_VIEW_GATHER)
            v->gather[a] = x;
        else
            v->at[a] = lg_to_i64(g, lg_ti(g, x)->dtype, lg_elem(g, x, lg_i64(g, 0)));
    }
    lg_val(g, r)->view = v;
    return 0;
}

/* The loops over a view's groups, with each element's offset and whether
 * it is inside the tensor. */
typedef struct view_walk {
    lg_nest nest;
    LLVMValueRef flat, off, inside; /* inside: i1, NULL on the checked-free path */
} view_walk;

static int has_gather(const lg_view *v)
{
    for (int a = 0; a < v->rank; a++)
        if (v->kind[a] == TJ_VIEW_GATHER)
            return 1;
    return 0;
}

int lg_view_unit_stride(const lg *g, const lg_view *v)
{
    const tj_facts *f = g->k->facts ? &g->k->facts[v->param] : NULL;
    return f && f->unit_stride;
}

LLVMValueRef lg_view_stride(lg *g, const lg_view *v, int a)
{
    if (a == v->rank - 1 && lg_view_unit_stride(g, v))
        return lg_i64(g, 1);
    return lg_tensor_stride(g, v->param, a);
}

/* 0 <= c < dim as one unsigned comparison. */
static LLVMValueRef in_dim(lg *g, LLVMValueRef c, LLVMValueRef dim)
{
    return LLVMBuildICmp(g->b, LLVMIntULT, c, dim, "");
}

int lg_view_groups(lg *g, const lg_view *v, int32_t *len)
{
    int n = 0, gathered = 0;
    for (int a = 0; a < v->rank; a++) {
        if (v->kind[a] > 0)
            len[n++] = v->kind[a];
        else if (v->kind[a] == TJ_VIEW_GATHER && !gathered++)
            len[n++] = (int32_t)tj_type_numel(g->ctx, lg_in(g, v->gather[a])->type);
    }
    return n;
}

/* Each tensor axis's coordinate at group coordinates gc. */
static void view_coords(lg *g, const lg_view *v, const LLVMValueRef *gc, LLVMValueRef *c)
{
    int grp = 0, gather_grp = -1;
    for (int a = 0; a < v->rank; a++) {
        if (v->kind[a] == TJ_VIEW_INDEX) {
            c[a] = v->at[a];
        } else if (v->kind[a] > 0) {
            c[a] = LLVMBuildAdd(g->b, v->at[a], gc[grp++], "");
        } else {
            if (gather_grp < 0)
                gather_grp = grp++;
            tj_ref x = v->gather[a];
            c[a] = lg_to_i64(g, lg_ti(g, x)->dtype, lg_elem(g, x, gc[gather_grp]));
        }
    }
}

/* Whether every coordinate but axis `skip`'s is inside its dim. */
static LLVMValueRef coords_inside(lg *g, const lg_view *v, const LLVMValueRef *c, int skip)
{
    LLVMValueRef inside = LLVMConstInt(g->i1, 1, 0);
    for (int a = 0; a < v->rank; a++)
        if (a != skip)
            inside = LLVMBuildAnd(g->b, inside, in_dim(g, c[a], lg_tensor_size(g, v->param, a)), "");
    return inside;
}

/* The element at group coordinates gc: its offset, and (checked) whether
 * it is inside the tensor. */
static void view_point(lg *g, const lg_view *v, const LLVMValueRef *gc, int checked, view_walk *w)
{
    LLVMValueRef c[TJ_MAX_RANK], off = lg_i64(g, 0);
    view_coords(g, v, gc, c);
    for (int a = 0; a < v->rank; a++)
        off = LLVMBuildAdd(g->b, off, LLVMBuildMul(g->b, c[a], lg_view_stride(g, v, a), ""), "");
    w->off = off;
    w->inside = checked ? coords_inside(g, v, c, -1) : NULL;
}

LLVMValueRef lg_view_offset(lg *g, const lg_view *v, const LLVMValueRef *gc)
{
    view_walk w;
    view_point(g, v, gc, 0, &w);
    return w.off;
}

static void walk_begin(lg *g, view_walk *w, const lg_view *v, int checked)
{
    int32_t len[TJ_MAX_RANK];
    w->flat = lg_nest_begin(g, &w->nest, lg_view_groups(g, v, len), len);
    view_point(g, v, w->nest.c, checked, w);
}

/* Whether the whole view is inside the tensor (no gathers). */
static LLVMValueRef view_inside(lg *g, const lg_view *v)
{
    LLVMValueRef ok = LLVMConstInt(g->i1, 1, 0);
    for (int a = 0; a < v->rank; a++) {
        LLVMValueRef dim = lg_tensor_size(g, v->param, a), c;
        if (v->kind[a] == TJ_VIEW_INDEX) {
            c = in_dim(g, v->at[a], dim);
        } else { /* start >= 0 && start + extent <= dim, no overflow: start < 2^62 */
            LLVMValueRef end = LLVMBuildAdd(g->b, v->at[a], lg_i64(g, v->kind[a]), "");
            c = LLVMBuildAnd(g->b, LLVMBuildICmp(g->b, LLVMIntULT, v->at[a], lg_i64(g, (int64_t)1 << 62), ""),
                             LLVMBuildICmp(g->b, LLVMIntSLE, end, dim, ""), "");
        }
        ok = LLVMBuildAnd(g->b, ok, c, "");
    }
    return ok;
}

static LLVMValueRef elem_addr(lg *g, const lg_view *v, tj_dtype dt, LLVMValueRef off)
{
    return LLVMBuildGEP2(g->b, lg_mem_type(g, dt), lg_tensor_data(g, v->param), &off, 1, "");
}

/* What one element does, on either path; `go` (i1 or NULL) says whether
 * it may touch memory. */
typedef void (*elem_fn)(lg *g, tj_ref r, const lg_view *v, view_walk *w, LLVMValueRef go);

static LLVMValueRef element_go(lg *g, tj_ref mask, view_walk *w)
{
    LLVMValueRef go = w->inside;
    if (mask) {
        LLVMValueRef m = lg_truth(g, lg_elem(g, mask, w->flat));
        go = go ? LLVMBuildAnd(g->b, go, m, "") : m;
    }
    return go;
}

/* The last sliced axis (the innermost group's) of a view without
 * gathers, or -1. */
static int inner_axis(const lg_view *v)
{
    int inner = -1;
    for (int a = 0; a < v->rank; a++) {
        if (v->kind[a] == TJ_VIEW_GATHER)
            return -1;
        if (v->kind[a] > 0)
            inner = a;
    }
    return inner;
}

static void store_elem(lg *g, tj_ref r, const lg_view *v, view_walk *w, LLVMValueRef go);
static void load_elem(lg *g, tj_ref r, const lg_view *v, view_walk *w, LLVMValueRef go);

/* Element flat of a load's `other` (0 without one). */
static LLVMValueRef load_other(lg *g, tj_ref r, LLVMValueRef flat)
{
    tj_ref other = lg_in(g, r)->args[2];
    return other ? lg_elem(g, other, flat) : LLVMConstNull(lg_type(g, lg_ti(g, r)->dtype));
}

/* `other` in a row of extent len that buffer buf holds from element first,
 * outside the part [lo, hi) that is copied in after it, up to end (NULL:
 * len; no reader reads past it). Where `other` is
 * one value (none, a scalar or its broadcast): the part before lo (a
 * negative start) in a scalar loop, and the tail from the vector-aligned
 * element at or below hi on as whole vectors in a loop the vectorizer
 * skips (the copy overwrites the inside elements among them). Filling the
 * whole row first wrote each inside element twice (every row of 1000 in a
 * tile of 1024 is an edge row), and a vectorized tail loop with a runtime
 * trip count cost 2.5 ms of compile median (bench/NOTES.md). A row of 8
 * vectors or fewer is filled whole as before: a few stores, where the
 * loops' overhead made embed.tj's rows of 32 i32 12% slower. */
enum { SHORT_ROW_VECTORS = 8 };

static void fill_other(lg *g, tj_ref r, LLVMValueRef buf, LLVMValueRef first, LLVMValueRef lo, LLVMValueRef hi,
                       int32_t len, LLVMValueRef end)
{
    tj_dtype dt = lg_ti(g, r)->dtype;
    LLVMTypeRef t = lg_type(g, dt);
    tj_ref other = lg_in(g, r)->args[2];
    LLVMValueRef one = other ? lg_same_everywhere(g, other) : LLVMConstNull(t);
    unsigned bits = (unsigned)LLVMABISizeOfType(LLVMGetModuleDataLayout(g->mod), t) * 8;
    int64_t w = one ? lg_lanes(g, dt) : 0, whole = w > 1 ? len / w * w : 0;
    LLVMValueRef from[2] = {lg_i64(g, 0), hi}, to[2] = {lo, end ? end : lg_i64(g, len)};
    if (w <= 1 || len / w <= SHORT_ROW_VECTORS) { /* the whole row, element by element */
        from[1] = from[0];
        to[0] = from[0];
        whole = 0;
    }
    for (int part = 0; part < 2; part++) {
        if (part && whole) { /* the tail's whole vectors, then what is left after them */
            LLVMValueRef start = LLVMBuildAnd(g->b, hi, lg_i64(g, -w), ""), splat = lg_splat(g, one, (unsigned)w);
            LLVMValueRef stop = lg_i64(g, whole);
            if (end) { /* the vectors that hold elements before end */
                LLVMValueRef up[2] = {LLVMBuildAnd(g->b, LLVMBuildAdd(g->b, end, lg_i64(g, w - 1), ""), lg_i64(g, -w), ""), stop};
                stop = lg_intrinsic(g, "llvm.smin", up, 2);
            }
            lg_loop vl = lg_loop_begin(g, lg_i64(g, 0), LLVMBuildSDiv(g->b, LLVMBuildSub(g->b, stop, start, ""), lg_i64(g, w), ""), "other_vectors");
            LLVMValueRef at = LLVMBuildNSWAdd(g->b, first, LLVMBuildNSWAdd(g->b, start, LLVMBuildNSWMul(g->b, vl.i, lg_i64(g, w), ""), ""), "");
            LLVMSetAlignment(LLVMBuildStore(g->b, splat, lg_elem_ptr(g, dt, buf, at)), bits / 8);
            lg_loop_end_scalar(g, &vl);
            LLVMValueRef after[2] = {hi, lg_i64(g, whole)};
            from[1] = lg_intrinsic(g, "llvm.smax", after, 2);
        }
        lg_loop l = lg_loop_begin(g, from[part], to[part], "other");
        LLVMValueRef flat = LLVMBuildNSWAdd(g->b, first, l.i, "");
        LLVMBuildStore(g->b, one ? one : load_other(g, r, flat), lg_elem_ptr(g, dt, buf, flat));
        if (part && !whole)
            lg_loop_end(g, &l);
        else
            lg_loop_end_scalar(g, &l);
    }
}

/* The part [*lo, *hi) of a row of extent len whose inner coordinates
 * (start + j along axis a) lie inside the dim. */
static void row_span(lg *g, const lg_view *v, int a, int32_t len, LLVMValueRef *lo, LLVMValueRef *hi)
{
    LLVMValueRef start = v->at[a], zero = lg_i64(g, 0), n = lg_i64(g, len);
    LLVMValueRef from[2] = {LLVMBuildNeg(g->b, start, ""), zero}, to[2] = {LLVMBuildSub(g->b, lg_tensor_size(g, v->param, a), start, ""), n};
    *lo = lg_intrinsic(g, "llvm.smax", from, 2);
    LLVMValueRef low[2] = {*lo, n};
    *lo = lg_intrinsic(g, "llvm.smin", low, 2);
    *hi = lg_intrinsic(g, "llvm.smin", to, 2);
    LLVMValueRef high[2] = {*hi, *lo};
    *hi = lg_intrinsic(g, "llvm.smax", high, 2);
}

/* One row of the checked walk: the innermost group at the outer groups'
 * coordinates gc (gc[n - 1] is set here); outside: no element may touch
 * memory. A store or load of a row without a mask runs over the row's
 * elements inside their dim alone, unchecked (a load gives the others
 * `other`, fill_other): the per-element check vectorized into masked accesses
 * with i64 index lanes, and masked stores are microcode on AVX2 hosts
 * without AVX-512 (vmaskmovps on this build machine's znver3, about 40
 * cycles per 8 floats), so rows of 1000 in tiles of 1024 took longer to
 * move than to compute; now plain vector accesses and a scalar tail.
 * Atomics keep the check (scalar; their old values outside are 0). */
/* Whether dt's elements are the same in memory and as values (not f16,
 * bf16, or bool, which a load makes 0/1), and view v's innermost axis
 * `inner` has the constant stride 1: its rows copy as they are. */
static int copies_plain(lg *g, const lg_view *v, int inner, tj_dtype dt)
{
    return dt != TJ_DT_BOOL && lg_mem_type(g, dt) == lg_type(g, dt) && inner == v->rank - 1 && lg_view_unit_stride(g, v);
}

/* The tile a plain load (into its buffer) or store (from a tile in a
 * buffer) of a row moves, or TJ_NONE: ordered accesses, fused values and
 * what copies_plain refuses go element by element. */
static tj_ref copied_tile(lg *g, tj_ref r, const lg_view *v, elem_fn fn, int inner)
{
    const tj_inst *in = lg_in(g, r);
    tj_ref x = fn == load_elem ? r : in->args[1];
    if ((in->op != TJ_OP_LOAD && in->op != TJ_OP_STORE) || lg_ti(g, x)->rank == 0 || lg_val(g, x)->fused)
        return TJ_NONE;
    return copies_plain(g, v, inner, lg_ti(g, x)->dtype) ? x : TJ_NONE;
}

/* Elements [lo, hi) of the row at the outer groups' coordinates gc
 * (gc[n - 1] is set here) between the tensor and tile x's buffer from
 * element first: into the buffer for a load, out of it for a store. */
static void copy_row(lg *g, const lg_view *v, tj_ref x, int load, LLVMValueRef *gc, int n, LLVMValueRef first,
                     LLVMValueRef lo, LLVMValueRef hi)
{
    view_walk at;
    gc[n - 1] = lo;
    view_point(g, v, gc, 0, &at);
    tj_dtype dt = lg_ti(g, x)->dtype;
    LLVMValueRef tensor = elem_addr(g, v, dt, at.off);
    LLVMValueRef tile = lg_elem_ptr(g, dt, lg_val(g, x)->v, LLVMBuildNSWAdd(g->b, first, lo, ""));
    lg_copy_span(g, dt, load ? tile : tensor, load ? tensor : tile, LLVMBuildSub(g->b, hi, lo, ""));
}

static void walk_row(lg *g, tj_ref r, const lg_view *v, tj_ref mask, elem_fn fn, LLVMValueRef *gc, int n,
                     const int32_t *len, LLVMValueRef row_flat, int outside, int inner)
{
    int clip = !outside && !mask && (fn == store_elem || fn == load_elem);
    LLVMValueRef lo = lg_i64(g, 0), hi = lg_i64(g, len[n - 1]);
    LLVMValueRef first = LLVMBuildNSWMul(g->b, row_flat, lg_i64(g, len[n - 1]), "");
    if (clip)
        row_span(g, v, inner, len[n - 1], &lo, &hi);
    if (clip && fn == load_elem)
        fill_other(g, r, lg_val(g, r)->v, first, lo, hi, len[n - 1], NULL);
    tj_ref x = clip ? copied_tile(g, r, v, fn, inner) : TJ_NONE;
    if (x) {
        copy_row(g, v, x, fn == load_elem, gc, n, first, lo, hi);
        return;
    }
    lg_loop l = lg_loop_begin(g, lo, hi, "row");
    view_walk w;
    gc[n - 1] = l.i;
    view_point(g, v, gc, !clip, &w);
    w.flat = LLVMBuildNSWAdd(g->b, first, l.i, "");
    fn(g, r, v, &w, outside ? LLVMConstInt(g->i1, 0, 0) : clip ? NULL : element_go(g, mask, &w));
    lg_loop_end(g, &l);
}

/* The checked nest. A view with axes outside its innermost group (an
 * index, outer slices) checks their coordinates once per row, and a row
 * outside the tensor touches no memory: with only each element's check,
 * vectorized into masked accesses, such rows still issued them, and a
 * masked access whose lanes fall on an unmapped page costs 0.4-2 us on
 * this build machine's znver4 even with no lane set (the rows past the
 * end of a tensor in an edge program made colsum.tj at M = 2100 slower
 * than the interpreter, 30 times slower than with this check). */
static void walk_checked(lg *g, tj_ref r, const lg_view *v, tj_ref mask, elem_fn fn)
{
    int32_t len[TJ_MAX_RANK];
    int n = lg_view_groups(g, v, len), inner = inner_axis(v);
    if (inner < 0) {
        view_walk w;
        walk_begin(g, &w, v, 1);
        fn(g, r, v, &w, element_go(g, mask, &w));
        lg_nest_end(g, &w.nest);
        return;
    }
    lg_nest rows;
    LLVMValueRef row_flat = lg_nest_begin(g, &rows, n - 1, len), gc[TJ_MAX_RANK], c[TJ_MAX_RANK];
    for (int a = 0; a < n - 1; a++)
        gc[a] = rows.c[a];
    gc[n - 1] = lg_i64(g, 0); /* the inner coordinate is not checked here */
    view_coords(g, v, gc, c);
    LLVMBasicBlockRef in = LLVMAppendBasicBlockInContext(g->lc, g->fn, "row_inside");
    LLVMBasicBlockRef out = LLVMAppendBasicBlockInContext(g->lc, g->fn, "row_outside");
    LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(g->lc, g->fn, "row_done");
    LLVMBuildCondBr(g->b, coords_inside(g, v, c, inner), in, out);
    for (int outside = 0; outside < 2; outside++) {
        LLVMPositionBuilderAtEnd(g->b, outside ? out : in);
        walk_row(g, r, v, mask, fn, gc, n, len, row_flat, outside, inner);
        LLVMBuildBr(g->b, next);
    }
    LLVMPositionBuilderAtEnd(g->b, next);
    lg_nest_end(g, &rows);
}

/* The unchecked nest: a plain copy row by row (copy_row), else element
 * by element, which the vectorizer takes. */
static void walk_inside(lg *g, tj_ref r, const lg_view *v, elem_fn fn)
{
    int32_t len[TJ_MAX_RANK];
    int n = lg_view_groups(g, v, len), inner = inner_axis(v);
    tj_ref x = inner >= 0 ? copied_tile(g, r, v, fn, inner) : TJ_NONE;
    if (x) {
        lg_nest rows;
        LLVMValueRef row_flat = lg_nest_begin(g, &rows, n - 1, len), gc[TJ_MAX_RANK];
        for (int a = 0; a < n - 1; a++)
            gc[a] = rows.c[a];
        LLVMValueRef first = LLVMBuildNSWMul(g->b, row_flat, lg_i64(g, len[n - 1]), "");
        copy_row(g, v, x, fn == load_elem, gc, n, first, lg_i64(g, 0), lg_i64(g, len[n - 1]));
        lg_nest_end(g, &rows);
        return;
    }
    view_walk w;
    walk_begin(g, &w, v, 0);
    fn(g, r, v, &w, NULL);
    lg_nest_end(g, &w.nest);
}

/* The checked nest, and when the view may be wholly inside and unmasked,
 * the unchecked one beside it. */
static void walk_view(lg *g, tj_ref r, const lg_view *v, tj_ref mask, elem_fn fn)
{
    LLVMBasicBlockRef fast = NULL, slow = NULL, done = NULL;
    if (!has_gather(v) && !mask) {
        fast = LLVMAppendBasicBlockInContext(g->lc, g->fn, "inside");
        slow = LLVMAppendBasicBlockInContext(g->lc, g->fn, "checked");
        done = LLVMAppendBasicBlockInContext(g->lc, g->fn, "viewed");
        LLVMBuildCondBr(g->b, view_inside(g, v), fast, slow);
        LLVMPositionBuilderAtEnd(g->b, fast);
        walk_inside(g, r, v, fn);
        LLVMBuildBr(g->b, done);
        LLVMPositionBuilderAtEnd(g->b, slow);
    }
    walk_checked(g, r, v, mask, fn);
    if (done) {
        LLVMBuildBr(g->b, done);
        LLVMPositionBuilderAtEnd(g->b, done);
    }
}

/* if (go) { then } with the value of then, or `otherwise`. */
typedef struct guard {
    LLVMBasicBlockRef pre, then, join;
} guard;

static guard guard_begin(lg *g, LLVMValueRef go)
{
    guard gd = {LLVMGetInsertBlock(g->b), LLVMAppendBasicBlockInContext(g->lc, g->fn, "touch"),
                LLVMAppendBasicBlockInContext(g->lc, g->fn, "touched")};
    LLVMBuildCondBr(g->b, go, gd.then, gd.join);
    LLVMPositionBuilderAtEnd(g->b, gd.then);
    return gd;
}

static LLVMValueRef guard_end(lg *g, guard *gd, LLVMValueRef v, LLVMValueRef otherwise)
{
    LLVMBasicBlockRef then_end = LLVMGetInsertBlock(g->b);
    LLVMBuildBr(g->b, gd->join);
    LLVMPositionBuilderAtEnd(g->b, gd->join);
    if (!v)
        return NULL;
    LLVMValueRef phi = LLVMBuildPhi(g->b, LLVMTypeOf(v), "");
    LLVMValueRef vals[2] = {v, otherwise};
    LLVMBasicBlockRef from[2] = {then_end, gd->pre};
    LLVMAddIncoming(phi, vals, from, 2);
    return phi;
}

/* load_acquire and store_release: atomic accesses with acquire / release
 * ordering, load_relaxed and store_relaxed monotonic ones (LLVM requires
 * them aligned to their size); other accesses stay. */
static LLVMValueRef ordered(lg *g, tj_ref r, LLVMValueRef access, tj_dtype dt)
{
    LLVMAtomicOrdering order;
    switch (lg_in(g, r)->op) {
    case TJ_OP_LOAD_ACQUIRE: order = LLVMAtomicOrderingAcquire; break;
    case TJ_OP_STORE_RELEASE: order = LLVMAtomicOrderingRelease; break;
    case TJ_OP_LOAD_RELAXED: case TJ_OP_STORE_RELAXED: order = LLVMAtomicOrderingMonotonic; break;
    default: return access;
    }
    LLVMSetOrdering(access, order);
    LLVMSetAlignment(access, (unsigned)tj_dtype_size(dt));
    return access;
}

static void load_elem(lg *g, tj_ref r, const lg_view *v, view_walk *w, LLVMValueRef go)
{
    tj_dtype dt = lg_ti(g, r)->dtype;
    LLVMValueRef val;
    if (!go) {
        val = ordered(g, r, LLVMBuildLoad2(g->b, lg_mem_type(g, dt), elem_addr(g, v, dt, w->off), ""), dt);
        lg_set_elem(g, r, w->flat, lg_from_mem(g, dt, val));
        return;
    }
    LLVMValueRef other = load_other(g, r, w->flat);
    guard gd = guard_begin(g, go);
    val = ordered(g, r, LLVMBuildLoad2(g->b, lg_mem_type(g, dt), elem_addr(g, v, dt, w->off), ""), dt);
    lg_set_elem(g, r, w->flat, guard_end(g, &gd, lg_from_mem(g, dt, val), other));
}

static void store_elem(lg *g, tj_ref r, const lg_view *v, view_walk *w, LLVMValueRef go)
{
    const tj_inst *in = lg_in(g, r);
    tj_dtype dt = lg_ti(g, in->args[1])->dtype;
    guard gd;
    if (go)
        gd = guard_begin(g, go);
    LLVMValueRef x = lg_to_mem(g, dt, lg_elem(g, in->args[1], w->flat));
    ordered(g, r, LLVMBuildStore(g->b, x, elem_addr(g, v, dt, w->off)), dt);
    if (go)
        guard_end(g, &gd, NULL, NULL);
}

static const lg_view *view_of(lg *g, tj_ref r)
{
    const lg_view *v = lg_val(g, lg_in(g, r)->args[0])->view;
    if (!v)
        lg_fail(g, r, "the first operand is not a view");
    return v;
}

/* Load fusion: a load of a one-group view (a row: contiguous in the flat
 * index) whose every reader, in the same block, reads each element once
 * (elementwise ops, the value or mask of a store, reductions) is read
 * inside each reader's loop (checked per element: masked vector loads):
 * softmax's max(x) and x - max(x) read the row from memory twice (from L1
 * the second time) instead of through a copy. A reader that is itself
 * fused reads where its own user runs (its sink); nothing from the load to
 * the last sink may write memory (no store, atomic, loop or branch). */
static int reads_each_once(const lg *g, tj_ref u, tj_ref r)
{
    tj_op op = lg_in(g, u)->op;
    return (tj_op_get(op)->flags & TJ_OPF_ELEM) || (op == TJ_OP_STORE && lg_in(g, u)->args[0] != r) ||
           (op >= TJ_OP_REDUCE_SUM && op <= TJ_OP_ARGMIN);
}

static uint32_t reads_of(const tj_inst *in, tj_ref r)
{
    uint32_t n = 0;
    for (uint32_t a = 0; a < in->nargs; a++)
        n += in->args[a] == r;
    return n;
}

/* Where reader u's elements are read: u, or its fused user's sink. */
static tj_ref sink_of(const lg *g, tj_ref u)
{
    while ((tj_op_get(lg_in(g, u)->op)->flags & TJ_OPF_ELEM) && lg_fusable(g, u))
        u = g->user[u];
    return u;
}

static int writes_memory(const lg *g, tj_ref x)
{
    unsigned f = tj_op_get(lg_in(g, x)->op)->flags;
    return (f & TJ_OPF_REGION) || ((f & TJ_OPF_MEM) && !(f & TJ_OPF_READ));
}

static int load_fusable(const lg *g, tj_ref r, const lg_view *v)
{
    int32_t len[TJ_MAX_RANK];
    if (!g->uses[r] || lg_ti(g, r)->rank == 0 || has_gather(v) || lg_view_groups((lg *)g, v, len) != 1)
        return 0;
    const tj_block *blk = tj_block_at(g->k, lg_in(g, r)->block);
    uint32_t at = 0, seen = 0, last = 0; /* last: block position of the latest sink */
    while (at < blk->ninsts && blk->insts[at] != r)
        at++;
    for (uint32_t i = at + 1; i < blk->ninsts; i++) {
        tj_ref u = blk->insts[i];
        uint32_t n = reads_of(lg_in(g, u), r);
        if (!n)
            continue;
        if (!reads_each_once(g, u, r))
            return 0;
        seen += n;
        uint32_t p = i; /* a sink follows its reader in the block */
        for (tj_ref s = sink_of(g, u); p < blk->ninsts && blk->insts[p] != s;)
            p++;
        if (p == blk->ninsts)
            return 0;
        last = p > last ? p : last;
    }
    if (seen != g->uses[r]) /* a reader in a nested block */
        return 0;
    for (uint32_t i = at + 1; i < last; i++)
        if (writes_memory(g, blk->insts[i]))
            return 0;
    return 1;
}

LLVMValueRef lg_fused_load(lg *g, tj_ref r, LLVMValueRef i)
{
    const tj_inst *in = lg_in(g, r);
    const lg_view *v = lg_val(g, in->args[0])->view;
    tj_dtype dt = lg_ti(g, r)->dtype;
    view_walk w = {.flat = i};
    LLVMValueRef row = g->version == LG_INSIDE ? lg_val(g, r)->row : NULL, addr;
    if (row) { /* the shared reader: in bounds whichever memory it is */
        LLVMValueRef at = LLVMBuildMul(g->b, i, lg_val(g, r)->row_stride, "");
        w.inside = NULL, addr = LLVMBuildGEP2(g->b, lg_mem_type(g, dt), row, &at, 1, "");
    } else
        view_point(g, v, &i, g->version != LG_INSIDE, &w), addr = elem_addr(g, v, dt, w.off);
    LLVMValueRef go = element_go(g, in->args[1], &w); /* NULL: unmasked and inside */
    if (!go)
        return lg_from_mem(g, dt, LLVMBuildLoad2(g->b, lg_mem_type(g, dt), addr, ""));
    LLVMValueRef other = load_other(g, r, i);
    guard gd = guard_begin(g, go);
    LLVMValueRef val = lg_from_mem(g, dt, LLVMBuildLoad2(g->b, lg_mem_type(g, dt), addr, ""));
    return guard_end(g, &gd, val, other);
}

LLVMValueRef lg_load_inside_end(lg *g, tj_ref x, int axis, uint64_t len, LLVMValueRef *other)
{
    const tj_inst *in = lg_in(g, x);
    if (in->op != TJ_OP_LOAD || (in->nargs > 1 && in->args[1]))
        return NULL;
    *other = NULL;
    if (in->nargs > 2 && in->args[2] && !(*other = lg_same_everywhere(g, in->args[2])))
        return NULL;
    const lg_view *v = lg_val(g, in->args[0])->view;
    int slice = -1;
    for (int a = 0, t = 0; a < v->rank; a++) {
        if (v->kind[a] == TJ_VIEW_GATHER)
            return NULL;
        if (v->kind[a] > 0 && t++ == axis)
            slice = a;
    }
    if (slice < 0 || (uint64_t)v->kind[slice] != len)
        return NULL;
    return lg_slice_inside_end(g, v->param, slice, v->at[slice], len);
}

LLVMValueRef lg_slice_inside_end(lg *g, uint32_t param, int axis, LLVMValueRef start, uint64_t len)
{
    LLVMValueRef left[2] = {LLVMBuildSub(g->b, lg_tensor_size(g, param, axis), start, ""), lg_i64(g, (int64_t)len)};
    LLVMValueRef upto[2] = {lg_intrinsic(g, "llvm.smin", left, 2), lg_i64(g, 0)};
    return lg_intrinsic(g, "llvm.smax", upto, 2);
}

int lg_emit_load(lg *g, tj_ref r)
{
    const lg_view *v = view_of(g, r);
    if (!v)
        return -1;
    lg_prefetch_next(g, r);
    if ((lg_val(g, r)->fused = load_fusable(g, r, v)))
        return 0;
    lg_alloc_result(g, r);
    walk_view(g, r, v, lg_in(g, r)->args[1], load_elem);
    return 0;
}

/* And of whether every fused row that r reads (through fused operands)
 * lies inside its tensor: NULL when r reads none. */
static LLVMValueRef fused_rows_inside(lg *g, tj_ref r, LLVMValueRef inside)
{
    const tj_inst *in = lg_in(g, r);
    for (uint32_t a = 0; a < in->nargs; a++) {
        tj_ref x = in->args[a];
        if (!x || !lg_val(g, x)->fused)
            continue;
        if (lg_in(g, x)->op == TJ_OP_LOAD) {
            LLVMValueRef ok = view_inside(g, lg_val(g, lg_in(g, x)->args[0])->view);
            inside = inside ? LLVMBuildAnd(g->b, inside, ok, "") : ok;
        }
        inside = fused_rows_inside(g, x, inside);
    }
    return inside;
}

/* Calls fn on every fused load that r reads (through fused operands);
 * returns the sum of what it returned. */
static int each_fused_row(lg *g, tj_ref r, int (*fn)(lg *, tj_ref))
{
    const tj_inst *in = lg_in(g, r);
    int sum = 0;
    for (uint32_t a = 0; a < in->nargs; a++) {
        tj_ref x = in->args[a];
        if (x && lg_val(g, x)->fused)
            sum += (lg_in(g, x)->op == TJ_OP_LOAD ? fn(g, x) : 0) + each_fused_row(g, x, fn);
    }
    return sum;
}

/* 1 for a row that the shared reader cannot read from a copy: its memory
 * form is not its value form (f16, bf16). */
static int row_not_shareable(lg *g, tj_ref x)
{
    tj_dtype dt = lg_ti(g, x)->dtype;
    return lg_mem_type(g, dt) != lg_type(g, dt);
}

enum { MAX_ROWS = 16 };

/* The distinct fused loads that r reads (through fused operands), at
 * most MAX_ROWS (more count as MAX_ROWS + 1); n: how many so far. */
static int distinct_rows(lg *g, tj_ref r, tj_ref *rows, int n)
{
    const tj_inst *in = lg_in(g, r);
    for (uint32_t a = 0; a < in->nargs && n <= MAX_ROWS; a++) {
        tj_ref x = in->args[a];
        if (!x || !lg_val(g, x)->fused)
            continue;
        int seen = 0;
        for (int i = 0; i < n && !seen; i++)
            seen = rows[i] == x;
        if (lg_in(g, x)->op == TJ_OP_LOAD && !seen)
            rows[n++] = x; /* rows has MAX_ROWS + 1 slots */
        n = distinct_rows(g, x, rows, n);
    }
    return n;
}

/* How many of the rows r reads no earlier reader copied, each counted
 * once (x * x reads one row). */
static int rows_not_ready(lg *g, tj_ref r)
{
    tj_ref rows[MAX_ROWS + 1];
    int n = distinct_rows(g, r, rows, 0), not_ready = 0;
    for (int i = 0; i < n; i++)
        not_ready += !lg_val(g, rows[i])->row;
    return not_ready;
}

/* The copy of a fused row, element by element checked (a masked load). */
static void checked_row_copy(lg *g, tj_ref x, LLVMValueRef copy, uint64_t n)
{
    lg_loop l;
    g->version = LG_CHECKED; /* the checked load, its loop not interleaved */
    LLVMValueRef i = lg_each_begin(g, &l, n);
    LLVMBuildStore(g->b, lg_fused_load(g, x, i), lg_elem_ptr(g, lg_ti(g, x)->dtype, copy, i));
    lg_each_end(g, &l, n);
    g->version = LG_ANY;
}

/* The copy of an unmasked fused row: `other` outside the part of the row
 * inside its dim (all of it when its index axes are outside), that part read
 * without checks: plain vector accesses where the checked copy took i64
 * index lanes and masked loads (walk_row says why). Only the elements
 * before end (NULL: all) are made: its one reader reads no further. */
static void clipped_row_copy(lg *g, tj_ref x, const lg_view *v, LLVMValueRef copy, uint64_t n, LLVMValueRef end)
{
    tj_dtype dt = lg_ti(g, x)->dtype;
    int inner = inner_axis(v);
    LLVMValueRef zero = lg_i64(g, 0), c[TJ_MAX_RANK], lo, hi;
    view_coords(g, v, &zero, c);
    LLVMValueRef rows_in = coords_inside(g, v, c, inner);
    row_span(g, v, inner, (int32_t)n, &lo, &hi);
    hi = LLVMBuildSelect(g->b, rows_in, hi, lo, "");
    if (end) {
        LLVMValueRef lo_end[2] = {lo, end}, hi_end[2] = {hi, end};
        lo = lg_intrinsic(g, "llvm.smin", lo_end, 2);
        hi = lg_intrinsic(g, "llvm.smin", hi_end, 2);
    }
    fill_other(g, x, copy, zero, lo, hi, (int32_t)n, end);
    view_walk w;
    if (copies_plain(g, v, inner, dt)) {
        view_point(g, v, &lo, 0, &w);
        lg_copy_span(g, dt, lg_elem_ptr(g, dt, copy, lo), elem_addr(g, v, dt, w.off), LLVMBuildSub(g->b, hi, lo, ""));
        return;
    }
    lg_loop l = lg_loop_begin(g, lo, hi, "row_copy");
    view_point(g, v, &l.i, 0, &w);
    LLVMValueRef val = LLVMBuildLoad2(g->b, lg_mem_type(g, dt), elem_addr(g, v, dt, w.off), "");
    LLVMBuildStore(g->b, lg_from_mem(g, dt, val), lg_elem_ptr(g, dt, copy, l.i));
    lg_loop_end(g, &l);
}

/* x's row for the shared reader: in the tensor where the row lies wholly
 * inside it, else a checked copy of it (masked-off and outside elements
 * hold `other`) made once per program for all of x's readers; only up to
 * g->row_end where that reader, x's only one, stops there (lg_live_rows:
 * colsum.tj's rows of 100 in tiles of 1024 filled 924 elements a row). */
static int row_begin(lg *g, tj_ref x)
{
    lval *lx = lg_val(g, x);
    if (lx->row) /* an earlier reader's: every reader is in x's block, after it */
        return 0;
    const lg_view *v = lg_val(g, lg_in(g, x)->args[0])->view;
    tj_dtype dt = lg_ti(g, x)->dtype;
    uint64_t n = tj_type_numel(g->ctx, lg_in(g, x)->type);
    if (!lx->row_copy)
        lx->row_copy = lg_buffer(g, lg_type(g, dt), n);
    LLVMValueRef zero = lg_i64(g, 0);
    view_walk w;
    view_point(g, v, &zero, 0, &w);
    LLVMValueRef in_tensor = elem_addr(g, v, dt, w.off), stride = lg_view_stride(g, v, inner_axis(v));
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
    LLVMBasicBlockRef fill = LLVMAppendBasicBlockInContext(g->lc, g->fn, "row_copy");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->lc, g->fn, "row_ready");
    LLVMBuildCondBr(g->b, view_inside(g, v), done, fill);
    LLVMPositionBuilderAtEnd(g->b, fill);
    if (lg_in(g, x)->args[1] || inner_axis(v) < 0)
        checked_row_copy(g, x, lx->row_copy, n);
    else
        clipped_row_copy(g, x, v, lx->row_copy, n, g->uses[x] == 1 ? g->row_end : NULL);
    LLVMBasicBlockRef filled = LLVMGetInsertBlock(g->b);
    LLVMBuildBr(g->b, done);
    LLVMPositionBuilderAtEnd(g->b, done);
    LLVMBasicBlockRef preds[2] = {pre, filled};
    lx->row = LLVMBuildPhi(g->b, g->ptr, "row");
    LLVMAddIncoming(lx->row, (LLVMValueRef[]){in_tensor, lx->row_copy}, preds, 2);
    lx->row_stride = LLVMBuildPhi(g->b, g->i64, "row_stride");
    LLVMAddIncoming(lx->row_stride, (LLVMValueRef[]){stride, lg_i64(g, 1)}, preds, 2);
    return 0;
}

/* A fused row's every element checked against its tensor costs 7 of the
 * 15 instructions per vector of softmax's max(x) (i64 index lanes, two
 * compares per 16 floats): where every row r reads lies inside (every
 * program but the edge ones), a copy of r without those checks runs. For
 * stores: on a znver5 (AVX-512) add (16M f32) 16.0-16.8 -> 5.4-5.9 ms of
 * CPU, gelu 8.8-10.4 -> 7.6-8.6; on a znver3 (AVX2) add 18-20 -> 11 ms,
 * rmsnorm M=16,N=1000 8.6 -> 3.7 us. (A Sapphire Rapids once ran add and
 * gelu 15-30% slower with the copy, not explained, and AVX-512 hosts kept
 * stores checked until the znver5 showed the opposite at 3x.) */
int lg_emit_inside(lg *g, tj_ref r, int (*emit)(lg *, tj_ref))
{
    const tj_inst *in = lg_in(g, r);
    int elem = (tj_op_get(in->op)->flags & TJ_OPF_ELEM) != 0;
    LLVMValueRef inside = elem && lg_fusable(g, r) ? NULL : fused_rows_inside(g, r, NULL);
    if (!inside || g->version != LG_ANY)
        return emit(g, r);
    /* one reader, two copies of its loop; or one loop, reading each row
     * from the tensor or from a checked copy of the row made once for all
     * its readers: cheaper to compile unless r is cheap and reads several
     * rows of its own (gelu's x * y + z: three copies for one loop) */
    if (!each_fused_row(g, r, row_not_shareable) && rows_not_ready(g, r) <= 1) {
        g->row_end = elem && lg_ti(g, r)->rank == 1 ? lg_live_extent(g, r) : NULL; /* where lg_rows_begin stops */
        each_fused_row(g, r, row_begin);
        g->row_end = NULL;
        g->version = LG_INSIDE;
        int rc = emit(g, r);
        g->version = LG_ANY;
        return rc;
    }
    lg_alloc_result(g, r);
    g->keep = r;
    LLVMBasicBlockRef fast = LLVMAppendBasicBlockInContext(g->lc, g->fn, "rows_inside");
    LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(g->lc, g->fn, "rows_checked");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->lc, g->fn, "rows_done");
    LLVMBuildCondBr(g->b, inside, fast, slow);
    int rc = 0;
    for (int checked = 0; checked < 2 && !rc; checked++) {
        LLVMPositionBuilderAtEnd(g->b, checked ? slow : fast);
        g->version = checked ? LG_CHECKED : LG_INSIDE;
        rc = emit(g, r);
        LLVMBuildBr(g->b, done);
    }
    g->version = LG_ANY;
    g->keep = TJ_NONE;
    LLVMPositionBuilderAtEnd(g->b, done);
    return rc;
}

int lg_emit_store(lg *g, tj_ref r)
{
    const lg_view *v = view_of(g, r);
    if (!v)
        return -1;
    walk_view(g, r, v, lg_in(g, r)->args[2], store_elem);
    return 0;
}

/* Ordered accesses go element by element through the checked walk: never
 * fused into their readers nor vectorized. */
int lg_emit_ordered(lg *g, tj_ref r)
{
    const lg_view *v = view_of(g, r);
    int load = lg_in(g, r)->op == TJ_OP_LOAD_ACQUIRE || lg_in(g, r)->op == TJ_OP_LOAD_RELAXED;
    if (!v)
        return -1;
    if (load)
        lg_alloc_result(g, r);
    walk_checked(g, r, v, lg_in(g, r)->args[load ? 1 : 2], load ? load_elem : store_elem);
    return 0;
}

/* ---- atomics ---- */

static tj_op atomic_combine(tj_op op)
{
    return op == TJ_OP_ATOMIC_ADD ? TJ_OP_ADD : op == TJ_OP_ATOMIC_MAX ? TJ_OP_MAX : TJ_OP_MIN;
}

/* The read-modify-write LLVM has, when it means what the interpreter
 * does: integer add/max/min, f32/f64 add. 0: none (a CAS loop instead). */
static int native_rmw(tj_op op, tj_dtype dt, LLVMAtomicRMWBinOp *out)
{
    int sign = tj_dtype_is_signed(dt);
    if (tj_dtype_is_int(dt)) {
        *out = op == TJ_OP_ATOMIC_ADD ? LLVMAtomicRMWBinOpAdd
               : op == TJ_OP_ATOMIC_MAX ? (sign ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax)
                                        : (sign ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin);
        return 1;
    }
    if (op == TJ_OP_ATOMIC_ADD && (dt == TJ_DT_F32 || dt == TJ_DT_F64)) {
        *out = LLVMAtomicRMWBinOpFAdd;
        return 1;
    }
    return 0;
}

/* old = *p; *p = round(old OP x), by compare-and-swap on the bits. */
static LLVMValueRef cas_loop(lg *g, tj_op op, tj_dtype dt, LLVMValueRef p, LLVMValueRef x)
{
    LLVMTypeRef bits = LLVMIntTypeInContext(g->lc, (unsigned)tj_dtype_size(dt) * 8), mt = lg_mem_type(g, dt);
    LLVMValueRef first = LLVMBuildLoad2(g->b, bits, p, "");
    LLVMSetOrdering(first, LLVMAtomicOrderingMonotonic);
    LLVMSetAlignment(first, (unsigned)tj_dtype_size(dt));
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(g->lc, g->fn, "cas");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->lc, g->fn, "cased");
    LLVMBuildBr(g->b, loop);
    LLVMPositionBuilderAtEnd(g->b, loop);
    LLVMValueRef old = LLVMBuildPhi(g->b, bits, "");
    LLVMValueRef oldv = lg_from_mem(g, dt, LLVMBuildBitCast(g->b, old, mt, ""));
    LLVMValueRef now = lg_round(g, dt, lg_binary(g, op, dt, oldv, x));
    LLVMValueRef nbits = LLVMBuildBitCast(g->b, lg_to_mem(g, dt, now), bits, "");
    LLVMValueRef pair = LLVMBuildAtomicCmpXchg(g->b, p, old, nbits, LLVMAtomicOrderingSequentiallyConsistent,
                                               LLVMAtomicOrderingSequentiallyConsistent, 0);
    LLVMValueRef seen = LLVMBuildExtractValue(g->b, pair, 0, "");
    LLVMValueRef vals[2] = {first, seen};
    LLVMBasicBlockRef from[2] = {pre, loop};
    LLVMAddIncoming(old, vals, from, 2);
    LLVMBuildCondBr(g->b, LLVMBuildExtractValue(g->b, pair, 1, ""), done, loop);
    LLVMPositionBuilderAtEnd(g->b, done);
    return oldv;
}

/* One element of an atomic op: an atomic read-modify-write, or (plain,
 * when no other thread runs programs) a load, the combine and a store,
 * which give the same old value and result without the lock prefix. */
static void atomic_elem_as(lg *g, tj_ref r, const lg_view *v, view_walk *w, LLVMValueRef go, int plain)
{
    const tj_inst *in = lg_in(g, r);
    tj_dtype dt = lg_ti(g, in->args[1])->dtype;
    LLVMValueRef x = lg_elem(g, in->args[1], w->flat);
    guard gd = guard_begin(g, go);
    LLVMValueRef p = elem_addr(g, v, dt, w->off), old;
    LLVMAtomicRMWBinOp rmw;
    if (plain) {
        old = lg_from_mem(g, dt, LLVMBuildLoad2(g->b, lg_mem_type(g, dt), p, ""));
        LLVMValueRef now = lg_round(g, dt, lg_binary(g, atomic_combine(in->op), dt, old, x));
        LLVMBuildStore(g->b, lg_to_mem(g, dt, now), p);
    } else if (native_rmw(in->op, dt, &rmw)) {
        old = LLVMBuildAtomicRMW(g->b, rmw, p, x, LLVMAtomicOrderingSequentiallyConsistent, 0);
    } else {
        old = cas_loop(g, atomic_combine(in->op), dt, p, x);
    }
    LLVMValueRef res = guard_end(g, &gd, old, LLVMConstNull(lg_type(g, dt)));
    if (in->type && lg_ti(g, r)->kind == TJ_TK_TILE)
        lg_set_elem(g, r, w->flat, res);
}

static void atomic_elem(lg *g, tj_ref r, const lg_view *v, view_walk *w, LLVMValueRef go)
{
    atomic_elem_as(g, r, v, w, go, 0);
}

static void plain_atomic_elem(lg *g, tj_ref r, const lg_view *v, view_walk *w, LLVMValueRef go)
{
    atomic_elem_as(g, r, v, w, go, 1);
}

/* Two nests, chosen at run time: atomic accesses, and the plain ones of an
 * exclusive launch (the caller alone, holding the tj_cpu's launch lock:
 * llvm_pool.c), where a lock-prefixed compare-and-swap per f32 element
 * cost about 3 ns (scatter_add.tj 3.9-4.6 -> 0.7 us) and the plain nest
 * vectorizes. Always checked: the fast path exists for vectorizable
 * accesses only. */
int lg_emit_atomic(lg *g, tj_ref r)
{
    const lg_view *v = view_of(g, r);
    if (!v)
        return -1;
    lg_alloc_result(g, r);
    g->atomics++;
    LLVMBasicBlockRef plain = LLVMAppendBasicBlockInContext(g->lc, g->fn, "exclusive");
    LLVMBasicBlockRef shared = LLVMAppendBasicBlockInContext(g->lc, g->fn, "shared");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->lc, g->fn, "updated");
    LLVMBuildCondBr(g->b, g->exclusive, plain, shared);
    for (int atomic = 0; atomic < 2; atomic++) {
        LLVMPositionBuilderAtEnd(g->b, atomic ? shared : plain);
        walk_checked(g, r, v, lg_in(g, r)->args[2], atomic ? atomic_elem : plain_atomic_elem);
        LLVMBuildBr(g->b, done);
    }
    LLVMPositionBuilderAtEnd(g->b, done);
    return 0;
}
