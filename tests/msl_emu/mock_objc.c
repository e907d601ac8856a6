/* A mock Objective-C runtime with the Foundation and Metal classes the
 * Metal host runtime (runtime/metal.c) uses, for Linux: its kernels run in
 * the MSL emulator. It is strict where Cocoa would fail quietly or later:
 * an unknown selector, a message to nil, an over-release, a command
 * buffer committed before its encoder ended, setBytes over 4 KiB, are
 * fatal; objects are counted, so a test can check that none leak;
 * autoreleasing with no pool in place is counted as a leak. Like the real
 * runtime it is process-global state (selectors, the per-thread
 * autorelease pools). Memory rules: new/alloc/copy return +1 objects; the
 * others return autoreleased or owned ones. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mock_objc_internal.h"

/* ---- the runtime ------------------------------------------------------------------- */

static atomic_long n_live, n_leaked;

_Noreturn void mock_fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "mock objc: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}

/* Selectors are interned copies of their names. */
static pthread_mutex_t sel_mu = PTHREAD_MUTEX_INITIALIZER;
static char *sels[256];
static int nsels;

SEL sel_registerName(const char *name)
{
    pthread_mutex_lock(&sel_mu);
    for (int i = 0; i < nsels; i++)
        if (!strcmp(sels[i], name)) {
            pthread_mutex_unlock(&sel_mu);
            return (SEL)sels[i];
        }
    if (nsels == 256)
        mock_fatal("too many selectors (%s)", name);
    char *s = sels[nsels++] = strdup(name);
    pthread_mutex_unlock(&sel_mu);
    return (SEL)s;
}

id mock_make(const mclass *c, size_t size)
{
    obj *o = calloc(1, size);
    if (!o)
        mock_fatal("out of memory");
    o->isa = c;
    atomic_store(&o->refs, 1);
    atomic_fetch_add(&n_live, 1);
    return (id)o;
}

void mock_retain(id o) { atomic_fetch_add(&((obj *)o)->refs, 1); }

void mock_release(id self, SEL s)
{
    (void)s;
    obj *o = (obj *)self;
    int left = atomic_fetch_sub(&o->refs, 1) - 1;
    if (left < 0)
        mock_fatal("over-release of a %s", o->isa->name);
    if (left == 0) {
        if (o->isa->dealloc)
            o->isa->dealloc(self);
        free(o);
        atomic_fetch_sub(&n_live, 1);
    }
}

void mock_release_if(id o)
{
    if (o)
        mock_release(o, NULL);
}

/* Autorelease pools, per thread as in Cocoa. */
typedef struct pool_stack {
    id *objs;
    size_t n, cap;
    int depth;
} pool_stack;
static _Thread_local pool_stack pools;

void *objc_autoreleasePoolPush(void)
{
    if (pools.n == pools.cap) {
        pools.cap = pools.cap ? 2 * pools.cap : 64;
        pools.objs = realloc(pools.objs, sizeof *pools.objs * pools.cap);
    }
    pools.objs[pools.n++] = NULL; /* the mark */
    pools.depth++;
    return (void *)(uintptr_t)pools.depth;
}

void objc_autoreleasePoolPop(void *token)
{
    if ((int)(uintptr_t)token != pools.depth)
        mock_fatal("pools popped out of order");
    while (pools.n > 0) {
        id o = pools.objs[--pools.n];
        if (!o)
            break;
        mock_release(o, NULL);
    }
    if (--pools.depth == 0) { /* a thread's last pool: give the memory back */
        free(pools.objs);
        pools = (pool_stack){0};
    }
}

id mock_autoreleased(id o)
{
    if (!pools.depth) {
        atomic_fetch_add(&n_leaked, 1);
        return o;
    }
    if (pools.n == pools.cap) {
        pools.cap *= 2;
        pools.objs = realloc(pools.objs, sizeof *pools.objs * pools.cap);
    }
    pools.objs[pools.n++] = o;
    return o;
}

void mock_objc_object_counts(long *live, long *leaked)
{
    *live = atomic_load(&n_live);
    *leaked = atomic_load(&n_leaked);
}

/* ---- dispatch ------------------------------------------------------------------------ */

/* The implementation of (receiver, selector), for objc_msgSend. */
imp mock_objc_lookup(id self, SEL op)
{
    const char *s = (const char *)op;
    if (!self)
        mock_fatal("message %s sent to nil", s);
    const mclass *c = ((obj *)self)->isa;
    for (const method *m = c->methods; m && m->sel; m++)
        if (!strcmp(m->sel, s))
            return m->fn;
    if (!strcmp(s, "release"))
        return (imp)(void (*)(void))mock_release;
    mock_fatal("-[%s %s]: unrecognized selector", c->name, s);
}
