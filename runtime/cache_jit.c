/* The cache as tj_jit uses it: the memory LRU (request and kernel keys),
 * disk entries of compiled kernels, and nvJitLink. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cache_jit.h"
#include "tilejit/tilejit.h"

enum { DEFAULT_MEMORY_ENTRIES = 512, MAX_THREADS = 1024, MAX_SMEM = 1 << 20 };

/* What the lowering and code generation are asked for: part of the key.
 * Change it whenever tj_jit_lower_ptx or the link step takes new options.
 * A quick compile's cubin is another binary of the same kernel, so its key
 * differs: it never answers a request for the default. */
#define COMPILE_OPTIONS "pipeline=default;lower.warps=config;link=none"
#define QUICK_PTXAS "-Xptxas=-O1"
static const char compile_options[] = COMPILE_OPTIONS;
static const char quick_options[] = COMPILE_OPTIONS ";ptxas=" QUICK_PTXAS;
static const char *const quick_link_opts[] = {QUICK_PTXAS};

struct tj_jit_cache {
    tj_lru *lru;          /* kernel keys -> tj_fn */
    tj_requests *requests; /* requests seen -> tj_fn */
    tj_cache *disk;      /* NULL on the cpu */
    tj_cuda_props props; /* zero on the cpu */
    int cuda;
    pthread_mutex_t lock; /* guards the fields below */
    tj_nvjitlink *linker;
    int linker_tried, linker_version;
    tj_tune_mode mode;
    tj_jit_stats stats;
};

static uint32_t memory_capacity(void)
{
    const char *env = getenv("TILEJIT_CACHE_MEM");
    char *end;
    long v = env ? strtol(env, &end, 10) : 0;
    return env && *env && !*end && v > 0 && v < (1L << 20) ? (uint32_t)v : DEFAULT_MEMORY_ENTRIES;
}

tj_jit_cache *tj_jit_cache_new(const tj_cuda_props *props, void (*retain)(void *), void (*release)(void *))
{
    tj_jit_cache *jc = calloc(1, sizeof *jc);
    if (!jc)
        return NULL;
    pthread_mutex_init(&jc->lock, NULL);
    jc->lru = tj_lru_new(memory_capacity(), retain, release);
    jc->requests = tj_requests_new(memory_capacity(), retain, release);
    jc->cuda = props != NULL;
    if (props) {
        jc->props = *props;
        jc->disk = tj_cache_open(NULL);
    }
    if (!jc->lru || !jc->requests || (props && !jc->disk)) {
        tj_jit_cache_free(jc);
        return NULL;
    }
    return jc;
}

void tj_jit_cache_free(tj_jit_cache *jc)
{
    if (!jc)
        return;
    tj_requests_free(jc->requests);
    tj_lru_free(jc->lru);
    tj_cache_close(jc->disk);
    if (jc->linker)
        tj_nvjitlink_close(jc->linker);
    pthread_mutex_destroy(&jc->lock);
    free(jc);
}

tj_cache *tj_jit_cache_disk(tj_jit_cache *jc) { return jc->disk; }
const tj_cuda_props *tj_jit_cache_props(const tj_jit_cache *jc) { return &jc->props; }

void tj_jit_cache_set_tune_mode(tj_jit_cache *jc, tj_tune_mode mode)
{
    pthread_mutex_lock(&jc->lock);
    jc->mode = mode;
    pthread_mutex_unlock(&jc->lock);
}

tj_tune_mode tj_jit_cache_tune_mode(tj_jit_cache *jc)
{
    pthread_mutex_lock(&jc->lock);
    tj_tune_mode m = jc->mode;
    pthread_mutex_unlock(&jc->lock);
    return m;
}

static void bump(tj_jit_cache *jc, uint64_t *counter)
{
    pthread_mutex_lock(&jc->lock);
    (*counter)++;
    pthread_mutex_unlock(&jc->lock);
}

void tj_jit_cache_stats(tj_jit_cache *jc, tj_jit_stats *out)
{
    pthread_mutex_lock(&jc->lock);
    *out = jc->stats;
    pthread_mutex_unlock(&jc->lock);
}

void tj_jit_cache_count_compile(tj_jit_cache *jc) { bump(jc, &jc->stats.compiles); }
void tj_jit_cache_count_tuning(tj_jit_cache *jc) { bump(jc, &jc->stats.tunings); }

const char *tj_cuda_default_arch(const tj_cuda_props *p)
{
    return p->cc_major == 9 && p->cc_minor == 0 ? "sm_90a" : "sm_80";
}

const char *tj_jit_cache_arch(const tj_jit_cache *jc, const tj_compile_request *req)
{
    if (!jc->cuda)
        return NULL;
    return req->arch ? req->arch : tj_cuda_default_arch(&jc->props);
}

/* ---- memory ------------------------------------------------------------------------ */

void *tj_jit_request_find(tj_jit_cache *jc, const tj_compile_request *req, tj_jit_request *seen)
{
    void *v = tj_requests_find(jc->requests, req, tj_jit_cache_arch(jc, req), (int)tj_jit_cache_tune_mode(jc), seen);
    if (v)
        bump(jc, &jc->stats.memory_hits);
    return v;
}

void tj_jit_request_remember(tj_jit_cache *jc, const tj_jit_request *seen, const tj_compile_request *req,
                             void *value)
{
    tj_requests_remember(jc->requests, seen, req, value);
}

void *tj_jit_cache_get(tj_jit_cache *jc, const tj_cache_key *k)
{
    void *v = tj_lru_get(jc->lru, k);
    if (v)
        bump(jc, &jc->stats.memory_hits);
    return v;
}

void tj_jit_cache_put(tj_jit_cache *jc, const tj_cache_key *k, void *value) { tj_lru_put(jc->lru, k, value); }

/* ---- nvJitLink -------------------------------------------------------------------------- */

/* Opened on the first miss: loading the library takes about 10 ms, which
 * a process that only loads cached kernels never pays. Its version is not
 * part of the key (any cubin for the arch runs); entries record it. */
static tj_nvjitlink *linker(tj_jit_cache *jc)
{
    pthread_mutex_lock(&jc->lock);
    if (!jc->linker_tried) {
        jc->linker_tried = 1;
        jc->linker = tj_nvjitlink_open(NULL);
        unsigned major = 0, minor = 0;
        if (jc->linker && tj_nvjitlink_version(jc->linker, &major, &minor) == 0)
            jc->linker_version = (int)(major * 1000 + minor * 10);
    }
    tj_nvjitlink *l = jc->linker;
    pthread_mutex_unlock(&jc->lock);
    return l;
}

int tj_jit_cache_link(tj_jit_cache *jc, const char *ptx, const char *arch, int quick, void **cubin, size_t *size,
                      tj_rt_error *err)
{
    tj_nvjitlink *l = linker(jc);
    *cubin = NULL;
    *size = 0;
    if (!l)
        return 1;
    return tj_nvjitlink_compile(l, ptx, strlen(ptx), arch, quick ? quick_link_opts : NULL, quick ? 1 : 0, cubin, size,
                                NULL, err) ? -1 : 0;
}

/* ---- disk ------------------------------------------------------------------------------- */

void tj_jit_kernel_key(tj_jit_cache *jc, const tj_kernel *spec, const char *arch, int quick, tj_cache_key *out)
{
    tj_cache_key_parts parts = {
        .ir = spec,
        .target = arch ? "ptx" : "cpu",
        .arch = arch,
        .driver_version = jc->props.driver_version,
        .options = quick ? quick_options : compile_options,
    };
    tj_cache_key_compute(&parts, out);
}

static void abi_text(const tj_kernel *k, tj_buf *out)
{
    for (uint32_t i = 0; i < k->nparams; i++)
        tj_buf_printf(out, "%s%s:%s:%d", i ? "," : "", k->params[i].name, tj_dtype_name(k->params[i].dtype),
                      k->params[i].rank);
}

/* "tmaps PARAM:COLS:ROWS:SWIZZLE:PAIR,...": the kernel's TMA tensor maps,
 * which follow its parameters (runtime/tensor_map.c) */
static void maps_text(const tj_kernel *simt, tj_buf *out)
{
    tj_tensor_map_desc maps[TJ_MAX_TENSOR_MAPS];
    int n = tj_tensor_maps(simt, maps);
    for (int i = 0; i < n; i++)
        tj_buf_printf(out, "%s%u:%u:%u:%u:%u", i ? "," : "\ntmaps ", maps[i].param, maps[i].cols, maps[i].rows,
                      maps[i].swizzle, maps[i].pair);
}

/* The maps of a "tmaps" line (none without one): 0, or -1 when malformed. */
static int parse_maps(const char *meta, tj_jit_binary *out)
{
    size_t len;
    const char *v = tj_cache_meta_find(meta, "tmaps", &len);
    out->nmaps = 0;
    for (size_t at = 0; v && at < len; out->nmaps++) {
        tj_tensor_map_desc *m = &out->maps[out->nmaps];
        int used = 0;
        if (out->nmaps == TJ_MAX_TENSOR_MAPS ||
            sscanf(v + at, "%u:%u:%u:%u:%u%n", &m->param, &m->cols, &m->rows, &m->swizzle, &m->pair, &used) != 5)
            return -1;
        at += (size_t)used;
        at += at < len && v[at] == ',';
    }
    return 0;
}

void tj_jit_kernel_meta(const tj_kernel *simt, const char *arch, int linker_version, int quick, tj_buf *out)
{
    tj_buf_printf(out, "tilejit %s\nkernel %s\narch %s\nthreads %u\nsmem %u\nabi ", TILEJIT_VERSION, simt->name,
                  arch, simt->nthreads, simt->smem_bytes);
    abi_text(simt, out);
    maps_text(simt, out);
    if (linker_version)
        tj_buf_printf(out, "\nlinker nvJitLink %d.%d%s\n", linker_version / 1000, linker_version % 1000 / 10,
                      quick ? " " QUICK_PTXAS : "");
    else
        tj_buf_printf(out, "\nlinker none (PTX only)\n");
}

static int meta_uint(const char *meta, const char *name, uint32_t max, uint32_t *out)
{
    char buf[32], *end;
    if (tj_cache_meta_get(meta, name, buf, sizeof buf))
        return -1;
    unsigned long v = strtoul(buf, &end, 10);
    if (!buf[0] || *end || v > max)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* Line NAME of the metadata is exactly `want` (of any length). */
static int meta_is(const char *meta, const char *name, const char *want, size_t want_len)
{
    size_t len;
    const char *v = tj_cache_meta_find(meta, name, &len);
    return v && len == want_len && !memcmp(v, want, len);
}

/* The entry describes a kernel with spec's name and parameters. */
static int meta_fits(const tj_cache_entry *e, const tj_kernel *spec, tj_jit_binary *out)
{
    tj_buf abi = {0};
    abi_text(spec, &abi);
    int ok = meta_is(e->meta, "kernel", spec->name, strlen(spec->name)) &&
             meta_is(e->meta, "abi", abi.data ? abi.data : "", abi.len) &&
             meta_uint(e->meta, "threads", MAX_THREADS, &out->nthreads) == 0 && out->nthreads > 0 &&
             meta_uint(e->meta, "smem", MAX_SMEM, &out->smem_bytes) == 0 && e->ptx_len > 0 &&
             parse_maps(e->meta, out) == 0;
    tj_buf_free(&abi);
    return ok;
}

int tj_jit_cache_lookup(tj_jit_cache *jc, const tj_cache_key *k, const tj_kernel *spec, tj_jit_binary *out)
{
    memset(out, 0, sizeof *out);
    if (!jc->disk || tj_cache_load(jc->disk, TJ_CACHE_KERNEL, k, &out->entry))
        return 1;
    if (!meta_fits(&out->entry, spec, out)) {
        tj_jit_binary_free(out);
        tj_cache_drop(jc->disk, k);
        return 1;
    }
    out->ptx = out->entry.ptx;
    out->cubin = out->entry.bin;
    out->cubin_size = out->entry.bin_len;
    bump(jc, &jc->stats.disk_hits);
    return 0;
}

int tj_jit_cache_finish(tj_jit_cache *jc, const tj_cache_key *k, const tj_kernel *simt, const char *ptx,
                        const char *arch, int quick, tj_jit_binary *out, tj_rt_error *err)
{
    memset(out, 0, sizeof *out);
    out->ptx = ptx;
    out->nthreads = simt->nthreads;
    out->smem_bytes = simt->smem_bytes;
    out->nmaps = tj_tensor_maps(simt, out->maps);
    if (out->nmaps < 0)
        return tj_rt_fail(err, "kernel '%s' reads more than %d tensor maps", simt->name, TJ_MAX_TENSOR_MAPS);
    if (tj_jit_cache_link(jc, ptx, arch, quick, &out->owned_cubin, &out->cubin_size, err) < 0)
        return 1;
    out->cubin = out->owned_cubin;
    if (!jc->disk)
        return 0;
    tj_buf meta = {0};
    pthread_mutex_lock(&jc->lock);
    int version = out->cubin ? jc->linker_version : 0;
    pthread_mutex_unlock(&jc->lock);
    tj_jit_kernel_meta(simt, arch, version, quick, &meta);
    tj_cache_entry e = {
        .kind = TJ_CACHE_KERNEL, .key = *k, .meta = meta.data ? meta.data : "", .meta_len = meta.len,
        .ptx = ptx, .ptx_len = strlen(ptx), .bin = out->cubin, .bin_len = out->cubin_size,
    };
    tj_cache_store(jc->disk, &e);
    tj_buf_free(&meta);
    return 0;
}

void tj_jit_cache_reject(tj_jit_cache *jc, const tj_cache_key *k)
{
    if (jc->disk)
        tj_cache_drop(jc->disk, k);
}

void tj_jit_binary_free(tj_jit_binary *b)
{
    tj_cache_entry_free(&b->entry);
    free(b->owned_cubin);
    memset(b, 0, sizeof *b);
}

/* ---- the build steps the jit and the tuner share ---------------------------------------- */

/* The pipeline up to the cache key, on a copy of the optimized Tile IR. */
tj_kernel *tj_jit_specialize(const tj_kernel *tile, const tj_arg *args, uint32_t nargs)
{
    tj_kernel *k = tj_kernel_clone(tile);
    tj_pipeline_options o = {.args = args, .nargs = nargs};
    return k && !tj_pipeline_run(&k, TJ_STEP_FACTS, TJ_STEP_KEY, &o) ? k : NULL;
}

/* The rest of the pipeline, then PTX. */
int tj_jit_lower_ptx(const tj_kernel *spec, const char *arch, tj_kernel **simt, const char **ptx)
{
    *ptx = NULL;
    *simt = (tj_kernel *)spec; /* the prefetch step works on a copy */
    tj_pipeline_options o = {.lower.wgmma = tj_ptx_arch_has_wgmma(arch)};
    if (tj_pipeline_run(simt, TJ_STEP_KEY, TJ_STEP_END, &o)) {
        *simt = NULL;
        return 1;
    }
    tj_buf text = {0};
    int rc = tj_emit_ptx(*simt, arch, &text);
    *ptx = tj_strndup(spec->ctx, text.data ? text.data : "", text.len);
    tj_buf_free(&text);
    return rc;
}
