/* The disk cache at its edges (docs/limits.md, "The cache"): what is not a
 * regular file at an entry's path, temporary files of other processes,
 * stores that fail for one entry only, a cap of 0, queries that must not
 * create the directory, entry sizes that overflow. */
#include "cache_test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <time.h>

#include "../../runtime/cache_internal.h"

static tj_cache *open_in(const char *dir)
{
    tj_cache_options o = {.dir = dir};
    tj_cache *c = tj_cache_open(&o);
    cr_assert(c);
    return c;
}

static void touch_file(const char *path, time_t age)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    cr_assert(fd >= 0, "%s", path);
    cr_assert_eq(write(fd, "partial", 7), 7);
    close(fd);
    struct timespec t[2] = {{.tv_sec = time(NULL) - age}, {.tv_sec = time(NULL) - age}};
    cr_assert_eq(utimensat(AT_FDCWD, path, t, 0), 0);
}

/* A pid that no process has now: a child that has exited and been reaped. */
static pid_t dead_pid(void)
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0)
        _exit(0);
    waitpid(pid, NULL, 0);
    return pid;
}

static int stores(tj_cache *c, int n)
{
    ct_entry e;
    ct_make(&e, n, 100);
    int rc = tj_cache_store(c, &e.e);
    ct_free(&e);
    return rc;
}

/* It used to block for ever in open(2). */
Test(edges, a_fifo_at_an_entry_path_is_removed_not_waited_on, .timeout = 30)
{
    char *dir = ct_tempdir(), path[4200];
    tj_cache *c = open_in(dir);
    ct_path(c, 1, path, sizeof path);
    cr_assert_eq(mkfifo(path, 0666), 0);
    tj_cache_entry out;
    tj_cache_key k = ct_key(1);
    cr_expect_neq(tj_cache_load(c, TJ_CACHE_KERNEL, &k, &out), 0);
    cr_expect_not(ct_exists(path), "the FIFO was removed");
    cr_expect_eq(stores(c, 1), 0);
    cr_expect_eq(tj_cache_load(c, TJ_CACHE_KERNEL, &k, &out), 0);
    tj_cache_entry_free(&out);
    tj_cache_close(c);
    ct_rmrf(dir);
}

Test(edges, clear_removes_a_fifo_and_an_empty_directory_at_entry_paths, .timeout = 30)
{
    char *dir = ct_tempdir(), fifo[4200], sub[4200];
    tj_cache *c = open_in(dir);
    ct_path(c, 1, fifo, sizeof fifo);
    ct_path(c, 2, sub, sizeof sub);
    cr_assert_eq(mkfifo(fifo, 0666), 0);
    cr_assert_eq(mkdir(sub, 0777), 0);
    tj_cache_stats st;
    cr_expect_eq(tj_cache_stats_get(c, &st), 0);
    uint64_t removed = 0;
    cr_expect_eq(tj_cache_clear(c, &removed), 0);
    cr_expect_eq(removed, 2);
    cr_expect_not(ct_exists(fifo));
    cr_expect_not(ct_exists(sub));
    tj_cache_close(c);
    ct_rmrf(dir);
}

/* A directory at one entry's path spoils that entry only; the cache used
 * to turn memory only for good. */
Test(edges, a_directory_at_an_entry_path_skips_that_store_only)
{
    char *dir = ct_tempdir(), path[4200], inner[4300];
    tj_cache *c = open_in(dir);
    ct_path(c, 1, path, sizeof path);
    snprintf(inner, sizeof inner, "%s/x", path);
    cr_assert_eq(mkdir(path, 0777), 0);
    cr_assert_eq(mkdir(inner, 0777), 0); /* not empty: a load cannot remove it */
    tj_cache_entry out;
    tj_cache_key k = ct_key(1);
    cr_expect_neq(tj_cache_load(c, TJ_CACHE_KERNEL, &k, &out), 0);
    cr_expect_neq(stores(c, 1), 0);
    cr_expect(tj_cache_writable(c), "still writable");
    cr_expect_null(tj_cache_warning(c));
    cr_expect_eq(stores(c, 2), 0, "other entries are stored");
    cr_expect_eq(ct_count_files(tj_cache_dir(c), ".tmp."), 0, "no temporary file stays");
    tj_cache_close(c);
    ct_rmrf(dir);
}

/* A concurrent `tilejit cache clear` deleted every temporary file,
 * including the ones other processes were writing. */
Test(edges, clear_and_evict_remove_only_stale_temporary_files)
{
    char *dir = ct_tempdir(), live_old[4200], dead_new[4200], dead_old[4200], ancient[4200];
    tj_cache *c = open_in(dir);
    char hex[TJ_CACHE_KEY_HEX];
    tj_cache_key k = ct_key(3);
    tj_cache_key_hex(&k, hex);
    pid_t dead = dead_pid();
    const char *d = tj_cache_dir(c);
    snprintf(live_old, sizeof live_old, "%s/%s.tjc.tmp.%ld.0", d, hex, (long)getpid());
    snprintf(dead_new, sizeof dead_new, "%s/%s.tjc.tmp.%ld.1", d, hex, (long)dead);
    snprintf(dead_old, sizeof dead_old, "%s/%s.tjc.tmp.%ld.2", d, hex, (long)dead);
    snprintf(ancient, sizeof ancient, "%s/%s.tjc.tmp.%ld.3", d, hex, (long)getpid());
    touch_file(live_old, 600);  /* a slow writer that is still there */
    touch_file(dead_new, 0);    /* just written: maybe another machine's */
    touch_file(dead_old, 600);  /* a killed writer's */
    touch_file(ancient, 7200);  /* an hour without a change: abandoned */
    uint64_t removed = 1;
    cr_expect_eq(tj_cache_clear(c, &removed), 0);
    cr_expect_eq(removed, 0);
    cr_expect(ct_exists(live_old));
    cr_expect(ct_exists(dead_new));
    cr_expect_not(ct_exists(dead_old));
    cr_expect_not(ct_exists(ancient));
    touch_file(dead_old, 600);
    tj_cache_evict(c, 1 << 20);
    cr_expect_not(ct_exists(dead_old));
    cr_expect(ct_exists(live_old) && ct_exists(dead_new));
    tj_cache_close(c);
    ct_rmrf(dir);
}

/* TILEJIT_CACHE_MAX=0 meant "no limit" while tj_cache_evict(c, 0) emptied
 * the cache; now both are a cap of 0: nothing is kept. */
Test(edges, a_cap_of_0_keeps_nothing_as_evict_0_does)
{
    char *dir = ct_tempdir();
    tj_cache *c = open_in(dir);
    cr_assert_eq(stores(c, 1), 0);
    tj_cache_close(c);
    setenv("TILEJIT_CACHE_MAX", "0", 1);
    c = open_in(dir);
    unsetenv("TILEJIT_CACHE_MAX");
    cr_expect_eq(tj_cache_max_bytes(c), 0);
    cr_expect_neq(stores(c, 2), 0, "nothing is stored");
    tj_cache_stats st;
    tj_cache_stats_get(c, &st);
    cr_expect_eq(st.entries, 0, "and what was there is evicted");
    cr_expect_null(tj_cache_warning(c));
    tj_cache_close(c);
    ct_rmrf(dir);
}

/* `tilejit cache stats` used to mkdir -p whatever TILEJIT_CACHE_DIR named. */
Test(edges, queries_do_not_create_the_directory)
{
    char *dir = ct_tempdir(), missing[4200];
    snprintf(missing, sizeof missing, "%s/not/there", dir);
    tj_cache_options o = {.dir = missing, .no_create = 1};
    tj_cache *c = tj_cache_open(&o);
    cr_assert(c);
    tj_cache_stats st;
    cr_expect_eq(tj_cache_stats_get(c, &st), 0);
    cr_expect_eq(st.entries, 0);
    uint64_t removed = 1;
    cr_expect_eq(tj_cache_clear(c, &removed), 0);
    cr_expect_eq(removed, 0);
    cr_expect_neq(stores(c, 1), 0);
    cr_expect_null(tj_cache_warning(c), "a missing directory is an empty cache, said nothing about");
    tj_cache_close(c);
    snprintf(missing, sizeof missing, "%s/not", dir);
    cr_expect_not(ct_exists(missing));
    ct_rmrf(dir);
}

/* The total used to wrap: a tiny calloc, then a copy of SIZE_MAX bytes. */
Test(edges, entry_sizes_that_overflow_are_refused)
{
    static const char text[] = "x";
    tj_cache_entry e = {.kind = TJ_CACHE_KERNEL, .meta = text, .meta_len = 1, .ptx = text,
                        .ptx_len = SIZE_MAX - 40};
    size_t size = 0;
    cr_expect_null(tj_cache_entry_encode(&e, &size));
    e.ptx_len = SIZE_MAX;
    cr_expect_null(tj_cache_entry_encode(&e, &size));
    e.ptx_len = 1;
    e.bin = text;
    e.bin_len = SIZE_MAX - 80;
    cr_expect_null(tj_cache_entry_encode(&e, &size));
    e.bin_len = (size_t)TJ_CACHE_ENTRY_MAX; /* fits size_t, but no load would read it */
    cr_expect_null(tj_cache_entry_encode(&e, &size));
    e.bin_len = 1;
    void *img = tj_cache_entry_encode(&e, &size);
    cr_expect_not_null(img);
    free(img);
}
