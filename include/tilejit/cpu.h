/* The native CPU back end (codegen/llvm/, docs/cpu.md): Tile IR -> LLVM IR
 * through the LLVM C API, -O2 for the host CPU, machine code loaded by ORC
 * LLJIT; the programs of the grid run on a thread pool. Built only where
 * LLVM 22 is found; elsewhere every entry point says why it is missing.
 *
 *   tj_cpu *cpu = tj_cpu_new(0, err, sizeof err);        // all cores
 *   tj_cpu_fn *f = tj_cpu_compile(cpu, ir, NULL);       // optimized Tile IR
 *   tj_cpu_run(f, args, nargs, grid, err, sizeof err);   // any number of times
 *
 * The compiled object is plain relocatable machine code for the host
 * (tj_cpu_compile_object), so the binary cache can keep it and
 * tj_cpu_load it later in another process. */
#ifndef TILEJIT_CPU_H
#define TILEJIT_CPU_H

#include "tilejit/args.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tj_cpu tj_cpu;       /* host target, LLJIT, thread pool */
typedef struct tj_cpu_fn tj_cpu_fn; /* one loaded kernel; lives until tj_cpu_free */

/* 1 when the back end is built in; else 0 and *why (static text) says why. */
int tj_cpu_available(const char **why);

/* threads 0: $TILEJIT_CPU_THREADS, or every core. NULL with the reason in
 * err (cap bytes) when LLVM is missing or the host target cannot be set up. */
tj_cpu *tj_cpu_new(int threads, char *err, size_t cap);
void tj_cpu_free(tj_cpu *cpu);
int tj_cpu_threads(const tj_cpu *cpu);
/* The host CPU's name and features ("znver4 +avx512f,..."): part of the
 * cache key of every object, which is only valid on such a CPU. */
const char *tj_cpu_target(const tj_cpu *cpu);

/* Time spent in the last compile of this thread's call, in ms. */
typedef struct tj_cpu_times {
    double codegen_ms; /* Tile IR -> LLVM IR */
    double opt_ms;     /* -O2 and machine code */
    double link_ms;    /* JIT link and symbol lookup */
} tj_cpu_times;

/* Optimized (and optionally specialized) Tile IR -> relocatable object
 * code in *object (a tj_buf the caller frees). Diagnostics go to k's
 * context; 0, or -1 after one. times may be NULL. */
int tj_cpu_compile_object(tj_cpu *cpu, const tj_kernel *k, tj_buf *object, tj_cpu_times *times);
/* Links object code from tj_cpu_compile_object (now or from the cache);
 * NULL with the reason in err. */
tj_cpu_fn *tj_cpu_load(tj_cpu *cpu, const void *object, size_t len, char *err, size_t cap);
/* Both: compile and load; NULL after a diagnostic in k's context. */
tj_cpu_fn *tj_cpu_compile(tj_cpu *cpu, const tj_kernel *k, tj_cpu_times *times);
/* The LLVM IR that tj_cpu_compile_object makes of k for this host, before
 * the optimization passes, as text appended to *out (`tilejit emit
 * --target llvm`, the FileCheck tests): 0, or -1 after a diagnostic. */
int tj_cpu_emit_llvm(tj_cpu *cpu, const tj_kernel *k, tj_buf *out);

/* Runs every program of grid (as tj_eval_grid gives it) on the pool.
 * Arguments must have passed tj_check_args for the kernel compiled. Safe
 * from several threads (launches take turns on the pool). 0, or -1 with
 * the reason in err. */
int tj_cpu_run(tj_cpu_fn *f, const tj_arg *args, uint32_t nargs, const int64_t grid[3], char *err, size_t cap);

/* Compile, evaluate the grid and run, as tj_interp_run does for the
 * interpreter (tests, tools): 0, or -1 after a diagnostic in k's context. */
int tj_cpu_run_kernel(tj_cpu *cpu, const tj_kernel *k, const tj_arg *args, uint32_t nargs);

#ifdef __cplusplus
}
#endif
#endif
