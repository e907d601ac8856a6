/* Walking the cache directory: statistics, listing, clearing and
 * least-recently-used eviction. Other processes may add or remove files
 * while a walk runs; a file that vanishes is simply skipped. */
#define _GNU_SOURCE /* O_CLOEXEC, st_mtim */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/cache_internal.h"

/* A temporary file is another process's work in progress unless it has
 * not changed for a minute and its process is gone from this machine, or
 * has not changed for an hour (its pid may be reused, or be another
 * machine's on a shared directory). */
enum { STALE_TEMP_SECONDS = 60, ABANDONED_TEMP_SECONDS = 3600 };

typedef struct scan_file {
    char name[TJ_CACHE_KEY_HEX + 48];
    uint64_t bytes;
    struct timespec used;
    int temp;
    int odd;    /* not a regular file (a FIFO, a directory): never an entry */
    int is_dir;
} scan_file;

typedef struct scan {
    scan_file *files;
    size_t n, cap;
} scan;

/* HEX.tjc: an entry; HEX.tjc.tmp.*: a temporary file; others are not ours. */
static int classify(const char *name, int *temp)
{
    size_t hex = 2 * TJ_CACHE_KEY_BYTES, n = strlen(name);
    tj_cache_key k;
    char prefix[TJ_CACHE_KEY_HEX];
    if (n < hex + strlen(TJ_CACHE_SUFFIX))
        return 0;
    memcpy(prefix, name, hex);
    prefix[hex] = 0;
    if (tj_cache_key_parse(prefix, &k))
        return 0;
    *temp = !strncmp(name + hex, TJ_CACHE_TMP_MARK, strlen(TJ_CACHE_TMP_MARK));
    return *temp || !strcmp(name + hex, TJ_CACHE_SUFFIX);
}

static int add_file(scan *s, const char *dir, const char *name, int temp)
{
    char path[TJ_CACHE_PATH_MAX];
    struct stat st;
    if (strlen(name) >= sizeof s->files[0].name)
        return 0;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (lstat(path, &st) != 0)
        return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        scan_file *f = realloc(s->files, cap * sizeof *f);
        if (!f)
            return -1;
        s->files = f;
        s->cap = cap;
    }
    scan_file *f = &s->files[s->n++];
    snprintf(f->name, sizeof f->name, "%s", name);
    f->bytes = (uint64_t)st.st_size;
    f->used = st.st_mtim;
    f->temp = temp;
    f->odd = !S_ISREG(st.st_mode);
    f->is_dir = S_ISDIR(st.st_mode);
    return 0;
}

/* The files named like entries and temporary files; a directory that is
 * missing (a query did not create it, or someone removed it) is empty. */
static int scan_dir(const char *dir, scan *s)
{
    memset(s, 0, sizeof *s);
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    struct dirent *de;
    int temp, rc = 0;
    while (rc == 0 && (de = readdir(d)))
        if (classify(de->d_name, &temp))
            rc = add_file(s, dir, de->d_name, temp);
    closedir(d);
    if (rc)
        free(s->files);
    return rc;
}

static int by_last_use(const void *a, const void *b)
{
    const scan_file *x = a, *y = b;
    if (x->used.tv_sec != y->used.tv_sec)
        return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    if (x->used.tv_nsec != y->used.tv_nsec)
        return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void sort_by_last_use(scan *s)
{
    if (s->n) /* qsort's base may not be NULL, even for no elements */
        qsort(s->files, s->n, sizeof *s->files, by_last_use);
}

static int remove_file(const char *dir, const scan_file *f)
{
    char path[TJ_CACHE_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, f->name);
    return tj_cache_remove(path, f->is_dir);
}

/* ---- eviction and clearing ------------------------------------------------------------- */

/* HEX.tjc.tmp.PID.N: is PID a live process here? (EPERM: alive, not ours.) */
static int writer_alive(const char *name)
{
    const char *p = name + 2 * TJ_CACHE_KEY_BYTES + strlen(TJ_CACHE_TMP_MARK);
    char *end;
    long pid = strtol(p, &end, 10);
    return pid > 0 && *end == '.' && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

static int stale_temp(const scan_file *f)
{
    time_t age = time(NULL) - f->used.tv_sec;
    return f->temp && (age > ABANDONED_TEMP_SECONDS || (age > STALE_TEMP_SECONDS && !writer_alive(f->name)));
}

uint64_t tj_cache_evict(tj_cache *c, uint64_t max_bytes)
{
    if (!c)
        return 0;
    scan s;
    if (!tj_cache_writable(c) || scan_dir(c->dir, &s))
        return 0;
    uint64_t total = 0, removed = 0;
    for (size_t i = 0; i < s.n; i++) {
        if (stale_temp(&s.files[i]))
            remove_file(c->dir, &s.files[i]);
        else if (!s.files[i].temp && !s.files[i].odd)
            total += s.files[i].bytes;
    }
    sort_by_last_use(&s);
    for (size_t i = 0; i < s.n && total > max_bytes; i++) {
        if (s.files[i].temp || s.files[i].odd || remove_file(c->dir, &s.files[i]))
            continue;
        total -= s.files[i].bytes;
        removed++;
    }
    free(s.files);
    pthread_mutex_lock(&c->lock);
    c->evicted += removed;
    pthread_mutex_unlock(&c->lock);
    return removed;
}

int tj_cache_clear(tj_cache *c, uint64_t *removed)
{
    if (!c || !removed)
        return -1;
    scan s;
    *removed = 0;
    if (!c->dir)
        return 0;
    if (scan_dir(c->dir, &s))
        return -1;
    int rc = 0;
    for (size_t i = 0; i < s.n; i++) {
        const scan_file *f = &s.files[i];
        if (f->temp && !stale_temp(f))
            continue; /* another process is writing it */
        if (remove_file(c->dir, f))
            rc = -1;
        else if (!f->temp)
            (*removed)++;
    }
    free(s.files);
    return rc;
}

/* ---- reading entries for stats and the listing --------------------------------------------- */

/* Reads and checks one entry; *e is valid (with storage) when 0. */
static int read_entry(const char *dir, const scan_file *f, tj_cache_entry *e)
{
    char path[TJ_CACHE_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, f->name);
    struct stat st;
    int fd = tj_cache_open_regular(path, &st);
    void *img = NULL;
    if (fd < 0)
        return -1;
    int rc = tj_cache_read_file(fd, (uint64_t)st.st_size, &img);
    close(fd);
    if (rc == 0 && tj_cache_entry_decode(img, (size_t)st.st_size, 0, NULL, e) == NULL) {
        e->storage = img;
        return 0;
    }
    free(img);
    return -1;
}

/* Copies text into a fixed field, cut to fit. */
static void set_field(char *field, size_t size, const tj_buf *text)
{
    size_t n = text->len < size ? text->len : size - 1;
    memcpy(field, text->data ? text->data : "", n);
    field[n] = 0;
}

static void describe(const tj_cache_entry *e, tj_cache_item *it)
{
    char a[64] = "", b[64] = "", d[64] = "";
    tj_buf detail = {0};
    it->kind = e->kind;
    if (tj_cache_meta_get(e->meta, "kernel", it->name, sizeof it->name))
        snprintf(it->name, sizeof it->name, "-");
    if (e->kind == TJ_CACHE_KERNEL) {
        tj_cache_meta_get(e->meta, "arch", a, sizeof a);
        tj_cache_meta_get(e->meta, "threads", b, sizeof b);
        tj_cache_meta_get(e->meta, "smem", d, sizeof d);
        tj_buf_printf(&detail, "%s, %s threads, %s B shared, %s", a, b, d, e->bin_len ? "cubin" : "PTX only");
    } else if (tj_cache_meta_get(e->meta, "config", a, sizeof a) == 0) {
        tj_cache_meta_get(e->meta, "status", b, sizeof b);
        tj_cache_meta_get(e->meta, "seconds", d, sizeof d);
        tj_buf_printf(&detail, "%s: %s %s", a, b, d);
    } else {
        tj_buf_printf(&detail, "tuning generation");
    }
    set_field(it->detail, sizeof it->detail, &detail);
    tj_buf_free(&detail);
}

int tj_cache_list(tj_cache *c, int (*fn)(void *ud, const tj_cache_item *it), void *ud)
{
    if (!c || !fn)
        return -1;
    scan s;
    if (!c->dir || scan_dir(c->dir, &s))
        return -1;
    sort_by_last_use(&s);
    int n = 0;
    for (size_t i = 0; i < s.n; i++) {
        const scan_file *f = &s.files[i];
        tj_cache_item it;
        tj_cache_entry e;
        if (f->temp)
            continue;
        memset(&it, 0, sizeof it);
        char hex[TJ_CACHE_KEY_HEX];
        memcpy(hex, f->name, 2 * TJ_CACHE_KEY_BYTES); /* classify saw the hex digits */
        hex[2 * TJ_CACHE_KEY_BYTES] = 0;
        tj_cache_key_parse(hex, &it.key);
        it.bytes = f->bytes;
        it.last_use = (int64_t)f->used.tv_sec;
        if (read_entry(c->dir, f, &e) == 0) {
            describe(&e, &it);
            tj_cache_entry_free(&e);
        }
        n++;
        if (fn(ud, &it))
            break;
    }
    free(s.files);
    return n;
}

/* The kind from the header alone (0: not a valid header). */
static int peek_kind(const char *dir, const scan_file *f)
{
    char path[TJ_CACHE_PATH_MAX];
    unsigned char head[16];
    snprintf(path, sizeof path, "%s/%s", dir, f->name);
    struct stat st;
    int fd = tj_cache_open_regular(path, &st);
    if (fd < 0)
        return 0;
    ssize_t r = read(fd, head, sizeof head);
    close(fd);
    if (r != (ssize_t)sizeof head || memcmp(head, "TJCACHE", 7))
        return 0;
    return head[12];
}

int tj_cache_stats_get(tj_cache *c, tj_cache_stats *out)
{
    if (!c || !out)
        return -1;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&c->lock);
    out->hits = c->hits;
    out->misses = c->misses;
    out->stores = c->stores;
    out->dropped = c->dropped;
    out->evicted = c->evicted;
    pthread_mutex_unlock(&c->lock);
    scan s;
    if (!c->dir)
        return 0;
    if (scan_dir(c->dir, &s))
        return -1;
    for (size_t i = 0; i < s.n; i++) {
        const scan_file *f = &s.files[i];
        if (f->temp) {
            out->temp_files++;
            continue;
        }
        out->entries++;
        out->bytes += f->bytes;
        int kind = peek_kind(c->dir, f);
        out->kernels += kind == TJ_CACHE_KERNEL;
        out->tune_records += kind == TJ_CACHE_TUNE;
    }
    free(s.files);
    return 0;
}
