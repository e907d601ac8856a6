/* The Metal host runtime in C over the Objective-C runtime (tilejit/metal.h,
 * docs/metal.md): device, library from MSL source (the compiler's error
 * text surfaced), function, pipeline, buffers wrapping host memory,
 * dispatch, completion. Pipelines are cached in memory by a hash of their
 * source and on disk in one MTLBinaryArchive each.
 *
 * Built on macOS; elsewhere only with TJ_METAL_OBJC, where the tests link
 * it against a mock Objective-C runtime that runs the MSL in the CPU
 * emulator (tests/msl_emu). Every selector is listed in metal_internal.h;
 * every message casts objc_msgSend to its exact type (metal_objc.h). Objects made
 * by new/alloc are released here; autoreleased ones live in a pool pushed
 * around each operation. */
#if defined(__APPLE__) || defined(TJ_METAL_OBJC)

#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/metal_internal.h"
#include "tilejit/tilejit.h"

/* ---- every selector and class, by name (metal_internal.h lists them) ---------- */

static const char *const selector_names[S_COUNT] = {
#define X(e, s) s,
    TJ_SELECTORS(X)
#undef X
};

static const char *const class_names[C_COUNT] = {"NSString", "NSURL", "NSArray", "MTLCompileOptions",
                                                 "MTLComputePipelineDescriptor", "MTLBinaryArchiveDescriptor"};

/* ---- small helpers ------------------------------------------------------------------ */

void tj_mtl_release(const tj_metal *m, id o)
{
    if (o)
        TJ_MSG0(void)(o, m->sel[S_RELEASE]);
}

id tj_mtl_string(const tj_metal *m, const char *s)
{
    return TJ_MSG(id, const char *)(m->cls[C_NSSTRING], m->sel[S_STRING_WITH_UTF8], s);
}

static const char *utf8(const tj_metal *m, id s)
{
    const char *c = s ? TJ_MSG0(const char *)(s, m->sel[S_UTF8]) : NULL;
    return c ? c : "(no description)";
}

void tj_mtl_fail(tj_rt_error *err, const tj_metal *m, const char *what, id nserror)
{
    if (err)
        snprintf(err->msg, sizeof err->msg, "metal: %s%s%s", what, nserror ? ": " : "",
                 nserror ? utf8(m, TJ_MSG0(id)(nserror, m->sel[S_DESCRIPTION])) : "");
}

/* 64-bit FNV-1a over several strings, each with its terminator. */
static uint64_t hash_strings(const char *const *s, int n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < n; i++)
        for (const char *p = s[i];; p++) {
            h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
            if (!*p)
                break;
        }
    return h;
}

/* ---- opening ------------------------------------------------------------------------ */

/* mkdir -p; 0 when the directory exists and is writable. */
static int make_dirs(char *path)
{
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(path, 0755);
            *p = '/';
        }
    if (mkdir(path, 0755) && errno != EEXIST)
        return -1;
    return access(path, W_OK);
}

static void choose_cache_dir(tj_metal *m, const char *dir)
{
    const char *env = getenv("TILEJIT_CACHE_DIR"), *home = getenv("HOME");
    if (dir && !*dir)
        return; /* memory only, as asked */
    if (dir)
        snprintf(m->cache_dir, sizeof m->cache_dir, "%s", dir);
    else if (env && *env)
        snprintf(m->cache_dir, sizeof m->cache_dir, "%s/metal", env);
    else if (home && *home)
        snprintf(m->cache_dir, sizeof m->cache_dir, "%s/.cache/tilejit/metal", home);
    if (m->cache_dir[0] && make_dirs(m->cache_dir)) {
        snprintf(m->stats.cache_note, sizeof m->stats.cache_note,
                 "pipeline cache %.160s is not writable (%s): memory only", m->cache_dir, strerror(errno));
        m->cache_dir[0] = 0;
    }
}

tj_metal *tj_metal_open(const char *cache_dir, tj_rt_error *err)
{
    tj_rt_error unread;
    if (!err)
        err = &unread; /* what follows always says why */
    tj_metal *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err->msg, sizeof err->msg, "metal: out of memory");
        return NULL;
    }
    for (int i = 0; i < S_COUNT; i++)
        m->sel[i] = sel_registerName(selector_names[i]);
    for (int i = 0; i < C_COUNT; i++)
        m->cls[i] = objc_getClass(class_names[i]);
    m->device = MTLCreateSystemDefaultDevice();
    m->queue = m->device ? TJ_MSG0(id)(m->device, m->sel[S_NEW_QUEUE]) : NULL;
    if (!m->queue) {
        snprintf(err->msg, sizeof err->msg, "metal: %s",
                 m->device ? "cannot create a command queue" : "no Metal device (MTLCreateSystemDefaultDevice)");
        tj_mtl_release(m, m->device);
        free(m);
        return NULL;
    }
    void *pool = objc_autoreleasePoolPush();
    snprintf(m->device_name, sizeof m->device_name, "%s", utf8(m, TJ_MSG0(id)(m->device, m->sel[S_NAME])));
    objc_autoreleasePoolPop(pool);
    choose_cache_dir(m, cache_dir);
    pthread_mutex_init(&m->mu, NULL);
    return m;
}

void tj_metal_close(tj_metal *m)
{
    if (!m)
        return;
    for (tj_metal_pipeline *p = m->pipelines, *next; p; p = next) {
        next = p->next;
        tj_mtl_release(m, p->pso);
        free(p->msl);
        free(p->function);
        free(p);
    }
    tj_mtl_release(m, m->queue);
    tj_mtl_release(m, m->device);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

const char *tj_metal_device_name(const tj_metal *m) { return m ? m->device_name : ""; }

void tj_metal_get_stats(tj_metal *m, tj_metal_stats *out)
{
    if (!out)
        return;
    if (!m) {
        memset(out, 0, sizeof *out);
        return;
    }
    pthread_mutex_lock(&m->mu);
    *out = m->stats;
    pthread_mutex_unlock(&m->mu);
}

/* ---- pipelines --------------------------------------------------------------------------- */

/* MSL -> MTLFunction (+1), with fast math off: the generated code relies
 * on NaN and infinity (docs/metal.md); in MSL 3.0, or 3.1 where the source
 * asks for it (bfloat matrices). NULL with the compiler's text. */
static id compile_function(tj_metal *m, const char *msl, const char *function, tj_rt_error *err)
{
    id opts = TJ_MSG0(id)(TJ_MSG0(id)(m->cls[C_OPTIONS], m->sel[S_ALLOC]), m->sel[S_INIT]);
    NSUInteger language = tj_msl_version(msl) == TJ_MSL_3_1 ? TJ_MTL_LANGUAGE_3_1 : TJ_MTL_LANGUAGE_3_0;
    TJ_MSG(void, tj_objc_bool)(opts, m->sel[S_SET_FAST_MATH], 0);
    TJ_MSG(void, NSUInteger)(opts, m->sel[S_SET_LANGUAGE], language);
    id nserr = NULL;
    id lib = TJ_MSG(id, id, id, id *)(m->device, m->sel[S_NEW_LIBRARY], tj_mtl_string(m, msl), opts, &nserr);
    tj_mtl_release(m, opts);
    m->stats.compiles++;
    if (!lib) {
        tj_mtl_fail(err, m, "the MSL does not compile", nserr);
        return NULL;
    }
    id fn = TJ_MSG(id, id)(lib, m->sel[S_NEW_FUNCTION], tj_mtl_string(m, function));
    tj_mtl_release(m, lib);
    if (!fn && err)
        snprintf(err->msg, sizeof err->msg, "metal: the MSL has no kernel function '%s'", function);
    return fn;
}

/* The archive of this pipeline (+1), read from `path` when it exists, and
 * whether it did; NULL when the disk cache is off or fails (a note). */
static id open_archive(tj_metal *m, const char *path, int *loaded)
{
    if (!m->cache_dir[0])
        return NULL;
    id desc = TJ_MSG0(id)(m->cls[C_ARCHIVE_DESC], m->sel[S_NEW]);
    *loaded = access(path, R_OK) == 0;
    if (*loaded)
        TJ_MSG(void, id)(desc, m->sel[S_SET_URL], TJ_MSG(id, id)(m->cls[C_NSURL], m->sel[S_FILE_URL], tj_mtl_string(m, path)));
    id nserr = NULL;
    id archive = TJ_MSG(id, id, id *)(m->device, m->sel[S_NEW_ARCHIVE], desc, &nserr);
    tj_mtl_release(m, desc);
    if (!archive)
        snprintf(m->stats.cache_note, sizeof m->stats.cache_note, "cannot open pipeline archive %.120s: %.100s", path,
                 nserr ? utf8(m, TJ_MSG0(id)(nserr, m->sel[S_DESCRIPTION])) : "?");
    return archive;
}

/* Adds the pipeline to the archive and writes it (temp file + rename, so
 * concurrent processes never read half a file); failures only note. */
static void save_archive(tj_metal *m, id archive, id desc, const char *path)
{
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    id nserr = NULL;
    if (TJ_MSG(tj_objc_bool, id, id *)(archive, m->sel[S_ADD_FUNCTIONS], desc, &nserr) &&
        TJ_MSG(tj_objc_bool, id, id *)(archive, m->sel[S_SERIALIZE],
                                       TJ_MSG(id, id)(m->cls[C_NSURL], m->sel[S_FILE_URL], tj_mtl_string(m, tmp)), &nserr) &&
        rename(tmp, path) == 0) {
        m->stats.archive_writes++;
        return;
    }
    unlink(tmp);
    snprintf(m->stats.cache_note, sizeof m->stats.cache_note, "cannot write pipeline archive %.120s: %.100s", path,
             nserr ? utf8(m, TJ_MSG0(id)(nserr, m->sel[S_DESCRIPTION])) : strerror(errno));
}

/* The compute pipeline state (+1) of fn: from the archive when it holds it,
 * else compiled and archived. */
static id make_pipeline(tj_metal *m, id fn, uint64_t hash, tj_rt_error *err)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/%016llx.binarchive", m->cache_dir, (unsigned long long)hash);
    id desc = TJ_MSG0(id)(m->cls[C_PIPELINE_DESC], m->sel[S_NEW]);
    TJ_MSG(void, id)(desc, m->sel[S_SET_FUNCTION], fn);
    int loaded = 0;
    id archive = open_archive(m, path, &loaded), pso = NULL, nserr = NULL;
    if (archive)
        TJ_MSG(void, id)(desc, m->sel[S_SET_ARCHIVES], TJ_MSG(id, id)(m->cls[C_NSARRAY], m->sel[S_ARRAY_WITH_OBJECT], archive));
    if (archive && loaded) {
        pso = TJ_MSG(id, id, NSUInteger, void *, id *)(m->device, m->sel[S_NEW_PIPELINE], desc,
                                                       TJ_MTL_PIPELINE_FAIL_ON_ARCHIVE_MISS, NULL, &nserr);
        m->stats.archive_hits += pso != NULL;
    }
    if (!pso) {
        nserr = NULL;
        pso = TJ_MSG(id, id, NSUInteger, void *, id *)(m->device, m->sel[S_NEW_PIPELINE], desc, TJ_MTL_PIPELINE_NONE,
                                                       NULL, &nserr);
        if (!pso)
            tj_mtl_fail(err, m, "cannot create the compute pipeline", nserr);
        else if (archive)
            save_archive(m, archive, desc, path);
    }
    tj_mtl_release(m, archive);
    tj_mtl_release(m, desc);
    return pso;
}

/* Metal's SIMD groups must be the SIMT IR's 32-lane warps. */
static int check_pipeline(tj_metal *m, id pso, uint32_t threads, tj_rt_error *err)
{
    NSUInteger width = TJ_MSG0(NSUInteger)(pso, m->sel[S_SIMD_WIDTH]);
    NSUInteger max = TJ_MSG0(NSUInteger)(pso, m->sel[S_MAX_THREADS]);
    if (width == 32 && max >= threads)
        return 0;
    snprintf(err->msg, sizeof err->msg,
             "metal: the pipeline runs SIMD groups of %lu threads and at most %lu per threadgroup; the kernel "
             "needs 32 and %u",
             (unsigned long)width, (unsigned long)max, threads);
    return -1;
}

static tj_metal_pipeline *find(tj_metal *m, uint64_t hash, const char *msl, const char *function)
{
    for (tj_metal_pipeline *p = m->pipelines; p; p = p->next)
        if (p->hash == hash && !strcmp(p->msl, msl) && !strcmp(p->function, function))
            return p;
    return NULL;
}

static tj_metal_pipeline *build(tj_metal *m, const char *msl, const char *function, uint32_t threads, uint64_t hash,
                                tj_rt_error *err)
{
    id fn = compile_function(m, msl, function, err);
    id pso = fn ? make_pipeline(m, fn, hash, err) : NULL;
    tj_mtl_release(m, fn);
    if (!pso || check_pipeline(m, pso, threads, err)) {
        tj_mtl_release(m, pso);
        return NULL;
    }
    tj_metal_pipeline *p = calloc(1, sizeof *p);
    if (p && (p->msl = strdup(msl)) && (p->function = strdup(function))) {
        p->hash = hash;
        p->pso = pso;
        p->next = m->pipelines;
        m->pipelines = p;
        return p;
    }
    if (p)
        free(p->msl);
    free(p);
    tj_mtl_release(m, pso);
    snprintf(err->msg, sizeof err->msg, "metal: out of memory");
    return NULL;
}

tj_metal_pipeline *tj_metal_pipeline_get(tj_metal *m, const char *msl, size_t len, const char *function,
                                         uint32_t threads, tj_rt_error *err)
{
    if (!m || !msl || !function) {
        tj_rt_fail(err, "tj_metal_pipeline_get: NULL metal, source or function");
        return NULL;
    }
    tj_rt_error unread;
    if (!err)
        err = &unread; /* what follows always says why */
    if (strlen(msl) != len) {
        snprintf(err->msg, sizeof err->msg, "metal: the MSL source holds a NUL byte");
        return NULL;
    }
    const char *key[] = {m->device_name, function, msl, TILEJIT_VERSION};
    uint64_t hash = hash_strings(key, 4);
    pthread_mutex_lock(&m->mu); /* compiles are rare: one at a time keeps the cache simple */
    tj_metal_pipeline *p = find(m, hash, msl, function);
    if (p) {
        m->stats.memory_hits++;
    } else {
        void *pool = objc_autoreleasePoolPush();
        p = build(m, msl, function, threads, hash, err);
        objc_autoreleasePoolPop(pool);
    }
    pthread_mutex_unlock(&m->mu);
    return p;
}

#else
typedef int tj_metal_not_built; /* off macOS: metal_none.c (ISO C wants a declaration) */
#endif /* __APPLE__ || TJ_METAL_OBJC */
