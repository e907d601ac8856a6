/* tilejit's library: device-wide algorithms written in the .tj language
 * (the kernel files lib/kernels/NAME.tj, embedded at build time), callable from C and, through
 * ctypes, from Python as tilejit.lib (docs/library.md).
 *
 *   tj_lib *l = tj_lib_open(j, &err);            // j: a jit (tilejit/jit.h)
 *   tj_lib_cumsum(l, &x, &y, 0, 0, stream, &err);
 *   tj_lib_argsort(l, &x, &idx, -1, TJ_LIB_DESCENDING, stream, &err);
 *   tj_lib_close(l);
 *
 * Tensors live where the jit runs (host memory for TJ_DEVICE_CPU and
 * TJ_DEVICE_INTERP, device memory for CUDA). The output tensor is given by
 * the caller with the input's shape (and the dtype the entry names); the
 * library allocates only its own scratch (kept by the tj_lib and reused,
 * one buffer per stream). An algorithm enqueues kernels on `stream` and
 * never synchronizes with the host, so it may be captured in a CUDA graph
 * (the graph then refers to the tj_lib's scratch: do not replay two such
 * graphs at once, nor free the tj_lib while one may run).
 *
 * Every entry returns 0, or nonzero with err saying what and where (the
 * argument, the dims, the dtype); none aborts. A tj_lib may be used from
 * several threads (calls are serialized).
 */
#ifndef TILEJIT_LIB_H
#define TILEJIT_LIB_H

#include "tilejit/jit.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tj_lib tj_lib;

/* A library over jit j (which must outlive it). NULL with err. */
tj_lib *tj_lib_open(tj_jit *j, tj_rt_error *err);

/* What a library may be opened with (tj_lib_open_options); all zero is
 * tj_lib_open's defaults. */
typedef struct tj_lib_options {
    /* The most elements along the axis that one launch of a device-wide
     * algorithm indexes (its kernels index with i32): a longer axis is cut
     * into segments of this many (each family rounds it down to a multiple
     * of its tile: 8192 for scans of lines, 64 for columns, 4096 for sorts
     * and top-k), the
     * carry, counts and offsets passed from segment to segment on the
     * device (docs/library.md, "Arrays beyond 2^31 elements"). 0: the
     * default and the largest allowed, TJ_LIB_SEGMENT_MAX. Tests set it
     * small to run the segmented paths on small arrays. */
    int64_t segment;
} tj_lib_options;
#define TJ_LIB_SEGMENT_MAX ((int64_t)2147418112) /* 2^31 - 2^16: a multiple of every family's tile */
/* tj_lib_open with options (NULL: the defaults); an option out of range
 * (segment < 0 or above TJ_LIB_SEGMENT_MAX) is an error naming it. */
tj_lib *tj_lib_open_options(tj_jit *j, const tj_lib_options *opts, tj_rt_error *err);
void tj_lib_close(tj_lib *l); /* frees the scratch and the compiled kernels; NULL: no-op */

enum {
    TJ_LIB_DESCENDING = 1u << 0, /* sort, argsort: largest first (still stable) */
    TJ_LIB_MULTI_PHASE = 1u << 1, /* scans: the multi-phase path (three launches, the input read twice)
                                     instead of the single-pass look-back; sorts: three kernels and a
                                     scan a radix pass instead of one launch (Onesweep); what Metal's
                                     relaxed-only device atomics allow (docs/library.md) */
};

/* ---- scans (lib/scan.c) ----
 * y = the inclusive scan of x along `axis` (negative counts from the
 * end): y[..., i, ...] = x[..., 0, ...] (+) ... (+) x[..., i, ...]. x and y
 * have the same shape and dtype (i32, i64, u32, u64, f16, bf16, f32, f64);
 * y may be x (in place). flags: 0 or TJ_LIB_MULTI_PHASE. */
int tj_lib_cumsum(tj_lib *l, const tj_tensor *x, const tj_tensor *y, int axis, uint32_t flags, void *stream,
                  tj_rt_error *err);
int tj_lib_cummax(tj_lib *l, const tj_tensor *x, const tj_tensor *y, int axis, uint32_t flags, void *stream,
                  tj_rt_error *err);
/* The same with a user-given associative combine: an expression in the
 * .tj language over `a` (the earlier, left value) and `b` of x's dtype,
 * e.g. "a * b" or "maximum(a, b)". It must be associative ("a - b" is not:
 * its result is then unspecified, as nothing can check). It is compiled once per
 * dtype and text; a combine that does not compile is an error with the
 * diagnostic. */
int tj_lib_scan(tj_lib *l, const tj_tensor *x, const tj_tensor *y, int axis, const char *combine,
                uint32_t flags, void *stream, tj_rt_error *err);

/* ---- sorting (lib/sort.c) ----
 * Stable sorts along `axis` (negative counts from the end) of keys of
 * dtype f32, f16, bf16, i32, u32 or i64, ordered as NumPy orders them:
 * -inf < ... < -0.0 == 0.0 < ... < inf < NaN (every NaN last, in input
 * order); equal keys keep their input order. TJ_LIB_DESCENDING reverses the
 * order of keys (NaN first, as torch.sort(descending=True)), still stable.
 * sort: y (x's shape and dtype) the sorted keys. argsort: idx (x's shape,
 * i64) the indices along the axis that sort x. flags: TJ_LIB_DESCENDING,
 * TJ_LIB_MULTI_PHASE (the radix passes' three kernels; on CUDA they are
 * also the default, the single pass being slower there for now). A line
 * along the last axis may hold up to 2^32 - 1 elements (longer than a
 * segment: tj_lib_options); along an inner axis, its lines and those
 * interleaved with it at most a segment's elements. */
int tj_lib_sort(tj_lib *l, const tj_tensor *x, const tj_tensor *y, int axis, uint32_t flags, void *stream,
                tj_rt_error *err);
int tj_lib_argsort(tj_lib *l, const tj_tensor *x, const tj_tensor *idx, int axis, uint32_t flags, void *stream,
                   tj_rt_error *err);

/* ---- top-k (lib/topk.c) ----
 * The k largest elements of x along `axis` (negative counts from the end),
 * largest first: values (x's dtype, x's shape with the axis k long), bit
 * for bit, and idx (that shape, i64) their indices along the axis. x is
 * f32, f16, bf16 or i32; NaN ranks above +inf, -0.0 equal to +0.0, and of
 * equal elements the lower index comes first (what torch.topk(sorted=True)
 * gives in practice; it promises no order for ties). 0 <= k <= the axis'
 * length, k at most 16384 (rows of any length); flags must be 0. */
int tj_lib_topk(tj_lib *l, const tj_tensor *x, int64_t k, const tj_tensor *values, const tj_tensor *idx, int axis,
                uint32_t flags, void *stream, tj_rt_error *err);

/* ---- Mamba's selective scan (lib/selective_scan.c) ----
 * out = mamba_ssm's selective_scan_fn(u, delta, A, B, C, D, z, delta_bias,
 * delta_softplus): for batch b, channel d, state n and step t, with
 * dt = delta[b, d, t] (+ delta_bias[d], then softplus when delta_softplus),
 *   h[n] = exp(dt * A[d, n]) * h[n] + dt * B[b, n, t] * u[b, d, t]   (h = 0 before t = 0)
 *   out[b, d, t] = (sum over n of C[b, n, t] * h[n] + D[d] * u[b, d, t]) * silu(z[b, d, t])
 * u, delta, z, out: [batch, dim, L]; B, C: [batch, dstate, L]; A: [dim,
 * dstate]; D, delta_bias: [dim]. u, delta, B, C, z and out share one dtype,
 * f32 or bf16 (the state is f32); A, D, delta_bias are f32. D, z and
 * delta_bias may be NULL (absent: no D term, no gate, no bias). dstate <= 64,
 * batch <= 65535. */
typedef struct tj_lib_ssm {
    const tj_tensor *u, *delta, *A, *B, *C;
    const tj_tensor *D, *z, *delta_bias; /* NULL: absent */
    int delta_softplus;
} tj_lib_ssm;
int tj_lib_selective_scan(tj_lib *l, const tj_lib_ssm *args, const tj_tensor *out, void *stream, tj_rt_error *err);

#ifdef __cplusplus
}
#endif
#endif
