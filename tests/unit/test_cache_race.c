/* Many writers and readers on one cache directory at once: 8 processes
 * (and 8 threads of one process) store, load and evict the same entries.
 * Every load must return a whole, correct entry or nothing, and the
 * directory must end with valid entries only and no temporary files. */
#include "cache_test_util.h"

#include <pthread.h>
#include <sys/wait.h>

enum { WORKERS = 8, KEYS = 24, ROUNDS = 150 };

/* Entry n's binary size: some large enough that writes take several calls. */
static size_t bin_size(int n) { return 1000 + (size_t)n * 9973; }

/* Loads or, on a miss, stores entries in a pseudo-random order; returns
 * the number of loads that returned wrong contents. */
static int churn(tj_cache *c, unsigned seed, int *hits)
{
    int bad = 0;
    for (int i = 0; i < ROUNDS; i++) {
        seed = seed * 1103515245u + 12345u;
        int n = (int)((seed >> 8) % KEYS);
        tj_cache_key k = ct_key(n);
        tj_cache_entry out;
        if (tj_cache_load(c, TJ_CACHE_KERNEL, &k, &out) == 0) {
            bad += !ct_matches(&out, n, bin_size(n));
            ++*hits;
            tj_cache_entry_free(&out);
            continue;
        }
        ct_entry e;
        ct_make(&e, n, bin_size(n));
        tj_cache_store(c, &e.e);
        ct_free(&e);
    }
    return bad;
}

/* A cap that holds about half of the entries, so that evictions race too. */
static uint64_t half_cap(void)
{
    uint64_t total = 0;
    for (int n = 0; n < KEYS; n++)
        total += bin_size(n) + 400;
    return total / 2;
}

static void check_directory(const char *dir)
{
    tj_cache_options o = {.dir = dir};
    tj_cache *c = tj_cache_open(&o);
    tj_cache_stats st;
    cr_assert_eq(tj_cache_stats_get(c, &st), 0);
    cr_expect_eq(st.temp_files, 0, "temporary files left behind");
    cr_expect_gt(st.entries, 0);
    for (int n = 0; n < KEYS; n++) {
        char path[4096];
        ct_path(c, n, path, sizeof path);
        if (!ct_exists(path))
            continue;
        tj_cache_key k = ct_key(n);
        tj_cache_entry out;
        cr_expect_eq(tj_cache_load(c, TJ_CACHE_KERNEL, &k, &out), 0, "entry %d is torn", n);
        cr_expect(ct_matches(&out, n, bin_size(n)), "entry %d has wrong contents", n);
        tj_cache_entry_free(&out);
    }
    cr_expect_eq(st.dropped, 0);
    tj_cache_close(c);
}

Test(race, eight_processes_on_one_directory)
{
    char *dir = ct_tempdir();
    pid_t pids[WORKERS];
    fflush(NULL);
    for (int w = 0; w < WORKERS; w++) {
        pids[w] = fork();
        cr_assert(pids[w] >= 0);
        if (pids[w] == 0) {
            tj_cache_options o = {.dir = dir, .max_bytes = w % 2 ? half_cap() : 0};
            tj_cache *c = tj_cache_open(&o);
            int hits = 0, bad = churn(c, (unsigned)w * 7919u + 1, &hits);
            tj_cache_stats st;
            tj_cache_stats_get(c, &st);
            int ok = !bad && st.dropped == 0 && tj_cache_writable(c);
            tj_cache_close(c);
            _exit(ok ? 0 : 1);
        }
    }
    for (int w = 0; w < WORKERS; w++) {
        int status;
        cr_assert_eq(waitpid(pids[w], &status, 0), pids[w]);
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "process %d saw a torn or wrong entry", w);
    }
    check_directory(dir);
    ct_rmrf(dir);
}

typedef struct thread_job {
    tj_cache *c;
    unsigned seed;
    int bad, hits;
} thread_job;

static void *thread_main(void *arg)
{
    thread_job *j = arg;
    j->bad = churn(j->c, j->seed, &j->hits);
    return NULL;
}

Test(race, eight_threads_sharing_one_cache)
{
    char *dir = ct_tempdir();
    tj_cache_options o = {.dir = dir, .max_bytes = half_cap()};
    tj_cache *c = tj_cache_open(&o);
    pthread_t t[WORKERS];
    thread_job jobs[WORKERS];
    for (int w = 0; w < WORKERS; w++) {
        jobs[w] = (thread_job){c, (unsigned)w * 104729u + 3, 0, 0};
        pthread_create(&t[w], NULL, thread_main, &jobs[w]);
    }
    int hits = 0;
    for (int w = 0; w < WORKERS; w++) {
        pthread_join(t[w], NULL);
        cr_expect_eq(jobs[w].bad, 0, "thread %d saw a wrong entry", w);
        hits += jobs[w].hits;
    }
    cr_expect_gt(hits, 0);
    cr_expect(tj_cache_writable(c));
    tj_cache_close(c);
    check_directory(dir);
    ct_rmrf(dir);
}
