/* Helpers the host benchmarks share (bench_util.h). */
#define _POSIX_C_SOURCE 200809L
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

const bench_example bench_examples[] = {
    {"add.tj", "add", {{0}}, 0},
    {"softmax.tj", "softmax", {{"N", 1000}}, 1},
    {"matmul.tj", "matmul", {{0}}, 0},
    {"attention.tj", "attention", {{"D", 64}}, 1},
    {"embed.tj", "embed", {{"D", 256}}, 1},
    {"recurrence.tj", "recurrence", {{0}}, 0},
};
const size_t bench_nexamples = sizeof bench_examples / sizeof *bench_examples;

double bench_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return v[n / 2];
}

char *bench_read_file(const char *dir, const char *name, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    fclose(f);
    if (s)
        s[n] = 0;
    *len = s ? (size_t)n : 0;
    return s;
}
