/* The thread pool that runs a grid's programs, and the launch.
 *
 * Workers (one per thread asked for) sleep on a condition variable; a
 * launch publishes the job, wakes as many as it has chunks for and hands
 * out chunks of programs through one atomic counter. The launching thread
 * takes chunks too when one program's tiles fit its stack comfortably
 * (workers have large stacks for the kernels whose tiles do not). The
 * caller times its programs; a launch that the estimate says takes less
 * than waking a thread costs runs on the caller alone. Launches take
 * turns. */
#define _GNU_SOURCE /* pthread_getattr_np */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "codegen/llvm/llvm.h"
#include "tilejit/interp.h"

enum {
    SERIAL_NS = 40000,            /* a launch shorter than this runs on the caller alone */
    WORKER_STACK = 64 << 20,      /* bytes: tiles of a program live on the stack */
    STACK_SLACK = 1 << 20,        /* what a program needs beyond its tiles (libm, the sort helper) */
    CALLER_FRAME_DEFAULT = 256 << 10, /* the caller's room where its stack cannot be measured */
    CHUNKS_PER_THREAD = 16,       /* balance (a busy machine stalls threads) against the counter's traffic */
};

struct tj_cpu_pool {
    pthread_mutex_t lock, launch;
    pthread_cond_t wake, idle;
    pthread_t *workers;
    int nworkers, started, stop;
    uint64_t generation;
    /* the job of the current generation */
    tj_cpu_entry entry;
    const tj_arg *args;
    const int64_t *grid;
    int64_t total, chunk;
    atomic_llong next;
    int want, joined, active;
};

/* Runs chunks until none is left; returns how many programs it ran. */
static int64_t run_chunks(tj_cpu_pool *p)
{
    int64_t ran = 0;
    for (;;) {
        int64_t s = atomic_fetch_add(&p->next, p->chunk);
        if (s >= p->total)
            return ran;
        int64_t e = s + p->chunk < p->total ? s + p->chunk : p->total;
        p->entry(p->args, s, e, p->grid, 0);
        ran += e - s;
    }
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* What the caller's programs took, into the estimate (a running mean). A
 * launch the scheduler preempted counts at most twice the estimate, so one
 * stall does not send every later launch through the pool (a slowdown that
 * lasts still doubles it launch after launch). */
static void learn(tj_cpu_fn *f, int64_t ns, int64_t programs)
{
    if (programs <= 0)
        return;
    int64_t per = ns / programs + 1, old = atomic_load(&f->ns_per_program);
    if (old && per > 2 * old)
        per = 2 * old;
    atomic_store(&f->ns_per_program, old ? (3 * old + per) / 4 : per);
}

static void *worker(void *arg)
{
    tj_cpu_pool *p = arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && p->generation == seen)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->stop)
            break;
        seen = p->generation;
        if (p->joined >= p->want)
            continue;
        p->joined++;
        p->active++;
        pthread_mutex_unlock(&p->lock);
        run_chunks(p);
        pthread_mutex_lock(&p->lock);
        if (--p->active == 0)
            pthread_cond_signal(&p->idle);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* threads > 0, else $TILEJIT_CPU_THREADS, else every online core. */
static int thread_count(int threads)
{
    if (threads > 0)
        return threads;
    const char *env = getenv("TILEJIT_CPU_THREADS");
    if (env && atoi(env) > 0)
        return atoi(env);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int tj_cpu_pool_start(tj_cpu *cpu, int threads, char *err, size_t cap)
{
    tj_cpu_pool *p = calloc(1, sizeof *p);
    cpu->threads = thread_count(threads);
    if (p)
        p->workers = calloc((size_t)cpu->threads, sizeof *p->workers);
    if (!p || !p->workers) {
        free(p);
        snprintf(err, cap, "cpu back end: out of memory");
        return -1;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->launch, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->idle, NULL);
    cpu->pool = p;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, WORKER_STACK);
    for (int i = 0; i < cpu->threads; i++) {
        if (pthread_create(&p->workers[i], &attr, worker, p)) {
            snprintf(err, cap, "cpu back end: cannot start worker thread %d of %d", i + 1, cpu->threads);
            pthread_attr_destroy(&attr);
            return -1;
        }
        p->nworkers++;
    }
    pthread_attr_destroy(&attr);
    return 0;
}

void tj_cpu_pool_stop(tj_cpu *cpu)
{
    tj_cpu_pool *p = cpu->pool;
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->nworkers; i++)
        pthread_join(p->workers[i], NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->launch);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->idle);
    free(p->workers);
    free(p);
    cpu->pool = NULL;
}

int tj_cpu_threads(const tj_cpu *cpu) { return cpu ? cpu->threads : 0; }

int tj_cpu_pool_fits(int64_t frame_bytes, char *err, size_t cap)
{
    if (frame_bytes >= 0 && frame_bytes <= WORKER_STACK - STACK_SLACK)
        return 0;
    if (err && cap)
        snprintf(err, cap, "cpu back end: one program's tiles take %lld bytes of stack, more than the %d MiB a "
                 "worker has for them (smaller tiles fit)", (long long)frame_bytes, (WORKER_STACK - STACK_SLACK) >> 20);
    return -1;
}

/* The lowest address of this thread's stack, asked once per thread (for
 * the main thread glibc reads /proc/self/maps); 0 when unknown. A memo of
 * a fact that never changes for the thread, not shared state. */
static uintptr_t stack_floor(void)
{
    static _Thread_local uintptr_t floor_addr, asked;
    if (!asked) {
        pthread_attr_t a;
        void *lo;
        size_t size;
        asked = 1;
        if (!pthread_getattr_np(pthread_self(), &a)) {
            if (!pthread_attr_getstack(&a, &lo, &size))
                floor_addr = (uintptr_t)lo;
            pthread_attr_destroy(&a);
        }
    }
    return floor_addr;
}

/* Whether the launching thread can run a program whose tiles take
 * frame_bytes: the stack it has left, less the slack, holds them. */
static int caller_can_run(int64_t frame_bytes)
{
    char here;
    uintptr_t lo = stack_floor(), at = (uintptr_t)&here;
    if (!lo || at <= lo)
        return frame_bytes <= CALLER_FRAME_DEFAULT;
    return (uint64_t)frame_bytes + STACK_SLACK <= at - lo;
}

/* Programs [start, total) on the caller alone. A kernel with atomics runs
 * them exclusive, as plain read-modify-writes, holding the launch lock
 * that every pool launch holds, so that no other launch of this tj_cpu
 * runs programs meanwhile (atomics are atomic across the launches of one
 * tj_cpu, as a GPU's are across one device's kernels). Returns the
 * programs' time (not the wait for the lock). */
static int64_t run_serial(tj_cpu_fn *f, const tj_arg *args, int64_t start, int64_t total, const int64_t *grid,
                          int timed)
{
    tj_cpu_pool *p = f->cpu->pool;
    if (f->atomics)
        pthread_mutex_lock(&p->launch);
    int64_t t0 = timed ? now_ns() : 0;
    f->entry(args, start, total, grid, f->atomics);
    int64_t ns = timed ? now_ns() - t0 : 0;
    if (f->atomics)
        pthread_mutex_unlock(&p->launch);
    return ns;
}

int tj_cpu_run(tj_cpu_fn *f, const tj_arg *args, uint32_t nargs, const int64_t grid[3], char *err, size_t cap)
{
    if (!f || !grid || !tj_array_ok(args, nargs)) {
        if (err && cap)
            snprintf(err, cap, "tj_cpu_run: NULL %s", !f ? "function" : !grid ? "grid" : "args with nargs > 0");
        return -1;
    }
    tj_cpu_pool *p = f->cpu->pool;
    int64_t total = grid[0] * grid[1] * grid[2];
    if (total <= 0)
        return 0;
    if (tj_cpu_pool_fits(f->frame_bytes, err, cap)) /* tj_cpu_load refused these already */
        return -1;
    int caller = caller_can_run(f->frame_bytes), threads = f->cpu->threads;
    int64_t chunk = total / ((int64_t)threads * CHUNKS_PER_THREAD);
    chunk = chunk > 0 ? chunk : 1;
    int64_t nchunks = (total + chunk - 1) / chunk, want = nchunks - caller;
    want = want < threads - caller ? want : threads - caller;
    int64_t start = 0, t0 = 0;
    /* one chunk (or one thread): no one to wake, nothing to learn; a clock
     * read is 15-20 ns under KVM, and three of them were half of a small
     * launch's fixed cost (embed.tj's 0.09 of 0.23 us, one thread) */
    if (caller && want <= 0) {
        run_serial(f, args, 0, total, grid, 0);
        return 0;
    }
    if (caller && !atomic_load(&f->ns_per_program)) { /* a first chunk alone, to learn the cost */
        learn(f, run_serial(f, args, 0, chunk, grid, 1), chunk); /* under the launch lock, as any serial run */
        start = chunk;
    }
    /* less work than waking a thread costs */
    if (caller && atomic_load(&f->ns_per_program) * (total - start) < SERIAL_NS) {
        learn(f, run_serial(f, args, start, total, grid, 1), total - start);
        return 0;
    }
    int64_t launched = now_ns(), ran = 0;
    pthread_mutex_lock(&p->launch);
    pthread_mutex_lock(&p->lock);
    p->entry = f->entry;
    p->args = args;
    p->grid = grid;
    p->total = total;
    p->chunk = chunk;
    atomic_store(&p->next, start);
    p->want = (int)want;
    p->joined = p->active = 0;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    if (caller) { /* timed from here: the wake-up is not the programs' cost */
        t0 = now_ns();
        ran = run_chunks(p);
        learn(f, now_ns() - t0, ran);
    }
    pthread_mutex_lock(&p->lock);
    if (!caller)
        while (p->joined < p->want || p->active)
            pthread_cond_wait(&p->idle, &p->lock);
    p->want = p->joined; /* late workers skip this job */
    while (p->active)
        pthread_cond_wait(&p->idle, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&p->launch);
    /* a woken worker that preempts the caller on its core can run every
     * chunk: then the whole launch, wake-up included, is what the caller
     * learns (else it would never learn again and stay on this path) */
    if (caller && !ran)
        learn(f, now_ns() - launched, total - start);
    return 0;
}

int tj_cpu_run_kernel(tj_cpu *cpu, const tj_kernel *k, const tj_arg *args, uint32_t nargs)
{
    int64_t grid[3];
    if (!k)
        return -1;
    if (!cpu) {
        tj_error(k->ctx, "tj_cpu_run_kernel: NULL cpu");
        return -1;
    }
    if (tj_eval_grid(k, args, nargs, grid))
        return -1;
    tj_cpu_fn *f = tj_cpu_compile(cpu, k, NULL);
    if (!f)
        return -1;
    char err[256];
    if (tj_cpu_run(f, args, nargs, grid, err, sizeof err)) {
        tj_error(k->ctx, "kernel '%s': %s", k->name, err);
        return -1;
    }
    return 0;
}
