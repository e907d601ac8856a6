/* The disk cache: the directory, its settings, and storing and loading
 * entries. A store writes a temporary file beside the entry and renames
 * it into place, so readers (other threads, other processes) see either no
 * entry or a whole one; an entry that fails its checks anyway (a crash, a
 * full disk, someone else's file) is removed and rebuilt by the caller.
 * Any failure to write makes the cache memory only, with one warning. */
#define _GNU_SOURCE /* O_CLOEXEC, futimens */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/cache_internal.h"

#define DEFAULT_MAX_BYTES ((uint64_t)1 << 30)

/* ---- warnings ---------------------------------------------------------------- */

void tj_cache_warn(tj_cache *c, const char *fmt, ...)
{
    char msg[TJ_CACHE_PATH_MAX + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&c->lock);
    int first = !c->warning;
    if (first)
        c->warning = strdup(msg);
    tj_cache_warn_fn fn = c->warn_fn;
    void *ud = c->warn_ud;
    int deliver = first && fn && c->warning;
    c->delivered |= deliver;
    pthread_mutex_unlock(&c->lock);
    if (deliver)
        fn(ud, msg);
}

void tj_cache_set_warning_handler(tj_cache *c, tj_cache_warn_fn fn, void *ud)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    c->warn_fn = fn;
    c->warn_ud = ud;
    int deliver = fn && c->warning && !c->delivered;
    c->delivered |= deliver;
    pthread_mutex_unlock(&c->lock);
    if (deliver)
        fn(ud, c->warning);
}

const char *tj_cache_warning(tj_cache *c)
{
    if (!c)
        return NULL;
    pthread_mutex_lock(&c->lock);
    const char *w = c->warning;
    pthread_mutex_unlock(&c->lock);
    return w;
}

/* ---- settings ------------------------------------------------------------------- */

/* "1073741824", "512M", "2G", "64k": 0 when it is a size. */
static int parse_size(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (p == s)
        return -1;
    int shift = 0;
    switch (*p) {
    case 'k': case 'K': shift = 10; p++; break;
    case 'm': case 'M': shift = 20; p++; break;
    case 'g': case 'G': shift = 30; p++; break;
    case 't': case 'T': shift = 40; p++; break;
    default: break;
    }
    if (*p == 'B' || *p == 'b')
        p++;
    if (*p || v > (UINT64_MAX >> shift))
        return -1;
    *out = v << shift;
    return 0;
}

/* TILEJIT_CACHE_MAX=0 is a cap of 0, as tj_cache_evict(c, 0) reads it:
 * nothing is kept on disk. */
static uint64_t max_bytes_setting(tj_cache *c, uint64_t given)
{
    const char *env = getenv("TILEJIT_CACHE_MAX");
    uint64_t v;
    if (given)
        return given;
    if (!env || !*env)
        return DEFAULT_MAX_BYTES;
    if (parse_size(env, &v) == 0)
        return v;
    tj_cache_warn(c, "TILEJIT_CACHE_MAX='%s' is not a size (e.g. 1073741824, 512M, 2G); using 1G", env);
    return DEFAULT_MAX_BYTES;
}

static int disabled_by_env(void)
{
    const char *v = getenv("TILEJIT_CACHE");
    return v && (!strcmp(v, "0") || !strcmp(v, "off") || !strcmp(v, "no") || !strcmp(v, "false"));
}

/* The root directory (malloc'ed), or NULL: memory only. */
static char *root_setting(tj_cache *c, const char *given)
{
    const char *dir = given ? given : getenv("TILEJIT_CACHE_DIR");
    if (dir)
        return *dir && !disabled_by_env() ? strdup(dir) : NULL;
    if (disabled_by_env())
        return NULL;
    const char *home = getenv("HOME");
    if (!home || !*home) {
        tj_cache_warn(c, "tilejit cache: neither TILEJIT_CACHE_DIR nor HOME is set; caching in memory only");
        return NULL;
    }
    size_t n = strlen(home) + sizeof "/.cache/tilejit";
    char *root = malloc(n);
    if (root)
        snprintf(root, n, "%s/.cache/tilejit", home);
    return root;
}

/* ---- the directory ------------------------------------------------------------------ */

/* mkdir -p; 0 when the directory exists afterwards. */
static int make_dirs(char *path)
{
    struct stat st;
    if (stat(path, &st) == 0)
        return S_ISDIR(st.st_mode) ? 0 : (errno = ENOTDIR, -1);
    char *slash = strrchr(path, '/');
    if (slash && slash != path) {
        *slash = 0;
        int rc = make_dirs(path);
        *slash = '/';
        if (rc)
            return rc;
    }
    if (mkdir(path, 0777) == 0 || errno == EEXIST)
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : (errno = ENOTDIR, -1);
    return -1;
}

/* A query (no_create) leaves a missing directory missing: the cache is then
 * empty, neither readable nor writable, and says nothing. */
static int missing_for_query(const char *dir, int no_create)
{
    struct stat st;
    return no_create && stat(dir, &st) != 0 && errno == ENOENT;
}

static void setup_dir(tj_cache *c, char *root, int no_create)
{
    size_t n = strlen(root) + sizeof "/v1";
    if (n > TJ_CACHE_DIR_MAX) {
        tj_cache_warn(c, "tilejit cache: the directory name '%.200s...' is too long; caching in memory only", root);
        return;
    }
    char *dir = malloc(n);
    if (!dir)
        return;
    snprintf(dir, n, "%s/v1", root);
    if (missing_for_query(dir, no_create)) {
        c->dir = dir;
        return;
    }
    if (make_dirs(dir) != 0) {
        tj_cache_warn(c, "tilejit cache: cannot use directory %s: %s; caching in memory only", root, strerror(errno));
        free(dir);
        return;
    }
    c->dir = dir;
    c->readable = access(dir, R_OK | X_OK) == 0;
    c->writable = access(dir, W_OK | X_OK) == 0;
    if (!c->readable)
        tj_cache_warn(c, "tilejit cache: cannot read directory %s: %s; caching in memory only", dir, strerror(errno));
    else if (!c->writable)
        tj_cache_warn(c, "tilejit cache: directory %s is read-only; new kernels are cached in memory only", dir);
}

tj_cache *tj_cache_open(const tj_cache_options *opt)
{
    tj_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    pthread_mutex_init(&c->lock, NULL);
    c->max_bytes = max_bytes_setting(c, opt ? opt->max_bytes : 0);
    char *root = root_setting(c, opt ? opt->dir : NULL);
    if (root)
        setup_dir(c, root, opt && opt->no_create);
    free(root);
    return c;
}

void tj_cache_close(tj_cache *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->lock);
    free(c->dir);
    free(c->warning);
    free(c);
}

const char *tj_cache_dir(const tj_cache *c) { return c ? c->dir : NULL; }
uint64_t tj_cache_max_bytes(const tj_cache *c) { return c ? c->max_bytes : 0; }

int tj_cache_readable(tj_cache *c)
{
    if (!c)
        return 0;
    pthread_mutex_lock(&c->lock);
    int r = c->dir && c->readable;
    pthread_mutex_unlock(&c->lock);
    return r;
}

int tj_cache_writable(tj_cache *c)
{
    if (!c)
        return 0;
    pthread_mutex_lock(&c->lock);
    int w = c->dir && c->writable;
    pthread_mutex_unlock(&c->lock);
    return w;
}

void tj_cache_entry_path(const tj_cache *c, const tj_cache_key *k, char *buf)
{
    char hex[TJ_CACHE_KEY_HEX];
    tj_cache_key_hex(k, hex);
    snprintf(buf, TJ_CACHE_PATH_MAX, "%s/%s%s", c->dir, hex, TJ_CACHE_SUFFIX);
}

static void count(tj_cache *c, uint64_t *counter)
{
    pthread_mutex_lock(&c->lock);
    (*counter)++;
    pthread_mutex_unlock(&c->lock);
}

/* ---- storing -------------------------------------------------------------------------- */

static int write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The modification time is the entry's last use (access times are often
 * not kept), set to the nanosecond so that eviction orders entries used
 * within one clock tick. */
static void mark_used(int fd)
{
    struct timespec now[2];
    clock_gettime(CLOCK_REALTIME, &now[0]);
    now[1] = now[0];
    if (futimens(fd, now) != 0)
        futimens(fd, NULL); /* not the owner: "now" is still allowed */
}

/* Creates DIR/HEX.tjc.tmp.PID.N, a name no other writer uses. */
static int open_temp(tj_cache *c, const char *path, char *tmp)
{
    for (int attempt = 0; attempt < 64; attempt++) {
        pthread_mutex_lock(&c->lock);
        uint64_t serial = c->tmp_serial++;
        pthread_mutex_unlock(&c->lock);
        int n = snprintf(tmp, TJ_CACHE_PATH_MAX, "%s.tmp.%ld.%llu", path, (long)getpid(),
                         (unsigned long long)serial);
        if (n < 0 || n >= TJ_CACHE_PATH_MAX)
            return errno = ENAMETOOLONG, -1;
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

/* What a failed store means for the cache. */
typedef enum store_failure {
    STORE_OK,
    STORE_SKIPPED,   /* this entry only: its path is taken (a directory), or
                      * its temporary file vanished (a concurrent clear) */
    STORE_DIR_FAILS, /* the directory takes no files (read-only, full) */
} store_failure;

static store_failure write_entry(tj_cache *c, const char *path, const void *img, size_t size)
{
    char tmp[TJ_CACHE_PATH_MAX];
    int fd = open_temp(c, path, tmp);
    if (fd < 0)
        return STORE_DIR_FAILS;
    int rc = write_all(fd, img, size);
    if (rc == 0)
        mark_used(fd);
    int saved = errno;
    if (close(fd) != 0 && rc == 0) {
        rc = -1;
        saved = errno;
    }
    store_failure result = rc ? STORE_DIR_FAILS : STORE_OK;
    if (rc == 0 && rename(tmp, path) != 0) {
        result = STORE_SKIPPED;
        saved = errno;
    }
    if (result != STORE_OK)
        unlink(tmp);
    errno = saved;
    return result;
}

int tj_cache_store(tj_cache *c, const tj_cache_entry *e)
{
    if (!c || !e || (e->kind != TJ_CACHE_KERNEL && e->kind != TJ_CACHE_TUNE) || !tj_array_ok(e->meta, e->meta_len) ||
        !tj_array_ok(e->ptx, e->ptx_len) || !tj_array_ok(e->bin, e->bin_len))
        return 1;
    if (!tj_cache_writable(c))
        return 1;
    if (!c->max_bytes) { /* a cap of 0 keeps nothing */
        tj_cache_evict(c, 0);
        return 1;
    }
    size_t size;
    void *img = tj_cache_entry_encode(e, &size);
    if (!img)
        return 1;
    char path[TJ_CACHE_PATH_MAX];
    tj_cache_entry_path(c, &e->key, path);
    store_failure rc = write_entry(c, path, img, size);
    int err = errno;
    free(img);
    if (rc == STORE_DIR_FAILS) {
        pthread_mutex_lock(&c->lock);
        c->writable = 0;
        pthread_mutex_unlock(&c->lock);
        tj_cache_warn(c, "tilejit cache: cannot write to %s: %s; caching in memory only", c->dir, strerror(err));
    }
    if (rc != STORE_OK)
        return 1;
    count(c, &c->stores);
    tj_cache_evict(c, c->max_bytes);
    return 0;
}

/* ---- loading ------------------------------------------------------------------------------ */

int tj_cache_read_file(int fd, uint64_t size, void **out)
{
    if (size > TJ_CACHE_ENTRY_MAX)
        return -1;
    char *buf = malloc(size ? (size_t)size : 1);
    size_t got = 0;
    while (buf && got < size) {
        ssize_t r = read(fd, buf + got, (size_t)size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    if (!buf || got != size) {
        free(buf);
        return -1;
    }
    *out = buf;
    return 0;
}

int tj_cache_open_regular(const char *path, struct stat *st)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fstat(fd, st) == 0 && S_ISREG(st->st_mode))
        return fd;
    close(fd);
    errno = EINVAL;
    return -1;
}

int tj_cache_remove(const char *path, int is_dir)
{
    return (is_dir ? rmdir(path) : unlink(path)) == 0 || errno == ENOENT ? 0 : -1;
}

/* Removes the file at path if it is still the one that was read (a
 * writer may have renamed a good entry over it meanwhile). */
static void drop_if_same(tj_cache *c, const char *path, const struct stat *read_st)
{
    struct stat st;
    if (lstat(path, &st) == 0 && st.st_ino == read_st->st_ino && st.st_dev == read_st->st_dev)
        tj_cache_remove(path, S_ISDIR(st.st_mode));
    count(c, &c->dropped);
}

/* The entry image at path (malloc'ed) when it is a valid one of that kind
 * and key; NULL otherwise, after removing what is there when it is damaged
 * or not a regular file. */
static void *read_valid(tj_cache *c, const char *path, tj_cache_kind kind, const tj_cache_key *k,
                        tj_cache_entry *out)
{
    struct stat st;
    void *img = NULL;
    int fd = tj_cache_open_regular(path, &st);
    if (fd < 0) {
        if (errno == EINVAL) /* a FIFO, a directory, ...: not an entry */
            drop_if_same(c, path, &st);
        return NULL;
    }
    int bad = tj_cache_read_file(fd, (uint64_t)st.st_size, &img) != 0 ||
              tj_cache_entry_decode(img, (size_t)st.st_size, kind, k, out) != NULL;
    if (!bad)
        mark_used(fd);
    close(fd);
    if (!bad)
        return img;
    free(img);
    drop_if_same(c, path, &st);
    return NULL;
}

int tj_cache_load(tj_cache *c, tj_cache_kind kind, const tj_cache_key *k, tj_cache_entry *out)
{
    if (!out)
        return 1;
    if (!c || !k || (kind != TJ_CACHE_KERNEL && kind != TJ_CACHE_TUNE)) {
        memset(out, 0, sizeof *out);
        return 1;
    }
    memset(out, 0, sizeof *out);
    char path[TJ_CACHE_PATH_MAX];
    void *img = NULL;
    if (tj_cache_readable(c)) {
        tj_cache_entry_path(c, k, path);
        img = read_valid(c, path, kind, k, out);
    }
    if (!img) {
        memset(out, 0, sizeof *out);
        count(c, &c->misses);
        return 1;
    }
    out->storage = img;
    count(c, &c->hits);
    return 0;
}

void tj_cache_drop(tj_cache *c, const tj_cache_key *k)
{
    if (!c || !k)
        return;
    if (!tj_cache_writable(c))
        return;
    char path[TJ_CACHE_PATH_MAX];
    tj_cache_entry_path(c, k, path);
    if (unlink(path) == 0)
        count(c, &c->dropped);
}
