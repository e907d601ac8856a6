/* The mock Objective-C runtime and Metal classes (mock_objc.c): what tests
 * of runtime/metal.c can ask it. Test support, Linux x86-64 only. */
#ifndef TJ_MOCK_OBJC_H
#define TJ_MOCK_OBJC_H

#include <stdint.h>

typedef struct mock_objc_counts {
    long live;            /* objects not yet freed */
    long leaked;          /* autoreleased with no pool in place */
    long compiles;        /* newLibraryWithSource calls */
    long fast_math_on;    /* libraries compiled with fast math enabled */
    long msl_3_1;         /* libraries compiled as MSL 3.1 (the others: 3.0) */
    long msl_3_1_unneeded; /* ... of them without bfloat, which 3.0 would compile */
    long archive_reads;   /* archives loaded from a file */
    long copies;          /* buffers made by copying (newBufferWithBytes) */
    long dispatches;
} mock_objc_counts;

void mock_objc_get_counts(mock_objc_counts *out);
/* Makes newBufferWithBytesNoCopy refuse every pointer (as Metal refuses
 * memory it cannot map), so the runtime must copy. */
void mock_objc_refuse_nocopy(int refuse);

#endif
