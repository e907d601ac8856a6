#define _DEFAULT_SOURCE /* setenv */
/* tilejit lib's selective scan (tilejit/lib.h) on the cpu, native code and
 * the reference interpreter, against selective_scan_fn's recurrence run
 * step by step in double. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib_test_util.h"

typedef struct problem {
    int64_t nb, dm, len, ns;
    int has_d, has_z, has_bias, softplus;
    tj_dtype dt; /* of u, delta, B, C, z, out */
} problem;

/* the data, as doubles (what the reference reads) and in the problem's dtype */
typedef struct arrays {
    double *u, *delta, *a, *b, *c, *d, *z, *bias;
    void *tu, *tdelta, *tb, *tc, *tz;
    float *fa, *fd, *fbias;
} arrays;

static uint32_t next(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static double uniform(uint32_t *s, double lo, double hi) { return lo + (hi - lo) * (next(s) & 0xffff) / 65536.0; }

/* n values in [lo, hi): stored in dtype dt, and read back as doubles */
static double *fill(uint32_t *s, int64_t n, double lo, double hi, tj_dtype dt, void **stored)
{
    double *v = malloc(sizeof *v * (size_t)(n + 1));
    char *t = malloc((size_t)tj_dtype_size(dt) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) {
        float f = (float)uniform(s, lo, hi);
        if (dt == TJ_DT_BF16) {
            uint32_t w;
            memcpy(&w, &f, 4);
            uint16_t h = (uint16_t)((w + 0x7fff + ((w >> 16) & 1)) >> 16); /* round to nearest even */
            memcpy(t + 2 * i, &h, 2);
            w = (uint32_t)h << 16;
            memcpy(&f, &w, 4);
        } else {
            memcpy(t + 4 * i, &f, 4);
        }
        v[i] = f;
    }
    *stored = t;
    return v;
}

static void make(const problem *p, arrays *x, uint32_t seed)
{
    int64_t bdl = p->nb * p->dm * p->len, bnl = p->nb * p->ns * p->len;
    void *fa, *fd, *fb;
    x->u = fill(&seed, bdl, -1, 1, p->dt, &x->tu);
    x->delta = fill(&seed, bdl, p->softplus ? -2 : 0, p->softplus ? 1 : 0.3, p->dt, &x->tdelta);
    x->b = fill(&seed, bnl, -1, 1, p->dt, &x->tb);
    x->c = fill(&seed, bnl, -1, 1, p->dt, &x->tc);
    x->z = fill(&seed, bdl, -2, 2, p->dt, &x->tz);
    x->a = fill(&seed, p->dm * p->ns, -4, -0.1, TJ_DT_F32, &fa);
    x->d = fill(&seed, p->dm, -1, 1, TJ_DT_F32, &fd);
    x->bias = fill(&seed, p->dm, -0.5, 0.5, TJ_DT_F32, &fb);
    x->fa = fa, x->fd = fd, x->fbias = fb;
}

static void release(arrays *x)
{
    void *all[] = {x->u, x->delta, x->a, x->b, x->c, x->d, x->z, x->bias, x->tu, x->tdelta,
                   x->tb, x->tc, x->tz, x->fa, x->fd, x->fbias};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
}

/* out[b, d, t] in double, step by step */
static double *reference(const problem *p, const arrays *x)
{
    double *out = malloc(sizeof *out * (size_t)(p->nb * p->dm * p->len + 1)), *h = malloc(sizeof *h * (size_t)(p->ns + 1));
    for (int64_t b = 0; b < p->nb; b++)
        for (int64_t d = 0; d < p->dm; d++) {
            for (int64_t n = 0; n < p->ns; n++)
                h[n] = 0;
            for (int64_t t = 0; t < p->len; t++) {
                int64_t at = (b * p->dm + d) * p->len + t;
                double dt = x->delta[at] + (p->has_bias ? x->bias[d] : 0), y = 0;
                if (p->softplus)
                    dt = dt <= 20 ? log1p(exp(dt)) : dt;
                for (int64_t n = 0; n < p->ns; n++) {
                    int64_t bn = (b * p->ns + n) * p->len + t;
                    h[n] = exp(dt * x->a[d * p->ns + n]) * h[n] + dt * x->b[bn] * x->u[at];
                    y += x->c[bn] * h[n];
                }
                if (p->has_d)
                    y += x->d[d] * x->u[at];
                if (p->has_z)
                    y *= x->z[at] / (1 + exp(-x->z[at]));
                out[at] = y;
            }
        }
    free(h);
    return out;
}

static double stored_value(const void *t, tj_dtype dt, int64_t i)
{
    if (dt == TJ_DT_F32)
        return ((const float *)t)[i];
    uint32_t w = (uint32_t)((const uint16_t *)t)[i] << 16;
    float f;
    memcpy(&f, &w, 4);
    return f;
}

static void run(tj_lib *l, const problem *p)
{
    arrays x;
    make(p, &x, (uint32_t)(p->dm * 131 + p->len));
    int64_t bdl[] = {p->nb, p->dm, p->len}, bnl[] = {p->nb, p->ns, p->len}, dn[] = {p->dm, p->ns}, d1[] = {p->dm};
    size_t es = (size_t)tj_dtype_size(p->dt), count = (size_t)(p->nb * p->dm * p->len);
    void *out = malloc(es * (count + 1));
    memset(out, 0xff, es * count); /* NaN: every element must be written */
    tj_tensor u = tj_tensor_contiguous(x.tu, p->dt, 3, bdl), delta = tj_tensor_contiguous(x.tdelta, p->dt, 3, bdl);
    tj_tensor b = tj_tensor_contiguous(x.tb, p->dt, 3, bnl), c = tj_tensor_contiguous(x.tc, p->dt, 3, bnl);
    tj_tensor z = tj_tensor_contiguous(x.tz, p->dt, 3, bdl), o = tj_tensor_contiguous(out, p->dt, 3, bdl);
    tj_tensor a = tj_tensor_contiguous(x.fa, TJ_DT_F32, 2, dn), d = tj_tensor_contiguous(x.fd, TJ_DT_F32, 1, d1);
    tj_tensor bias = tj_tensor_contiguous(x.fbias, TJ_DT_F32, 1, d1);
    tj_lib_ssm s = {&u, &delta, &a, &b, &c, p->has_d ? &d : NULL, p->has_z ? &z : NULL, p->has_bias ? &bias : NULL,
                    p->softplus};
    tj_rt_error err = {{0}};
    cr_assert_eq(tj_lib_selective_scan(l, &s, &o, NULL, &err), 0, "%s", err.msg);
    double *want = reference(p, &x), num = 0, den = 0, tol = p->dt == TJ_DT_F32 ? 1e-5 : 1e-2;
    for (size_t i = 0; i < count; i++) {
        double g = stored_value(out, p->dt, (int64_t)i);
        cr_assert(isfinite(g), "out[%zu] = %g (not written?)", i, g);
        num += (g - want[i]) * (g - want[i]);
        den += want[i] * want[i];
    }
    cr_assert(num <= tol * tol * (den + 1e-30), "%s batch %lld dim %lld L %lld dstate %lld (D %d z %d bias %d softplus %d): "
              "relative error %g", tj_dtype_name(p->dt), (long long)p->nb, (long long)p->dm, (long long)p->len,
              (long long)p->ns, p->has_d, p->has_z, p->has_bias, p->softplus, sqrt(num / (den + 1e-30)));
    free(want);
    free(out);
    release(&x);
}

static void problems(tj_device_kind kind, int64_t scale)
{
    tj_jit *j;
    tj_lib *l = open_lib(kind, &j);
    problem ps[] = {
        {2, 5, 300 * scale, 16, 1, 1, 1, 1, TJ_DT_F32}, /* several segments, the last one partial */
        {1, 33, 77, 3, 0, 0, 0, 0, TJ_DT_F32},          /* channels and states not powers of two */
        {1, 1, 1, 1, 1, 0, 1, 0, TJ_DT_F32},            /* one element */
        {3, 40, 129, 16, 1, 1, 0, 1, TJ_DT_BF16},
        {1, 7, 50, 64, 0, 1, 1, 1, TJ_DT_F32},           /* the most states */
        {2, 0, 10, 16, 1, 1, 1, 1, TJ_DT_F32},           /* empty */
        {1, 4, 0, 16, 1, 1, 1, 1, TJ_DT_BF16},
    };
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++)
        run(l, &ps[i]);
    tj_lib_close(l);
    tj_jit_close(j);
}

/* The cpu's default (the one pass), and the two phases (CUDA's default for f32) */
Test(lib_selective_scan, native) { problems(TJ_DEVICE_CPU, 4); }
Test(lib_selective_scan, interp) { problems(TJ_DEVICE_INTERP, 1); }

Test(lib_selective_scan, segments_native)
{
    setenv("TILEJIT_LIB_SSM", "segments", 1);
    problems(TJ_DEVICE_CPU, 4);
}

Test(lib_selective_scan, segments_interp)
{
    setenv("TILEJIT_LIB_SSM", "segments", 1);
    problems(TJ_DEVICE_INTERP, 1);
}

/* The one pass (TILEJIT_LIB_SSM=chunked): its default 16 steps a thread
 * (chunks of 512 to 2048 steps by L: every L here in one, partial, L 1200
 * in two at 1024), and chunks of 128 and 64 steps (L 1200 in 10 and 19,
 * the last partial; L 1 and 77 in one or two). With a warp a channel
 * (rows): 4 channels of chunks of 512, 2 of 64, 4 of 32 (dims 1, 5, 7, 33
 * and 40 leave a program's last warps without a channel). */
Test(lib_selective_scan, chunked_native)
{
    const char *paths[] = {"chunked", "chunked,1,4", "chunked,2,1", "rows", "rows,2,2", "rows,4,1"};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        setenv("TILEJIT_LIB_SSM", paths[i], 1);
        problems(TJ_DEVICE_CPU, 4);
    }
}

Test(lib_selective_scan, chunked_interp)
{
    setenv("TILEJIT_LIB_SSM", "chunked,1,4", 1);
    problems(TJ_DEVICE_INTERP, 1);
    setenv("TILEJIT_LIB_SSM", "rows,2,2", 1);
    problems(TJ_DEVICE_INTERP, 1);
}

Test(lib_selective_scan, path_errors)
{
    tj_jit *j;
    tj_lib *l = open_lib(TJ_DEVICE_CPU, &j);
    static float buf[6][64];
    tj_tensor u = tj_tensor_contiguous(buf[0], TJ_DT_F32, 3, (int64_t[]){1, 2, 8});
    tj_tensor a = tj_tensor_contiguous(buf[1], TJ_DT_F32, 2, (int64_t[]){2, 4});
    tj_tensor b = tj_tensor_contiguous(buf[2], TJ_DT_F32, 3, (int64_t[]){1, 4, 8});
    tj_tensor out = tj_tensor_contiguous(buf[3], TJ_DT_F32, 3, (int64_t[]){1, 2, 8});
    tj_lib_ssm s = {&u, &u, &a, &b, &b, NULL, NULL, NULL, 0};
    const char *bad[] = {"chunk",          "chunkedx", "chunked,", "chunked,3,4", "chunked,4",
                         "chunked,4,128", "chunked,4,16,1", "chunked,64,1", "chunked,4,16x", "Chunked",
                         "row",            "rowsx",    "rows,",    "rows,3,4",    "rows,4,0"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tj_rt_error err = {{0}};
        setenv("TILEJIT_LIB_SSM", bad[i], 1);
        cr_assert_neq(tj_lib_selective_scan(l, &s, &out, NULL, &err), 0, "TILEJIT_LIB_SSM=%s was taken", bad[i]);
        cr_assert(strstr(err.msg, "expected segments, chunked, chunked,W,TT, rows or rows,W,TT"), "%s: %s", bad[i],
                  err.msg);
    }
    tj_lib_close(l);
    tj_jit_close(j);
}

static void expect_error(tj_lib *l, const tj_lib_ssm *s, const tj_tensor *out, const char *needle)
{
    tj_rt_error err = {{0}};
    cr_assert_neq(tj_lib_selective_scan(l, s, out, NULL, &err), 0, "expected an error about '%s'", needle);
    cr_assert(strstr(err.msg, needle), "error '%s' does not say '%s'", err.msg, needle);
}

Test(lib_selective_scan, errors)
{
    tj_jit *j;
    tj_lib *l = open_lib(TJ_DEVICE_CPU, &j);
    static float buf[8][4096];
    tj_tensor u = tj_tensor_contiguous(buf[0], TJ_DT_F32, 3, (int64_t[]){1, 4, 8});
    tj_tensor delta = tj_tensor_contiguous(buf[1], TJ_DT_F32, 3, (int64_t[]){1, 4, 8});
    tj_tensor a = tj_tensor_contiguous(buf[2], TJ_DT_F32, 2, (int64_t[]){4, 16});
    tj_tensor b = tj_tensor_contiguous(buf[3], TJ_DT_F32, 3, (int64_t[]){1, 16, 8});
    tj_tensor c = tj_tensor_contiguous(buf[4], TJ_DT_F32, 3, (int64_t[]){1, 16, 8});
    tj_tensor out = tj_tensor_contiguous(buf[5], TJ_DT_F32, 3, (int64_t[]){1, 4, 8});
    tj_tensor bad_d = tj_tensor_contiguous(buf[6], TJ_DT_F32, 1, (int64_t[]){5});
    tj_tensor c_bf16 = tj_tensor_contiguous(buf[4], TJ_DT_BF16, 3, (int64_t[]){1, 16, 8});
    tj_tensor a_wide = tj_tensor_contiguous(buf[2], TJ_DT_F32, 2, (int64_t[]){4, 65});
    tj_tensor b_wide = tj_tensor_contiguous(buf[3], TJ_DT_F32, 3, (int64_t[]){1, 65, 8});
    tj_tensor u_i32 = tj_tensor_contiguous(buf[0], TJ_DT_I32, 3, (int64_t[]){1, 4, 8});
    tj_lib_ssm ok = {&u, &delta, &a, &b, &c, NULL, NULL, NULL, 0}, s = ok;
    s.D = &bad_d;
    expect_error(l, &s, &out, "D must be [dim], got [5]");
    s = ok, s.C = &c_bf16;
    expect_error(l, &s, &out, "C is bf16, expected f32");
    s = ok, s.B = &delta;
    expect_error(l, &s, &out, "B must be [batch, dstate, L], got [1, 4, 8]");
    s = ok, s.A = &a_wide, s.B = &b_wide, s.C = &b_wide;
    expect_error(l, &s, &out, "dstate 65 is more than the 64");
    s = ok, s.u = &u_i32;
    expect_error(l, &s, &out, "u is i32; f32 and bf16 are supported");
    s = ok, s.C = NULL;
    expect_error(l, &s, &out, "u, delta, A, B, C, out are required");
    expect_error(l, &ok, &a, "out must be [batch, dim, L] as u");
    tj_lib_close(l);
    tj_jit_close(j);
}
