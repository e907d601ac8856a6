/* Element types and interned Tile IR types. */
#include <stdio.h>
#include <string.h>

#include "ir/ctx_internal.h"

static const struct { const char *name; int size; } dtype_table[TJ_DT_COUNT] = {
    [TJ_DT_INVALID] = {"invalid", 0},
#define X(e, s, n) [TJ_DT_##e] = {s, n},
    TJ_DTYPES(X)
#undef X
};

const char *tj_dtype_name(tj_dtype dt) { return dt < TJ_DT_COUNT ? dtype_table[dt].name : "invalid"; }
int tj_dtype_size(tj_dtype dt) { return dt < TJ_DT_COUNT ? dtype_table[dt].size : 0; }

tj_dtype tj_dtype_from_name(const char *s, size_t len)
{
    if (!s)
        return TJ_DT_INVALID;
    for (int d = 1; d < TJ_DT_COUNT; d++)
        if (strlen(dtype_table[d].name) == len && !memcmp(dtype_table[d].name, s, len))
            return (tj_dtype)d;
    return TJ_DT_INVALID;
}

int tj_dtype_is_float(tj_dtype dt)
{
    return dt == TJ_DT_F16 || dt == TJ_DT_BF16 || dt == TJ_DT_F32 || dt == TJ_DT_F64;
}

int tj_dtype_is_int(tj_dtype dt) { return dt >= TJ_DT_I8 && dt <= TJ_DT_U64; }
int tj_dtype_is_signed(tj_dtype dt) { return dt >= TJ_DT_I8 && dt <= TJ_DT_I64; }
int tj_dtype_bits(tj_dtype dt) { return dt == TJ_DT_BOOL ? 1 : 8 * tj_dtype_size(dt); }

/* ---- interning ------------------------------------------------------------ */

static uint32_t hash_info(const tj_type_info *t)
{
    uint32_t h = 2166136261u;
#define MIX(v) (h = (h ^ (uint32_t)(v)) * 16777619u)
    MIX(t->kind);
    MIX(t->dtype);
    MIX(t->rank);
    for (int i = 0; i < t->rank; i++)
        MIX(t->shape[i]);
    MIX(t->nelems);
    for (uint32_t i = 0; i < t->nelems; i++)
        MIX(t->elems[i]);
#undef MIX
    return h;
}

static int same_info(const tj_type_info *a, const tj_type_info *b)
{
    if (a->kind != b->kind || a->dtype != b->dtype || a->rank != b->rank || a->nelems != b->nelems)
        return 0;
    if (memcmp(a->shape, b->shape, sizeof(int32_t) * (size_t)a->rank))
        return 0;
    return a->nelems == 0 || !memcmp(a->elems, b->elems, sizeof(tj_type) * a->nelems);
}

static int rehash(tj_ctx *c)
{
    uint32_t cap = c->hcap ? c->hcap * 2 : 256;
    uint32_t *tab = tj_alloc(c, sizeof(uint32_t) * cap);
    if (!tab)
        return -1; /* out of memory outside a guard (tj_alloc) */
    for (uint32_t t = 1; t < c->ntypes; t++) {
        uint32_t i = hash_info(&c->types[t]) & (cap - 1);
        while (tab[i])
            i = (i + 1) & (cap - 1);
        tab[i] = t;
    }
    c->type_hash = tab;
    c->hcap = cap;
    return 0;
}

static tj_type intern(tj_ctx *c, const tj_type_info *info)
{
    if (2 * (c->ntypes + 1) > c->hcap && rehash(c))
        return TJ_TYPE_NONE;
    uint32_t i = hash_info(info) & (c->hcap - 1);
    for (; c->type_hash[i]; i = (i + 1) & (c->hcap - 1))
        if (same_info(&c->types[c->type_hash[i]], info))
            return c->type_hash[i];
    tj_type_info *types = tj_grow(c, c->types, &c->tcap, c->ntypes + 1, sizeof *c->types);
    if (!types)
        return TJ_TYPE_NONE;
    c->types = types;
    tj_type_info *t = &c->types[c->ntypes];
    *t = *info;
    if (info->nelems) {
        tj_type *e = tj_alloc(c, sizeof(tj_type) * info->nelems);
        if (!e)
            return TJ_TYPE_NONE;
        memcpy(e, info->elems, sizeof(tj_type) * info->nelems);
        t->elems = e;
    }
    c->type_hash[i] = c->ntypes;
    return c->ntypes++;
}

static tj_type shaped(tj_ctx *c, tj_type_kind kind, tj_dtype dt, int rank, const int32_t *shape)
{
    if (!c || rank < 0 || rank > TJ_MAX_RANK || !tj_array_ok(shape, (uint64_t)rank) || dt <= TJ_DT_INVALID ||
        dt >= TJ_DT_COUNT)
        return TJ_TYPE_NONE;
    tj_type_info info = {.kind = kind, .dtype = dt, .rank = rank};
    uint64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (shape[i] <= 0)
            return TJ_TYPE_NONE;
        n *= (uint64_t)shape[i];
        if (n > TJ_MAX_TILE_ELEMS)
            return TJ_TYPE_NONE;
        info.shape[i] = shape[i];
    }
    return intern(c, &info);
}

tj_type tj_type_tile(tj_ctx *c, tj_dtype dt, int rank, const int32_t *shape)
{
    return shaped(c, TJ_TK_TILE, dt, rank, shape);
}

tj_type tj_type_scalar(tj_ctx *c, tj_dtype dt) { return shaped(c, TJ_TK_TILE, dt, 0, NULL); }

tj_type tj_type_view(tj_ctx *c, tj_dtype dt, int rank, const int32_t *shape)
{
    return shaped(c, TJ_TK_VIEW, dt, rank, shape);
}

tj_type tj_type_tensor(tj_ctx *c, tj_dtype dt, int rank)
{
    if (!c || rank < 0 || rank > TJ_MAX_RANK || dt <= TJ_DT_INVALID || dt >= TJ_DT_COUNT)
        return TJ_TYPE_NONE;
    tj_type_info info = {.kind = TJ_TK_TENSOR, .dtype = dt, .rank = rank};
    return intern(c, &info);
}

tj_type tj_type_tuple(tj_ctx *c, uint32_t n, const tj_type *elems)
{
    if (!c || !tj_array_ok(elems, n))
        return TJ_TYPE_NONE;
    tj_type_info info = {.kind = TJ_TK_TUPLE, .nelems = n, .elems = elems};
    return intern(c, &info);
}

tj_type tj_type_with_dtype(tj_ctx *c, tj_type t, tj_dtype dt)
{
    const tj_type_info *i = tj_type_get(c, t);
    if (i->kind != TJ_TK_TILE && i->kind != TJ_TK_VIEW)
        return TJ_TYPE_NONE;
    int32_t shape[TJ_MAX_RANK];
    memcpy(shape, i->shape, sizeof shape);
    return shaped(c, i->kind, dt, i->rank, shape);
}

const tj_type_info *tj_type_get(const tj_ctx *c, tj_type t)
{
    static const tj_type_info void_info = {.kind = TJ_TK_VOID};
    return c && t && t < c->ntypes ? &c->types[t] : &void_info;
}

int tj_type_is_scalar(const tj_ctx *c, tj_type t)
{
    const tj_type_info *i = tj_type_get(c, t);
    return i->kind == TJ_TK_TILE && i->rank == 0;
}

uint64_t tj_type_numel(const tj_ctx *c, tj_type t)
{
    const tj_type_info *i = tj_type_get(c, t);
    uint64_t n = 1;
    for (int d = 0; d < i->rank; d++)
        n *= (uint64_t)i->shape[d];
    return n;
}

static void shape_str(tj_buf *b, const tj_type_info *i)
{
    tj_buf_printf(b, "%s[", tj_dtype_name(i->dtype));
    for (int d = 0; d < i->rank; d++)
        tj_buf_printf(b, "%s%d", d ? ", " : "", i->shape[d]);
    tj_buf_append(b, "]", 1);
}

static void type_str(const tj_ctx *c, tj_type t, tj_buf *b)
{
    const tj_type_info *i = tj_type_get(c, t);
    switch (i->kind) {
    case TJ_TK_VOID:
        tj_buf_append(b, "void", 4);
        break;
    case TJ_TK_TILE:
        if (i->rank == 0)
            tj_buf_printf(b, "%s", tj_dtype_name(i->dtype));
        else
            shape_str(b, i);
        break;
    case TJ_TK_TENSOR:
        tj_buf_printf(b, "tensor<%s, %d>", tj_dtype_name(i->dtype), i->rank);
        break;
    case TJ_TK_VIEW:
        tj_buf_append(b, "view<", 5);
        shape_str(b, i);
        tj_buf_append(b, ">", 1);
        break;
    case TJ_TK_TUPLE:
        tj_buf_append(b, "(", 1);
        for (uint32_t e = 0; e < i->nelems; e++) {
            if (e)
                tj_buf_append(b, ", ", 2);
            type_str(c, i->elems[e], b);
        }
        tj_buf_append(b, ")", 1);
        break;
    }
}

size_t tj_type_str(const tj_ctx *c, tj_type t, char *buf, size_t cap)
{
    if (!buf)
        cap = 0; /* only the length is asked for */
    tj_buf b = {0};
    type_str(c, t, &b);
    size_t n = b.len;
    if (cap) {
        size_t m = n < cap - 1 ? n : cap - 1;
        if (m)
            memcpy(buf, b.data, m);
        buf[m] = 0;
    }
    tj_buf_free(&b);
    return n;
}
