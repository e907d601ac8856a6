/* lib_dispatch (lib/lib.c): the kernels of a family by their substitutions,
 * any number of them, and the family's defaults for keys a request does
 * not name. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "lib/lib_internal.h"
#include "lib_test_util.h"

enum { MANY = 100 };

/* MANY substitutions K0 .. K99 (util.tj reads none of them), the last one's
 * value `last` */
static tj_dispatch *many(tj_lib *l, const char *last, tj_rt_error *err)
{
    static char keys[MANY][8];
    lib_subst subst[MANY];
    for (int i = 0; i < MANY; i++) {
        snprintf(keys[i], sizeof keys[i], "K%d", i);
        subst[i] = (lib_subst){keys[i], i == MANY - 1 ? last : "v"};
    }
    return lib_dispatch(l, "util", "zero_u32", subst, MANY, err);
}

/* Requests past 64 substitutions are kept apart by every one of them: a
 * request that differs only in its last value is another kernel. */
Test(lib_dispatch, many_substitutions)
{
    tj_jit *j;
    tj_lib *l = open_lib(TJ_DEVICE_INTERP, &j);
    tj_rt_error err = {{0}};
    tj_dispatch *a = many(l, "1", &err);
    cr_assert(a, "%s", err.msg);
    tj_dispatch *b = many(l, "2", &err);
    cr_assert(b, "%s", err.msg);
    cr_assert_neq(a, b, "two requests that differ in their 100th substitution shared a kernel");
    cr_assert_eq(many(l, "1", &err), a, "the same request compiled again");
    tj_lib_close(l);
    tj_jit_close(j);
}

/* The two phases of the selective scan without the one pass's $W and $TT
 * (stand-ins: they do not read them); the one pass without them, or a
 * kernel without a key it reads, is an error. */
Test(lib_dispatch, placeholders)
{
    tj_jit *j;
    tj_lib *l = open_lib(TJ_DEVICE_INTERP, &j);
    tj_rt_error err = {{0}};
    lib_subst subst[] = {{"SEG", "64"},     {"TTS", "4"},      {"T", "f32"},  {"HAS_D", "1"},
                         {"HAS_Z", "0"},    {"HAS_BIAS", "0"}, {"SOFTPLUS", "1"}};
    uint32_t n = sizeof subst / sizeof *subst;
    cr_assert(lib_dispatch(l, "selective_scan", "ss_segment_state", subst, n, &err), "%s", err.msg);
    cr_assert_null(lib_dispatch(l, "selective_scan", "ss_segment_state", subst + 1, n - 1, &err),
                   "ss_segment_state without $SEG took a stand-in");
    cr_assert(strstr(err.msg, "no value for '$SEG'"), "%s", err.msg);
    cr_assert_null(lib_dispatch(l, "selective_scan", "ss_chunked", subst + 2, n - 2, &err),
                   "ss_chunked without $W took a stand-in");
    cr_assert(strstr(err.msg, "no value for '$W'") || strstr(err.msg, "no value for '$TT'"), "%s", err.msg);
    cr_assert_null(lib_dispatch(l, "selective_scan", "ss_segment_state", subst, 2, &err), "$T had no value");
    cr_assert(strstr(err.msg, "no value for '$T'"), "%s", err.msg);
    tj_lib_close(l);
    tj_jit_close(j);
}

/* A kernel name that is empty (or a piece of a listed reader's name) is not
 * one of a stand-in's readers: the stand-in is taken, and the lookup stays
 * inside the readers list (under ASan an empty name used to read past it);
 * the family has no such kernel, which is the error. */
Test(lib_dispatch, a_kernel_name_that_names_no_reader)
{
    tj_jit *j;
    tj_lib *l = open_lib(TJ_DEVICE_INTERP, &j);
    tj_rt_error err = {{0}};
    lib_subst subst[] = {{"T", "f32"}, {"HAS_D", "1"}, {"HAS_Z", "0"}, {"HAS_BIAS", "0"}, {"SOFTPLUS", "1"}};
    const char *names[] = {"", "ss_chunk", "chunked"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        err.msg[0] = 0;
        cr_assert_null(lib_dispatch(l, "selective_scan", names[i], subst, 5, &err), "kernel '%s' was found", names[i]);
        cr_assert(!strstr(err.msg, "no value for"), "kernel '%s': %s", names[i], err.msg);
        cr_assert(err.msg[0], "kernel '%s' failed without a message", names[i]);
    }
    tj_lib_close(l);
    tj_jit_close(j);
}
