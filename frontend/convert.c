/* Types of values: NumPy-like promotion, literal typing, casts and
 * broadcasting. IR elementwise ops need operands of one type, so this is
 * where the front end inserts the `cast` and `broadcast` instructions. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "frontend/build.h"

static tj_dtype signed_of_size(int bytes)
{
    return bytes <= 1 ? TJ_DT_I8 : bytes == 2 ? TJ_DT_I16 : bytes == 4 ? TJ_DT_I32 : TJ_DT_I64;
}

static tj_dtype wider(tj_dtype a, tj_dtype b) { return tj_dtype_size(a) >= tj_dtype_size(b) ? a : b; }

tj_dtype fe_promote(tj_dtype a, tj_dtype b)
{
    if (a == b || b == TJ_DT_BOOL)
        return a;
    if (a == TJ_DT_BOOL)
        return b;
    int fa = tj_dtype_is_float(a), fb = tj_dtype_is_float(b);
    if (fa && fb) {
        if ((a == TJ_DT_F16 && b == TJ_DT_BF16) || (a == TJ_DT_BF16 && b == TJ_DT_F16))
            return TJ_DT_F32;
        return wider(a, b);
    }
    if (fa || fb)
        return fa ? a : b;
    if (tj_dtype_is_signed(a) == tj_dtype_is_signed(b))
        return wider(a, b);
    tj_dtype s = tj_dtype_is_signed(a) ? a : b, u = tj_dtype_is_signed(a) ? b : a;
    if (tj_dtype_size(s) > tj_dtype_size(u))
        return s;
    return signed_of_size(2 * tj_dtype_size(u)); /* u64 with a signed type: i64 */
}

tj_dtype fe_val_dtype(const fe_builder *lw, fe_val v)
{
    return v.kind == V_VALUE || v.kind == V_VIEW || v.kind == V_TENSOR ? fe_info(lw, v.type)->dtype : TJ_DT_INVALID;
}

int fe_is_literal(fe_val v) { return v.kind == V_INT || v.kind == V_FLOAT; }

static void shape_text(char *buf, size_t cap, tj_dtype dt, int rank, const int64_t *shape)
{
    size_t n = (size_t)snprintf(buf, cap, "%s[", tj_dtype_name(dt));
    for (int i = 0; i < rank && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
}

tj_type fe_tile_type64(fe_builder *lw, tj_dtype dt, int rank, const int64_t *shape, tj_loc loc)
{
    if (rank > TJ_MAX_RANK) {
        fe_err(lw, loc, "a tile has at most %d dims, this one would have %d", TJ_MAX_RANK, rank);
        return TJ_TYPE_NONE;
    }
    int32_t s32[TJ_MAX_RANK];
    uint64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (shape[i] <= 0) {
            fe_err(lw, loc, "tile extents must be positive, got %lld", (long long)shape[i]);
            return TJ_TYPE_NONE;
        }
        if (shape[i] > (int64_t)TJ_MAX_TILE_ELEMS || (n *= (uint64_t)shape[i]) > TJ_MAX_TILE_ELEMS) {
            char buf[160];
            shape_text(buf, sizeof buf, dt, rank, shape);
            fe_err(lw, loc, "tile too large: %s has more than %u elements", buf, TJ_MAX_TILE_ELEMS);
            return TJ_TYPE_NONE;
        }
        s32[i] = (int32_t)shape[i];
    }
    return tj_type_tile(lw->c, dt, rank, s32);
}

tj_type fe_tile_type(fe_builder *lw, tj_dtype dt, int rank, const int32_t *shape, tj_loc loc)
{
    int64_t s64[TJ_MAX_RANK];
    for (int i = 0; i < rank && i < TJ_MAX_RANK; i++)
        s64[i] = shape[i];
    return fe_tile_type64(lw, dt, rank, s64, loc);
}

int fe_broadcast_shapes(int ra, const int32_t *a, int rb, const int32_t *b, int *rank, int32_t *out)
{
    int r = ra > rb ? ra : rb;
    int32_t tmp[TJ_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int32_t da = i < ra ? a[ra - 1 - i] : 1, db = i < rb ? b[rb - 1 - i] : 1;
        if (da != db && da != 1 && db != 1)
            return 0;
        tmp[r - 1 - i] = da == 1 ? db : da;
    }
    memcpy(out, tmp, sizeof(int32_t) * (size_t)r);
    *rank = r;
    return 1;
}

/* ---- literals -------------------------------------------------------------------- */

/* v reduced to dt's width, as an integer cast does (two's complement). */
static int64_t wrap_int(tj_dtype dt, int64_t v)
{
    int bits = tj_dtype_bits(dt);
    if (bits >= 64)
        return v;
    uint64_t mask = (UINT64_C(1) << bits) - 1, u = (uint64_t)v & mask;
    if (tj_dtype_is_signed(dt) && (u >> (bits - 1)))
        return (int64_t)(u | ~mask);
    return (int64_t)u;
}

static int fits(tj_dtype dt, int64_t v)
{
    if (dt == TJ_DT_U64)
        return v >= 0;
    return wrap_int(dt, v) == v;
}

static fe_val const_val(fe_builder *lw, tj_dtype dt, tj_ref r)
{
    return fe_value(r, tj_type_scalar(lw->c, dt));
}

static fe_val int_literal(fe_builder *lw, int64_t v, tj_dtype dt, int explicit_cast, tj_loc loc)
{
    if (tj_dtype_is_float(dt))
        return const_val(lw, dt, fe_const_float(lw, dt, (double)v));
    if (dt == TJ_DT_BOOL)
        return const_val(lw, dt, fe_const_int(lw, dt, v != 0));
    if (!explicit_cast && !fits(dt, v))
        return fe_err(lw, loc, "integer literal %lld does not fit in %s", (long long)v, tj_dtype_name(dt));
    return const_val(lw, dt, fe_const_int(lw, dt, wrap_int(dt, v)));
}

/* Float -> integer as the IR's cast does: truncate, saturate, NaN is 0. */
static int64_t saturate(tj_dtype dt, double f)
{
    if (isnan(f))
        return 0;
    if (dt == TJ_DT_U64)
        return f <= 0 ? 0 : f >= 18446744073709551616.0 ? -1 /* all ones */ : (int64_t)(uint64_t)f;
    int bits = tj_dtype_bits(dt);
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    if (dt != TJ_DT_I64) {
        lo = tj_dtype_is_signed(dt) ? -(INT64_C(1) << (bits - 1)) : 0;
        hi = tj_dtype_is_signed(dt) ? (INT64_C(1) << (bits - 1)) - 1 : (INT64_C(1) << bits) - 1;
    }
    if (f <= (double)lo)
        return lo;
    if (f >= (double)hi)
        return hi;
    return (int64_t)f;
}

static fe_val float_literal(fe_builder *lw, double f, tj_dtype dt, int explicit_cast, tj_loc loc)
{
    if (tj_dtype_is_float(dt))
        return const_val(lw, dt, fe_const_float(lw, dt, f));
    if (dt == TJ_DT_BOOL && explicit_cast)
        return const_val(lw, dt, fe_const_int(lw, dt, f != 0));
    if (explicit_cast)
        return const_val(lw, dt, fe_const_int(lw, dt, saturate(dt, f)));
    if (dt != TJ_DT_BOOL && f == trunc(f) && fabs(f) < 9e18 && fits(dt, (int64_t)f))
        return const_val(lw, dt, fe_const_int(lw, dt, (int64_t)f));
    return fe_err(lw, loc, "float literal %g cannot be converted to %s", f, tj_dtype_name(dt));
}

/* ---- casts and broadcasts ----------------------------------------------------------- */

fe_val fe_to_value(fe_builder *lw, fe_val v, tj_loc loc)
{
    switch (v.kind) {
    case V_INT: return int_literal(lw, v.i, TJ_DT_I32, 0, loc);
    case V_FLOAT: return float_literal(lw, v.f, TJ_DT_F32, 0, loc);
    case V_TENSOR:
        return fe_err(lw, loc, "tensor '%s' can only be used through a view, e.g. %s[i, 0:BLOCK]",
                      lw->kd->params[v.param].name, lw->kd->params[v.param].name);
    case V_VIEW: return fe_err(lw, loc, "a view cannot be used as a value; load it first: load(view)");
    case V_TUPLE:
        return fe_err(lw, loc, "a tuple of %u values cannot be used here; destructure it: (a, b) = ...", v.n);
    case V_VOID: return fe_err(lw, loc, "this call returns no value");
    default: return v;
    }
}

fe_val fe_cast(fe_builder *lw, fe_val v, tj_dtype dt, int explicit_cast, tj_loc loc)
{
    if (v.kind == V_INT)
        return int_literal(lw, v.i, dt, explicit_cast, loc);
    if (v.kind == V_FLOAT)
        return float_literal(lw, v.f, dt, explicit_cast, loc);
    v = fe_to_value(lw, v, loc);
    if (v.kind != V_VALUE || fe_info(lw, v.type)->dtype == dt)
        return v;
    tj_type to = tj_type_with_dtype(lw->c, v.type, dt);
    return fe_emit_val(lw, TJ_OP_CAST, to, &v.ref, 1);
}

fe_val fe_broadcast_to(fe_builder *lw, fe_val v, int rank, const int32_t *shape, tj_loc loc)
{
    v = fe_to_value(lw, v, loc);
    if (v.kind != V_VALUE)
        return v;
    const tj_type_info *in = fe_info(lw, v.type);
    int r;
    int32_t out[TJ_MAX_RANK];
    if (in->rank == rank && !memcmp(in->shape, shape, sizeof(int32_t) * (size_t)rank))
        return v;
    if (!fe_broadcast_shapes(in->rank, in->shape, rank, shape, &r, out) || r != rank ||
        memcmp(out, shape, sizeof(int32_t) * (size_t)rank)) {
        tj_type target = tj_type_tile(lw->c, in->dtype, rank, shape);
        return fe_err(lw, loc, "cannot broadcast %s to %s", fe_type_name(lw, v.type), fe_type_name(lw, target));
    }
    tj_type t = fe_tile_type(lw, in->dtype, rank, shape, loc);
    return t ? fe_emit_val(lw, TJ_OP_BROADCAST, t, &v.ref, 1) : fe_error_val();
}

fe_val fe_convert(fe_builder *lw, fe_val v, tj_type to, tj_loc loc)
{
    const tj_type_info *ti = fe_info(lw, to);
    v = fe_cast(lw, v, ti->dtype, 0, loc);
    return fe_broadcast_to(lw, v, ti->rank, ti->shape, loc);
}

int fe_unify(fe_builder *lw, fe_val *args, uint32_t n, int bool_literal_int, tj_loc loc)
{
    tj_dtype dt = TJ_DT_INVALID;
    int rank = 0, float_lit = 0, int_lit = 0;
    int32_t shape[TJ_MAX_RANK] = {0};
    tj_type first = TJ_TYPE_NONE;
    for (uint32_t i = 0; i < n; i++) {
        if (fe_is_literal(args[i])) {
            float_lit |= args[i].kind == V_FLOAT;
            int_lit |= args[i].kind == V_INT;
            continue;
        }
        args[i] = fe_to_value(lw, args[i], loc);
        if (args[i].kind != V_VALUE)
            return 0;
        const tj_type_info *in = fe_info(lw, args[i].type);
        dt = dt ? fe_promote(dt, in->dtype) : in->dtype;
        if (!fe_broadcast_shapes(rank, shape, in->rank, in->shape, &rank, shape)) {
            fe_err(lw, loc, "shapes do not broadcast: %s and %s", fe_type_name(lw, first), fe_type_name(lw, args[i].type));
            return 0;
        }
        if (!first)
            first = args[i].type;
    }
    if (!dt)
        dt = float_lit ? TJ_DT_F32 : TJ_DT_I32;
    else if (float_lit && !tj_dtype_is_float(dt))
        dt = TJ_DT_F32;
    else if (int_lit && bool_literal_int && dt == TJ_DT_BOOL)
        dt = TJ_DT_I32;
    if (rank && !fe_tile_type(lw, dt, rank, shape, loc))
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        args[i] = fe_broadcast_to(lw, fe_cast(lw, args[i], dt, 0, loc), rank, shape, loc);
        if (args[i].kind != V_VALUE)
            return 0;
    }
    return 1;
}
