/* The CLI's all-or-nothing file replacement (tools/tilejit/replace.c): when
 * a later rename fails, the files already replaced get their old contents
 * back and no temporary file stays. */
#include "cache_test_util.h"

#include "cli.h"

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

static int holds(const char *path, const char *text)
{
    char buf[64] = "";
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return !strcmp(buf, text);
}

/* Prepares, opens and writes new contents for each path. */
static void write_all(tj_ctx *c, cli_tmpfile *t, char paths[][4200], int n)
{
    for (int i = 0; i < n; i++) {
        cr_assert_eq(cli_tmp_prepare(c, paths[i], &t[i]), 0, "%s", tj_diag_render(c));
        cr_assert_eq(cli_tmp_open(c, &t[i]), 0, "%s", tj_diag_render(c));
        fputs("new", t[i].f);
        cr_assert_eq(cli_tmp_close(c, &t[i]), 0);
    }
}

Test(cli_replace, a_failed_rename_puts_back_what_was_replaced)
{
    char *dir = ct_tempdir(), paths[3][4200], sub[4300];
    tj_ctx *c = tj_ctx_new();
    cli_tmpfile t[3];
    for (int i = 0; i < 3; i++)
        snprintf(paths[i], sizeof paths[i], "%s/%c.npy", dir, 'a' + i);
    put(paths[0], "old a");
    put(paths[2], "old c"); /* b is new */
    write_all(c, t, paths, 3);
    /* c's path turns into a directory after the checks: its rename fails. */
    cr_assert_eq(unlink(paths[2]), 0);
    snprintf(sub, sizeof sub, "%s/x", paths[2]);
    cr_assert_eq(mkdir(paths[2], 0777), 0);
    cr_assert_eq(mkdir(sub, 0777), 0);
    cr_expect_neq(cli_tmp_commit_all(c, t, 3), 0);
    cr_expect(holds(paths[0], "old a"), "a was put back");
    cr_expect_not(ct_exists(paths[1]), "b, new, was removed again");
    cr_expect(strstr(tj_diag_render(c), "c.npy: error: cannot replace"), "%s", tj_diag_render(c));
    cr_expect_eq(ct_count_files(dir, "tilejit-tmp"), 0, "no temporary file or backup stays");
    tj_ctx_free(c);
    ct_rmrf(dir);
}

Test(cli_replace, all_renamed_when_all_succeed)
{
    char *dir = ct_tempdir(), paths[2][4200];
    tj_ctx *c = tj_ctx_new();
    cli_tmpfile t[2];
    for (int i = 0; i < 2; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/%c.npy", dir, 'a' + i);
        put(paths[i], "old");
    }
    write_all(c, t, paths, 2);
    cr_expect_eq(cli_tmp_commit_all(c, t, 2), 0);
    cr_expect(holds(paths[0], "new") && holds(paths[1], "new"));
    cr_expect_eq(ct_count_files(dir, "tilejit-tmp"), 0);
    tj_ctx_free(c);
    ct_rmrf(dir);
}

/* Two new files spelled differently are one file; two names in one
 * directory are two. */
Test(cli_replace, new_files_are_known_by_directory_and_name)
{
    char *dir = ct_tempdir(), a[4200], b[4200], other[4200];
    snprintf(a, sizeof a, "%s/x.npy", dir);
    snprintf(b, sizeof b, "%s/./sub/../x.npy", dir);
    snprintf(other, sizeof other, "%s/y.npy", dir);
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    tj_ctx *c = tj_ctx_new();
    cli_tmpfile ta, tb, to;
    cr_assert_eq(cli_tmp_prepare(c, a, &ta), 0);
    cr_assert_eq(cli_tmp_prepare(c, b, &tb), 0);
    cr_assert_eq(cli_tmp_prepare(c, other, &to), 0);
    cr_expect(cli_tmp_same_file(&ta, &tb));
    cr_expect(!cli_tmp_same_file(&ta, &to));
    tj_ctx_free(c);
    ct_rmrf(dir);
}
