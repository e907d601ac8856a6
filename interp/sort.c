/* sort: a stable sort of every line along the axis, keys alone or keys
 * with values. NaN sorts above +inf, -0 and +0 are equal; descending order
 * reverses the keys, not the order of equal ones.
 *
 * Each key is mapped to a uint64 whose unsigned order is the order wanted
 * (descending: its complement), so one merge sort serves every dtype. */
#include <string.h>

#include "interp/interp.h"

typedef struct sort_item {
    uint64_t key;
    uint32_t idx; /* position in the line */
} sort_item;

static uint64_t order_key(tj_class cls, tj_slot s)
{
    if (cls == TJ_CL_SINT)
        return s.u ^ ((uint64_t)1 << 63);
    if (cls == TJ_CL_UINT)
        return s.u;
    double d = s.f == 0 ? 0.0 : s.f; /* -0 sorts with +0 */
    if (d != d)
        return UINT64_MAX;
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b >> 63 ? ~b : b | ((uint64_t)1 << 63);
}

static void merge(const sort_item *src, sort_item *dst, uint32_t lo, uint32_t mid, uint32_t hi)
{
    uint32_t i = lo, j = mid, o = lo;
    while (i < mid && j < hi)
        dst[o++] = src[j].key < src[i].key ? src[j++] : src[i++]; /* ties: left first */
    while (i < mid)
        dst[o++] = src[i++];
    while (j < hi)
        dst[o++] = src[j++];
}

/* Bottom-up merge sort of a[0..n); tmp holds n items. */
static void merge_sort(sort_item *a, sort_item *tmp, uint32_t n)
{
    sort_item *src = a, *dst = tmp;
    for (uint32_t w = 1; w < n; w *= 2) {
        for (uint32_t lo = 0; lo < n; lo += 2 * w) {
            uint32_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            merge(src, dst, lo, mid, hi);
        }
        sort_item *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, sizeof *a * n);
}

size_t tj_sort_work_size(const tj_interp *st, tj_ref r)
{
    tj_lines l = tj_split_axis(tj_opnd(st, r, 0)->ti, tj_in(st, r)->imm);
    return 2 * sizeof(sort_item) * l.len;
}

/* Sorted keys and values of one line into the results. */
static void sort_line(const tj_rval *keys, const tj_rval *vals, tj_slot *kout, tj_slot *vout,
                      sort_item *items, size_t base, tj_lines l, int descending)
{
    tj_class cls = tj_dtype_class(keys->dt);
    for (uint32_t j = 0; j < l.len; j++) {
        uint64_t key = order_key(cls, keys->data[base + (size_t)j * l.inner]);
        items[j] = (sort_item){descending ? ~key : key, j};
    }
    merge_sort(items, items + l.len, l.len);
    for (uint32_t j = 0; j < l.len; j++) {
        size_t to = base + (size_t)j * l.inner, from = base + (size_t)items[j].idx * l.inner;
        kout[to] = keys->data[from];
        if (vals)
            vout[to] = vals->data[from];
    }
}

int tj_exec_sort(tj_interp *st, tj_ref r)
{
    const tj_inst *in = tj_in(st, r);
    tj_rval *rv = tj_val(st, r), *keys = tj_opnd(st, r, 0);
    tj_rval *vals = in->nargs > 1 ? tj_opnd(st, r, 1) : NULL;
    tj_rval *kres = vals ? (rv->elems ? &rv->elems[0] : NULL) : rv;
    tj_rval *vres = vals && rv->elems && rv->ti->nelems == 2 ? &rv->elems[1] : NULL;
    if (!kres || (vals && (!vres || vals->n != keys->n || vres->n != keys->n)) || kres->n != keys->n ||
        in->imm < -1 || in->imm >= keys->ti->rank)
        return tj_interp_bad_ir(st, r, "results do not fit the operands");
    tj_lines l = tj_split_axis(keys->ti, in->imm);
    for (uint32_t o = 0; o < l.outer; o++)
        for (uint32_t i = 0; i < l.inner; i++)
            sort_line(keys, vals, kres->data, vres ? vres->data : NULL, rv->work,
                      (size_t)o * l.len * l.inner + i, l, in->flags & TJ_SORT_DESCENDING);
    return 0;
}

/* counting_sort: two passes over the tile, counting and then placing each
 * element after the earlier ones of its bucket. */
int tj_exec_counting_sort(tj_interp *st, tj_ref r)
{
    tj_rval *rv = tj_val(st, r), *d = tj_opnd(st, r, 0);
    tj_rval *order = rv->elems && rv->ti->nelems == 2 ? &rv->elems[0] : NULL, *counts = order ? &rv->elems[1] : NULL;
    if (!order || order->n != d->n || counts->n < 2 || counts->n > 256 || (counts->n & (counts->n - 1)))
        return tj_interp_bad_ir(st, r, "results do not fit the operand");
    uint64_t mask = counts->n - 1, start[256];
    for (uint32_t b = 0; b < counts->n; b++)
        counts->data[b].i = 0;
    for (uint32_t i = 0; i < d->n; i++)
        counts->data[d->data[i].u & mask].i++;
    for (uint64_t b = 0, at = 0; b < counts->n; at += (uint64_t)counts->data[b++].i)
        start[b] = at;
    for (uint32_t i = 0; i < d->n; i++)
        order->data[start[d->data[i].u & mask]++].i = i;
    return 0;
}
