/* The host target, -O2, object code and ORC LLJIT: everything between an
 * LLVM module and a callable kernel. Each kernel is linked into a JITDylib
 * of its own (the generated symbol names are the same in every kernel),
 * which resolves libm and libc from the process and the sort helper from
 * this library. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, strdup */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "codegen/llvm/llvm.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void set_err(char *err, size_t cap, const char *what, char *llvm_msg)
{
    if (err && cap)
        snprintf(err, cap, "cpu back end: %s%s%s", what, llvm_msg ? ": " : "", llvm_msg ? llvm_msg : "");
}

static void set_llvm_err(char *err, size_t cap, const char *what, LLVMErrorRef e)
{
    char *msg = LLVMGetErrorMessage(e);
    set_err(err, cap, what, msg);
    LLVMDisposeErrorMessage(msg);
}

int tj_cpu_available(const char **why)
{
    if (why)
        *why = NULL;
    return 1;
}

static int vector_bits_of(const char *features)
{
    if (strstr(features, "+avx512f"))
        return 512;
    if (strstr(features, "+avx"))
        return 256;
    return 128;
}

/* Host name and features, the target and its triple; 0 or -1. */
static int host_target(tj_cpu *cpu, char *err, size_t cap)
{
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    char *name = LLVMGetHostCPUName(), *features = LLVMGetHostCPUFeatures();
    cpu->triple = LLVMGetDefaultTargetTriple();
    char *msg = NULL;
    int rc = LLVMGetTargetFromTriple(cpu->triple, &cpu->target, &msg);
    if (rc)
        set_err(err, cap, "no LLVM target for this host", msg);
    else {
        cpu->cpu_name = strdup(name);
        cpu->features = strdup(features);
        size_t n = strlen(name) + strlen(features) + 2;
        cpu->target_text = malloc(n);
        if (cpu->cpu_name && cpu->features && cpu->target_text)
            snprintf(cpu->target_text, n, "%s %s", name, features);
        else
            rc = -1, set_err(err, cap, "out of memory", NULL);
        cpu->vector_bits = vector_bits_of(features);
    }
    LLVMDisposeMessage(msg);
    LLVMDisposeMessage(name);
    LLVMDisposeMessage(features);
    return rc ? -1 : 0;
}

static LLVMTargetMachineRef new_machine(const tj_cpu *cpu)
{
    return LLVMCreateTargetMachine(cpu->target, cpu->triple, cpu->cpu_name, cpu->features, LLVMCodeGenLevelAggressive,
                                   LLVMRelocPIC, LLVMCodeModelSmall);
}

tj_cpu *tj_cpu_new(int threads, char *err, size_t cap)
{
    tj_cpu *cpu = calloc(1, sizeof *cpu);
    if (!cpu) {
        set_err(err, cap, "out of memory", NULL);
        return NULL;
    }
    pthread_mutex_init(&cpu->lock, NULL);
    if (host_target(cpu, err, cap)) {
        tj_cpu_free(cpu);
        return NULL;
    }
    LLVMErrorRef e = LLVMOrcCreateLLJIT(&cpu->jit, NULL);
    if (e) {
        set_llvm_err(err, cap, "cannot create the JIT", e);
        cpu->jit = NULL;
        tj_cpu_free(cpu);
        return NULL;
    }
    if (tj_cpu_pool_start(cpu, threads, err, cap)) {
        tj_cpu_free(cpu);
        return NULL;
    }
    return cpu;
}

void tj_cpu_free(tj_cpu *cpu)
{
    if (!cpu)
        return;
    tj_cpu_pool_stop(cpu);
    for (tj_cpu_fn *f = cpu->fns, *next; f; f = next) {
        next = f->next;
        free(f);
    }
    if (cpu->jit)
        LLVMConsumeError(LLVMOrcDisposeLLJIT(cpu->jit));
    LLVMDisposeMessage(cpu->triple);
    free(cpu->cpu_name);
    free(cpu->features);
    free(cpu->target_text);
    pthread_mutex_destroy(&cpu->lock);
    free(cpu);
}

const char *tj_cpu_target(const tj_cpu *cpu) { return cpu ? cpu->target_text : ""; }

/* The passes of default<O2> (without unrolling) that change the machine
 * code of a kernel: every example's and every bench/bench_cpu kernel's
 * object code is the same instruction for instruction as with the whole
 * default<O2> pipeline (sort.tj's in another order), at two thirds of its
 * time. Each other pass was dropped in turn (opt-22 and llc-22 on the
 * kernels' unoptimized modules) where that left all of them unchanged; the
 * whole-program ones (inliner, IPSCCP, globalopt, attributes) have nothing
 * to do in a module of one function. sroa first: scalars live in
 * one-element buffers until it makes them SSA values. Not loop-idiom,
 * which made the row copies (lg_copy_span) and fills calls to memcpy and
 * memset: a call spills the caller's vector registers and reloads its
 * constants, and for rows of a few KiB it cost more than the copy (one
 * thread, znver5: rowsum.tj 3.0 -> 1.8 us, softmax 5.2 -> 4.7 with the
 * copies' own loops). */
#define SIMPLIFYCFG(opts) "simplifycfg<bonus-inst-threshold=1;switch-range-to-icmp;speculate-blocks;simplify-cond-branch;" opts ">"
#define INSTCOMBINE "instcombine<max-iterations=1;no-verify-fixpoint>"
static const char PIPELINE[] =
    "function<eager-inv>(sroa<modify-cfg>,early-cse<>," INSTCOMBINE ",early-cse<memssa>,"
    SIMPLIFYCFG("no-forward-switch-cond;no-switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;"
                "no-hoist-loads-stores-with-cond-faulting;no-sink-common-insts;no-speculate-unpredictables")
    ",reassociate,loop-mssa(loop-instsimplify,loop-simplifycfg,licm<no-allowspeculation>,"
    "loop-rotate<header-duplication;no-prepare-for-lto>,licm<allowspeculation>,"
    "simple-loop-unswitch<no-nontrivial;trivial>)," INSTCOMBINE ",loop(indvars,loop-deletion),"
    "gvn<>,sccp,correlated-propagation,memcpyopt,loop-vectorize<no-interleave-forced-only;no-vectorize-forced-only;>,"
    SIMPLIFYCFG("forward-switch-cond;switch-to-arithmetic;switch-to-lookup;no-keep-loops;hoist-common-insts;"
                "no-hoist-loads-stores-with-cond-faulting;sink-common-insts;no-speculate-unpredictables")
    ",sroa<preserve-cfg>,infer-alignment," INSTCOMBINE ",loop-mssa(licm<allowspeculation>),"
    SIMPLIFYCFG("no-forward-switch-cond;switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;"
                "hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-unpredictables")
    ")";

/* The module through the pipeline for the host and out as object code. */
static int optimize_and_emit(tj_cpu *cpu, const tj_kernel *k, LLVMModuleRef mod, LLVMTargetMachineRef tm,
                             tj_buf *object)
{
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        tj_error(k->ctx, "kernel '%s': cpu back end made invalid LLVM IR (a bug): %.400s", k->name, msg);
        LLVMDisposeMessage(msg);
        return -1;
    }
    LLVMDisposeMessage(msg);
    LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
    LLVMErrorRef e = LLVMRunPasses(mod, PIPELINE, tm, opts);
    LLVMDisposePassBuilderOptions(opts);
    if (e) {
        char *m = LLVMGetErrorMessage(e);
        tj_error(k->ctx, "kernel '%s': cpu back end: LLVM optimization failed: %s", k->name, m);
        LLVMDisposeErrorMessage(m);
        return -1;
    }
    if (getenv("TJ_DUMP_LLVM")) /* the optimized module, for the curious */
        LLVMDumpModule(mod);
    LLVMMemoryBufferRef mb = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &msg, &mb)) {
        tj_error(k->ctx, "kernel '%s': cpu back end: no machine code: %s", k->name, msg);
        LLVMDisposeMessage(msg);
        return -1;
    }
    size_t before = object->len, n = LLVMGetBufferSize(mb);
    tj_buf_append(object, LLVMGetBufferStart(mb), n);
    LLVMDisposeMemoryBuffer(mb);
    (void)cpu;
    if (object->len != before + n) { /* tj_buf_append truncates when out of memory */
        tj_error(k->ctx, "kernel '%s': cpu back end: out of memory for the object code", k->name);
        return -1;
    }
    return 0;
}

/* A kernel whose tiles cannot fit a worker's stack is refused before it
 * costs a compile (and before anything caches it). */
static int check_frame(const tj_kernel *k, LLVMModuleRef mod)
{
    char why[256];
    LLVMValueRef g = LLVMGetNamedGlobal(mod, "tj_frame_bytes");
    int64_t bytes = g ? LLVMConstIntGetSExtValue(LLVMGetInitializer(g)) : -1;
    if (!tj_cpu_pool_fits(bytes, why, sizeof why))
        return 0;
    tj_error(k->ctx, "kernel '%s': %s", k->name, why);
    return -1;
}

/* A kernel's module for the host, before the passes. */
typedef struct host_module {
    LLVMContextRef lc;
    LLVMModuleRef mod;
    LLVMTargetMachineRef tm;
    LLVMTargetDataRef dl;
} host_module;

static void host_module_free(host_module *h)
{
    if (h->mod)
        LLVMDisposeModule(h->mod);
    if (h->dl)
        LLVMDisposeTargetData(h->dl);
    if (h->tm)
        LLVMDisposeTargetMachine(h->tm);
    LLVMContextDispose(h->lc);
}

/* Checks the request and builds k's module into *h (which the caller
 * frees either way); 0, or -1 after a diagnostic. */
static int build_host_module(tj_cpu *cpu, const tj_kernel *k, const void *out, const char *caller, host_module *h)
{
    *h = (host_module){LLVMContextCreate(), NULL, NULL, NULL};
    if (!k)
        return -1;
    if (!cpu || !out) {
        tj_error(k->ctx, "%s: NULL %s", caller, cpu ? "output buffer" : "cpu");
        return -1;
    }
    if (k->level != TJ_LEVEL_TILE) {
        tj_error(k->ctx, "kernel '%s': the cpu back end takes Tile IR, not SIMT IR", k->name);
        return -1;
    }
    h->mod = LLVMModuleCreateWithNameInContext(k->name, h->lc);
    if (!(h->tm = new_machine(cpu))) {
        tj_error(k->ctx, "kernel '%s': cpu back end: cannot create a target machine for %s", k->name, cpu->triple);
        return -1;
    }
    h->dl = LLVMCreateTargetDataLayout(h->tm);
    LLVMSetModuleDataLayout(h->mod, h->dl);
    LLVMSetTarget(h->mod, cpu->triple);
    return lg_build_function(h->mod, k, cpu->vector_bits, tj_cpu_sort_net_host(cpu->features));
}

int tj_cpu_compile_object(tj_cpu *cpu, const tj_kernel *k, tj_buf *object, tj_cpu_times *times)
{
    double t0 = now_ms();
    host_module h;
    int rc = build_host_module(cpu, k, object, "tj_cpu_compile_object", &h);
    if (!rc)
        rc = check_frame(k, h.mod);
    double t1 = now_ms();
    if (!rc)
        rc = optimize_and_emit(cpu, k, h.mod, h.tm, object);
    if (times) {
        times->codegen_ms = t1 - t0;
        times->opt_ms = now_ms() - t1;
        times->link_ms = 0;
    }
    host_module_free(&h);
    return rc;
}

int tj_cpu_emit_llvm(tj_cpu *cpu, const tj_kernel *k, tj_buf *out)
{
    host_module h;
    int rc = build_host_module(cpu, k, out, "tj_cpu_emit_llvm", &h);
    if (!rc) {
        char *text = LLVMPrintModuleToString(h.mod);
        size_t before = out->len, n = strlen(text);
        tj_buf_append(out, text, n);
        LLVMDisposeMessage(text);
        if (out->len != before + n) { /* tj_buf_append truncates when out of memory */
            tj_error(k->ctx, "kernel '%s': cpu back end: out of memory for the LLVM IR", k->name);
            rc = -1;
        }
    }
    host_module_free(&h);
    return rc;
}

/* ---- loading ---- */

/* What a kernel's object defines: tj_programs, tj_frame_bytes, tj_atomics. */
enum { ENTRY_SYMBOLS = 3 };

typedef struct lookup_wait {
    pthread_mutex_t lock;
    pthread_cond_t done;
    int finished;
    LLVMErrorRef err;
    LLVMOrcSymbolStringPoolEntryRef names[ENTRY_SYMBOLS];
    uint64_t addr[ENTRY_SYMBOLS];
} lookup_wait;

static void lookup_done(LLVMErrorRef e, LLVMOrcCSymbolMapPairs res, size_t n, void *ctx)
{
    lookup_wait *w = ctx;
    pthread_mutex_lock(&w->lock);
    w->err = e;
    for (size_t i = 0; !e && i < n; i++)
        for (int j = 0; j < ENTRY_SYMBOLS; j++)
            if (res[i].Name == w->names[j])
                w->addr[j] = res[i].Sym.Address;
    w->finished = 1;
    pthread_cond_signal(&w->done);
    pthread_mutex_unlock(&w->lock);
}

/* Addresses of tj_programs, tj_frame_bytes and tj_atomics in jd (same order). */
static LLVMErrorRef lookup_entry(tj_cpu *cpu, LLVMOrcJITDylibRef jd, uint64_t addr[ENTRY_SYMBOLS])
{
    static const char *const names[ENTRY_SYMBOLS] = {"tj_programs", "tj_frame_bytes", "tj_atomics"};
    LLVMOrcCJITDylibSearchOrderElement order[1] = {{jd, LLVMOrcJITDylibLookupFlagsMatchAllSymbols}};
    LLVMOrcCLookupSetElement syms[ENTRY_SYMBOLS];
    lookup_wait w = {.finished = 0};
    for (int i = 0; i < ENTRY_SYMBOLS; i++) {
        syms[i] = (LLVMOrcCLookupSetElement){LLVMOrcLLJITMangleAndIntern(cpu->jit, names[i]),
                                             LLVMOrcSymbolLookupFlagsRequiredSymbol};
        w.names[i] = syms[i].Name;
    }
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.done, NULL);
    LLVMOrcExecutionSessionLookup(LLVMOrcLLJITGetExecutionSession(cpu->jit), LLVMOrcLookupKindStatic, order, 1,
                                  syms, ENTRY_SYMBOLS, lookup_done, &w);
    pthread_mutex_lock(&w.lock);
    while (!w.finished)
        pthread_cond_wait(&w.done, &w.lock);
    pthread_mutex_unlock(&w.lock);
    pthread_mutex_destroy(&w.lock);
    pthread_cond_destroy(&w.done);
    for (int i = 0; i < ENTRY_SYMBOLS; i++)
        addr[i] = w.addr[i];
    return w.err;
}

/* The library's functions that generated code calls: the sorts. */
static LLVMErrorRef define_helpers(tj_cpu *cpu, LLVMOrcJITDylibRef jd)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } helpers[] = {{"tj_cpu_sort_pairs", (void (*)(void))tj_cpu_sort_pairs},
                   {"tj_cpu_sort_pairs32", (void (*)(void))tj_cpu_sort_pairs32},
                   {"tj_cpu_counting_sort", (void (*)(void))tj_cpu_counting_sort},
#if TJ_CPU_SORT_NET
                   {"tj_cpu_sort_keys32", (void (*)(void))tj_cpu_sort_keys32},
#endif
    };
    enum { NHELPERS = sizeof helpers / sizeof *helpers };
    LLVMOrcCSymbolMapPair syms[NHELPERS];
    for (int i = 0; i < NHELPERS; i++)
        syms[i] = (LLVMOrcCSymbolMapPair){LLVMOrcLLJITMangleAndIntern(cpu->jit, helpers[i].name),
                                          {(LLVMOrcJITTargetAddress)(uintptr_t)helpers[i].fn,
                                           {LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable, 0}}};
    return LLVMOrcJITDylibDefine(jd, LLVMOrcAbsoluteSymbols(syms, NHELPERS));
}

/* A JITDylib that sees the process (libm, memcpy) and the sort helper:
 * the one a failed load emptied, else a new one. The session keeps every
 * JITDylib until it ends (the C API cannot remove one), so failures reuse. */
static LLVMErrorRef new_dylib(tj_cpu *cpu, LLVMOrcJITDylibRef *jd)
{
    char name[32];
    pthread_mutex_lock(&cpu->lock);
    *jd = cpu->spare;
    cpu->spare = NULL;
    unsigned n = *jd ? 0 : cpu->nloaded++;
    pthread_mutex_unlock(&cpu->lock);
    if (*jd) /* clearing kept its generator, not its symbols */
        return define_helpers(cpu, *jd);
    snprintf(name, sizeof name, "tj_kernel_%u", n);
    LLVMErrorRef e = LLVMOrcExecutionSessionCreateJITDylib(LLVMOrcLLJITGetExecutionSession(cpu->jit), jd, name);
    if (e)
        return e;
    LLVMOrcDefinitionGeneratorRef gen;
    e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(cpu->jit), NULL, NULL);
    if (e)
        return e;
    LLVMOrcJITDylibAddGenerator(*jd, gen);
    return define_helpers(cpu, *jd);
}

/* After a failed load: jd's code and symbols freed, jd kept for the next
 * load (when clearing fails, it stays as it is: never reused half-full). */
static void retire_dylib(tj_cpu *cpu, LLVMOrcJITDylibRef jd)
{
    LLVMErrorRef e = LLVMOrcJITDylibClear(jd);
    if (e) {
        LLVMConsumeError(e);
        return;
    }
    pthread_mutex_lock(&cpu->lock);
    if (!cpu->spare)
        cpu->spare = jd;
    pthread_mutex_unlock(&cpu->lock);
}

tj_cpu_fn *tj_cpu_load(tj_cpu *cpu, const void *object, size_t len, char *err, size_t cap)
{
    if (!cpu || !object || !len) {
        set_err(err, cap, cpu ? "tj_cpu_load: no object code" : "tj_cpu_load: NULL cpu", NULL);
        return NULL;
    }
    LLVMOrcJITDylibRef jd = NULL;
    LLVMErrorRef e = new_dylib(cpu, &jd);
    if (e) {
        set_llvm_err(err, cap, "cannot make a JIT library", e);
        if (jd)
            retire_dylib(cpu, jd);
        return NULL;
    }
    LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(object, len, "tj_kernel.o");
    e = LLVMOrcLLJITAddObjectFile(cpu->jit, jd, mb);
    uint64_t addr[ENTRY_SYMBOLS] = {0};
    if (!e)
        e = lookup_entry(cpu, jd, addr);
    tj_cpu_fn *f = NULL;
    int64_t frame = 0;
    if (e) /* the object refused, or its kernel too big for a worker: its library is emptied */
        set_llvm_err(err, cap, "cannot link the kernel", e);
    else if (!tj_cpu_pool_fits(frame = *(const int64_t *)(uintptr_t)addr[1], err, cap) && !(f = calloc(1, sizeof *f)))
        set_err(err, cap, "out of memory", NULL);
    if (!f) {
        retire_dylib(cpu, jd);
        return NULL;
    }
    f->cpu = cpu;
    f->entry = (tj_cpu_entry)(uintptr_t)addr[0];
    f->frame_bytes = frame;
    f->atomics = *(const int32_t *)(uintptr_t)addr[2] != 0;
    pthread_mutex_lock(&cpu->lock);
    f->next = cpu->fns;
    cpu->fns = f;
    pthread_mutex_unlock(&cpu->lock);
    return f;
}

tj_cpu_fn *tj_cpu_compile(tj_cpu *cpu, const tj_kernel *k, tj_cpu_times *times)
{
    tj_buf obj = {0};
    tj_cpu_fn *f = NULL;
    if (!tj_cpu_compile_object(cpu, k, &obj, times)) {
        char err[512];
        double t0 = now_ms();
        f = tj_cpu_load(cpu, obj.data, obj.len, err, sizeof err);
        if (!f)
            tj_error(k->ctx, "kernel '%s': %s", k->name, err);
        if (times)
            times->link_ms = now_ms() - t0;
    }
    tj_buf_free(&obj);
    return f;
}
