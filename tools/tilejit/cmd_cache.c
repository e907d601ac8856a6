/* `tilejit cache stats|list|clear`: the disk cache of compiled kernels and
 * tuning records ($TILEJIT_CACHE_DIR, default ~/.cache/tilejit). */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "tilejit/cache.h"

/* "12.3 KiB" */
static void format_bytes(uint64_t n, char *buf, size_t size)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, size, "%llu B", (unsigned long long)n);
    else
        snprintf(buf, size, "%.1f %s", v, units[u]);
}

static void warn_into_diagnostics(void *ud, const char *msg)
{
    tj_diag_report(ud, TJ_SEV_WARNING, 0, 0, 0, "%s", msg);
}

/* The cache as the library opens it, with its warning as a diagnostic. */
tj_cache *cli_open_cache(tj_ctx *c, int create)
{
    tj_cache_options opt = {.no_create = !create};
    tj_cache *cache = tj_cache_open(&opt);
    if (!cache)
        tj_error(c, "out of memory");
    else
        tj_cache_set_warning_handler(cache, warn_into_diagnostics, c);
    return cache;
}

static int show_stats(tj_ctx *c, tj_cache *cache)
{
    tj_cache_stats st;
    char used[32], cap[32];
    if (!tj_cache_dir(cache)) {
        printf("directory: none (caching in memory only)\n");
        return CLI_OK;
    }
    if (tj_cache_stats_get(cache, &st)) {
        tj_error(c, "cannot read the cache directory %s", tj_cache_dir(cache));
        return CLI_ERROR;
    }
    format_bytes(st.bytes, used, sizeof used);
    format_bytes(tj_cache_max_bytes(cache), cap, sizeof cap);
    int missing = access(tj_cache_dir(cache), F_OK) != 0;
    printf("directory: %s%s\n", tj_cache_dir(cache),
           missing ? " (not created yet)" : tj_cache_writable(cache) ? "" : " (read-only)");
    printf("entries: %llu (%llu kernels, %llu tuning records)\n", (unsigned long long)st.entries,
           (unsigned long long)st.kernels, (unsigned long long)st.tune_records);
    printf("size: %s of at most %s\n", used, cap);
    if (st.temp_files)
        printf("temporary files: %llu (being written, or left by a crash)\n", (unsigned long long)st.temp_files);
    return CLI_OK;
}

static int print_item(void *ud, const tj_cache_item *it)
{
    (void)ud;
    char hex[TJ_CACHE_KEY_HEX], size[32], when[32];
    time_t t = (time_t)it->last_use;
    struct tm tm;
    tj_cache_key_hex(&it->key, hex);
    hex[16] = 0;
    format_bytes(it->bytes, size, sizeof size);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime_r(&t, &tm));
    const char *kind = it->kind == TJ_CACHE_KERNEL ? "kernel" : it->kind == TJ_CACHE_TUNE ? "tuning" : "invalid";
    printf("%-16s  %-7s  %10s  %s  %-12s  %s\n", hex, kind, size, when, it->kind ? it->name : "-",
           it->kind ? it->detail : "(damaged or foreign: dropped when next used)");
    return 0;
}

static int list_entries(tj_ctx *c, tj_cache *cache)
{
    if (!tj_cache_dir(cache)) {
        printf("directory: none (caching in memory only)\n");
        return CLI_OK;
    }
    printf("%-16s  %-7s  %10s  %-19s  %-12s  %s\n", "KEY", "KIND", "SIZE", "LAST USE", "KERNEL", "DETAIL");
    if (tj_cache_list(cache, print_item, NULL) < 0) {
        tj_error(c, "cannot read the cache directory %s", tj_cache_dir(cache));
        return CLI_ERROR;
    }
    return CLI_OK;
}

static int clear_entries(tj_ctx *c, tj_cache *cache)
{
    uint64_t removed = 0;
    if (!tj_cache_dir(cache)) {
        printf("directory: none (caching in memory only): nothing to clear\n");
        return CLI_OK;
    }
    int rc = tj_cache_clear(cache, &removed);
    printf("removed %llu entries from %s\n", (unsigned long long)removed, tj_cache_dir(cache));
    if (rc) {
        tj_error(c, "could not remove every entry of %s (read-only?)", tj_cache_dir(cache));
        return CLI_ERROR;
    }
    return CLI_OK;
}

int cmd_cache(tj_ctx *c, const cli_opts *o)
{
    static const char *const actions[] = {"stats", "list", "clear"};
    int action = -1;
    for (int i = 0; o->nfiles == 1 && i < 3; i++)
        if (!strcmp(o->files[0], actions[i]))
            action = i;
    if (action < 0)
        return cli_usage_error(o->cmd, "expected one of: stats, list, clear");
    tj_cache *cache = cli_open_cache(c, 0); /* none of these creates the directory */
    if (!cache)
        return CLI_ERROR;
    int rc = action == 0 ? show_stats(c, cache) : action == 1 ? list_entries(c, cache) : clear_entries(c, cache);
    tj_cache_close(cache);
    return rc;
}
