/* tj_lib (tilejit/lib.h): the compiled kernels, the scratch, and the
 * shape helpers every family shares. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/lib_internal.h"

tj_lib *tj_lib_open(tj_jit *j, tj_rt_error *err)
{
    return tj_lib_open_options(j, NULL, err);
}

tj_lib *tj_lib_open_options(tj_jit *j, const tj_lib_options *opts, tj_rt_error *err)
{
    int64_t segment = opts ? opts->segment : 0;
    if (!j) {
        tj_rt_fail(err, "tj_lib_open: NULL jit");
        return NULL;
    }
    if (segment < 0 || segment > TJ_LIB_SEGMENT_MAX) {
        tj_rt_fail(err, "tj_lib_open: segment = %lld is outside [0, %lld] (0: the default)", (long long)segment,
                   (long long)TJ_LIB_SEGMENT_MAX);
        return NULL;
    }
    tj_lib *l = calloc(1, sizeof *l);
    if (!l) {
        tj_rt_fail(err, "tj_lib_open: out of memory");
        return NULL;
    }
    l->jit = j;
    l->segment = segment ? segment : TJ_LIB_SEGMENT_MAX;
    pthread_mutex_init(&l->lock, NULL);
    return l;
}

int64_t lib_segment(const tj_lib *l, int64_t tile)
{
    int64_t n = l->segment / tile * tile;
    return n > 0 ? n : tile;
}

static void free_memory(tj_lib *l, void *p)
{
    if (tj_jit_device(l->jit) == TJ_DEVICE_CUDA)
        tj_cuda_free(tj_jit_cuda(l->jit), p, NULL);
    else
        free(p);
}

void tj_lib_close(tj_lib *l)
{
    if (!l)
        return;
    for (uint32_t i = 0; i < l->nkernels; i++) {
        tj_dispatch_free(l->kernels[i].d);
        free(l->kernels[i].key);
    }
    free(l->kernels);
    for (uint32_t i = 0; i < l->nscratch; i++)
        free_memory(l, l->scratch[i].data);
    free(l->scratch);
    for (uint32_t i = 0; i < l->nretired; i++)
        free_memory(l, l->retired[i]);
    free(l->retired);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

/* ---- kernels ------------------------------------------------------------------------------ */

static const char *family_source(const char *family)
{
    for (unsigned i = 0; i < tj_lib_nsources; i++)
        if (!strcmp(tj_lib_sources[i].name, family))
            return tj_lib_sources[i].text;
    return NULL;
}

/* Stand-in values for the keys that only some kernels of a family read: a
 * family's source is substituted whole, so every key needs a value for it
 * to parse, and a request for a kernel that does not read a key need not
 * name it. A kernel that reads the key (`readers`) must be given its value. */
static const struct placeholder {
    const char *family, *key, *value;
    const char *readers; /* the kernels that read it, each followed by a space */
} placeholders[] = {
    {"selective_scan", "W", "4", "ss_chunked ss_chunked_rows "},
    {"selective_scan", "TT", "16", "ss_chunked ss_chunked_rows "},
    {"selective_scan", "SEG", "32", "ss_segment_state ss_segment_out "},
    {"selective_scan", "TTS", "4", "ss_segment_state ss_segment_out "},
    {"sort", "VALUES", "0", "sort_rows "},
    {"sort", "RB", "4096", "radix_hist radix_scatter radix_scatter_wide radix_upsweep radix_onesweep "},
};

static int reads(const struct placeholder *p, const char *kernel)
{
    if (!kernel) /* the whole source, for every kernel: no stand-ins */
        return 1;
    if (!*kernel) /* names no kernel; strstr would match at every place, past the list's end */
        return 0;
    size_t n = strlen(kernel);
    for (const char *at = strstr(p->readers, kernel); at; at = strstr(at + 1, kernel))
        if ((at == p->readers || at[-1] == ' ') && at[n] == ' ')
            return 1;
    return 0;
}

static int is_key(const char *name, const char *key, size_t len)
{
    return strlen(name) == len && !strncmp(name, key, len);
}

/* What lib_dispatch is asked for. */
typedef struct request {
    const char *family, *kernel;
    const lib_subst *subst;
    uint32_t nsubst;
} request;

/* The value of the key of `len` characters at `key`: the request's, else
 * the family's stand-in where the kernel does not read it; NULL when
 * neither. */
static const char *value_of(const request *r, const char *key, size_t len)
{
    for (uint32_t i = 0; i < r->nsubst; i++)
        if (is_key(r->subst[i].key, key, len))
            return r->subst[i].value;
    for (size_t i = 0; i < sizeof placeholders / sizeof *placeholders; i++) {
        const struct placeholder *p = &placeholders[i];
        if (!strcmp(p->family, r->family) && is_key(p->key, key, len) && !reads(p, r->kernel))
            return p->value;
    }
    return NULL;
}

/* The length of src with every $KEY replaced (a key is a maximal run of
 * capitals, digits and '_' after '$'), written to out unless NULL; -1 with
 * err when a key has no value. */
static long long expand(const request *r, const char *src, char *out, tj_rt_error *err)
{
    long long len = 0;
    for (const char *s = src; *s;) {
        if (*s != '$') {
            if (out)
                out[len] = *s;
            len++, s++;
            continue;
        }
        size_t k = 1;
        while ((s[k] >= 'A' && s[k] <= 'Z') || (s[k] >= '0' && s[k] <= '9') || s[k] == '_')
            k++;
        const char *value = value_of(r, s + 1, k - 1);
        if (!value) {
            tj_rt_fail(err, "tilejit lib: no value for '%.*s' in a library kernel", (int)k, s);
            return -1;
        }
        size_t n = strlen(value);
        if (out)
            memcpy(out + len, value, n);
        len += (long long)n;
        s += k;
    }
    return len;
}

/* The family's source src substituted; NULL with err. */
static char *substitute(const request *r, const char *src, tj_rt_error *err)
{
    long long len = expand(r, src, NULL, err);
    char *out = len < 0 ? NULL : malloc((size_t)len + 1);
    if (len >= 0 && !out)
        tj_rt_fail(err, "tilejit lib: out of memory");
    if (!out)
        return NULL;
    expand(r, src, out, err);
    out[len] = '\0';
    return out;
}

/* family, kernel and every key and value, each with its terminating NUL
 * (so no two requests share a key unless they substitute the same text),
 * its length in *len: what a call compares instead of building the
 * substituted source, which for the longer families is ~15 KiB copied byte
 * by byte (20-30 us a call on the host). NULL when out of memory. */
static char *request_key(const request *r, size_t *len)
{
    size_t cap = strlen(r->family) + strlen(r->kernel) + 2;
    for (uint32_t i = 0; i < r->nsubst; i++)
        cap += strlen(r->subst[i].key) + strlen(r->subst[i].value) + 2;
    char *key = malloc(cap), *at = key;
    for (uint32_t i = 0; key && i < 2 + 2 * r->nsubst; i++) {
        const lib_subst *sb = i >= 2 ? &r->subst[i / 2 - 1] : NULL;
        const char *part = i == 0 ? r->family : i == 1 ? r->kernel : i % 2 ? sb->value : sb->key;
        size_t k = strlen(part) + 1;
        memcpy(at, part, k);
        at += k;
    }
    *len = cap;
    return key;
}

char *lib_kernel_source(const char *family, const char *kernel, const lib_subst *subst, uint32_t nsubst,
                        tj_rt_error *err)
{
    const char *src = family_source(family);
    if (!src) {
        tj_rt_fail(err, "tilejit lib: no kernel family '%s' built in", family);
        return NULL;
    }
    return substitute(&(request){family, kernel, subst, nsubst}, src, err);
}

tj_dispatch *lib_dispatch(tj_lib *l, const char *family, const char *kernel, const lib_subst *subst,
                          uint32_t nsubst, tj_rt_error *err)
{
    request r = {family, kernel, subst, nsubst};
    size_t klen = 0;
    char *key = request_key(&r, &klen);
    if (!key) {
        tj_rt_fail(err, "tilejit lib: out of memory");
        return NULL;
    }
    for (uint32_t i = 0; i < l->nkernels; i++)
        if (l->kernels[i].key_len == klen && !memcmp(l->kernels[i].key, key, klen)) {
            free(key);
            return l->kernels[i].d;
        }
    char *text = lib_kernel_source(family, kernel, subst, nsubst, err);
    if (!text) {
        free(key);
        return NULL;
    }
    char file[64];
    snprintf(file, sizeof file, "<tilejit lib: %s.tj>", family);
    tj_dispatch *d = tj_dispatch_new(l->jit, &(tj_compile_request){
        .file = file, .source = text, .len = strlen(text), .kernel = kernel, .reason = "tilejit lib"}, err);
    free(text); /* the dispatch keeps its own copy */
    if (!d || tj_heap_grow_in_place((void **)&l->kernels, &l->cap, l->nkernels + 1, sizeof *l->kernels)) {
        if (d)
            tj_rt_fail(err, "tilejit lib: out of memory");
        tj_dispatch_free(d);
        free(key);
        return NULL;
    }
    l->kernels[l->nkernels++] = (lib_kernel){key, klen, d};
    return d;
}

int lib_launch(tj_lib *l, tj_dispatch *d, const tj_arg *args, uint32_t nargs, void *stream, tj_rt_error *err)
{
    (void)l;
    return tj_dispatch_launch(d, args, nargs, stream, err);
}

/* ---- scratch ------------------------------------------------------------------------------ */

/* The scratch of (stream, owner), a new empty one the first time; NULL when
 * out of memory. */
static lib_scratch *scratch_slot(tj_lib *l, void *stream, int owner)
{
    for (uint32_t i = 0; i < l->nscratch; i++)
        if (l->scratch[i].stream == stream && l->scratch[i].owner == owner)
            return &l->scratch[i];
    if (tj_heap_grow_in_place((void **)&l->scratch, &l->scratch_cap, l->nscratch + 1, sizeof *l->scratch))
        return NULL;
    l->scratch[l->nscratch] = (lib_scratch){stream, owner, NULL, 0};
    return &l->scratch[l->nscratch++];
}

static void *new_memory(tj_lib *l, size_t bytes, tj_rt_error *err)
{
    if (tj_jit_device(l->jit) == TJ_DEVICE_CUDA)
        return tj_cuda_malloc(tj_jit_cuda(l->jit), bytes, err);
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p)
        tj_rt_fail(err, "tilejit lib: out of memory for %zu bytes of scratch", bytes);
    return p;
}

static int retire(tj_lib *l, void *p)
{
    if (tj_heap_grow_in_place((void **)&l->retired, &l->retired_cap, l->nretired + 1, sizeof *l->retired))
        return 1;
    l->retired[l->nretired++] = p;
    return 0;
}

int lib_zero(tj_lib *l, void *data, size_t words, void *stream, tj_rt_error *err)
{
    tj_dispatch *d = lib_dispatch(l, "util", "zero_u32", NULL, 0, err);
    if (!d)
        return 1;
    tj_arg a = lib_buffer_arg(data, TJ_DT_U32, 1, (int64_t[]){(int64_t)words});
    return lib_launch(l, d, &a, 1, stream, err);
}

void *lib_scratch_get(tj_lib *l, void *stream, size_t bytes, int zero, tj_rt_error *err)
{
    return lib_scratch_owned(l, stream, LIB_SCRATCH_DEFAULT, bytes, zero, err);
}

void *lib_scratch_owned(tj_lib *l, void *stream, int owner, size_t bytes, int zero, tj_rt_error *err)
{
    if (bytes > (size_t)1 << 48) { /* no device holds it; and the rounding below cannot wrap */
        tj_rt_fail(err, "tilejit lib: %zu bytes of scratch are more than any device holds (2^48)", bytes);
        return NULL;
    }
    bytes = (bytes + 255) / 256 * 256;
    lib_scratch *s = scratch_slot(l, stream, owner);
    if (!s) {
        tj_rt_fail(err, "tilejit lib: out of memory for the scratch of a new stream");
        return NULL;
    }
    if (s->bytes < bytes) {
        size_t want = bytes > 2 * s->bytes ? bytes : 2 * s->bytes;
        void *p = new_memory(l, want, err);
        if (!p || (s->data && retire(l, s->data))) {
            if (p)
                free_memory(l, p);
            if (p)
                tj_rt_fail(err, "tilejit lib: out of memory");
            return NULL;
        }
        *s = (lib_scratch){stream, owner, p, want};
    }
    if (zero && lib_zero(l, s->data, bytes / 4, stream, err))
        return NULL;
    return s->data;
}

/* ---- arguments and shapes ----------------------------------------------------------------- */

tj_arg lib_tensor_arg(const tj_tensor *t)
{
    return (tj_arg){.is_tensor = 1, .tensor = *t};
}

tj_arg lib_buffer_arg(void *data, tj_dtype dt, int rank, const int64_t *shape)
{
    return (tj_arg){.is_tensor = 1, .tensor = tj_tensor_contiguous(data, dt, rank, shape)};
}

tj_arg lib_int_arg(int64_t v)
{
    return (tj_arg){.is_tensor = 0, .scalar.i = v};
}

int64_t lib_numel(const tj_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->shape[i];
    return n;
}

/* The stride of dims [lo, hi) merged into one, or -1 when they do not
 * merge; 1 when they hold one element. */
static int64_t merged_stride(const tj_tensor *x, int lo, int hi)
{
    int64_t stride = -1;
    for (int i = hi - 1; i >= lo; i--) {
        if (x->shape[i] == 1)
            continue;
        if (stride >= 0 && x->strides[i] != stride)
            return -1;
        stride = x->strides[i] * x->shape[i];
        if (stride < 0)
            return -1;
    }
    for (int i = hi - 1; i >= lo; i--)
        if (x->shape[i] != 1)
            return x->strides[i];
    return 1;
}

static int64_t product(const tj_tensor *x, int lo, int hi)
{
    int64_t n = 1;
    for (int i = lo; i < hi; i++)
        n *= x->shape[i];
    return n;
}

int lib_lines_of(const tj_tensor *x, int axis, const char *what, lib_lines *out, tj_rt_error *err)
{
    int rank = x->rank ? x->rank : 1;
    if (axis < -rank || axis >= rank)
        return tj_rt_fail(err, "%s: axis %d is out of range for an array of rank %d", what, axis, x->rank);
    out->axis = axis < 0 ? axis + rank : axis;
    if (x->rank == 0) {
        *out = (lib_lines){1, 1, 1, 0};
        return 0;
    }
    out->p = product(x, 0, out->axis);
    out->n = x->shape[out->axis];
    out->q = product(x, out->axis + 1, x->rank);
    if (merged_stride(x, 0, out->axis) < 0 || merged_stride(x, out->axis + 1, x->rank) < 0)
        return tj_rt_fail(err, "%s: the dims around axis %d do not merge (strides of a non-contiguous view); "
                               "pass a contiguous array", what, out->axis);
    if (out->p > INT32_MAX || out->q > INT32_MAX || out->p * out->q > INT32_MAX)
        return tj_rt_fail(err, "%s: an array of %lld x %lld x %lld around axis %d has more lines (%lld x %lld) "
                               "than the library's kernels address (2^31 - 1)", what, (long long)out->p,
                          (long long)out->n, (long long)out->q, out->axis, (long long)out->p, (long long)out->q);
    return 0;
}

tj_tensor lib_segment_of(const tj_tensor *lines, int64_t at, int64_t len)
{
    tj_tensor v = *lines;
    v.data = (char *)lines->data + at * lines->strides[1] * tj_dtype_size(lines->dtype);
    v.shape[1] = len;
    return v;
}

tj_tensor lib_as_lines(const tj_tensor *t, const lib_lines *ln)
{
    tj_tensor v = {.data = t->data, .dtype = t->dtype, .rank = 3, .shape = {ln->p, ln->n, ln->q}};
    int a = ln->axis;
    v.strides[0] = t->rank ? merged_stride(t, 0, a) : 1;
    v.strides[1] = t->rank ? t->strides[a] : 1;
    v.strides[2] = t->rank ? merged_stride(t, a + 1, t->rank) : 1;
    return v;
}

int lib_same_shape(const tj_tensor *a, const tj_tensor *b, const char *fn, tj_rt_error *err)
{
    int same = a->rank == b->rank;
    for (int i = 0; same && i < a->rank; i++)
        same = a->shape[i] == b->shape[i];
    if (!same)
        return tj_rt_fail(err, "%s: the output's shape differs from the input's", fn);
    return 0;
}
