/* Stable sorts and argsorts (tilejit/lib.h) from lib/kernels/sort.tj:
 * rows that fit one tile through the tile sort, the rest by an LSD radix
 * sort of every line at once (docs/library.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/lib_internal.h"

/* RADIX_TILE is the radix kernels' tile ($RB): 4096 keys, whose runs of
 * ~16 keys a digit fill the scatter's sectors (the H200: 8.8 -> 9.7 G keys/s
 * for 2^24 f32, bench/RESULTS.md). Metal, whose 32 KiB of threadgroup
 * memory hold counting_sort's buffers for 2048, compiles them at 2048. */
enum { ROW_TILE_MAX = 4096, RADIX_TILE = 4096, DIGITS = 256 }; /* B of sort_rows; $RB */

/* The unsigned dtype that carries a key's bits, and the fn that orders it. */
static int key_kind(tj_dtype dt, tj_dtype *bits, const char **fn)
{
    switch (dt) {
    case TJ_DT_F32: *bits = TJ_DT_U32; *fn = "key_f32"; return 0;
    case TJ_DT_F16: *bits = TJ_DT_U16; *fn = "key_f16"; return 0;
    case TJ_DT_BF16: *bits = TJ_DT_U16; *fn = "key_bf16"; return 0;
    case TJ_DT_I32: *bits = TJ_DT_U32; *fn = "key_i32"; return 0;
    case TJ_DT_U32: *bits = TJ_DT_U32; *fn = "key_u32"; return 0;
    case TJ_DT_I64: *bits = TJ_DT_U64; *fn = "key_i64"; return 0;
    default: return 1;
    }
}

/* $K, $KEY, $DESC and $W: what every kernel of sort.tj takes from the call */
enum { SORT_SUBSTS = 4 };

typedef struct sort_job {
    tj_lib *l;
    const char *fn;
    tj_tensor x, y, idx; /* as [P, N, Q]; y or idx without data when not wanted */
    lib_lines ln;
    lib_subst subst[SORT_SUBSTS + 1]; /* and sort_rows' $VALUES or the radix kernels' $RB */
    char tile[24];                    /* $RB's text */
    void *stream;
    tj_rt_error *err;
} sort_job;

/* [P, N, 1] as [P, N] rows */
static tj_arg rows_arg(const tj_tensor *t)
{
    tj_tensor r = {.data = t->data, .dtype = t->dtype, .rank = 2, .shape = {t->shape[0], t->shape[1]},
                   .strides = {t->strides[0], t->strides[1]}};
    return lib_tensor_arg(&r);
}

static int sort_rows(sort_job *s)
{
    int values = s->y.data != NULL;
    s->subst[SORT_SUBSTS] = (lib_subst){"VALUES", values ? "1" : "0"};
    tj_dispatch *d = lib_dispatch(s->l, "sort", "sort_rows", s->subst, SORT_SUBSTS + 1, s->err);
    if (!d)
        return 1;
    tj_tensor idx = s->idx;
    if (!idx.data) { /* sort: the columns go to scratch */
        void *buf = lib_scratch_get(s->l, s->stream, (size_t)(s->ln.p * s->ln.n) * 8, 0, s->err);
        if (!buf)
            return 1;
        idx = tj_tensor_contiguous(buf, TJ_DT_I64, 3, (int64_t[]){s->ln.p, s->ln.n, 1});
    }
    tj_arg args[] = {rows_arg(&s->x), rows_arg(values ? &s->y : &s->x), rows_arg(&idx)};
    return lib_launch(s->l, d, args, 3, s->stream, s->err);
}


/* ---- the radix sort ---- */

typedef struct radix_bufs {
    void *k[2], *p[2], *g; /* keys, payloads (ping-pong); the tiles' offsets G (sort.tj) */
    void *h, *o, *e;       /* the three-kernel passes: H, its scan O, E */
    void *l, *hg, *c;      /* the single pass: look-back words L, every pass's counts Hg, tickets C */
    size_t zeroed;         /* the bytes of L, Hg and C (zeroed once a sort) */
    int64_t n, tiles;
    int passes;
    int carry;     /* the payload is the input's bit patterns, not flat indices */
    int direct;    /* carried 32-bit bits: the last pass writes its payload into the output (no finish) */
    int indices;   /* a one-line argsort: the last pass writes its flat indices as the output (no finish) */
    tj_dtype work; /* the keys between passes: u32 or u64 */
} radix_bufs;

static size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

/* After the keys and payloads (`slots` elements each: b->n, or more for
 * the wide sort's [R, C] views): H, O, E, G (three kernels a pass) or L
 * (u64 a tile and digit), Hg, C (the single pass), for b->tiles tiles. */
static int radix_scratch(sort_job *s, int64_t slots, int key_bytes, radix_bufs *b)
{
    size_t n = (size_t)slots, kb = aligned(n * (size_t)key_bytes), ib = aligned(n * 4);
    size_t hb = aligned((size_t)(DIGITS * b->tiles) * 4), counts = aligned((size_t)b->passes * (DIGITS + 1) * 4);
    size_t third = counts > hb ? counts : hb; /* E, or Hg and C */
    char *base = lib_scratch_owned(s->l, s->stream, LIB_SCRATCH_SORT, 2 * kb + 2 * ib + 3 * hb + third, 0, s->err);
    if (!base)
        return 1;
    char *t = base + 2 * kb + 2 * ib;
    b->k[0] = base, b->k[1] = base + kb, b->p[0] = base + 2 * kb, b->p[1] = base + 2 * kb + ib;
    b->h = t, b->o = t + hb, b->e = t + 2 * hb, b->g = t + 2 * hb + third;
    b->l = t, b->hg = t + 2 * hb, b->c = (char *)b->hg + (size_t)b->passes * DIGITS * 4;
    b->zeroed = 2 * hb + counts;
    return 0;
}

static int bits_of(int64_t v)
{
    int b = 0;
    while (v >> b)
        b++;
    return b;
}

typedef struct radix_kernels {
    tj_dispatch *hist, *offsets, *scatter; /* the three-kernel passes */
    tj_dispatch *upsweep, *onesweep;       /* the single pass */
    tj_dispatch *finish;                   /* NULL when the last pass wrote the output (direct) */
} radix_kernels;

/* The digit's scalars of radix_hist (the first four), radix_scatter and
 * radix_onesweep: pass 0 reads the input (its payload the flat index, or
 * with `carry` its bits), the `last` pass stores no keys (and with
 * `indices` its payload as the output's indices). */
static void digit_args(const sort_job *s, const radix_bufs *b, int pass, int key_passes, tj_arg *out)
{
    out[0] = lib_int_arg(pass), out[1] = lib_int_arg(key_passes), out[2] = lib_int_arg(s->ln.n);
    out[3] = lib_int_arg(s->ln.q), out[4] = lib_int_arg(b->carry), out[5] = lib_int_arg(pass == b->passes - 1);
    out[6] = lib_int_arg(b->indices);
}

/* I of radix_scatter and radix_onesweep: the output's indices where the
 * last pass writes them, else a stand-in that no pass touches (indices 0:
 * the keys' two buffers, at least 8 bytes an element together). */
static tj_arg indices_arg(const sort_job *s, const radix_bufs *b, int64_t *n)
{
    return lib_buffer_arg(b->indices ? s->idx.data : b->k[0], TJ_DT_I64, 1, n);
}

/* Where a pass's payloads go: the other buffer, or the output itself in
 * the last pass of a direct sort. */
static void *payload_out(const sort_job *s, const radix_bufs *b, int pass, int cur)
{
    return b->direct && pass == b->passes - 1 ? s->y.data : b->p[!cur];
}

/* One pass: count each tile's digits (H, and where they start in the
 * tile's order, E), scan H in digit-major order (O), each tile's offsets
 * from them (G), move every element to its place. */
static int radix_pass(sort_job *s, const radix_kernels *rk, const radix_bufs *b, int pass, int key_passes, int cur)
{
    tj_dtype kt = b->work;
    int64_t n = b->n, hs[] = {DIGITS, b->tiles}, gs[] = {b->tiles, DIGITS}, flat = DIGITS * b->tiles;
    tj_arg x = lib_buffer_arg(s->x.data, s->x.dtype, 1, &n);
    tj_arg k = lib_buffer_arg(b->k[cur], kt, 1, &n), p = lib_buffer_arg(b->p[cur], TJ_DT_I32, 1, &n);
    tj_arg h = lib_buffer_arg(b->h, TJ_DT_U32, 2, hs), o = lib_buffer_arg(b->o, TJ_DT_U32, 2, hs);
    tj_arg e = lib_buffer_arg(b->e, TJ_DT_I32, 2, gs), g = lib_buffer_arg(b->g, TJ_DT_U32, 2, gs);
    tj_arg digits[7];
    digit_args(s, b, pass, key_passes, digits);
    tj_arg hist[] = {x, k, p, h, e, digits[0], digits[1], digits[2], digits[3]}, offsets[] = {h, o, e, g};
    tj_arg scatter[] = {x, k, p, g, lib_buffer_arg(b->k[!cur], kt, 1, &n),
                        lib_buffer_arg(payload_out(s, b, pass, cur), TJ_DT_I32, 1, &n), indices_arg(s, b, &n),
                        digits[0], digits[1], digits[2], digits[3], digits[4], digits[5], digits[6]};
    tj_tensor hf = tj_tensor_contiguous(b->h, TJ_DT_U32, 1, &flat);
    tj_tensor of = tj_tensor_contiguous(b->o, TJ_DT_U32, 1, &flat);
    return lib_launch(s->l, rk->hist, hist, 9, s->stream, s->err) ||
           lib_cumsum_1d(s->l, &hf, &of, s->stream, s->err) ||
           lib_launch(s->l, rk->offsets, offsets, 4, s->stream, s->err) ||
           lib_launch(s->l, rk->scatter, scatter, 14, s->stream, s->err);
}

/* The single pass's counts: every pass's digits counted by radix_upsweep
 * in one read of the input (after L, Hg and C are zeroed). */
static int upsweep(sort_job *s, const radix_kernels *rk, const radix_bufs *b, int key_passes)
{
    int64_t n = b->n, hs[] = {b->passes, DIGITS};
    tj_arg args[] = {lib_buffer_arg(s->x.data, s->x.dtype, 1, &n), lib_buffer_arg(b->hg, TJ_DT_U32, 2, hs),
                     lib_int_arg(b->passes), lib_int_arg(key_passes), lib_int_arg(s->ln.n), lib_int_arg(s->ln.q)};
    return lib_zero(s->l, b->l, b->zeroed / 4, s->stream, s->err) ||
           lib_launch(s->l, rk->upsweep, args, 6, s->stream, s->err);
}

/* One pass in one launch: radix_onesweep ranks each tile once and looks
 * back for its digits' offsets. */
static int onesweep_pass(sort_job *s, const radix_kernels *rk, const radix_bufs *b, int pass, int key_passes,
                         int cur)
{
    int64_t n = b->n, hs[] = {b->passes, DIGITS}, ls[] = {b->tiles, DIGITS}, np = b->passes;
    tj_arg args[16] = {lib_buffer_arg(s->x.data, s->x.dtype, 1, &n), lib_buffer_arg(b->k[cur], b->work, 1, &n),
                       lib_buffer_arg(b->p[cur], TJ_DT_I32, 1, &n), lib_buffer_arg(b->hg, TJ_DT_U32, 2, hs),
                       lib_buffer_arg(b->l, TJ_DT_U64, 2, ls), lib_buffer_arg(b->c, TJ_DT_I32, 1, &np),
                       lib_buffer_arg(b->k[!cur], b->work, 1, &n),
                       lib_buffer_arg(payload_out(s, b, pass, cur), TJ_DT_I32, 1, &n), indices_arg(s, b, &n)};
    digit_args(s, b, pass, key_passes, args + 9);
    return lib_launch(s->l, rk->onesweep, args, 16, s->stream, s->err);
}

/* Whether the sort takes the single pass. TJ_LIB_MULTI_PHASE asks for the
 * three kernels a pass; TILEJIT_LIB_SORT_MULTI_PHASE=1 or 0 chooses (the
 * benchmark's side-by-side rows). Otherwise the single pass, except on
 * CUDA: there it is correct but slower (13.1 against 19.1 G keys/s for 2^24
 * f32 on the H200, bench/RESULTS.md: its look-backs wait), so CUDA keeps
 * the three kernels until it is faster. Metal's kernels are the three (no
 * ordered accesses); the library's jits all have them. */
static int single_pass(const tj_lib *l, uint32_t flags)
{
    const char *ask = getenv("TILEJIT_LIB_SORT_MULTI_PHASE");
    if (flags & TJ_LIB_MULTI_PHASE)
        return 0;
    if (ask && (!strcmp(ask, "0") || !strcmp(ask, "1")))
        return !strcmp(ask, "0");
    return tj_jit_device(l->jit) != TJ_DEVICE_CUDA;
}

enum radix_path { RADIX_THREE, RADIX_ONE, RADIX_WIDE }; /* three kernels a pass, Onesweep, a long line */

/* The kernels of one path (NULL with err when one fails to compile); no
 * finish kernel where `finish` is NULL. */
static int radix_kernels_of(sort_job *s, enum radix_path path, const char *finish, radix_kernels *rk)
{
    static const char *const names[][3] = {{"radix_hist", "radix_offsets", "radix_scatter"},
                                           {"radix_upsweep", "radix_onesweep", NULL},
                                           {"radix_hist", "radix_offsets", "radix_scatter_wide"}};
    tj_dispatch **slots[][3] = {{&rk->hist, &rk->offsets, &rk->scatter},
                                {&rk->upsweep, &rk->onesweep, NULL},
                                {&rk->hist, &rk->offsets, &rk->scatter}};
    snprintf(s->tile, sizeof s->tile, "%d", RADIX_TILE);
    s->subst[SORT_SUBSTS] = (lib_subst){"RB", s->tile};
    for (int i = 0; i < 3 && names[path][i]; i++)
        if (!(*slots[path][i] = lib_dispatch(s->l, "sort", names[path][i], s->subst, SORT_SUBSTS + 1, s->err)))
            return 1;
    return finish && !(rk->finish = lib_dispatch(s->l, "sort", finish, s->subst, SORT_SUBSTS, s->err));
}

/* The results from the last pass's payload P: the input gathered in
 * sorted order (or copied, when P carried it), or the indices; nothing
 * when the last pass wrote them (direct, indices). */
static int radix_finish(sort_job *s, const radix_kernels *rk, const radix_bufs *b, int cur)
{
    int64_t n = b->n;
    if (b->direct || b->indices)
        return 0;
    tj_arg p = lib_buffer_arg(b->p[cur], TJ_DT_I32, 1, &n), ln = lib_int_arg(s->ln.n), lq = lib_int_arg(s->ln.q);
    tj_arg y = lib_buffer_arg(s->y.data, s->x.dtype, 1, &n);
    if (b->carry) {
        tj_arg fin[] = {p, y};
        return lib_launch(s->l, rk->finish, fin, 2, s->stream, s->err);
    }
    if (s->y.data) {
        tj_arg fin[] = {lib_buffer_arg(s->x.data, s->x.dtype, 1, &n), p, y, ln, lq};
        return lib_launch(s->l, rk->finish, fin, 5, s->stream, s->err);
    }
    tj_arg fin[] = {p, lib_buffer_arg(s->idx.data, TJ_DT_I64, 1, &n), ln, lq};
    return lib_launch(s->l, rk->finish, fin, 4, s->stream, s->err);
}

/* A sort of one line with keys of at most 32 bits carries the input's bit
 * patterns as the payload (no segment digit needs the flat index), so the
 * result is the last pass's P, not a gather of the input in random order:
 * for 32-bit keys that pass writes it into the output (direct), for
 * 16-bit ones a copy narrows it. */
static int radix_sort(sort_job *s, int key_bits, uint32_t flags)
{
    int values = s->y.data != NULL, one = single_pass(s->l, flags), key_passes = key_bits / 8;
    int64_t lines = s->ln.p * s->ln.q;
    radix_bufs b = {.passes = key_passes + (bits_of(lines - 1) + 7) / 8,
                    .carry = values && lines == 1 && key_bits <= 32,
                    .work = key_bits > 32 ? TJ_DT_U64 : TJ_DT_U32};
    b.direct = b.carry && key_bits == 32;
    b.indices = !values && lines == 1;
    b.n = s->ln.p * s->ln.n * s->ln.q;
    b.tiles = (b.n + RADIX_TILE - 1) / RADIX_TILE;
    const char *finish = b.direct || b.indices ? NULL
                         : b.carry ? "radix_finish_carried"
                         : values  ? "radix_finish_values"
                                   : "radix_finish_indices";
    radix_kernels rk = {0};
    if (radix_kernels_of(s, one ? RADIX_ONE : RADIX_THREE, finish, &rk) ||
        radix_scratch(s, b.n, tj_dtype_size(b.work), &b) ||
        (one && upsweep(s, &rk, &b, key_passes)))
        return 1;
    int cur = 0;
    for (int pass = 0; pass < b.passes; pass++, cur = !cur)
        if (one ? onesweep_pass(s, &rk, &b, pass, key_passes, cur) : radix_pass(s, &rk, &b, pass, key_passes, cur))
            return 1;
    return radix_finish(s, &rk, &b, cur);
}

/* ---- one line longer than a segment (the radix kernels over segments) ---- */

/* Where the wide passes store: [rows, 2^sh] views of a line (2^sh the
 * largest power of two in a segment, at most 2^16, so that the last row
 * reaches at most 2^16 - 1 elements past the line), and the segments. */
typedef struct wide_line {
    int64_t seg, rows;
    int sh;
} wide_line;

static wide_line wide_of(const tj_lib *l, int64_t n)
{
    wide_line w = {.seg = lib_segment(l, RADIX_TILE)};
    while (w.sh < 16 && (int64_t)2 << w.sh <= w.seg)
        w.sh++;
    w.rows = (n + ((int64_t)1 << w.sh) - 1) >> w.sh;
    return w;
}

/* The segment of a long line of n that starts at element `at`: its length
 * and its tiles [t0, t0 + nt) of the line's. */
typedef struct wide_segment {
    int64_t len, t0, nt;
} wide_segment;

static wide_segment segment_at(const wide_line *w, int64_t n, int64_t at)
{
    int64_t len = n - at < w->seg ? n - at : w->seg;
    return (wide_segment){len, at / RADIX_TILE, (len + RADIX_TILE - 1) / RADIX_TILE};
}

static tj_arg wide_arg(void *data, tj_dtype dt, const wide_line *w)
{
    return lib_buffer_arg(data, dt, 2, (int64_t[]){w->rows, (int64_t)1 << w->sh});
}

static void *at_element(void *data, tj_dtype dt, int64_t i)
{
    return (char *)data + i * tj_dtype_size(dt);
}

/* Tiles [t0, t0 + nt) of a [rows, tiles] (by_column) or [tiles, 256] table. */
static tj_arg tiles_arg(void *table, tj_dtype dt, int64_t tiles, int64_t t0, int64_t nt, int by_column)
{
    tj_tensor v = {.data = at_element(table, dt, by_column ? t0 : t0 * DIGITS), .dtype = dt, .rank = 2};
    v.shape[0] = by_column ? DIGITS : nt, v.shape[1] = by_column ? nt : DIGITS;
    v.strides[0] = by_column ? tiles : DIGITS, v.strides[1] = 1;
    return lib_tensor_arg(&v);
}

/* One pass of a long line: each segment's tiles counted by radix_hist, H
 * scanned, the tiles' offsets, each segment scattered into the whole line. */
static int wide_pass(sort_job *s, const radix_kernels *rk, const radix_bufs *b, const wide_line *w, int pass,
                     int key_passes, int cur)
{
    int64_t n = b->n, flat = DIGITS * b->tiles;
    tj_tensor hf = tj_tensor_contiguous(b->h, TJ_DT_U32, 1, &flat), of = tj_tensor_contiguous(b->o, TJ_DT_U32, 1, &flat);
    for (int64_t at = 0; at < n; at += w->seg) {
        wide_segment g = segment_at(w, n, at);
        tj_arg hist[] = {lib_buffer_arg(at_element(s->x.data, s->x.dtype, at), s->x.dtype, 1, &g.len),
                         lib_buffer_arg(at_element(b->k[cur], b->work, at), b->work, 1, &g.len),
                         lib_buffer_arg(at_element(b->p[cur], TJ_DT_I32, at), TJ_DT_I32, 1, &g.len),
                         tiles_arg(b->h, TJ_DT_U32, b->tiles, g.t0, g.nt, 1),
                         tiles_arg(b->e, TJ_DT_I32, b->tiles, g.t0, g.nt, 0),
                         lib_int_arg(pass), lib_int_arg(key_passes), lib_int_arg(g.len), lib_int_arg(1)};
        if (lib_launch(s->l, rk->hist, hist, 9, s->stream, s->err))
            return 1;
    }
    tj_arg offsets[] = {tiles_arg(b->h, TJ_DT_U32, b->tiles, 0, b->tiles, 1),
                        tiles_arg(b->o, TJ_DT_U32, b->tiles, 0, b->tiles, 1),
                        tiles_arg(b->e, TJ_DT_I32, b->tiles, 0, b->tiles, 0),
                        tiles_arg(b->g, TJ_DT_U32, b->tiles, 0, b->tiles, 0)};
    if (lib_cumsum_1d(s->l, &hf, &of, s->stream, s->err) || lib_launch(s->l, rk->offsets, offsets, 4, s->stream, s->err))
        return 1;
    int last = pass == b->passes - 1;
    void *indices = b->indices ? s->idx.data : b->k[0]; /* a stand-in no pass writes but an argsort's last */
    for (int64_t at = 0; at < n; at += w->seg) {
        wide_segment g = segment_at(w, n, at);
        tj_arg scatter[] = {lib_buffer_arg(at_element(s->x.data, s->x.dtype, at), s->x.dtype, 1, &g.len),
                            lib_buffer_arg(at_element(b->k[cur], b->work, at), b->work, 1, &g.len),
                            lib_buffer_arg(at_element(b->p[cur], TJ_DT_U32, at), TJ_DT_U32, 1, &g.len),
                            tiles_arg(b->g, TJ_DT_U32, b->tiles, g.t0, g.nt, 0),
                            wide_arg(b->k[!cur], b->work, w),
                            wide_arg(payload_out(s, b, pass, cur), TJ_DT_U32, w),
                            wide_arg(indices, TJ_DT_I64, w),
                            lib_int_arg(pass), lib_int_arg(key_passes), lib_int_arg(at), lib_int_arg(w->sh),
                            lib_int_arg(b->carry), lib_int_arg(last), lib_int_arg(b->indices)};
        if (lib_launch(s->l, rk->scatter, scatter, 14, s->stream, s->err))
            return 1;
    }
    return 0;
}

/* The results of a long line where the last pass did not write them: the
 * carried 16-bit patterns narrowed, or (64-bit keys) the line gathered
 * through the places, a segment of the output a launch. */
static int wide_finish(sort_job *s, const radix_kernels *rk, const radix_bufs *b, const wide_line *w, int cur)
{
    for (int64_t at = 0; !b->direct && !b->indices && at < b->n; at += w->seg) {
        wide_segment g = segment_at(w, b->n, at);
        tj_arg y = lib_buffer_arg(at_element(s->y.data, s->x.dtype, at), s->x.dtype, 1, &g.len);
        tj_arg carried[] = {lib_buffer_arg(at_element(b->p[cur], TJ_DT_I32, at), TJ_DT_I32, 1, &g.len), y};
        tj_arg gathered[] = {wide_arg(s->x.data, s->x.dtype, w),
                             lib_buffer_arg(at_element(b->p[cur], TJ_DT_U32, at), TJ_DT_U32, 1, &g.len), y,
                             lib_int_arg(w->sh)};
        if (b->carry ? lib_launch(s->l, rk->finish, carried, 2, s->stream, s->err)
                     : lib_launch(s->l, rk->finish, gathered, 4, s->stream, s->err))
            return 1;
    }
    return 0;
}

/* One line (s's x, y or idx: contiguous, 1-D) longer than a segment, by
 * the three radix kernels a pass over segments: the payload carries the
 * input's bits (a sort of keys of at most 32 bits) or the element's place
 * in the line, u32, so the line holds at most 2^32 - 1 elements. */
static int wide_sort(sort_job *s, int64_t n, int key_bits)
{
    int values = s->y.data != NULL, key_passes = key_bits / 8;
    radix_bufs b = {.passes = key_passes, .carry = values && key_bits <= 32,
                    .work = key_bits > 32 ? TJ_DT_U64 : TJ_DT_U32, .n = n};
    b.direct = b.carry && key_bits == 32;
    b.indices = !values;
    b.tiles = (n + RADIX_TILE - 1) / RADIX_TILE;
    wide_line w = wide_of(s->l, n);
    const char *finish = b.direct || b.indices ? NULL : b.carry ? "radix_finish_carried" : "radix_gather_wide";
    radix_kernels rk = {0};
    if (radix_kernels_of(s, RADIX_WIDE, finish, &rk) ||
        radix_scratch(s, w.rows << w.sh, tj_dtype_size(b.work), &b))
        return 1;
    int cur = 0;
    for (int pass = 0; pass < b.passes; pass++, cur = !cur)
        if (wide_pass(s, &rk, &b, &w, pass, key_passes, cur))
            return 1;
    return wide_finish(s, &rk, &b, &w, cur);
}

/* ---- lines in groups of at most a segment ---- */

/* Lines [p0, p0 + np) of a [P, N, Q] view. */
static tj_tensor lines_from(const tj_tensor *t, int64_t p0, int64_t np)
{
    tj_tensor v = *t;
    v.data = t->data ? at_element(t->data, t->dtype, p0 * t->strides[0]) : NULL;
    v.shape[0] = np;
    return v;
}

/* Every line by a path whose kernels index it: the outer lines a group of
 * at most a segment's elements at a time (the rows' tile sort or the
 * radix sort, each group a sort of its own: lines never mix), a line (the
 * axis last) longer than a segment by itself, by wide_sort. */
static int sort_groups(sort_job *s, int rows, int key_bits, uint32_t flags)
{
    sort_job all = *s;
    int64_t seg = lib_segment(s->l, RADIX_TILE), per = s->ln.n * s->ln.q, group = per <= seg ? seg / per : 1;
    if (per > seg && s->ln.q > 1)
        return tj_rt_fail(s->err, "%s: lines of %lld elements along axis %d, %lld interleaved after it, are more "
                                  "than one launch sorts (%lld elements) when the axis is not the last; "
                                  "move the axis last", s->fn, (long long)s->ln.n, s->ln.axis, (long long)s->ln.q,
                          (long long)seg);
    if (per > seg && s->ln.n > UINT32_MAX)
        return tj_rt_fail(s->err, "%s: a line of %lld elements is more than the radix sort's 32-bit places address "
                                  "(2^32 - 1)", s->fn, (long long)s->ln.n);
    for (int64_t p0 = 0; p0 < all.ln.p; p0 += group) {
        int64_t np = all.ln.p - p0 < group ? all.ln.p - p0 : group;
        s->x = lines_from(&all.x, p0, np), s->y = lines_from(&all.y, p0, np), s->idx = lines_from(&all.idx, p0, np);
        s->ln.p = np;
        if (per > seg ? wide_sort(s, s->ln.n, key_bits) : rows ? sort_rows(s) : radix_sort(s, key_bits, flags))
            return 1;
    }
    return 0;
}

/* Whether t is row-major contiguous (the radix sort indexes it flat). */
static int contiguous(const tj_tensor *t)
{
    int64_t stride = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->strides[i] != stride)
            return 0;
        stride *= t->shape[i];
    }
    return 1;
}

static int run_sort(tj_lib *l, const char *fn, const tj_tensor *x, const tj_tensor *y, const tj_tensor *idx,
                    int axis, uint32_t flags, void *stream, tj_rt_error *err)
{
    const tj_tensor *out = y ? y : idx;
    if (!l || !x || !out)
        return tj_rt_fail(err, "%s: NULL library or tensor", fn);
    if (flags & ~(uint32_t)(TJ_LIB_DESCENDING | TJ_LIB_MULTI_PHASE))
        return tj_rt_fail(err, "%s: unknown flags 0x%x", fn, flags);
    sort_job s = {.l = l, .fn = fn, .stream = stream, .err = err};
    const char *key_fn;
    tj_dtype bits;
    if (key_kind(x->dtype, &bits, &key_fn))
        return tj_rt_fail(err, "%s: keys of dtype %s are not supported (f32, f16, bf16, i32, u32, i64 are)", fn,
                          tj_dtype_name(x->dtype));
    if (y && y->dtype != x->dtype)
        return tj_rt_fail(err, "%s: the output is %s, the input %s", fn, tj_dtype_name(y->dtype),
                          tj_dtype_name(x->dtype));
    if (idx && idx->dtype != TJ_DT_I64)
        return tj_rt_fail(err, "%s: the indices must be i64, not %s", fn, tj_dtype_name(idx->dtype));
    lib_lines ol;
    if (lib_same_shape(x, out, fn, err) || lib_lines_of(x, axis, fn, &s.ln, err) ||
        lib_lines_of(out, axis, fn, &ol, err))
        return 1;
    if (lib_numel(x) == 0)
        return 0;
    s.x = lib_as_lines(x, &s.ln);
    s.x.dtype = bits;
    if (y) {
        s.y = lib_as_lines(y, &s.ln);
        s.y.dtype = bits;
    }
    if (idx)
        s.idx = lib_as_lines(idx, &s.ln);
    s.subst[0] = (lib_subst){"K", tj_dtype_name(bits)};
    s.subst[1] = (lib_subst){"KEY", key_fn};
    s.subst[2] = (lib_subst){"DESC", flags & TJ_LIB_DESCENDING ? "1" : "0"};
    s.subst[3] = (lib_subst){"W", bits == TJ_DT_U64 ? "u64" : "u32"}; /* the radix sort's keys between passes */
    int rows = s.ln.q == 1 && s.ln.n <= ROW_TILE_MAX && bits != TJ_DT_U64;
    if (!rows && (!contiguous(x) || !contiguous(out)))
        return tj_rt_fail(err, "%s: an array sorted by the radix sort (lines longer than %d, 64-bit keys or an "
                               "axis that is not the last) must be row-major contiguous", fn, ROW_TILE_MAX);
    pthread_mutex_lock(&l->lock);
    int rc = sort_groups(&s, rows, tj_dtype_bits(bits), flags);
    pthread_mutex_unlock(&l->lock);
    return rc;
}

int tj_lib_sort(tj_lib *l, const tj_tensor *x, const tj_tensor *y, int axis, uint32_t flags, void *stream,
                tj_rt_error *err)
{
    return run_sort(l, "tj_lib_sort", x, y, NULL, axis, flags, stream, err);
}

int tj_lib_argsort(tj_lib *l, const tj_tensor *x, const tj_tensor *idx, int axis, uint32_t flags, void *stream,
                   tj_rt_error *err)
{
    return run_sort(l, "tj_lib_argsort", x, NULL, idx, axis, flags, stream, err);
}
