/* Helpers the host benchmarks share: a monotonic clock, the median of a
 * set of timings and reading an example's source. */
#ifndef TJ_BENCH_UTIL_H
#define TJ_BENCH_UTIL_H

#include <stddef.h>

#include "tilejit/tilejit.h"

/* The example kernels (examples/) the host benchmarks compile, with the
 * dims their tile extents need; each at its first configuration. */
typedef struct bench_example {
    const char *file, *kernel;
    tj_binding dims[4];
    uint32_t ndims;
} bench_example;
extern const bench_example bench_examples[];
extern const size_t bench_nexamples;

/* CLOCK_MONOTONIC in microseconds. */
double bench_now_us(void);
/* The median of v[0..n) (sorts v). */
double bench_median(double *v, int n);
/* The contents of dir/name, NUL-terminated, from malloc (its length in
 * *len); NULL when it cannot be read. */
char *bench_read_file(const char *dir, const char *name, size_t *len);

#endif
