/* Helpers for the cache tests (header only): scratch directories, entries
 * with contents derived from a number, and files. */
#ifndef CACHE_TEST_UTIL_H
#define CACHE_TEST_UTIL_H

#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tilejit/cache.h"

/* A fresh directory under /tmp (removed by ct_rmrf). */
static inline char *ct_tempdir(void)
{
    char *d = strdup("/tmp/tj-cache-test-XXXXXX");
    cr_assert(d && mkdtemp(d), "mkdtemp");
    return d;
}

/* Removes a directory from ct_tempdir and frees its name. */
static inline void ct_rmrf(char *path)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", path, path);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", path);
    free(path);
}

static inline tj_cache_key ct_key(int n)
{
    tj_cache_key k;
    tj_key_builder b;
    tj_key_begin(&b, "test");
    tj_key_add_int(&b, "n", n);
    tj_key_end(&b, &k);
    return k;
}

/* An entry whose every byte follows from n; bin_len bytes of binary. */
typedef struct ct_entry {
    tj_cache_entry e;
    char meta[128], ptx[256];
    unsigned char *bin;
} ct_entry;

static inline void ct_make(ct_entry *c, int n, size_t bin_len)
{
    memset(c, 0, sizeof *c);
    snprintf(c->meta, sizeof c->meta, "kernel k%d\narch sm_90a\nthreads 128\nsmem 0\n", n);
    snprintf(c->ptx, sizeof c->ptx, "// ptx of kernel %d\n.version 8.0\n", n);
    c->bin = malloc(bin_len + 1);
    for (size_t i = 0; i < bin_len; i++)
        c->bin[i] = (unsigned char)(n * 31 + i * 7);
    c->e = (tj_cache_entry){.kind = TJ_CACHE_KERNEL, .key = ct_key(n), .meta = c->meta,
                            .meta_len = strlen(c->meta), .ptx = c->ptx, .ptx_len = strlen(c->ptx),
                            .bin = c->bin, .bin_len = bin_len};
}

static inline void ct_free(ct_entry *c) { free(c->bin); }

/* A loaded entry has exactly the contents ct_make(n, bin_len) gives. */
static inline int ct_matches(const tj_cache_entry *got, int n, size_t bin_len)
{
    ct_entry want;
    ct_make(&want, n, bin_len);
    int ok = got->kind == TJ_CACHE_KERNEL && tj_cache_key_equal(&got->key, &want.e.key) &&
             got->meta_len == want.e.meta_len && !memcmp(got->meta, want.meta, got->meta_len) &&
             got->ptx_len == want.e.ptx_len && !memcmp(got->ptx, want.ptx, got->ptx_len) &&
             got->bin_len == bin_len && !memcmp(got->bin, want.bin, bin_len);
    ct_free(&want);
    return ok;
}

static inline void ct_path(tj_cache *c, int n, char *buf, size_t size)
{
    char hex[TJ_CACHE_KEY_HEX];
    tj_cache_key k = ct_key(n);
    tj_cache_key_hex(&k, hex);
    snprintf(buf, size, "%s/%s.tjc", tj_cache_dir(c), hex);
}

static inline int ct_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static inline long ct_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Files in dir whose name contains `part`. */
static inline int ct_count_files(const char *dir, const char *part)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        n += strstr(de->d_name, part) != NULL;
    if (d)
        closedir(d);
    return n;
}

/* Counts the warnings a cache gives. */
typedef struct ct_warnings {
    int count;
    char last[512];
} ct_warnings;

static inline void ct_on_warning(void *ud, const char *msg)
{
    ct_warnings *w = ud;
    w->count++;
    snprintf(w->last, sizeof w->last, "%s", msg);
}

#endif
