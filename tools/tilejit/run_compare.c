/* `run --check`: elementwise comparison of a device's output with the
 * reference interpreter's, under a tolerance chosen by dtype. */
#include <math.h>
#include <string.h>

#include "run.h"

/* An element is off when |got - want| > atol + rtol * |want|. Floats allow
 * a few units in the last place of the output type, since devices may
 * reduce in another order (and round f16/bf16 results once more); NaN
 * matches only NaN. Integers and bools must be equal. */
typedef struct tolerance {
    double atol, rtol;
} tolerance;

static tolerance tolerance_for(tj_dtype dt)
{
    switch (dt) {
    case TJ_DT_F64: return (tolerance){1e-10, 1e-9};
    case TJ_DT_F32: return (tolerance){1e-5, 1e-4};
    case TJ_DT_F16: return (tolerance){1e-3, 4e-3};
    case TJ_DT_BF16: return (tolerance){8e-3, 1.6e-2};
    default: return (tolerance){0, 0};
    }
}

static double elem_value(tj_dtype dt, const unsigned char *p)
{
    union { int8_t i8; int16_t i16; int32_t i32; int64_t i64; uint8_t u8; uint16_t u16; uint32_t u32;
            uint64_t u64; float f32; double f64; } v;
    memcpy(&v, p, (size_t)tj_dtype_size(dt));
    switch (dt) {
    case TJ_DT_BOOL: return v.u8 != 0;
    case TJ_DT_I8: return v.i8;
    case TJ_DT_I16: return v.i16;
    case TJ_DT_I32: return v.i32;
    case TJ_DT_I64: return (double)v.i64;
    case TJ_DT_U8: return v.u8;
    case TJ_DT_U16: return v.u16;
    case TJ_DT_U32: return v.u32;
    case TJ_DT_U64: return (double)v.u64;
    case TJ_DT_F16: return tj_f16_to_f32(v.u16);
    case TJ_DT_BF16: return tj_bf16_to_f32(v.u16);
    case TJ_DT_F32: return v.f32;
    case TJ_DT_F64: return v.f64;
    default: return 0;
    }
}

/* Equal under the tolerance; integers compare exactly, bit for bit. */
static int elem_matches(tj_dtype dt, const unsigned char *g, const unsigned char *w, double got, double want,
                        tolerance tol)
{
    if (!tj_dtype_is_float(dt))
        return dt == TJ_DT_BOOL ? (*g != 0) == (*w != 0) : !memcmp(g, w, (size_t)tj_dtype_size(dt));
    if (isnan(got) || isnan(want))
        return isnan(got) && isnan(want);
    if (isinf(got) || isinf(want))
        return got == want;
    return fabs(got - want) <= tol.atol + tol.rtol * fabs(want);
}

static void print_index(const tj_tensor *t, uint64_t flat)
{
    int64_t idx[TJ_MAX_RANK];
    for (int d = t->rank - 1; d >= 0; d--) {
        idx[d] = t->shape[d] ? (int64_t)(flat % (uint64_t)t->shape[d]) : 0;
        flat = t->shape[d] ? flat / (uint64_t)t->shape[d] : 0;
    }
    putchar('[');
    for (int d = 0; d < t->rank; d++)
        printf("%s%lld", d ? ", " : "", (long long)idx[d]);
    putchar(']');
}

int run_compare(const char *name, const tj_tensor *got, const tj_tensor *want)
{
    tj_dtype dt = got->dtype;
    tolerance tol = tolerance_for(dt);
    int size = tj_dtype_size(dt);
    uint64_t n = run_numel(got), off = 0, first = 0;
    double max_abs = 0, max_rel = 0, first_got = 0, first_want = 0;
    const unsigned char *g = got->data, *w = want->data;
    for (uint64_t i = 0; i < n; i++, g += size, w += size) {
        double a = elem_value(dt, g), b = elem_value(dt, w);
        double err = fabs(a - b);
        if (isfinite(err) && err > max_abs)
            max_abs = err;
        /* Relative error only where the reference is not tiny. */
        if (isfinite(err) && fabs(b) > tol.atol && fabs(b) > 0 && err / fabs(b) > max_rel)
            max_rel = err / fabs(b);
        if (elem_matches(dt, g, w, a, b, tol))
            continue;
        if (!off++) {
            first = i;
            first_got = a;
            first_want = b;
        }
    }
    printf("check: %s: max abs error %.3g, max rel error %.3g: ", name, max_abs, max_rel);
    if (!off) {
        printf("ok\n");
        return 0;
    }
    printf("FAIL (%llu of %llu elements off; first at ", (unsigned long long)off, (unsigned long long)n);
    print_index(got, first);
    printf(": got %.9g, reference %.9g)\n", first_got, first_want);
    return 1;
}
