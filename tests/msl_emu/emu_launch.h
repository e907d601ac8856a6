/* Launching a SIMT kernel's MSL in the emulator with the generator's ABI
 * (tj_msl_pack_args), and comparing tensors in ulps. Header only, for the
 * test programs. */
#ifndef TJ_EMU_LAUNCH_H
#define TJ_EMU_LAUNCH_H

#include "emu_util.h" /* first: it selects POSIX */

#include <math.h>

#include "tilejit/metal.h"
#include "tilejit/tilejit.h"

/* The MSL of `simt`, malloc'd; NULL after printing the diagnostics. */
static inline char *el_emit(const tj_kernel *simt)
{
    tj_buf b = {0};
    if (tj_emit_msl(simt, &b)) {
        printf("msl: %s", tj_diag_render(simt->ctx));
        tj_buf_free(&b);
        return NULL;
    }
    char *s = strdup(b.data);
    tj_buf_free(&b);
    return s;
}

/* Runs kernel `simt`, source number `source` of object `so`, on args
 * (host memory, updated in place) with a schedule; 0, or -1 with the
 * reason in err. */
static inline int el_run(void *so, int source, const tj_kernel *simt, const tj_arg *args, uint32_t nargs, uint32_t schedule,
                         char *err, size_t errlen)
{
    tj_msl_args *a = malloc(sizeof *a); /* 4 KiB of block: not on the stack */
    mtl_emu_entry e = mtl_emu_lookup(so, source, simt->name);
    int rc = -1;
    if (!a || tj_msl_pack_args(simt, args, nargs, a)) {
        snprintf(err, errlen, "pack: %s", tj_diag_render(simt->ctx));
    } else if (!e) {
        snprintf(err, errlen, "no entry for kernel %s", simt->name);
    } else if (!a->grid[0] || !a->grid[1] || !a->grid[2]) {
        rc = 0; /* an empty launch */
    } else {
        mtl_emu_dispatch_desc d;
        memset(&d, 0, sizeof d);
        for (uint32_t i = 0; i < a->ntensors; i++)
            d.buffers[i] = a->data[i];
        if (a->block_bytes)
            d.buffers[a->block_index] = a->block;
        memcpy(d.threadgroups, a->grid, sizeof a->grid);
        d.threads[0] = a->threads;
        d.threads[1] = d.threads[2] = 1;
        d.schedule = schedule;
        d.workers = 2;
        rc = mtl_emu_dispatch(e, &d, err, errlen) ? -1 : 0;
    }
    free(a);
    return rc;
}

/* ---- comparing ---------------------------------------------------------------- */

static inline int el_is_nan(uint64_t bits, tj_dtype dt)
{
    switch (dt) {
    case TJ_DT_F16: return (bits & 0x7c00) == 0x7c00 && (bits & 0x3ff);
    case TJ_DT_BF16: return (bits & 0x7f80) == 0x7f80 && (bits & 0x7f);
    default: return (bits & 0x7f800000) == 0x7f800000 && (bits & 0x7fffff);
    }
}

/* Distance of two elements in ulps; non-floats: 0 or infinity. */
static inline double el_distance(tj_dtype dt, const unsigned char *x, const unsigned char *y)
{
    int size = tj_dtype_size(dt);
    uint64_t a = 0, b = 0;
    memcpy(&a, x, (size_t)size);
    memcpy(&b, y, (size_t)size);
    if (!tj_dtype_is_float(dt))
        return dt == TJ_DT_BOOL ? ((a != 0) != (b != 0) ? INFINITY : 0) : (a != b ? INFINITY : 0);
    int na = el_is_nan(a, dt), nb = el_is_nan(b, dt);
    if (na || nb)
        return na && nb ? 0 : INFINITY;
    uint64_t sign = (uint64_t)1 << (size * 8 - 1);
    int64_t oa = a & sign ? -(int64_t)(a & (sign - 1)) : (int64_t)(a & (sign - 1));
    int64_t ob = b & sign ? -(int64_t)(b & (sign - 1)) : (int64_t)(b & (sign - 1));
    return fabs((double)(oa - ob));
}

/* Compares n elements; prints the worst one beyond `tol` ulps. 1 when all
 * are within. */
static inline int el_compare(const char *what, const char *name, tj_dtype dt, const void *got, const void *ref, size_t n,
                             double tol)
{
    int size = tj_dtype_size(dt);
    double worst = 0;
    size_t at = 0, bad = 0;
    for (size_t i = 0; i < n; i++) {
        double d = el_distance(dt, (const unsigned char *)got + i * (size_t)size,
                               (const unsigned char *)ref + i * (size_t)size);
        bad += d > tol;
        if (d > worst)
            worst = d, at = i;
    }
    if (!bad)
        return 1;
    uint64_t g = 0, r = 0;
    memcpy(&g, (const unsigned char *)got + at * (size_t)size, (size_t)size);
    memcpy(&r, (const unsigned char *)ref + at * (size_t)size, (size_t)size);
    printf("FAIL %s %s: %zu/%zu beyond %g ulp; worst %g at %zu: msl 0x%llx, reference 0x%llx\n", what, name, bad, n,
           tol, worst, at, (unsigned long long)g, (unsigned long long)r);
    return 0;
}

#endif
