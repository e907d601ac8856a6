/* The arguments of `tilejit run`: .npy tensors (with f32 <-> f16/bf16
 * conversion), scalars, --random tensors, and the dims their shapes bind. */
#include <stdlib.h>
#include <string.h>

#include "run.h"

/* Random tensors larger than this are refused rather than attempted. */
#define MAX_RANDOM_BYTES ((uint64_t)16 << 30)

uint64_t run_numel(const tj_tensor *t)
{
    uint64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= (uint64_t)t->shape[i];
    return n;
}

size_t run_bytes(const tj_tensor *t) { return (size_t)run_numel(t) * (size_t)tj_dtype_size(t->dtype); }

tj_arg *run_copy_args(tj_ctx *c, const tj_arg *args, uint32_t n)
{
    tj_arg *copy = tj_alloc(c, (n + 1) * sizeof *copy);
    for (uint32_t i = 0; i < n; i++) {
        copy[i] = args[i];
        if (!args[i].is_tensor)
            continue;
        size_t bytes = run_bytes(&args[i].tensor);
        copy[i].tensor.data = tj_alloc(c, bytes + 1);
        memcpy(copy[i].tensor.data, args[i].tensor.data, bytes);
    }
    return copy;
}

void run_restore_args(tj_arg *dst, const tj_arg *src, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (src[i].is_tensor)
            memcpy(dst[i].tensor.data, src[i].tensor.data, run_bytes(&src[i].tensor));
}

/* ---- dims ------------------------------------------------------------------------ */

static int find_dim(const run_state *rs, const char *name)
{
    for (uint32_t i = 0; i < rs->ndims; i++)
        if (!strcmp(rs->dims[i].name, name))
            return (int)i;
    return -1;
}

static void add_dim(tj_ctx *c, run_state *rs, const char *name, int64_t value, const char *from)
{
    uint32_t cap = rs->dimcap;
    rs->dims = tj_grow(c, rs->dims, &rs->dimcap, rs->ndims + 1, sizeof *rs->dims);
    rs->dim_from = tj_grow(c, rs->dim_from, &cap, rs->ndims + 1, sizeof *rs->dim_from);
    rs->dims[rs->ndims] = (tj_binding){name, value};
    rs->dim_from[rs->ndims++] = from;
}

/* Checks an array's shape against the parameter's declaration and binds
 * its dim names. */
static int bind_shape(tj_ctx *c, run_state *rs, const tj_param *p, const run_tensor *t)
{
    const npy_array *a = &t->file;
    if (a->rank != p->rank) {
        cli_file_error(c, t->path, "%s: the array has %d dimension%s but the parameter is %s", t->what, a->rank,
                       a->rank == 1 ? "" : "s", cli_param_decl(c, p));
        return -1;
    }
    for (int d = 0; d < p->rank; d++) {
        if (!p->dim_names[d]) {
            if (a->shape[d] == p->dim_sizes[d])
                continue;
            cli_file_error(c, t->path, "%s: axis %d has size %lld but the parameter is %s", t->what, d,
                           (long long)a->shape[d], cli_param_decl(c, p));
            return -1;
        }
        int i = find_dim(rs, p->dim_names[d]);
        if (i < 0) {
            tj_buf from = {0};
            tj_buf_printf(&from, "%s (%s)", t->what, t->path);
            add_dim(c, rs, p->dim_names[d], a->shape[d], cli_buf_take(c, &from));
        } else if (rs->dims[i].value != a->shape[d]) {
            cli_file_error(c, t->path, "%s: dim %s is %lld here but %lld in %s", t->what, p->dim_names[d],
                           (long long)a->shape[d], (long long)rs->dims[i].value, rs->dim_from[i]);
            return -1;
        }
    }
    return 0;
}

/* ---- dtypes ------------------------------------------------------------------------ */

static int is_half(tj_dtype dt) { return dt == TJ_DT_F16 || dt == TJ_DT_BF16; }

static float half_to_f32(tj_dtype dt, uint16_t h) { return dt == TJ_DT_F16 ? tj_f16_to_f32(h) : tj_bf16_to_f32(h); }
static uint16_t f32_to_half(tj_dtype dt, float f) { return dt == TJ_DT_F16 ? tj_f32_to_f16(f) : tj_f32_to_bf16(f); }

/* Converts n elements between f32 and f16/bf16 (either direction). */
static void convert(tj_dtype to, void *dst, tj_dtype from, const void *src, uint64_t n)
{
    if (to == TJ_DT_F32) {
        float *d = dst;
        const uint16_t *s = src;
        for (uint64_t i = 0; i < n; i++)
            d[i] = half_to_f32(from, s[i]);
    } else {
        uint16_t *d = dst;
        const float *s = src;
        for (uint64_t i = 0; i < n; i++)
            d[i] = f32_to_half(to, s[i]);
    }
}

/* Gives the tensor its data in the parameter's dtype: the file's buffer
 * when they agree (bf16 parameters take '<u2' arrays as raw bits), a
 * converted copy for f32 <-> f16/bf16, an error otherwise. */
static int adopt_dtype(tj_ctx *c, const tj_param *p, run_tensor *t, tj_arg *arg)
{
    tj_dtype file = t->file.dtype, want = p->dtype;
    arg->tensor.data = t->file.data;
    if (file == want || (want == TJ_DT_BF16 && file == TJ_DT_U16))
        return 0;
    if (!((file == TJ_DT_F32 && is_half(want)) || (is_half(file) && want == TJ_DT_F32))) {
        cli_file_error(c, t->path, "%s: the array's dtype is %s but the parameter is %s (only f32 <-> f16/bf16 "
                                   "are converted)", t->what, tj_dtype_name(file), cli_param_decl(c, p));
        return -1;
    }
    arg->tensor.data = tj_alloc(c, (size_t)t->file.numel * (size_t)tj_dtype_size(want) + 1);
    convert(want, arg->tensor.data, file, t->file.data, t->file.numel);
    t->converted = 1;
    cli_file_note(c, t->path, "%s: converting the %s array to %s for the kernel", t->what, tj_dtype_name(file),
                  tj_dtype_name(want));
    return 0;
}

void run_convert_back(const run_state *rs, uint32_t param)
{
    const run_tensor *t = &rs->tensors[param];
    if (t->converted)
        convert(t->file.dtype, t->file.data, rs->k->params[param].dtype, rs->args[param].tensor.data, t->file.numel);
}

static void set_layout(tj_tensor *tt, tj_dtype dt, const npy_array *a)
{
    tt->dtype = dt;
    tt->rank = a->rank;
    int64_t stride = 1;
    for (int d = a->rank - 1; d >= 0; d--) {
        tt->shape[d] = a->shape[d];
        tt->strides[d] = stride;
        /* Saturates: only an empty array gets here with a product past
         * int64 (shape (0, 2^31-1, ...)), and tj_check_args refuses such
         * a stride where an axis could reach it. */
        int64_t extent = a->shape[d] ? a->shape[d] : 1;
        stride = stride > INT64_MAX / extent ? INT64_MAX : stride * extent;
    }
}

/* ---- arguments ------------------------------------------------------------------------ */

static const char *argument_name(tj_ctx *c, const tj_param *p)
{
    tj_buf b = {0};
    tj_buf_printf(&b, "argument '%s'", p->name);
    return cli_buf_take(c, &b);
}

static int load_tensor(tj_ctx *c, run_state *rs, uint32_t i, const char *path)
{
    const tj_param *p = &rs->k->params[i];
    run_tensor *t = &rs->tensors[i];
    t->path = path;
    t->what = argument_name(c, p);
    if (npy_read(c, path, t->what, &t->file) || bind_shape(c, rs, p, t) || adopt_dtype(c, p, t, &rs->args[i]))
        return -1;
    set_layout(&rs->args[i].tensor, p->dtype, &t->file);
    return 0;
}

static int make_random_tensor(tj_ctx *c, run_state *rs, uint32_t i, run_rng *rng)
{
    const tj_param *p = &rs->k->params[i];
    run_tensor *t = &rs->tensors[i];
    t->what = argument_name(c, p);
    npy_array *a = &t->file;
    a->rank = p->rank;
    a->numel = 1;
    for (int d = 0; d < p->rank; d++) {
        int j = p->dim_names[d] ? find_dim(rs, p->dim_names[d]) : -1;
        if (p->dim_names[d] && j < 0) {
            tj_error(c, "%s: no size for dim %s (give --shape %s=INT or %s=PATH.npy)", t->what, p->dim_names[d],
                     p->dim_names[d], p->name);
            return -1;
        }
        a->shape[d] = j >= 0 ? rs->dims[j].value : p->dim_sizes[d];
        if (a->shape[d] > CLI_MAX_DIM) {
            tj_error(c, "%s: dim %d is %lld; sizes must be in [0, 2^31)", t->what, d, (long long)a->shape[d]);
            return -1;
        }
        uint64_t extent = (uint64_t)a->shape[d];
        a->numel = extent && a->numel > MAX_RANDOM_BYTES / extent ? MAX_RANDOM_BYTES + 1 : a->numel * extent;
    }
    int size = tj_dtype_size(p->dtype);
    if (a->numel > MAX_RANDOM_BYTES / (uint64_t)size) {
        tj_error(c, "%s: a random tensor of this shape would take more than %llu GiB", t->what,
                 (unsigned long long)(MAX_RANDOM_BYTES >> 30));
        return -1;
    }
    /* Written out (with -o) as the parameter's dtype; bf16 as '<u2' bits. */
    a->dtype = p->dtype == TJ_DT_BF16 ? TJ_DT_U16 : p->dtype;
    a->order = size == 1 ? '|' : npy_host_order();
    a->data = tj_alloc(c, (size_t)(a->numel * (uint64_t)size) + 1);
    run_fill_random(rng, p->dtype, a->data, a->numel);
    rs->args[i].tensor.data = a->data;
    set_layout(&rs->args[i].tensor, p->dtype, a);
    return 0;
}

static int parse_uint(const char *s, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return -1;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return *s ? -1 : 0;
}

/* ARG=NUMBER for a scalar parameter of any dtype. */
static int parse_scalar(tj_ctx *c, const tj_param *p, const char *text, tj_arg *arg)
{
    tj_dtype dt = p->dtype;
    int bits = tj_dtype_bits(dt);
    if (dt == TJ_DT_BOOL) {
        int t = !strcmp(text, "true") || !strcmp(text, "1");
        if (!t && strcmp(text, "false") && strcmp(text, "0"))
            goto bad;
        arg->scalar.i = t;
    } else if (tj_dtype_is_float(dt)) {
        char *end;
        arg->scalar.f = strtod(text, &end);
        if (end == text || *end)
            goto bad;
    } else if (tj_dtype_is_signed(dt)) {
        int64_t v;
        if (cli_parse_int(text, &v) || (bits < 64 && (v < -((int64_t)1 << (bits - 1)) || v >= (int64_t)1 << (bits - 1))))
            goto bad;
        arg->scalar.i = v;
    } else {
        uint64_t v;
        if (parse_uint(text, &v) || (bits < 64 && v >> bits))
            goto bad;
        arg->scalar.i = (int64_t)v;
    }
    return 0;
bad:
    tj_error(c, "argument '%s': '%s' is not a valid %s value", p->name, text, tj_dtype_name(dt));
    return -1;
}

static const char *find_arg(const cli_opts *o, const char *name)
{
    for (uint32_t i = 0; i < o->nargs; i++)
        if (!strcmp(o->args[i].name, name))
            return o->args[i].value;
    return NULL;
}

static int check_arg_names(tj_ctx *c, const cli_opts *o, const cli_kernel *k)
{
    int bad = 0;
    for (uint32_t i = 0; i < o->nargs; i++) {
        uint32_t j = 0;
        while (j < k->nparams && strcmp(k->params[j].name, o->args[i].name))
            j++;
        if (j == k->nparams) {
            tj_error(c, "unknown argument '%s' (parameters: %s)", o->args[i].name, cli_param_list(c, k));
            bad = 1;
        }
    }
    return bad;
}

/* --shape N=2147483648 fails here, before any tensor of that size is made. */
static int check_shape_option(tj_ctx *c, const tj_binding *b)
{
    if (b->value <= CLI_MAX_DIM)
        return 0;
    tj_error(c, "--shape %s=%lld: sizes must be in [0, 2^31)", b->name, (long long)b->value);
    return 1;
}

int run_bind_args(tj_ctx *c, const cli_opts *o, const cli_kernel *k, run_state *rs)
{
    memset(rs, 0, sizeof *rs);
    rs->k = k;
    rs->args = tj_alloc(c, (k->nparams + 1) * sizeof *rs->args);
    rs->tensors = tj_alloc(c, (k->nparams + 1) * sizeof *rs->tensors);
    int bad = check_arg_names(c, o, k);
    for (uint32_t i = 0; i < o->nshapes && !bad; i++)
        bad = check_shape_option(c, &o->shapes[i]);
    for (uint32_t i = 0; i < o->nshapes && !bad; i++) {
        tj_buf from = {0};
        tj_buf_printf(&from, "--shape %s=%lld", o->shapes[i].name, (long long)o->shapes[i].value);
        add_dim(c, rs, o->shapes[i].name, o->shapes[i].value, cli_buf_take(c, &from));
    }
    /* Arrays first, so random tensors can take their sizes. */
    for (uint32_t i = 0; i < k->nparams; i++) {
        const char *value = find_arg(o, k->params[i].name);
        rs->args[i].is_tensor = k->params[i].rank > 0;
        if (!value)
            continue;
        if (rs->args[i].is_tensor)
            bad |= load_tensor(c, rs, i, value) != 0;
        else
            bad |= parse_scalar(c, &k->params[i], value, &rs->args[i]) != 0;
    }
    run_rng rng = {o->seed};
    for (uint32_t i = 0; i < k->nparams && !bad; i++) {
        const tj_param *p = &k->params[i];
        if (find_arg(o, p->name))
            continue;
        if (rs->args[i].is_tensor && o->random) {
            bad |= make_random_tensor(c, rs, i, &rng) != 0;
            continue;
        }
        tj_error(c, "missing argument '%s' (%s: give %s=%s)", p->name, cli_param_decl(c, p), p->name,
                 rs->args[i].is_tensor ? "PATH.npy, or use --random" : "NUMBER");
        bad = 1;
    }
    return bad ? -1 : 0;
}
