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

/* A family's stand-ins against its source: every kernel that the readers
 * list of a stand-in leaves out (it takes the stand-in) must not read the
 * key, i.e. its own text is the same whatever the key's value; else a
 * request that forgets the key would compile with the stand-in, silently.
 * (Only each kernel's own text: a helper fn that read a key would need its
 * callers listed by hand.) */
typedef struct family_keys {
    const char *family;
    lib_subst given[8]; /* every key of the family that has no stand-in */
    uint32_t ngiven;
    const char *stand_ins[4];
} family_keys;

static const family_keys families[] = {
    {"selective_scan",
     {{"T", "f32"}, {"HAS_D", "1"}, {"HAS_Z", "1"}, {"HAS_BIAS", "1"}, {"SOFTPLUS", "1"}},
     5,
     {"W", "TT", "SEG", "TTS"}},
    {"sort", {{"K", "f32"}, {"KEY", "key_f32"}, {"DESC", "0"}, {"W", "u32"}}, 4, {"VALUES", "RB"}},
};

/* kernel `name`'s own text in src: from its `kernel` line to the next
 * top-level kernel or fn; its length in *n, NULL when src has none */
static const char *kernel_text(const char *src, const char *name, size_t *n)
{
    char head[96];
    snprintf(head, sizeof head, "\nkernel %s(", name);
    const char *at = strstr(src, head);
    if (!at)
        return NULL;
    const char *next_kernel = strstr(at + 1, "\nkernel "), *next_fn = strstr(at + 1, "\nfn ");
    const char *end = next_kernel && (!next_fn || next_kernel < next_fn) ? next_kernel : next_fn;
    *n = end ? (size_t)(end - at) : strlen(at);
    return at;
}

/* kernel `name` of fk's family substituted with every stand-in key but
 * `left_out` given `value` (left_out itself given `left_value`, or left to
 * the stand-in when NULL) */
static char *source_for(const family_keys *fk, const char *name, const char *left_out, const char *left_value,
                        tj_rt_error *err)
{
    lib_subst s[16];
    uint32_t n = 0;
    for (uint32_t i = 0; i < fk->ngiven; i++)
        s[n++] = fk->given[i];
    for (int i = 0; i < 4 && fk->stand_ins[i]; i++)
        if (strcmp(fk->stand_ins[i], left_out) || left_value)
            s[n++] = (lib_subst){fk->stand_ins[i], strcmp(fk->stand_ins[i], left_out) ? "16" : left_value};
    return lib_kernel_source(fk->family, name, s, n, err);
}

Test(lib_dispatch, kernels_that_take_a_stand_in_do_not_read_its_key)
{
    for (size_t f = 0; f < sizeof families / sizeof *families; f++) {
        const family_keys *fk = &families[f];
        tj_rt_error err = {{0}};
        char *whole = source_for(fk, NULL, "", NULL, &err);
        cr_assert(whole, "%s: %s", fk->family, err.msg);
        int kernels = 0;
        for (const char *at = strstr(whole, "\nkernel "); at; at = strstr(at + 1, "\nkernel ")) {
            char name[64];
            cr_assert_eq(sscanf(at, "\nkernel %63[A-Za-z0-9_](", name), 1);
            kernels++;
            for (int k = 0; k < 4 && fk->stand_ins[k]; k++) {
                const char *key = fk->stand_ins[k];
                char *standin = source_for(fk, name, key, NULL, &err);
                if (!standin) { /* a listed reader: the key is asked for */
                    cr_assert(strstr(err.msg, "no value for"), "%s %s: %s", fk->family, name, err.msg);
                    continue;
                }
                char *other = source_for(fk, name, key, "977", &err);
                cr_assert(other, "%s %s: %s", fk->family, name, err.msg);
                size_t n1 = 0, n2 = 0; /* set by kernel_text where it finds the kernel */
                const char *t1 = kernel_text(standin, name, &n1), *t2 = kernel_text(other, name, &n2);
                cr_assert(t1 && t2);
                cr_assert(n1 == n2 && !memcmp(t1, t2, n1),
                          "%s: kernel %s reads $%s but is not one of its stand-in's readers (lib/lib.c)", fk->family,
                          name, key);
                free(standin);
                free(other);
            }
        }
        cr_assert_gt(kernels, 1, "%s: no kernels found", fk->family);
        free(whole);
    }
}
