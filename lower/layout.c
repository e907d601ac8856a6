/* Layouts: representation, the (thread, register) -> element map and its
 * inverse, canonical layouts and transfer checks (see layout.h). */
#include <string.h>

#include "lower/layout.h"

static int is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

static int32_t pow2_floor(int32_t v)
{
    int32_t p = 1;
    while (p <= v / 2)
        p *= 2;
    return p;
}

static int32_t pow2_ceil(int64_t v)
{
    int32_t p = 1;
    while (p < v && p < (1 << 30))
        p *= 2;
    return p;
}

int tj_log2_floor(int64_t v)
{
    int n = 0;
    while (v > 1) {
        v >>= 1;
        n++;
    }
    return n;
}

void tj_shape_strides(int rank, const int32_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d];
    }
}

/* Register count: the product of fregs, or 0 when it overflows. */
static uint32_t count_regs(int frank, const int32_t *fregs)
{
    uint64_t n = 1;
    for (int a = 0; a < frank; a++) {
        n *= (uint64_t)fregs[a];
        if (n > (1u << 30))
            return 0;
    }
    return (uint32_t)n;
}

static int blocked_params_ok(int rank, const int32_t *spt, const int32_t *tpw, const int32_t *wpc,
                             const int8_t *order, int *nwarps)
{
    int64_t lanes = 1, warps = 1;
    unsigned seen = 0;
    for (int a = 0; a < rank; a++) {
        if (!is_pow2(spt[a]) || !is_pow2(tpw[a]) || !is_pow2(wpc[a]))
            return 0;
        if (order[a] < 0 || order[a] >= rank || (seen & (1u << order[a])))
            return 0;
        seen |= 1u << order[a];
        lanes *= tpw[a];
        warps *= wpc[a];
    }
    *nwarps = (int)warps;
    return lanes == TJ_WARP_SIZE && warps <= TJ_MAX_WARPS;
}

const tj_layout *tj_layout_blocked(tj_ctx *c, int rank, const int32_t *shape, const int32_t *spt,
                                   const int32_t *tpw, const int32_t *wpc, const int8_t *order)
{
    int nwarps;
    if (rank < 1 || rank > TJ_MAX_RANK || !blocked_params_ok(rank, spt, tpw, wpc, order, &nwarps))
        return NULL;
    tj_layout *l = tj_alloc(c, sizeof *l);
    l->kind = TJ_LAYOUT_BLOCKED;
    l->rank = l->frank = rank;
    l->nwarps = nwarps;
    l->root = l;
    for (int a = 0; a < rank; a++) {
        if (shape[a] < 1)
            return NULL;
        l->shape[a] = l->fshape[a] = shape[a];
        l->spt[a] = spt[a];
        l->espt[a] = spt[a] < pow2_floor(shape[a]) ? spt[a] : pow2_floor(shape[a]);
        l->tpw[a] = tpw[a];
        l->wpc[a] = wpc[a];
        l->order[a] = order[a];
        l->frame_axis[a] = (int8_t)a;
        int64_t cover = (int64_t)l->espt[a] * tpw[a] * wpc[a];
        l->fregs[a] = (int32_t)((shape[a] + cover - 1) / cover * l->espt[a]);
    }
    l->nregs = count_regs(rank, l->fregs);
    return l->nregs ? l : NULL;
}

const tj_layout *tj_layout_slice(tj_ctx *c, const tj_layout *parent, int axis)
{
    if (!parent || axis < 0 || axis >= parent->rank)
        return NULL;
    tj_layout *l = tj_alloc(c, sizeof *l);
    *l = *parent;
    l->kind = TJ_LAYOUT_SLICE;
    l->parent = parent;
    l->axis = axis;
    l->rank = parent->rank - 1;
    int fa = parent->frame_axis[axis];
    l->fshape[fa] = 1;
    l->fregs[fa] = 1;
    for (int d = axis; d < l->rank; d++) {
        l->shape[d] = parent->shape[d + 1];
        l->frame_axis[d] = parent->frame_axis[d + 1];
    }
    l->nregs = count_regs(l->frank, l->fregs);
    return l;
}

const tj_layout *tj_layout_canonical(tj_ctx *c, int rank, const int32_t *shape, int nwarps, int vec)
{
    int32_t spt[TJ_MAX_RANK] = {0}, tpw[TJ_MAX_RANK] = {0}, wpc[TJ_MAX_RANK] = {0};
    int8_t order[TJ_MAX_RANK] = {0};
    if (rank == 0) {
        int32_t one = 1, lanes = TJ_WARP_SIZE, warps = nwarps;
        int8_t o = 0;
        return tj_layout_slice(c, tj_layout_blocked(c, 1, &one, &one, &lanes, &warps, &o), 0);
    }
    int32_t lanes = TJ_WARP_SIZE, warps = nwarps;
    int64_t numel = 1, per_thread;
    for (int a = 0; a < rank; a++)
        numel *= shape[a];
    /* fewer than vec elements per thread rather than idle threads */
    per_thread = numel / ((int64_t)nwarps * TJ_WARP_SIZE);
    if (per_thread < vec)
        vec = per_thread > 1 ? pow2_floor((int32_t)per_thread) : 1;
    for (int a = 0; a < rank; a++) {
        order[a] = (int8_t)(rank - 1 - a);
        spt[a] = a == rank - 1 ? vec : 1;
        if (spt[a] > shape[a])
            spt[a] = pow2_floor(shape[a]);
    }
    for (int a = rank - 1; a >= 0; a--) { /* lanes from the last axis outwards */
        int32_t want = pow2_ceil((shape[a] + spt[a] - 1) / spt[a]);
        tpw[a] = want < lanes ? want : lanes;
        lanes /= tpw[a];
    }
    tpw[0] *= lanes; /* a small tile: the remaining lanes hold replicas */
    for (int a = 0; a < rank; a++) { /* warps from the first axis inwards */
        int64_t cover = (int64_t)spt[a] * tpw[a];
        int32_t want = pow2_ceil((shape[a] + cover - 1) / cover);
        wpc[a] = want < warps ? want : warps;
        warps /= wpc[a];
    }
    wpc[0] *= warps;
    return tj_layout_blocked(c, rank, shape, spt, tpw, wpc, order);
}

const tj_layout *tj_layout_refit(tj_ctx *c, const tj_layout *l, int rank, const int32_t *shape)
{
    const tj_layout *r = l ? l->root : NULL;
    if (!r || r->kind != TJ_LAYOUT_BLOCKED || r->rank != rank)
        return NULL;
    return tj_layout_blocked(c, rank, shape, r->spt, r->tpw, r->wpc, r->order);
}

const tj_layout *tj_layout_insert_axis(tj_ctx *c, const tj_layout *l, int axis)
{
    if (!l || l->kind != TJ_LAYOUT_BLOCKED || axis < 0 || axis > l->rank || l->rank == TJ_MAX_RANK)
        return NULL;
    int32_t shape[TJ_MAX_RANK], spt[TJ_MAX_RANK], tpw[TJ_MAX_RANK], wpc[TJ_MAX_RANK];
    int8_t order[TJ_MAX_RANK];
    for (int i = 0, j = 0; i <= l->rank; i++) {
        int new_axis = i == axis;
        shape[i] = new_axis ? 1 : l->shape[j];
        spt[i] = new_axis ? 1 : l->spt[j];
        tpw[i] = new_axis ? 1 : l->tpw[j];
        wpc[i] = new_axis ? 1 : l->wpc[j];
        j += !new_axis;
    }
    for (int k = 0; k < l->rank; k++) /* the new axis varies slowest */
        order[k] = (int8_t)(l->order[k] >= axis ? l->order[k] + 1 : l->order[k]);
    order[l->rank] = (int8_t)axis;
    return tj_layout_blocked(c, l->rank + 1, shape, spt, tpw, wpc, order);
}

const tj_layout *tj_layout_permute(tj_ctx *c, const tj_layout *l, const int32_t *perm)
{
    if (!l || l->kind != TJ_LAYOUT_BLOCKED)
        return NULL;
    int32_t shape[TJ_MAX_RANK], spt[TJ_MAX_RANK], tpw[TJ_MAX_RANK], wpc[TJ_MAX_RANK];
    int8_t order[TJ_MAX_RANK];
    int inv[TJ_MAX_RANK];
    for (int i = 0; i < l->rank; i++) {
        if (perm[i] < 0 || perm[i] >= l->rank)
            return NULL;
        shape[i] = l->shape[perm[i]];
        spt[i] = l->spt[perm[i]];
        tpw[i] = l->tpw[perm[i]];
        wpc[i] = l->wpc[perm[i]];
        inv[perm[i]] = i;
    }
    for (int k = 0; k < l->rank; k++)
        order[k] = (int8_t)inv[l->order[k]];
    return tj_layout_blocked(c, l->rank, shape, spt, tpw, wpc, order);
}

int tj_layout_equal(const tj_layout *a, const tj_layout *b)
{
    if (a == b)
        return 1;
    if (!a || !b || a->kind != b->kind || a->rank != b->rank || a->nwarps != b->nwarps)
        return 0;
    if (memcmp(a->shape, b->shape, sizeof(int32_t) * (size_t)a->rank))
        return 0;
    if (a->kind == TJ_LAYOUT_SLICE)
        return a->axis == b->axis && tj_layout_equal(a->parent, b->parent);
    size_t n = (size_t)a->rank;
    return !memcmp(a->spt, b->spt, sizeof(int32_t) * n) && !memcmp(a->tpw, b->tpw, sizeof(int32_t) * n) &&
           !memcmp(a->wpc, b->wpc, sizeof(int32_t) * n) && !memcmp(a->order, b->order, n);
}

static void print_list(tj_buf *out, const char *name, const int32_t *v, int n)
{
    tj_buf_printf(out, "%s=[", name);
    for (int i = 0; i < n; i++)
        tj_buf_printf(out, "%s%d", i ? ", " : "", v[i]);
    tj_buf_append(out, "]", 1);
}

void tj_layout_print(const tj_layout *l, tj_buf *out)
{
    if (l->kind == TJ_LAYOUT_SLICE) {
        tj_buf_printf(out, "slice<axis=%d, ", l->axis);
        tj_layout_print(l->parent, out);
        tj_buf_append(out, ">", 1);
        return;
    }
    int32_t order[TJ_MAX_RANK];
    for (int a = 0; a < l->rank; a++)
        order[a] = l->order[a];
    tj_buf_append(out, "blocked<", 8);
    print_list(out, "spt", l->espt, l->rank);
    print_list(out, ", tpw", l->tpw, l->rank);
    print_list(out, ", wpc", l->wpc, l->rank);
    print_list(out, ", order", order, l->rank);
    tj_buf_append(out, ">", 1);
}

/* ---- the map ------------------------------------------------------------ */

void tj_layout_reg_index(const tj_layout *l, uint32_t r, int32_t *idx)
{
    for (int a = l->frank - 1; a >= 0; a--) {
        idx[a] = (int32_t)(r % (uint32_t)l->fregs[a]);
        r /= (uint32_t)l->fregs[a];
    }
}

uint32_t tj_layout_reg_of(const tj_layout *l, const int32_t *idx)
{
    uint32_t r = 0;
    for (int a = 0; a < l->frank; a++)
        r = r * (uint32_t)l->fregs[a] + (uint32_t)idx[a];
    return r;
}

int32_t tj_layout_roff(const tj_layout *l, int fa, int32_t i)
{
    const tj_layout *r = l->root;
    int32_t cover = r->espt[fa] * r->tpw[fa] * r->wpc[fa];
    return i / r->espt[fa] * cover + i % r->espt[fa];
}

/* The first lane (or warp) bit of frame axis fa: the bits of the axes
 * before it in the root's order come first. */
static int first_bit(const tj_layout *r, int fa, const int32_t *per_axis)
{
    int shift = 0;
    for (int k = 0; k < r->rank && r->order[k] != fa; k++)
        shift += tj_log2_floor(per_axis[r->order[k]]);
    return shift;
}

uint32_t tj_layout_lane_bits(const tj_layout *l, int fa)
{
    const tj_layout *r = l->root;
    return (uint32_t)(r->tpw[fa] - 1) << first_bit(r, fa, r->tpw);
}

uint32_t tj_layout_warp_bits(const tj_layout *l, int fa)
{
    const tj_layout *r = l->root;
    return (uint32_t)(r->wpc[fa] - 1) << first_bit(r, fa, r->wpc);
}

void tj_layout_tbase(const tj_layout *l, uint32_t tid, int32_t *base)
{
    const tj_layout *r = l->root;
    uint32_t lane = tid % TJ_WARP_SIZE, warp = tid / TJ_WARP_SIZE;
    for (int a = 0; a < r->rank; a++) {
        int32_t la = (int32_t)((lane >> first_bit(r, a, r->tpw)) & (uint32_t)(r->tpw[a] - 1));
        int32_t wa = (int32_t)((warp >> first_bit(r, a, r->wpc)) & (uint32_t)(r->wpc[a] - 1));
        base[a] = la * r->espt[a] + wa * r->espt[a] * r->tpw[a];
    }
}

int32_t tj_layout_tbase_max(const tj_layout *l, int fa)
{
    int32_t base[TJ_MAX_RANK];
    tj_layout_tbase(l, tj_layout_lane_bits(l, fa) | tj_layout_warp_bits(l, fa) * TJ_WARP_SIZE, base);
    return base[fa];
}

int tj_layout_axis_wraps(const tj_layout *l, int fa)
{
    return (int64_t)tj_layout_tbase_max(l, fa) + tj_layout_roff(l, fa, l->fregs[fa] - 1) >= l->fshape[fa];
}

int tj_layout_warps_replicate(const tj_layout *l, int fa)
{
    const tj_layout *r = l->root;
    return r->wpc[fa] == 1 || ((int64_t)r->espt[fa] * r->tpw[fa]) % l->fshape[fa] == 0;
}

int tj_layout_warps_replicate_all(const tj_layout *l)
{
    for (int a = 0; a < l->frank; a++)
        if (!tj_layout_warps_replicate(l, a))
            return 0;
    return 1;
}

int tj_layout_has_replicas(const tj_layout *l)
{
    for (int a = 0; a < l->frank; a++)
        if (tj_layout_axis_wraps(l, a))
            return 1;
    return 0;
}

int tj_layout_coord(const tj_layout *l, uint32_t tid, uint32_t r, int32_t *coord)
{
    int32_t idx[TJ_MAX_RANK], base[TJ_MAX_RANK], fc[TJ_MAX_RANK];
    int owner = 1;
    tj_layout_reg_index(l, r, idx);
    tj_layout_tbase(l, tid, base);
    for (int a = 0; a < l->frank; a++) {
        int64_t raw = (int64_t)base[a] + tj_layout_roff(l, a, idx[a]);
        owner &= raw < l->fshape[a];
        fc[a] = (int32_t)(raw % l->fshape[a]);
    }
    for (int d = 0; d < l->rank; d++)
        coord[d] = fc[l->frame_axis[d]];
    return owner;
}

/* The target coordinate on every frame axis (0 on sliced ones). */
static void frame_coord(const tj_layout *l, const int32_t *coord, int32_t *fc)
{
    for (int a = 0; a < l->frank; a++)
        fc[a] = 0;
    for (int d = 0; d < l->rank; d++)
        fc[l->frame_axis[d]] = coord[d];
}

/* The register index i on frame axis fa with (base + roff(i)) mod fshape
 * == c, or -1: roff inverted for BLOCKED roots, trying each wrap of c. */
static int32_t axis_reg_for(const tj_layout *l, int fa, int32_t base, int32_t c)
{
    const tj_layout *r = l->root;
    if (l->fshape[fa] == 1) /* sliced or size 1: one register */
        return 0;
    int64_t cover = (int64_t)r->espt[fa] * r->tpw[fa] * r->wpc[fa];
    int64_t last = (int64_t)base + tj_layout_roff(l, fa, l->fregs[fa] - 1);
    for (int64_t raw = c; raw <= last; raw += l->fshape[fa]) {
        int64_t off = raw - base, e = off % cover, i = off / cover * r->espt[fa] + e;
        if (off >= 0 && e < r->espt[fa] && i < l->fregs[fa])
            return (int32_t)i;
    }
    return -1;
}

int64_t tj_layout_find_reg(const tj_layout *l, uint32_t tid, const int32_t *coord)
{
    int32_t base[TJ_MAX_RANK], fc[TJ_MAX_RANK], idx[TJ_MAX_RANK];
    tj_layout_tbase(l, tid, base);
    frame_coord(l, coord, fc);
    for (int a = 0; a < l->frank; a++)
        if ((idx[a] = axis_reg_for(l, a, base[a], fc[a])) < 0)
            return -1;
    return tj_layout_reg_of(l, idx);
}

void tj_layout_owner_of(const tj_layout *l, const int32_t *coord, uint32_t *tid, uint32_t *reg)
{
    int32_t c[TJ_MAX_RANK];
    uint32_t nthreads = (uint32_t)l->nwarps * TJ_WARP_SIZE;
    for (uint32_t t = 0; t < nthreads; t++) {
        int64_t r = tj_layout_find_reg(l, t, coord);
        if (r >= 0 && tj_layout_coord(l, t, (uint32_t)r, c)) {
            *tid = t;
            *reg = (uint32_t)r;
            return;
        }
    }
    *tid = *reg = 0; /* unreachable for coordinates inside the shape */
}

/* ---- transfers ---------------------------------------------------------- */

/* The src coordinate read by dst's register r in thread t; 0 if outside. */
static int source_coord(const tj_layout *src, const tj_layout *dst, const int64_t *w, uint32_t t,
                        uint32_t r, int32_t *sc)
{
    int32_t dc[TJ_MAX_RANK];
    tj_layout_coord(dst, t, r, dc);
    int64_t flat = 0, numel = 1;
    for (int d = 0; d < dst->rank; d++)
        flat += dc[d] * w[d];
    for (int d = src->rank - 1; d >= 0; d--) {
        sc[d] = (int32_t)(flat % src->shape[d]);
        flat /= src->shape[d];
        numel *= src->shape[d];
    }
    return flat == 0 && numel > 0;
}

int tj_layout_transfer_map(tj_ctx *c, const tj_layout *src, const tj_layout *dst, const int64_t *w,
                           uint32_t *map)
{
    (void)c;
    if (src->nwarps != dst->nwarps)
        return 0;
    uint32_t nthreads = (uint32_t)dst->nwarps * TJ_WARP_SIZE;
    int32_t sc[TJ_MAX_RANK];
    for (uint32_t r = 0; r < dst->nregs; r++) {
        int64_t m = -1;
        for (uint32_t t = 0; t < nthreads; t++) {
            if (!source_coord(src, dst, w, t, r, sc))
                return 0;
            int64_t hold = tj_layout_find_reg(src, t, sc);
            if (hold < 0 || (m >= 0 && hold != m))
                return 0;
            m = hold;
        }
        map[r] = (uint32_t)m;
    }
    return 1;
}
