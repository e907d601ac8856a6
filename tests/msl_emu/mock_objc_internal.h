/* The mock Objective-C runtime's private interface (mock_objc.c, the
 * runtime; mock_metal.c, the classes). */
#ifndef TJ_MOCK_OBJC_INTERNAL_H
#define TJ_MOCK_OBJC_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>

#include "mock_objc.h"
#include "mtl_emu.h"
#include "runtime/metal_objc.h"

typedef void (*imp)(void);
typedef struct method {
    const char *sel;
    imp fn;
} method;
typedef struct mclass {
    const char *name;
    const method *methods;
    void (*dealloc)(id self);
} mclass;
typedef struct obj {
    const mclass *isa;
    atomic_int refs;
} obj;

_Noreturn void mock_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A new object of class c and `size` bytes (its obj header first), +1. */
id mock_make(const mclass *c, size_t size);
void mock_retain(id o);
void mock_release(id self, SEL s); /* also the implementation of -release */
void mock_release_if(id o);
/* Puts o in the current thread's innermost pool (none: counted as leaked). */
id mock_autoreleased(id o);
void mock_objc_object_counts(long *live, long *leaked);
imp mock_objc_lookup(id self, SEL op);

#endif
