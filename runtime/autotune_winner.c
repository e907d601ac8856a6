/* The winner summary: which configuration won (or that none has a time)
 * for exactly this source text, kernel, fixed parameters, device and shape
 * bucket. It is a shortcut past examining every configuration (the front
 * end once per configuration: 5 ms for matmul's 72), so a compile that
 * leaves tile parameters to the tuner costs a file read.
 *
 * Its key takes the source text as it is, so an edit misses it and falls
 * back to the per-configuration records (keyed by IR, so comments do not
 * matter), which then write a new one. A summary is only as new as the
 * records it was made from: every stored record changes the cache's tuning
 * generation (a random number in an entry of its own), and a summary made
 * at another generation is not used. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/autotune_internal.h"

static tj_cache_key generation_key(void)
{
    tj_key_builder b;
    tj_cache_key k;
    tj_key_begin(&b, "tune-generation");
    tj_key_end(&b, &k);
    return k;
}

uint64_t tj_tune_generation(tj_cache *cache)
{
    tj_cache_entry e;
    tj_cache_key k = generation_key();
    char text[32];
    if (!cache || tj_cache_load(cache, TJ_CACHE_TUNE, &k, &e))
        return 0;
    uint64_t g = tj_cache_meta_get(e.meta, "generation", text, sizeof text) ? 0 : strtoull(text, NULL, 16);
    tj_cache_entry_free(&e);
    return g;
}

void tj_tune_new_generation(tj_cache *cache)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t seed[3] = {(uint64_t)ts.tv_sec, (uint64_t)ts.tv_nsec, (uint64_t)getpid()};
    uint64_t g = tj_hash64(seed, sizeof seed, (uint64_t)(uintptr_t)&seed) | 1; /* 0 is "none yet" */
    char meta[64];
    int n = snprintf(meta, sizeof meta, "generation %016llx\n", (unsigned long long)g);
    tj_cache_entry e = {.kind = TJ_CACHE_TUNE, .key = generation_key(), .meta = meta, .meta_len = (size_t)n};
    tj_cache_store(cache, &e);
}

void tj_tune_winner_key(const tj_tune_request *req, const char *device_id, const char *bucket, tj_cache_key *out)
{
    tj_key_builder b;
    tj_key_begin(&b, "tune-winner");
    tj_key_add_bytes(&b, "source", req->source ? req->source : "", req->source ? req->len : 0);
    tj_key_add_str(&b, "kernel", req->kernel);
    for (uint32_t i = 0; req->params && i < req->nparams; i++) {
        tj_key_add_str(&b, "param", req->params[i].name);
        tj_key_add_int(&b, "value", req->params[i].value);
    }
    tj_key_add_str(&b, "device", device_id);
    tj_key_add_str(&b, "bucket", bucket);
    tj_key_end(&b, out);
}

void tj_tune_winner_store(tj_cache *cache, const tj_cache_key *k, const char *kernel, const tj_tune_result *best,
                          int complete, uint64_t generation)
{
    char config[512] = "";
    if (best)
        tj_tune_config_text(best->config, best->nconfig, config, sizeof config);
    tj_buf meta = {0};
    tj_buf_printf(&meta, "kernel %s\nstatus %s\nconfig %s\nseconds %.6e\ncomplete %d\ngeneration %016llx\n",
                  kernel, best ? "winner" : "none", config, best ? best->seconds : 0.0, complete,
                  (unsigned long long)generation);
    tj_cache_entry e = {.kind = TJ_CACHE_TUNE, .key = *k, .meta = meta.data, .meta_len = meta.len};
    tj_cache_store(cache, &e);
    tj_buf_free(&meta);
}

static int is_tile_param(const tj_program *p, int kernel, const char *name)
{
    const tj_tile_param *tp;
    uint32_t n = tj_kernel_tile_params(p, kernel, &tp);
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(tp[i].name, name))
            return 1;
    return tj_is_reserved_param(name);
}

/* "A=1,B=2" into bindings of the kernel's tile parameters (arena memory). */
static int parse_config(tj_ctx *c, const tj_program *p, int kernel, const char *text, tj_binding **out,
                        uint32_t *n)
{
    uint32_t cap = 1;
    for (const char *s = text; *s; s++)
        cap += *s == ',';
    tj_binding *b = tj_alloc(c, sizeof *b * cap);
    *n = 0;
    for (const char *s = text; *s && *n < cap;) {
        const char *eq = strchr(s, '='), *end = strchr(s, ',');
        if (!end)
            end = s + strlen(s);
        char *stop;
        if (!eq || eq > end)
            return -1;
        const char *name = tj_strndup(c, s, (size_t)(eq - s));
        long long v = strtoll(eq + 1, &stop, 10);
        if (stop != end || !is_tile_param(p, kernel, name))
            return -1;
        b[(*n)++] = (tj_binding){name, v};
        s = *end ? end + 1 : end;
    }
    *out = b;
    return *n ? 0 : -1;
}

int tj_tune_winner_load(tj_cache *cache, const tj_cache_key *k, tj_ctx *c, const tj_program *p, int kernel,
                        tj_binding **config, uint32_t *n, int *complete)
{
    tj_cache_entry e;
    char text[512], status[16], gen[32], done[8];
    if (!cache || tj_cache_load(cache, TJ_CACHE_TUNE, k, &e))
        return -1;
    int valid = tj_cache_meta_get(e.meta, "status", status, sizeof status) == 0 &&
                tj_cache_meta_get(e.meta, "generation", gen, sizeof gen) == 0 &&
                tj_cache_meta_get(e.meta, "complete", done, sizeof done) == 0 &&
                tj_cache_meta_get(e.meta, "config", text, sizeof text) == 0;
    *complete = valid && !strcmp(done, "1");
    int rc = !valid                                              ? -2
             : strtoull(gen, NULL, 16) != tj_tune_generation(cache) ? -1 /* records changed since */
             : !strcmp(status, "none")                           ? 1
             : !strcmp(status, "winner") && parse_config(c, p, kernel, text, config, n) == 0 ? 0
                                                                                            : -2;
    tj_cache_entry_free(&e);
    if (rc == -2)
        tj_cache_drop(cache, k);
    return rc < 0 ? -1 : rc;
}
