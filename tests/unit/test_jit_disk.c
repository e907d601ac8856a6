/* The JIT's disk cache, whole: tj_jit_open on a fake driver
 * (fake_libcuda.c, found through LD_LIBRARY_PATH), compile and store, a
 * fresh tj_jit on the same directory that loads the entry instead of
 * compiling, a damaged entry that is dropped and rebuilt. Kernels with long
 * names and large signatures hit like any other (their metadata once
 * overflowed fixed buffers, so every lookup missed). */
#include "cache_test_util.h"

#include "tilejit/jit.h"
#include "tilejit/tilejit.h"

typedef struct jit_case {
    char *dir;
    tj_buf source;
    char kernel[400];
    uint32_t nparams;
    tj_arg args[64];
} jit_case;

/* kernel NAME(P0: f32[N], ..., Y: f32[N]) copying P0 to Y; each parameter
 * name `name_len` characters long. */
static void make_kernel(jit_case *t, size_t name_len, size_t param_len, uint32_t nparams)
{
    memset(t->kernel, 'k', name_len);
    t->kernel[name_len] = 0;
    t->nparams = nparams;
    tj_buf_printf(&t->source, "kernel %s(", t->kernel);
    for (uint32_t i = 0; i < nparams; i++)
        tj_buf_printf(&t->source, "%sp%u_%0*d: f32[N]", i ? ", " : "", i, (int)param_len, 0);
    tj_buf_printf(&t->source, ")\n    grid (cdiv(N, 64))\n{\n    i = program_id(0) * 64\n"
                              "    store(p%u_%0*d[i:i+64], load(p0_%0*d[i:i+64]))\n}\n",
                  nparams - 1, (int)param_len, 0, (int)param_len, 0);
    for (uint32_t i = 0; i < nparams; i++)
        t->args[i] = (tj_arg){.is_tensor = 1,
                              .tensor = {.data = (void *)(uintptr_t)(0x100000 * (i + 1)), .dtype = TJ_DT_F32,
                                         .rank = 1, .shape = {4096}, .strides = {1}}};
}

static void setup_case(jit_case *t)
{
    memset(t, 0, sizeof *t);
    t->dir = ct_tempdir();
    setenv("TILEJIT_CACHE_DIR", t->dir, 1);
    unsetenv("TILEJIT_CACHE");
    unsetenv("TILEJIT_CACHE_MAX");
}

/* A fresh tj_jit compiles the case once (a quick compile if `quick`);
 * returns its statistics. */
static tj_jit_stats compile_as(jit_case *t, int quick)
{
    tj_rt_error err = {{0}};
    tj_jit *j = tj_jit_open(TJ_DEVICE_CUDA, 0, &err);
    /* ctest points LD_LIBRARY_PATH at the fake: there, not getting it is a
     * broken build, not a reason to skip. */
    const char *llp = getenv("LD_LIBRARY_PATH");
    int under_ctest = llp && strstr(llp, "fake_driver");
    if (!j) {
        cr_assert(!under_ctest, "the fake driver in LD_LIBRARY_PATH did not load: %s", err.msg);
        cr_skip_test("no fake driver (run through ctest, which sets LD_LIBRARY_PATH): %s", err.msg);
    }
    tj_cuda_props props;
    cr_assert_eq(tj_cuda_device_props(tj_jit_cuda(j), 0, &props, &err), 0, "%s", err.msg);
    if (strcmp(props.name, "Fake GPU 0")) {
        cr_assert(!under_ctest, "LD_LIBRARY_PATH names the fake driver, but libcuda.so.1 is %s", props.name);
        cr_skip_test("libcuda.so.1 is a real driver (%s), not the fake", props.name);
    }
    tj_compile_request req = {.file = "k.tj", .source = t->source.data, .len = t->source.len,
                              .kernel = t->kernel, .args = t->args, .nargs = t->nparams, .quick = quick};
    tj_fn *f = tj_jit_compile(j, &req, &err);
    cr_assert_not_null(f, "%s", err.msg);
    tj_jit_stats st;
    tj_jit_get_stats(j, &st);
    tj_fn_release(f);
    tj_jit_close(j);
    return st;
}

static tj_jit_stats compile_once(jit_case *t) { return compile_as(t, 0); }

/* The number of kernel entries in t's cache; the last one's path in buf. */
static int entry_paths(const jit_case *t, char *buf, size_t n)
{
    char v1[4200];
    snprintf(v1, sizeof v1, "%s/v1", t->dir);
    DIR *d = opendir(v1);
    cr_assert(d);
    int found = 0;
    for (struct dirent *de; (de = readdir(d));)
        if (strlen(de->d_name) == 2 * TJ_CACHE_KEY_BYTES + 4 && strstr(de->d_name, ".tjc")) {
            snprintf(buf, n, "%s/%s", v1, de->d_name);
            found++;
        }
    closedir(d);
    return found;
}

/* The one kernel entry's path (there must be exactly one). */
static void entry_path(const jit_case *t, char *buf, size_t n)
{
    int found = entry_paths(t, buf, n);
    cr_assert_eq(found, 1, "%d entries", found);
}

static void flip_byte(const char *path, long at)
{
    FILE *f = fopen(path, "r+b");
    cr_assert(f);
    fseek(f, at, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, at, SEEK_SET);
    fputc(ch ^ 0x5a, f);
    fclose(f);
}

static void compile_store_hit_corrupt_rebuild(jit_case *t)
{
    tj_jit_stats st = compile_once(t);
    cr_expect_eq(st.compiles, 1);
    cr_expect_eq(st.disk_hits, 0);
    st = compile_once(t);
    cr_expect_eq(st.compiles, 0, "a fresh tj_jit loads the stored entry");
    cr_expect_eq(st.disk_hits, 1);
    char path[4400];
    entry_path(t, path, sizeof path);
    flip_byte(path, ct_size(path) / 2);
    st = compile_once(t);
    cr_expect_eq(st.compiles, 1, "a damaged entry is rebuilt");
    cr_expect_eq(st.disk_hits, 0);
    st = compile_once(t);
    cr_expect_eq(st.disk_hits, 1, "and the rebuilt entry is good");
    tj_buf_free(&t->source);
    ct_rmrf(t->dir);
}

Test(jit_disk, compile_store_hit_corrupt_rebuild)
{
    jit_case t;
    setup_case(&t);
    make_kernel(&t, 4, 1, 3);
    compile_store_hit_corrupt_rebuild(&t);
}

Test(jit_disk, long_names_and_large_signatures_hit)
{
    jit_case t;
    setup_case(&t);
    make_kernel(&t, 300, 150, 24); /* a 300-byte name, an ABI line of about 4 KB */
    compile_store_hit_corrupt_rebuild(&t);
}

/* A quick compile (a fast tier's: ptxas -O1) is an entry of its own: it
 * never answers the default request, nor the default a quick one, and a
 * fresh tj_jit finds each again. */
Test(jit_disk, quick_compiles_have_entries_of_their_own)
{
    jit_case t;
    setup_case(&t);
    make_kernel(&t, 4, 1, 3);
    cr_expect_eq(compile_as(&t, 0).compiles, 1);
    tj_jit_stats st = compile_as(&t, 1);
    cr_expect_eq(st.compiles, 1, "the default entry does not answer a quick request");
    cr_expect_eq(st.disk_hits, 0);
    char path[4400];
    cr_expect_eq(entry_paths(&t, path, sizeof path), 2);
    st = compile_as(&t, 1);
    cr_expect_eq(st.compiles, 0, "the quick entry answers a quick request");
    cr_expect_eq(st.disk_hits, 1);
    st = compile_as(&t, 0);
    cr_expect_eq(st.compiles, 0, "and the default one the default");
    cr_expect_eq(st.disk_hits, 1);
    tj_buf_free(&t.source);
    ct_rmrf(t.dir);
}
