/* Mamba's selective scan (tilejit/lib.h) from lib/kernels/selective_scan.tj:
 * the one-pass chunked scan (ss_chunked: a program per channel, chunks of
 * 32 W TT steps), or the sequence cut into segments and scanned in two
 * phases (the state each segment leaves; then each segment's entering state
 * from those before it, and its outputs), the state in registers
 * (docs/library.md); ssm_path_of says which. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/lib_internal.h"

enum { DSTATE_MAX = 64, GRID_Y_MAX = 65535 }; /* the largest NS of the kernel; CUDA's grid y */

static const char *fn = "tj_lib_selective_scan";

static int has_shape(const tj_tensor *t, const char *name, int rank, const int64_t *shape, const char *dims,
                     tj_rt_error *err)
{
    int same = t->rank == rank;
    for (int i = 0; same && i < rank; i++)
        same = t->shape[i] == shape[i];
    if (same)
        return 0;
    char got[128] = "";
    for (int i = 0, n = 0; i < t->rank && n < (int)sizeof got - 24; i++)
        n += snprintf(got + n, sizeof got - (size_t)n, i ? ", %lld" : "%lld", (long long)t->shape[i]);
    return tj_rt_fail(err, "%s: %s must be %s, got [%s]", fn, name, dims, got);
}

static int has_dtype(const tj_tensor *t, const char *name, tj_dtype want, tj_rt_error *err)
{
    if (t->dtype == want)
        return 0;
    return tj_rt_fail(err, "%s: %s is %s, expected %s", fn, name, tj_dtype_name(t->dtype), tj_dtype_name(want));
}

/* Every tensor against u's sizes: (batch, dim, L) and A's dstate. */
static int check(const tj_lib_ssm *s, const tj_tensor *out, tj_rt_error *err)
{
    const tj_tensor *u = s->u;
    if (u->rank != 3)
        return tj_rt_fail(err, "%s: u must be [batch, dim, L], got rank %d", fn, u->rank);
    if (u->dtype != TJ_DT_F32 && u->dtype != TJ_DT_BF16)
        return tj_rt_fail(err, "%s: u is %s; f32 and bf16 are supported", fn, tj_dtype_name(u->dtype));
    if (s->A->rank != 2)
        return tj_rt_fail(err, "%s: A must be [dim, dstate], got rank %d", fn, s->A->rank);
    int64_t nb = u->shape[0], dm = u->shape[1], len = u->shape[2], ns = s->A->shape[1];
    int64_t bdl[] = {nb, dm, len}, dn[] = {dm, ns}, bnl[] = {nb, ns, len}, d1[] = {dm};
    tj_dtype t = u->dtype;
    if (has_shape(s->delta, "delta", 3, bdl, "[batch, dim, L] as u", err) || has_dtype(s->delta, "delta", t, err) ||
        has_shape(s->A, "A", 2, dn, "[dim, dstate]", err) || has_dtype(s->A, "A", TJ_DT_F32, err) ||
        has_shape(s->B, "B", 3, bnl, "[batch, dstate, L]", err) || has_dtype(s->B, "B", t, err) ||
        has_shape(s->C, "C", 3, bnl, "[batch, dstate, L]", err) || has_dtype(s->C, "C", t, err) ||
        has_shape(out, "out", 3, bdl, "[batch, dim, L] as u", err) || has_dtype(out, "out", t, err))
        return 1;
    if ((s->D && (has_shape(s->D, "D", 1, d1, "[dim]", err) || has_dtype(s->D, "D", TJ_DT_F32, err))) ||
        (s->delta_bias && (has_shape(s->delta_bias, "delta_bias", 1, d1, "[dim]", err) ||
                           has_dtype(s->delta_bias, "delta_bias", TJ_DT_F32, err))) ||
        (s->z && (has_shape(s->z, "z", 3, bdl, "[batch, dim, L] as u", err) || has_dtype(s->z, "z", t, err))))
        return 1;
    if (ns > DSTATE_MAX)
        return tj_rt_fail(err, "%s: dstate %lld is more than the %d the kernel holds", fn, (long long)ns, DSTATE_MAX);
    if (nb > GRID_Y_MAX || dm > INT32_MAX || len > INT32_MAX)
        return tj_rt_fail(err, "%s: batch %lld, dim %lld, L %lld: at most %d, 2^31 - 1, 2^31 - 1", fn, (long long)nb,
                          (long long)dm, (long long)len, GRID_Y_MAX);
    return 0;
}

/* The segment length: a power of two (at least 32) that gives about
 * TARGET_WARPS one-warp programs, a wave on the H200 at the registers the
 * kernels take (bench/NOTES.md). */
enum { TARGET_WARPS = 1024, SEG_MIN = 32 };

static int64_t segment_length(int64_t nb, int64_t dm, int64_t len)
{
    int64_t groups = nb * ((dm + 31) / 32), want = (TARGET_WARPS + groups - 1) / groups, seg = SEG_MIN;
    while (seg * want < len || (len + seg - 1) / seg > GRID_Y_MAX)
        seg *= 2;
    return seg;
}

static tj_tensor f32_buffer(float *data, int rank, const int64_t *shape)
{
    return tj_tensor_contiguous(data, TJ_DT_F32, rank, shape);
}

/* The substitutions every kernel of selective_scan.tj takes from the call:
 * the dtype and which of D, z, delta_bias and softplus it has. */
enum { OPTION_SUBSTS = 5 };

static void option_substs(const tj_lib_ssm *s, lib_subst *out)
{
    out[0] = (lib_subst){"T", tj_dtype_name(s->u->dtype)};
    out[1] = (lib_subst){"HAS_D", s->D ? "1" : "0"};
    out[2] = (lib_subst){"HAS_Z", s->z ? "1" : "0"};
    out[3] = (lib_subst){"HAS_BIAS", s->delta_bias ? "1" : "0"};
    out[4] = (lib_subst){"SOFTPLUS", s->delta_softplus ? "1" : "0"};
}

/* B or C [NB, N, L] as [NB, N, DM, L] with the DM stride 0 */
static tj_tensor over_channels(const tj_tensor *t, int64_t dm)
{
    tj_tensor v = {.data = t->data, .dtype = t->dtype, .rank = 4, .shape = {t->shape[0], t->shape[1], dm, t->shape[2]},
                   .strides = {t->strides[0], t->strides[1], 0, t->strides[2]}};
    return v;
}

/* t with a trailing axis of n elements of stride 0 (ss_chunked_rows' per-
 * channel values as [.., CH] tiles) */
static tj_tensor along_steps(const tj_tensor *t, int64_t n)
{
    tj_tensor v = *t;
    v.shape[v.rank] = n;
    v.strides[v.rank] = 0;
    v.rank++;
    return v;
}

static int launch(tj_lib *l, const tj_lib_ssm *s, const tj_tensor *out, void *stream, tj_rt_error *err)
{
    int64_t nb = s->u->shape[0], dm = s->u->shape[1], len = s->u->shape[2], nsp = 1;
    while (nsp < s->A->shape[1])
        nsp *= 2;
    int64_t seg = segment_length(nb, dm, len), nseg = (len + seg - 1) / seg;
    char seg_text[24];
    snprintf(seg_text, sizeof seg_text, "%lld", (long long)seg);
    lib_subst subst[OPTION_SUBSTS + 2] = {{"SEG", seg_text},
                                          {"TTS", "4, 2"}}; /* 4 steps a thread: 1.1-1.3x 2 steps for f32 on the H200 */
    option_substs(s, subst + 2);
    tj_dispatch *k1 = lib_dispatch(l, "selective_scan", "ss_segment_state", subst, OPTION_SUBSTS + 2, err);
    tj_dispatch *k2 = k1 ? lib_dispatch(l, "selective_scan", "ss_segment_out", subst, OPTION_SUBSTS + 2, err) : NULL;
    size_t states = (size_t)(nb * nseg * nsp * dm);
    float *hs = k2 ? lib_scratch_get(l, stream, 2 * states * 4, 0, err) : NULL;
    if (!hs)
        return 1;
    float *ps = hs + states;
    /* absent tensors: stand-ins of the right dtype, never read (their HAS_ is 0) */
    tj_tensor one_f32 = {.data = s->A->data, .dtype = TJ_DT_F32, .rank = 1, .shape = {1}, .strides = {1}};
    tj_tensor b4 = over_channels(s->B, dm), c4 = over_channels(s->C, dm);
    tj_tensor t_hs = f32_buffer(hs, 5, (int64_t[]){nb, nseg, nsp, dm, 1}), t_ps = f32_buffer(ps, 5, (int64_t[]){nb, nseg, nsp, dm, 1});
    const tj_tensor *bias = s->delta_bias ? s->delta_bias : &one_f32;
    tj_arg a1[] = {lib_tensor_arg(s->u), lib_tensor_arg(s->delta), lib_tensor_arg(s->A), lib_tensor_arg(&b4),
                   lib_tensor_arg(bias), lib_tensor_arg(&t_hs), lib_tensor_arg(&t_ps)};
    tj_arg a2[] = {lib_tensor_arg(s->u), lib_tensor_arg(s->delta), lib_tensor_arg(s->A), lib_tensor_arg(&b4),
                   lib_tensor_arg(&c4), lib_tensor_arg(s->D ? s->D : &one_f32), lib_tensor_arg(s->z ? s->z : s->u),
                   lib_tensor_arg(bias), lib_tensor_arg(&t_hs), lib_tensor_arg(&t_ps), lib_tensor_arg(out)};
    return lib_launch(l, k1, a1, 7, stream, err) || lib_launch(l, k2, a2, 11, stream, err);
}

/* TILEJIT_LIB_SSM: "segments" for the two phases, "chunked" (16 steps a
 * thread, up to 4 warps) or "chunked,W,TT" (warps a power of two to 32,
 * steps a thread a power of two to 64) for the one pass, "rows" or
 * "rows,W,TT" for the one pass with a warp a channel (ss_chunked_rows, W
 * channels a program: 1.1-1.6x slower than ss_chunked on the H200 at every
 * shape, bench/RESULTS.md, so never the default); anything else is an
 * error. Unset: the one pass, except for f32 on CUDA. On the native cpu
 * the one pass takes 0.30-0.33 of the two phases' time (f32 D256 L2048
 * 21.6 against 65.7 ms, D1024 L4096 337 against 1125). On the H200 (batch
 * 1, dstate 16, bench/RESULTS.md) it re-reads B and C from L2 for every
 * channel, which bounds it: bf16 0.69-1.0 of the two phases' time (L 1024
 * 51.9 against 75.0 us, L 8192 697.6 against 735.9 at D4096), f32 0.96 at
 * D2048 L1024 but 1.1-1.6x at the rest (1174 against 753 us at D4096
 * L8192). */
typedef enum ssm_kind { SSM_SEGMENTS, SSM_CHUNKED, SSM_ROWS } ssm_kind;

typedef struct ssm_path {
    ssm_kind kind;
    int warps, tt; /* warps 0: chosen from L (chunk_warps; rows: ROWS_WARPS) */
} ssm_path;

enum { ROWS_WARPS = 4 }; /* ss_chunked_rows: channels (a warp each) a program */

/* chunks of up to 2048 steps (mamba_ssm's), 16 a thread: 17.5 SASS
 * instructions a (state, step) at 4 warps against 26 at 8 steps a thread */
enum { CHUNK_WARPS = 4, CHUNK_TT = 16 };

/* The most warps (to CHUNK_WARPS) whose chunk is no longer than L: at L
 * 1024 two warps, not a chunk half past the end. */
static int chunk_warps(int64_t len, int tt)
{
    int w = CHUNK_WARPS;
    while (w > 1 && (int64_t)32 * w * tt > len)
        w /= 2;
    return w;
}

static int pow2_upto(long v, long most) { return v >= 1 && v <= most && !(v & (v - 1)); }

/* "NAME" or "NAME,W,TT" for the one pass's kinds */
static int one_pass_of(const char *ask, const char *name, ssm_kind kind, ssm_path *p)
{
    size_t n = strlen(name);
    long w = 0, tt = CHUNK_TT;
    char tail = 0;
    if (strncmp(ask, name, n) || (ask[n] && ask[n] != ','))
        return 0;
    if (ask[n] && (sscanf(ask + n + 1, "%ld,%ld%c", &w, &tt, &tail) != 2 || !pow2_upto(w, 32) ||
                   !pow2_upto(tt, TJ_MAX_VEC)))
        return 0;
    *p = (ssm_path){kind, (int)w, (int)tt};
    return 1;
}

static int ssm_path_of(const tj_lib *l, tj_dtype dt, ssm_path *p, tj_rt_error *err)
{
    const char *ask = getenv("TILEJIT_LIB_SSM");
    int one = tj_jit_device(l->jit) != TJ_DEVICE_CUDA || dt != TJ_DT_F32;
    *p = (ssm_path){one ? SSM_CHUNKED : SSM_SEGMENTS, 0, CHUNK_TT};
    if (!ask || !*ask)
        return 0;
    if (!strcmp(ask, "segments")) {
        p->kind = SSM_SEGMENTS;
        return 0;
    }
    if (one_pass_of(ask, "chunked", SSM_CHUNKED, p) || one_pass_of(ask, "rows", SSM_ROWS, p))
        return 0;
    return tj_rt_fail(err, "%s: TILEJIT_LIB_SSM=%s: expected segments, chunked, chunked,W,TT, rows or rows,W,TT (W a "
                      "power of two to 32 warps, TT a power of two to %d steps a thread)", fn, ask, TJ_MAX_VEC);
}

/* ss_chunked_rows' arguments: the per-channel values (A, D, delta_bias, H)
 * with a stride-0 axis of a chunk's steps, B and C with one over the
 * channels. */
static int launch_rows(tj_lib *l, tj_dispatch *k, const tj_lib_ssm *s, const tj_tensor *d, const tj_tensor *bias,
                       const tj_tensor *h, const tj_tensor *out, int64_t ch, void *stream, tj_rt_error *err)
{
    int64_t dm = s->u->shape[1];
    tj_tensor a3 = along_steps(s->A, ch), b4 = over_channels(s->B, dm), c4 = over_channels(s->C, dm);
    tj_tensor d2 = along_steps(d, ch), bias2 = along_steps(bias, ch), h3 = along_steps(h, ch);
    tj_arg a[] = {lib_tensor_arg(s->u), lib_tensor_arg(s->delta), lib_tensor_arg(&a3), lib_tensor_arg(&b4),
                  lib_tensor_arg(&c4), lib_tensor_arg(&d2), lib_tensor_arg(s->z ? s->z : s->u),
                  lib_tensor_arg(&bias2), lib_tensor_arg(&h3), lib_tensor_arg(out)};
    return lib_launch(l, k, a, 10, stream, err);
}

/* The one pass: ss_chunked or ss_chunked_rows, H the state each chunk
 * leaves ([NB, DM, N] f32 scratch, read by the next chunk of the same
 * program). */
static int launch_chunked(tj_lib *l, const tj_lib_ssm *s, const tj_tensor *out, const ssm_path *p, void *stream,
                          tj_rt_error *err)
{
    int64_t nb = s->u->shape[0], dm = s->u->shape[1], ns = s->A->shape[1];
    char w_text[16], tt_text[16];
    int warps = p->warps ? p->warps : p->kind == SSM_ROWS ? ROWS_WARPS : chunk_warps(s->u->shape[2], p->tt);
    snprintf(w_text, sizeof w_text, "%d", warps);
    snprintf(tt_text, sizeof tt_text, "%d", p->tt);
    lib_subst subst[OPTION_SUBSTS + 2] = {{"W", w_text}, {"TT", tt_text}};
    option_substs(s, subst + 2);
    int rows = p->kind == SSM_ROWS;
    const char *name = rows ? "ss_chunked_rows" : "ss_chunked";
    tj_dispatch *k = lib_dispatch(l, "selective_scan", name, subst, OPTION_SUBSTS + 2, err);
    float *h = k ? lib_scratch_get(l, stream, (size_t)(nb * dm * ns) * 4, 0, err) : NULL;
    if (!h)
        return 1;
    tj_tensor one_f32 = {.data = s->A->data, .dtype = TJ_DT_F32, .rank = 1, .shape = {1}, .strides = {1}};
    tj_tensor t_h = f32_buffer(h, 3, (int64_t[]){nb, dm, ns});
    const tj_tensor *bias = s->delta_bias ? s->delta_bias : &one_f32, *d = s->D ? s->D : &one_f32;
    if (rows)
        return launch_rows(l, k, s, d, bias, &t_h, out, 32 * (int64_t)p->tt, stream, err);
    tj_arg a[] = {lib_tensor_arg(s->u), lib_tensor_arg(s->delta), lib_tensor_arg(s->A),
                  lib_tensor_arg(s->B), lib_tensor_arg(s->C), lib_tensor_arg(d),
                  lib_tensor_arg(s->z ? s->z : s->u), lib_tensor_arg(bias), lib_tensor_arg(&t_h),
                  lib_tensor_arg(out)};
    return lib_launch(l, k, a, 10, stream, err);
}

int tj_lib_selective_scan(tj_lib *l, const tj_lib_ssm *s, const tj_tensor *out, void *stream, tj_rt_error *err)
{
    if (!l || !s || !s->u || !s->delta || !s->A || !s->B || !s->C || !out)
        return tj_rt_fail(err, "%s: NULL library, tensor (u, delta, A, B, C, out are required) or arguments", fn);
    if (check(s, out, err))
        return 1;
    ssm_path path;
    if (ssm_path_of(l, s->u->dtype, &path, err))
        return 1;
    if (lib_numel(out) == 0)
        return 0;
    pthread_mutex_lock(&l->lock);
    int rc = path.kind == SSM_SEGMENTS ? launch(l, s, out, stream, err) : launch_chunked(l, s, out, &path, stream, err);
    pthread_mutex_unlock(&l->lock);
    return rc;
}
