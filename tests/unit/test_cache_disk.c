/* The disk cache: round trips, every kind of damaged entry, eviction under
 * the size cap, listing and clearing, settings, and directories that are
 * missing, read-only or full (degrading to memory only, one warning). */
#include "cache_test_util.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>

static tj_cache *open_in(const char *dir, uint64_t max)
{
    tj_cache_options o = {.dir = dir, .max_bytes = max};
    tj_cache *c = tj_cache_open(&o);
    cr_assert(c);
    return c;
}

Test(disk, round_trip)
{
    char *dir = ct_tempdir();
    tj_cache *c = open_in(dir, 0);
    cr_assert(tj_cache_dir(c) && tj_cache_writable(c) && tj_cache_readable(c));
    cr_expect_null(tj_cache_warning(c));
    ct_entry in;
    ct_make(&in, 1, 5000);
    cr_assert_eq(tj_cache_store(c, &in.e), 0);
    tj_cache_entry out;
    cr_assert_eq(tj_cache_load(c, TJ_CACHE_KERNEL, &in.e.key, &out), 0);
    cr_expect(ct_matches(&out, 1, 5000));
    char value[32];
    cr_expect_eq(tj_cache_meta_get(out.meta, "threads", value, sizeof value), 0);
    cr_expect_str_eq(value, "128");
    cr_expect_neq(tj_cache_meta_get(out.meta, "thread", value, sizeof value), 0);
    tj_cache_entry_free(&out);
    tj_cache_key other = ct_key(2);
    cr_expect_neq(tj_cache_load(c, TJ_CACHE_KERNEL, &other, &out), 0);
    tj_cache_stats st;
    cr_assert_eq(tj_cache_stats_get(c, &st), 0);
    cr_expect_eq(st.entries, 1);
    cr_expect_eq(st.kernels, 1);
    cr_expect_eq(st.hits, 1);
    cr_expect_eq(st.misses, 1);
    cr_expect_eq(st.stores, 1);
    cr_expect_eq(st.temp_files, 0);
    ct_free(&in);
    tj_cache_close(c);
    ct_rmrf(dir);
}

Test(disk, empty_sections)
{
    char *dir = ct_tempdir();
    tj_cache *c = open_in(dir, 0);
    tj_cache_entry in = {.kind = TJ_CACHE_TUNE, .key = ct_key(9), .meta = "status ok\n", .meta_len = 10};
    cr_assert_eq(tj_cache_store(c, &in), 0);
    tj_cache_entry out;
    cr_assert_eq(tj_cache_load(c, TJ_CACHE_TUNE, &in.key, &out), 0);
    cr_expect_str_eq(out.meta, "status ok\n");
    cr_expect_null(out.ptx);
    cr_expect_null(out.bin);
    cr_expect_eq(out.bin_len, 0);
    tj_cache_entry_free(&out);
    tj_cache_close(c);
    ct_rmrf(dir);
}

/* ---- damaged entries ------------------------------------------------------------- */

typedef enum { TRUNCATE, FLIP, APPEND, FOREIGN, GARBAGE, WRONG_KIND } damage_kind;

typedef struct damage {
    damage_kind kind;
    long at; /* TRUNCATE: new size; FLIP: offset (negative: from the end) */
    const char *what;
} damage;

static void write_bytes(const char *path, const void *data, size_t n, int append)
{
    FILE *f = fopen(path, append ? "ab" : "wb");
    cr_assert(f);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

static void flip_byte(const char *path, long at)
{
    int fd = open(path, O_RDWR);
    unsigned char b;
    cr_assert(fd >= 0);
    if (at < 0)
        at += ct_size(path);
    cr_assert_eq(pread(fd, &b, 1, at), 1);
    b ^= 0x20;
    cr_assert_eq(pwrite(fd, &b, 1, at), 1);
    close(fd);
}

static void copy_file(const char *from, const char *to)
{
    FILE *f = fopen(from, "rb");
    cr_assert(f);
    char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    write_bytes(to, buf, n, 0);
}

static void apply(tj_cache *c, const damage *d, const char *path)
{
    switch (d->kind) {
    case TRUNCATE: cr_assert_eq(truncate(path, d->at), 0); break;
    case FLIP: flip_byte(path, d->at); break;
    case APPEND: write_bytes(path, "x", 1, 1); break;
    case FOREIGN: { /* another key's valid entry under this name */
        ct_entry other;
        char other_path[4096];
        ct_make(&other, 2, 100);
        cr_assert_eq(tj_cache_store(c, &other.e), 0);
        ct_path(c, 2, other_path, sizeof other_path);
        copy_file(other_path, path);
        ct_free(&other);
        break;
    }
    case GARBAGE: write_bytes(path, "#!/bin/sh\necho not an entry\n", 28, 0); break;
    case WRONG_KIND: break; /* loaded as the other kind below */
    }
}

static const damage damages[] = {
    {TRUNCATE, 0, "empty"},
    {TRUNCATE, 7, "inside the magic"},
    {TRUNCATE, 71, "inside the header"},
    {TRUNCATE, 120, "inside the metadata"},
    {TRUNCATE, 2000, "inside the binary"},
    {TRUNCATE, -1, "the last byte missing"},
    {FLIP, 0, "magic"},
    {FLIP, 8, "format version"},
    {FLIP, 12, "kind"},
    {FLIP, 20, "key"},
    {FLIP, 49, "metadata length"},
    {FLIP, 75, "metadata"},
    {FLIP, 160, "ptx"},
    {FLIP, 1000, "binary"},
    {FLIP, -1, "checksum"},
    {APPEND, 0, "trailing byte"},
    {FOREIGN, 0, "another key's entry"},
    {GARBAGE, 0, "not an entry at all"},
    {WRONG_KIND, 0, "another kind"},
};

Test(disk, damaged_entries_are_dropped_and_rebuilt)
{
    char *dir = ct_tempdir();
    tj_cache *c = open_in(dir, 0);
    char path[4096];
    ct_path(c, 1, path, sizeof path);
    uint64_t dropped = 0;
    for (size_t i = 0; i < sizeof damages / sizeof *damages; i++) {
        const damage *d = &damages[i];
        ct_entry in;
        ct_make(&in, 1, 5000);
        cr_assert_eq(tj_cache_store(c, &in.e), 0);
        damage real = *d;
        if (real.kind == TRUNCATE && real.at < 0)
            real.at += ct_size(path);
        apply(c, &real, path);
        tj_cache_entry out;
        tj_cache_kind kind = d->kind == WRONG_KIND ? TJ_CACHE_TUNE : TJ_CACHE_KERNEL;
        cr_expect_neq(tj_cache_load(c, kind, &in.e.key, &out), 0, "%s: loaded", d->what);
        cr_expect_not(ct_exists(path), "%s: not removed", d->what);
        tj_cache_stats st;
        tj_cache_stats_get(c, &st);
        cr_expect_eq(st.dropped, ++dropped, "%s: not counted", d->what);
        /* rebuilt */
        cr_assert_eq(tj_cache_store(c, &in.e), 0, "%s", d->what);
        cr_assert_eq(tj_cache_load(c, TJ_CACHE_KERNEL, &in.e.key, &out), 0, "%s: not rebuilt", d->what);
        cr_expect(ct_matches(&out, 1, 5000), "%s", d->what);
        tj_cache_entry_free(&out);
        ct_free(&in);
    }
    cr_expect_null(tj_cache_warning(c), "damaged entries are no reason to warn");
    cr_expect(tj_cache_writable(c));
    tj_cache_close(c);
    ct_rmrf(dir);
}

typedef struct listing {
    tj_cache_item items[16];
    int n;
} listing;

static int collect(void *ud, const tj_cache_item *it)
{
    listing *l = ud;
    if (l->n < 16)
        l->items[l->n++] = *it;
    return 0;
}

Test(disk, listing_shows_entries_least_recently_used_first)
{
    char *dir = ct_tempdir();
    tj_cache *c = open_in(dir, 0);
    ct_entry a, b, t;
    ct_make(&a, 1, 300);
    ct_make(&b, 2, 300);
    ct_make(&t, 3, 0);
    t.e.kind = TJ_CACHE_TUNE;
    snprintf(t.meta, sizeof t.meta, "kernel k3\nconfig BLOCK=64\nstatus ok\nseconds 1e-05\n");
    t.e.meta_len = strlen(t.meta);
    tj_cache_store(c, &a.e);
    tj_cache_store(c, &b.e);
    tj_cache_store(c, &t.e);
    tj_cache_entry out;
    cr_assert_eq(tj_cache_load(c, TJ_CACHE_KERNEL, &a.e.key, &out), 0); /* a is now the most recent */
    tj_cache_entry_free(&out);
    char path[4096];
    ct_path(c, 2, path, sizeof path);
    flip_byte(path, -3);
    listing l = {.n = 0};
    cr_assert_eq(tj_cache_list(c, collect, &l), 3);
    cr_assert_eq(l.n, 3);
    cr_expect_eq(l.items[0].kind, 0, "the damaged one, listed as invalid");
    cr_expect_eq(l.items[1].kind, TJ_CACHE_TUNE);
    cr_expect_str_eq(l.items[1].name, "k3");
    cr_expect(strstr(l.items[1].detail, "BLOCK=64"), "%s", l.items[1].detail);
    cr_expect_eq(l.items[2].kind, TJ_CACHE_KERNEL);
    cr_expect_str_eq(l.items[2].name, "k1");
    cr_expect(strstr(l.items[2].detail, "sm_90a"), "%s", l.items[2].detail);
    tj_cache_stats st;
    tj_cache_stats_get(c, &st);
    cr_expect_eq(st.entries, 3);
    cr_expect_eq(st.tune_records, 1);
    cr_expect_eq(st.kernels, 2, "statistics go by the headers (the listing checks the whole entry)");
    ct_free(&a);
    ct_free(&b);
    ct_free(&t);
    tj_cache_close(c);
    ct_rmrf(dir);
}

/* ---- eviction and clearing ------------------------------------------------------------ */

static int present(tj_cache *c, int n)
{
    char path[4096];
    ct_path(c, n, path, sizeof path);
    return ct_exists(path);
}

Test(disk, eviction_keeps_the_total_under_the_cap_least_recently_used_first)
{
    char *dir = ct_tempdir();
    ct_entry e[6];
    for (int i = 1; i <= 5; i++)
        ct_make(&e[i], i, 10000);
    tj_cache *probe = open_in(dir, 0);
    tj_cache_store(probe, &e[1].e);
    char path[4096];
    ct_path(probe, 1, path, sizeof path);
    long size = ct_size(path);
    tj_cache_close(probe);
    tj_cache *c = open_in(dir, (uint64_t)(size * 7 / 2)); /* room for three and a half */
    tj_cache_store(c, &e[2].e);
    tj_cache_store(c, &e[3].e);
    tj_cache_entry out;
    cr_assert_eq(tj_cache_load(c, TJ_CACHE_KERNEL, &e[1].e.key, &out), 0); /* 1 used last */
    tj_cache_entry_free(&out);
    tj_cache_store(c, &e[4].e);
    cr_expect(present(c, 1) && !present(c, 2) && present(c, 3) && present(c, 4), "2 was the least recently used");
    tj_cache_store(c, &e[5].e);
    cr_expect(present(c, 1) && !present(c, 3) && present(c, 4) && present(c, 5));
    tj_cache_stats st;
    tj_cache_stats_get(c, &st);
    cr_expect_eq(st.entries, 3);
    cr_expect_leq(st.bytes, tj_cache_max_bytes(c));
    cr_expect_eq(st.evicted, 2);
    cr_expect_eq(tj_cache_evict(c, 0), 3, "a cap of 0 empties it");
    for (int i = 1; i <= 5; i++)
        ct_free(&e[i]);
    tj_cache_close(c);
    ct_rmrf(dir);
}

Test(disk, stale_temporary_files_go_fresh_ones_stay)
{
    char *dir = ct_tempdir();
    tj_cache *c = open_in(dir, 0);
    char hex[TJ_CACHE_KEY_HEX], stale[4200], fresh[4200];
    tj_cache_key k = ct_key(7);
    tj_cache_key_hex(&k, hex);
    snprintf(stale, sizeof stale, "%s/%s.tjc.tmp.1.0", tj_cache_dir(c), hex);
    snprintf(fresh, sizeof fresh, "%s/%s.tjc.tmp.1.1", tj_cache_dir(c), hex);
    write_bytes(stale, "partial", 7, 0);
    write_bytes(fresh, "partial", 7, 0);
    struct timespec old[2] = {{.tv_sec = time(NULL) - 7200}, {.tv_sec = time(NULL) - 7200}};
    cr_assert_eq(utimensat(AT_FDCWD, stale, old, 0), 0);
    tj_cache_stats st;
    tj_cache_stats_get(c, &st);
    cr_expect_eq(st.temp_files, 2);
    cr_expect_eq(st.entries, 0);
    tj_cache_evict(c, 1 << 20);
    cr_expect_not(ct_exists(stale));
    cr_expect(ct_exists(fresh), "a writer may still be writing it");
    uint64_t removed;
    cr_expect_eq(tj_cache_clear(c, &removed), 0);
    cr_expect(ct_exists(fresh), "clear leaves another process's temporary file too");
    tj_cache_close(c);
    ct_rmrf(dir);
}

Test(disk, clear_removes_entries_and_nothing_else)
{
    char *dir = ct_tempdir();
    tj_cache *c = open_in(dir, 0);
    for (int i = 0; i < 4; i++) {
        ct_entry e;
        ct_make(&e, i, 100);
        tj_cache_store(c, &e.e);
        ct_free(&e);
    }
    char mine[4200];
    snprintf(mine, sizeof mine, "%s/README", tj_cache_dir(c));
    write_bytes(mine, "not ours", 8, 0);
    uint64_t removed = 0;
    cr_expect_eq(tj_cache_clear(c, &removed), 0);
    cr_expect_eq(removed, 4);
    cr_expect(ct_exists(mine));
    tj_cache_stats st;
    tj_cache_stats_get(c, &st);
    cr_expect_eq(st.entries, 0);
    tj_cache_close(c);
    ct_rmrf(dir);
}

/* ---- settings ---------------------------------------------------------------------------- */

Test(settings, environment)
{
    char *dir = ct_tempdir();
    setenv("TILEJIT_CACHE_DIR", dir, 1);
    setenv("TILEJIT_CACHE_MAX", "3M", 1);
    tj_cache *c = tj_cache_open(NULL);
    char want[4200];
    snprintf(want, sizeof want, "%s/v1", dir);
    cr_expect_str_eq(tj_cache_dir(c), want);
    cr_expect_eq(tj_cache_max_bytes(c), 3u << 20);
    cr_expect_null(tj_cache_warning(c));
    tj_cache_close(c);
    setenv("TILEJIT_CACHE_MAX", "lots", 1);
    c = tj_cache_open(NULL);
    cr_expect_eq(tj_cache_max_bytes(c), 1u << 30);
    cr_expect(tj_cache_warning(c) && strstr(tj_cache_warning(c), "TILEJIT_CACHE_MAX"));
    tj_cache_close(c);
    unsetenv("TILEJIT_CACHE_MAX");
    unsetenv("TILEJIT_CACHE_DIR");
    setenv("HOME", dir, 1);
    c = tj_cache_open(NULL);
    snprintf(want, sizeof want, "%s/.cache/tilejit/v1", dir);
    cr_expect_str_eq(tj_cache_dir(c), want, "the default under $HOME");
    tj_cache_close(c);
    setenv("TILEJIT_CACHE", "off", 1);
    c = tj_cache_open(NULL);
    cr_expect_null(tj_cache_dir(c));
    cr_expect_null(tj_cache_warning(c), "turned off on purpose: no warning");
    ct_entry e;
    ct_make(&e, 1, 10);
    cr_expect_neq(tj_cache_store(c, &e.e), 0);
    ct_free(&e);
    tj_cache_close(c);
    ct_rmrf(dir);
}

/* ---- directories that cannot be used ----------------------------------------------------- */

/* Stores three entries and loads one: memory only, with exactly one warning. */
static int degraded_once(tj_cache *c, ct_warnings *w)
{
    int ok = 1;
    for (int i = 0; i < 3; i++) {
        ct_entry e;
        ct_make(&e, 100 + i, 5000);
        ok &= tj_cache_store(c, &e.e) != 0;
        ct_free(&e);
    }
    ok &= !tj_cache_writable(c);
    ok &= w->count == 1;
    return ok;
}

Test(directories, missing_ones_are_created)
{
    char *dir = ct_tempdir(), deep[4200];
    snprintf(deep, sizeof deep, "%s/a/b/c", dir);
    tj_cache *c = open_in(deep, 0);
    cr_expect(tj_cache_writable(c));
    cr_expect_null(tj_cache_warning(c));
    ct_entry e;
    ct_make(&e, 1, 10);
    cr_expect_eq(tj_cache_store(c, &e.e), 0);
    ct_free(&e);
    tj_cache_close(c);
    ct_rmrf(dir);
}

Test(directories, one_that_cannot_be_created_means_memory_only)
{
    char *dir = ct_tempdir(), bad[4200];
    snprintf(bad, sizeof bad, "%s/file", dir);
    write_bytes(bad, "x", 1, 0);
    strcat(bad, "/cache"); /* under a regular file */
    ct_warnings w = {0};
    tj_cache *c = open_in(bad, 0);
    tj_cache_set_warning_handler(c, ct_on_warning, &w); /* the warning came before: delivered now */
    cr_expect_null(tj_cache_dir(c));
    cr_expect(degraded_once(c, &w), "%d warnings", w.count);
    cr_expect(strstr(w.last, "memory only"), "%s", w.last);
    tj_cache_entry out;
    tj_cache_key k = ct_key(100);
    cr_expect_neq(tj_cache_load(c, TJ_CACHE_KERNEL, &k, &out), 0);
    tj_cache_close(c);
    ct_rmrf(dir);
}

/* Runs fn in a child process (to drop privileges or limit file sizes);
 * its exit status 0 means it passed. */
static void in_child(int (*fn)(const char *dir), const char *dir)
{
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0)
        _exit(fn(dir));
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed with status %d", status);
}

static int readonly_child(const char *dir)
{
    if (geteuid() == 0 && (setgid(65534) || setuid(65534))) /* root ignores permissions */
        return 10;
    ct_warnings w = {0};
    tj_cache_options o = {.dir = dir};
    tj_cache *c = tj_cache_open(&o);
    tj_cache_set_warning_handler(c, ct_on_warning, &w);
    tj_cache_entry out;
    tj_cache_key k = ct_key(1);
    if (!tj_cache_dir(c) || !tj_cache_readable(c))
        return 11;
    if (tj_cache_load(c, TJ_CACHE_KERNEL, &k, &out) || !ct_matches(&out, 1, 500))
        return 12; /* what is there can still be read */
    tj_cache_entry_free(&out);
    if (!degraded_once(c, &w) || !strstr(w.last, "read-only"))
        return 13;
    tj_cache_close(c);
    return 0;
}

Test(directories, read_only_means_reading_and_memory_only)
{
    char *dir = ct_tempdir();
    tj_cache *c = open_in(dir, 0);
    ct_entry e;
    ct_make(&e, 1, 500);
    cr_assert_eq(tj_cache_store(c, &e.e), 0);
    ct_free(&e);
    char v1[4200];
    snprintf(v1, sizeof v1, "%s", tj_cache_dir(c));
    tj_cache_close(c);
    cr_assert_eq(chmod(v1, 0555), 0);
    cr_assert_eq(chmod(dir, 0755), 0);
    in_child(readonly_child, dir);
    ct_rmrf(dir);
}

static int full_child(const char *dir)
{
    struct rlimit lim = {4096, 4096};
    signal(SIGXFSZ, SIG_IGN);
    if (setrlimit(RLIMIT_FSIZE, &lim))
        return 20;
    ct_warnings w = {0};
    tj_cache_options o = {.dir = dir};
    tj_cache *c = tj_cache_open(&o);
    tj_cache_set_warning_handler(c, ct_on_warning, &w);
    if (!tj_cache_writable(c))
        return 21;
    if (!degraded_once(c, &w)) /* 5000-byte entries do not fit */
        return 22;
    if (ct_count_files(tj_cache_dir(c), ".tmp.") != 0 || ct_count_files(tj_cache_dir(c), ".tjc") != 0)
        return 23; /* nothing half-written left behind */
    tj_cache_close(c);
    return 0;
}

Test(directories, a_full_disk_means_memory_only)
{
    char *dir = ct_tempdir();
    in_child(full_child, dir);
    ct_rmrf(dir);
}
