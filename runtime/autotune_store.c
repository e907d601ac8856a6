/* The tuner's records in the disk cache: one entry per (configuration,
 * device and arch, shape bucket), holding that configuration's outcome
 * (time, or why it was pruned or failed) as metadata lines:
 *
 *   kernel softmax
 *   config BLOCK=1024,warps=4,stages=2
 *   device NVIDIA H200/sm_90a
 *   bucket M=8192,N=1024
 *   status ok
 *   seconds 1.2345e-05
 *   threads 128
 *   smem 0
 *   regs 32
 *   spills 0
 *   note
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/autotune_internal.h"

uint32_t tj_dims_from_args(tj_ctx *c, const tj_program *p, int kernel, const tj_arg *args, uint32_t nargs,
                           tj_binding **out)
{
    const tj_param *params;
    uint32_t np = tj_kernel_params(p, kernel, &params), n = 0;
    tj_binding *dims = tj_alloc(c, sizeof *dims * (np * TJ_MAX_RANK + 1));
    for (uint32_t i = 0; i < np && i < nargs; i++) {
        if (!args[i].is_tensor || args[i].tensor.rank != params[i].rank)
            continue;
        for (int d = 0; d < params[i].rank; d++)
            if (params[i].dim_names[d])
                dims[n++] = (tj_binding){params[i].dim_names[d], args[i].tensor.shape[d]};
    }
    *out = dims;
    return n;
}

static int64_t next_pow2(int64_t v)
{
    int64_t p = 1;
    while (p < v && p < ((int64_t)1 << 62))
        p <<= 1;
    return p;
}

void tj_tune_bucket(const tj_binding *dims, uint32_t ndims, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < ndims; i++) {
        int seen = 0;
        for (uint32_t j = 0; j < i; j++)
            seen |= !strcmp(dims[j].name, dims[i].name);
        if (seen || len >= n)
            continue;
        int w = snprintf(buf + len, n - len, "%s%s=%lld", len ? "," : "", dims[i].name,
                         (long long)next_pow2(dims[i].value));
        len = w < 0 ? n : len + (size_t)w;
    }
}

void tj_tune_record_key(const tj_kernel *tile, const char *device_id, const char *bucket, tj_cache_key *out)
{
    tj_buf text = {0};
    tj_print_kernel(tile, &text);
    tj_key_builder b;
    tj_key_begin(&b, "tune");
    tj_key_add_str(&b, "device", device_id);
    tj_key_add_str(&b, "bucket", bucket);
    tj_key_add_bytes(&b, "ir", text.data ? text.data : "", text.len);
    tj_key_end(&b, out);
    tj_buf_free(&text);
}

/* ---- contents ------------------------------------------------------------------ */

static const char *const status_names[] = {"ok", "pruned-where", "pruned", "failed", "untimed"};

const char *tj_tune_status_name(tj_tune_status s)
{
    return (unsigned)s < sizeof status_names / sizeof *status_names ? status_names[s] : "?";
}

static int parse_status(const char *s, tj_tune_status *out)
{
    for (unsigned i = 0; i < sizeof status_names / sizeof *status_names; i++)
        if (!strcmp(s, status_names[i])) {
            *out = (tj_tune_status)i;
            return 0;
        }
    return -1;
}

static int meta_long(const char *meta, const char *name, long *out)
{
    char buf[32], *end;
    if (tj_cache_meta_get(meta, name, buf, sizeof buf))
        return -1;
    *out = strtol(buf, &end, 10);
    return buf[0] && !*end ? 0 : -1;
}

/* The record's outcome, when it is one of those a record may hold. */
static int decode_record(const char *meta, tj_tune_result *r)
{
    char status[32], seconds[64], *end;
    long threads, smem, regs, spills;
    if (tj_cache_meta_get(meta, "status", status, sizeof status) || parse_status(status, &r->status) ||
        (r->status != TJ_TUNE_OK && r->status != TJ_TUNE_PRUNED_LIMITS && r->status != TJ_TUNE_FAILED) ||
        tj_cache_meta_get(meta, "seconds", seconds, sizeof seconds) || meta_long(meta, "threads", &threads) ||
        meta_long(meta, "smem", &smem) || meta_long(meta, "regs", &regs) || meta_long(meta, "spills", &spills))
        return -1;
    r->seconds = strtod(seconds, &end);
    if (*end || !(r->seconds >= 0) || threads < 0 || threads > 4096 || smem < 0 || smem > (1L << 30))
        return -1;
    r->nthreads = (uint32_t)threads;
    r->smem_bytes = (uint32_t)smem;
    r->regs = (int)regs;
    r->spill_bytes = (int)spills;
    if (tj_cache_meta_get(meta, "note", r->note, sizeof r->note))
        r->note[0] = 0;
    return 0;
}

int tj_tune_record_load(tune_run *t, tune_item *it)
{
    tj_cache_entry e;
    char config[512], want[512];
    if (!t->cache || tj_cache_load(t->cache, TJ_CACHE_TUNE, &it->key, &e))
        return -1;
    tj_tune_config_text(it->r->config, it->r->nconfig, want, sizeof want);
    tj_tune_result r = *it->r;
    int ok = tj_cache_meta_get(e.meta, "config", config, sizeof config) == 0 && !strcmp(config, want) &&
             decode_record(e.meta, &r) == 0;
    tj_cache_entry_free(&e);
    if (!ok) {
        tj_cache_drop(t->cache, &it->key);
        return -1;
    }
    *it->r = r;
    it->r->stored = 1;
    return 0;
}

void tj_tune_note_diag(char *note, size_t n, tj_ctx *c, uint32_t before, const char *fallback)
{
    uint32_t count = tj_diag_count(c);
    if (count <= before) {
        tj_tune_note(note, n, fallback);
        return;
    }
    const tj_diag *d = tj_diag_get(c, count - 1);
    char buf[1024];
    const char *file = d->file ? tj_source_name(c, d->file) : NULL;
    if (file && d->line)
        snprintf(buf, sizeof buf, "%s:%u:%u: %s", file, d->line, d->col, d->msg);
    else
        snprintf(buf, sizeof buf, "%s", d->msg);
    tj_tune_note(note, n, buf);
}

void tj_tune_note(char *note, size_t n, const char *msg)
{
    size_t i = 0;
    for (; msg[i] && i + 1 < n; i++)
        note[i] = msg[i] == '\n' || msg[i] == '\r' ? ' ' : msg[i];
    note[i] = 0;
    if (msg[i] && n > 4)
        memcpy(note + n - 4, "...", 4);
}

void tj_tune_record_store(tune_run *t, const tune_item *it)
{
    if (!t->cache)
        return;
    const tj_tune_result *r = it->r;
    char config[512], note[sizeof r->note];
    tj_tune_config_text(r->config, r->nconfig, config, sizeof config);
    tj_tune_note(note, sizeof note, r->note);
    tj_buf meta = {0};
    tj_buf_printf(&meta, "kernel %s\nconfig %s\ndevice %s\nbucket %s\nstatus %s\nseconds %.6e\n", t->kernel_name,
                  config, t->dev->id, t->bucket, tj_tune_status_name(r->status), r->seconds);
    tj_buf_printf(&meta, "threads %u\nsmem %u\nregs %d\nspills %d\nnote %s\n", r->nthreads, r->smem_bytes, r->regs,
                  r->spill_bytes, note);
    tj_cache_entry e = {.kind = TJ_CACHE_TUNE, .key = it->key, .meta = meta.data, .meta_len = meta.len};
    tj_cache_store(t->cache, &e);
    tj_buf_free(&meta);
    tj_tune_new_generation(t->cache); /* after the record: summaries made before it are old */
}

void tj_tune_config_text(const tj_binding *config, uint32_t n, char *buf, size_t size)
{
    if (!buf || !size)
        return;
    if (!config)
        n = 0;
    size_t len = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < n && len < size; i++) {
        int w = snprintf(buf + len, size - len, "%s%s=%lld", i ? "," : "", config[i].name,
                         (long long)config[i].value);
        len = w < 0 ? size : len + (size_t)w;
    }
}
