/* The cpu back end where LLVM 22 was not found at configure time: every
 * entry point says so (the CLI then falls back to the interpreter). */
#include <stdio.h>

#include "tilejit/cpu.h"

static const char missing[] = "tilejit was built without LLVM 22 (install llvm-22-dev and reconfigure); "
                              "the native cpu back end is not available";

int tj_cpu_available(const char **why)
{
    if (why)
        *why = missing;
    return 0;
}

tj_cpu *tj_cpu_new(int threads, char *err, size_t cap)
{
    (void)threads;
    if (err && cap)
        snprintf(err, cap, "%s", missing);
    return NULL;
}

void tj_cpu_free(tj_cpu *cpu) { (void)cpu; }
int tj_cpu_threads(const tj_cpu *cpu) { return cpu ? 1 : 0; }
const char *tj_cpu_target(const tj_cpu *cpu) { return cpu ? "" : ""; }

int tj_cpu_compile_object(tj_cpu *cpu, const tj_kernel *k, tj_buf *object, tj_cpu_times *times)
{
    (void)cpu, (void)object, (void)times;
    if (k)
        tj_error(k->ctx, "kernel '%s': %s", k->name, missing);
    return -1;
}

int tj_cpu_emit_llvm(tj_cpu *cpu, const tj_kernel *k, tj_buf *out)
{
    return tj_cpu_compile_object(cpu, k, out, NULL);
}

tj_cpu_fn *tj_cpu_load(tj_cpu *cpu, const void *object, size_t len, char *err, size_t cap)
{
    (void)cpu, (void)object, (void)len;
    if (err && cap)
        snprintf(err, cap, "%s", missing);
    return NULL;
}

tj_cpu_fn *tj_cpu_compile(tj_cpu *cpu, const tj_kernel *k, tj_cpu_times *times)
{
    tj_cpu_compile_object(cpu, k, NULL, times);
    return NULL;
}

int tj_cpu_run(tj_cpu_fn *f, const tj_arg *args, uint32_t nargs, const int64_t grid[3], char *err, size_t cap)
{
    (void)f, (void)args, (void)nargs, (void)grid;
    if (err && cap)
        snprintf(err, cap, "%s", missing);
    return -1;
}

int tj_cpu_run_kernel(tj_cpu *cpu, const tj_kernel *k, const tj_arg *args, uint32_t nargs)
{
    (void)args, (void)nargs;
    tj_cpu_compile_object(cpu, k, NULL, NULL);
    return -1;
}
