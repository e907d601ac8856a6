/* Layouts (lower/layout.h): the map (thread, register) -> element, its
 * inverse, owners, canonical layouts, slices and transfers. */
#include <criterion/criterion.h>

#include "lower/layout.h"
#include "tilejit/tilejit.h"

static tj_ctx *ctx;
static void setup(void) { ctx = tj_ctx_new(); }
static void teardown(void) { tj_ctx_free(ctx); }
TestSuite(layout, .init = setup, .fini = teardown);

static uint64_t numel(const tj_layout *l)
{
    uint64_t n = 1;
    for (int d = 0; d < l->rank; d++)
        n *= (uint64_t)l->shape[d];
    return n;
}

static uint64_t flat(const tj_layout *l, const int32_t *c)
{
    uint64_t f = 0;
    for (int d = 0; d < l->rank; d++)
        f = f * (uint64_t)l->shape[d] + (uint64_t)c[d];
    return f;
}

/* Every element has exactly one owner; every register's element is found
 * again by the inverse map; the owner map points at the owner. */
static void check_map(const tj_layout *l)
{
    uint32_t nthreads = (uint32_t)l->nwarps * TJ_WARP_SIZE;
    uint64_t n = numel(l);
    uint32_t *owners = calloc(n, sizeof *owners);
    int32_t c[TJ_MAX_RANK];
    for (uint32_t t = 0; t < nthreads; t++)
        for (uint32_t r = 0; r < l->nregs; r++) {
            int own = tj_layout_coord(l, t, r, c);
            for (int d = 0; d < l->rank; d++)
                cr_assert(c[d] >= 0 && c[d] < l->shape[d]);
            owners[flat(l, c)] += own;
            cr_assert_eq(tj_layout_find_reg(l, t, c), (int64_t)r, "thread %u reg %u", t, r);
        }
    for (uint64_t i = 0; i < n; i++)
        cr_assert_eq(owners[i], 1, "element %llu has %u owners", (unsigned long long)i, owners[i]);
    for (uint64_t i = 0; i < n; i += 1 + n / 64) {
        uint64_t rest = i;
        for (int d = l->rank - 1; d >= 0; d--) {
            c[d] = (int32_t)(rest % (uint64_t)l->shape[d]);
            rest /= (uint64_t)l->shape[d];
        }
        uint32_t t, r;
        int32_t back[TJ_MAX_RANK];
        tj_layout_owner_of(l, c, &t, &r);
        cr_assert(tj_layout_coord(l, t, r, back));
        cr_assert_eq(flat(l, back), i);
    }
    free(owners);
}

static void check_identity_transfer(const tj_layout *l)
{
    int64_t w[TJ_MAX_RANK];
    uint32_t *map = calloc(l->nregs, sizeof *map);
    tj_shape_strides(l->rank, l->shape, w);
    cr_assert(tj_layout_transfer_map(ctx, l, l, w, map));
    for (uint32_t r = 0; r < l->nregs; r++)
        cr_assert_eq(map[r], r);
    free(map);
}

Test(layout, canonical_maps_are_bijective_up_to_replicas)
{
    static const int32_t shapes[][4] = {{1, 1}, {1, 3}, {1, 64}, {1, 100}, {1, 1024}, {1, 5000},
                                        {2, 16, 64}, {2, 64, 16}, {2, 3, 5}, {2, 1, 256}, {2, 256, 1},
                                        {2, 48, 12}, {3, 2, 16, 32}, {3, 1, 1, 1}, {3, 5, 7, 9}};
    static const int warps[] = {1, 2, 4, 8};
    static const int vecs[] = {1, 4, 8};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t w = 0; w < 4; w++)
            for (size_t v = 0; v < 3; v++) {
                const tj_layout *l = tj_layout_canonical(ctx, shapes[s][0], shapes[s] + 1, warps[w], vecs[v]);
                cr_assert_not_null(l);
                check_map(l);
                check_identity_transfer(l);
            }
}

Test(layout, canonical_parameters)
{
    int32_t s1[] = {1024}, s2[] = {64, 64}, s3[] = {256};
    const tj_layout *l = tj_layout_canonical(ctx, 1, s1, 4, 4);
    cr_assert_eq(l->espt[0], 4);
    cr_assert_eq(l->tpw[0], 32);
    cr_assert_eq(l->wpc[0], 4);
    cr_assert_eq(l->nregs, 8);
    cr_assert(!tj_layout_has_replicas(l));
    l = tj_layout_canonical(ctx, 2, s2, 4, 4);
    cr_assert_eq(l->espt[1], 4);
    cr_assert_eq(l->tpw[1], 16);
    cr_assert_eq(l->tpw[0], 2);
    cr_assert_eq(l->wpc[0], 4); /* warps on the first axis: row reductions stay in a warp */
    l = tj_layout_canonical(ctx, 1, s3, 4, 4); /* 2 per thread rather than idle threads */
    cr_assert_eq(l->espt[0], 2);
    cr_assert(!tj_layout_has_replicas(l));
    l = tj_layout_canonical(ctx, 0, NULL, 4, 4);
    cr_assert_eq(l->rank, 0);
    cr_assert_eq(l->nregs, 1);
    check_map(l); /* a scalar: thread 0 owns it */
}

Test(layout, invalid_parameters_are_refused)
{
    int32_t shape[] = {64}, spt[] = {3}, one[] = {1}, tpw[] = {32}, wpc[] = {4};
    int8_t order[] = {0};
    cr_assert_null(tj_layout_blocked(ctx, 1, shape, spt, tpw, wpc, order));
    cr_assert_null(tj_layout_blocked(ctx, 1, shape, one, one, wpc, order)); /* 1 lane */
    int8_t bad[] = {1};
    cr_assert_null(tj_layout_blocked(ctx, 1, shape, one, tpw, wpc, bad));
    cr_assert_not_null(tj_layout_blocked(ctx, 1, shape, one, tpw, wpc, order));
}

Test(layout, slices_broadcast_back_for_free)
{
    int32_t shape[] = {16, 64}, col[] = {16, 1};
    const tj_layout *p = tj_layout_canonical(ctx, 2, shape, 4, 4);
    for (int axis = 0; axis < 2; axis++) {
        const tj_layout *s = tj_layout_slice(ctx, p, axis);
        cr_assert_eq(s->rank, 1);
        check_map(s);
    }
    const tj_layout *s = tj_layout_slice(ctx, p, 1);
    /* [16] -> [16, 1] (x[:, None]) -> [16, 64] (broadcast): both free */
    const tj_layout *e = tj_layout_refit(ctx, s, 2, col);
    int64_t w_expand[] = {1, 0}, w_bcast[] = {1, 0};
    uint32_t map[256];
    cr_assert(tj_layout_transfer_map(ctx, s, e, w_expand, map));
    cr_assert(tj_layout_transfer_map(ctx, e, p, w_bcast, map));
    /* while the canonical layout of [16] is another one */
    const tj_layout *c = tj_layout_canonical(ctx, 1, shape, 4, 4);
    cr_assert(!tj_layout_transfer_map(ctx, c, p, w_bcast, map));
}

Test(layout, permuted_layouts_transfer_for_free)
{
    int32_t shape[] = {8, 16, 32}, perm[] = {2, 0, 1};
    const tj_layout *l = tj_layout_canonical(ctx, 3, shape, 4, 4);
    const tj_layout *p = tj_layout_permute(ctx, l, perm);
    check_map(p);
    int64_t st[3], w[3];
    tj_shape_strides(3, shape, st);
    for (int i = 0; i < 3; i++)
        w[i] = st[perm[i]];
    uint32_t *map = calloc(p->nregs, sizeof *map);
    cr_assert(tj_layout_transfer_map(ctx, l, p, w, map));
    free(map);
    const tj_layout *ins = tj_layout_insert_axis(ctx, l, 1);
    cr_assert_eq(ins->rank, 4);
    check_map(ins);
}

Test(layout, replicas_of_small_and_odd_tiles)
{
    int32_t s[] = {100};
    const tj_layout *l = tj_layout_canonical(ctx, 1, s, 4, 4);
    cr_assert(tj_layout_has_replicas(l));
    cr_assert(tj_layout_axis_wraps(l, 0));
    int32_t big[] = {4096};
    cr_assert(!tj_layout_has_replicas(tj_layout_canonical(ctx, 1, big, 4, 4)));
    tj_buf b = {0};
    tj_layout_print(l, &b);
    cr_assert(strstr(b.data, "blocked<spt="));
    tj_buf_free(&b);
}
