/* The SIMT interpreter's mbarriers and TMA loads (interp/simt_tma.c): a
 * box lands swizzled, zero-filled outside the tensor, at the wait that sees
 * its phase completed; and the mistakes a lowering could make are reported:
 * a read before the wait, a wait on a phase that never completes, an
 * mbarrier initialized twice, arrivals beyond its count, copies left in
 * flight at the end, a tensor a tensor map cannot describe. A slot's
 * release (lower/ring.c): lane 0 of each warp arrives, thread 0 alone
 * waits. The kernel is the one of tests/lit/ptx/tma.tjir, edited per
 * case. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "text_edit.h"
#include "tilejit/tilejit.h"

static const char *const TMA = "kernel @tma(x: bf16[R, C], y: bf16[N]) simt(threads = 64, smem = 1088) config(warps = 2) {\n"
                               "grid:\n"
                               "  %0 = const 1 : i32\n"
                               "  yield %0\n"
                               "body:\n"
                               "  %1 = param {index = 0} : tensor<bf16, 2>\n"
                               "  %2 = tid {axis = 0} : i32\n"
                               "  %3 = const 0 : i32\n"
                               "  %4 = eq %2, %3 : bool\n"
                               "  %5 = const 1024 : u32\n"
                               "  %6 = const 1 : u32\n"
                               "  mbar_init %5, %6, %4\n"
                               "  fence_proxy_async\n"
                               "  barrier\n"
                               "  %7 = const 1024 : u32\n"
                               "  mbar_expect_tx %5, %7, %4\n"
                               "  %8 = const 0 : u32\n"
                               "  tma_load %1, %8, %5, %3, %3, %4 {cols = 64, rows = 8, swizzle = 128}\n"
                               "  %9 = const 0 : u32\n"
                               "  mbar_wait %5, %9, _\n"
                               "  %10 = cast %2 : u32\n"
                               "  %11 = const 16 : u32\n"
                               "  %12 = mul %10, %11 : u32\n"
                               "  %13 = ld_shared %12 : bf16[8]\n"
                               "  %14 = param {index = 1} : tensor<bf16, 1>\n"
                               "  %15 = tensor_ptr %14 : u64\n"
                               "  %16 = cast %12 : u64\n"
                               "  %17 = add %15, %16 : u64\n"
                               "  st_global %17, %13, _\n"
                               "  mbar_inval %5, %4\n"
                               "  yield\n"
                               "}\n";

enum { ROWS = 5, COLS = 60, PITCH = 64, OUT = 64 * 16, MAX_ROWS = 32 };

/* The kernel with `from` replaced by `to` (NULL: as it is), run on x (rows
 * x COLS bf16 in rows of PITCH, at `offset` elements into its buffer) into
 * y; the return code, with the diagnostics in *msg. */
static int run_rows(const char *from, const char *to, uint16_t *y, int64_t rows, int64_t pitch, int offset,
                    const char **msg)
{
    static uint16_t x[MAX_ROWS * PITCH + 8];
    char text[4096];
    cr_assert_eq(te_replace(text, sizeof text, TMA, from, to), 0, "no '%s' in the kernel", from);
    for (int i = 0; i < MAX_ROWS * PITCH + 8; i++)
        x[i] = (uint16_t)(0x3f80 + i); /* distinct bf16 values */
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = NULL;
    cr_assert_eq(tj_parse_ir(c, "tma.tjir", text, strlen(text), &k, 1), 1, "%s", tj_diag_render(c));
    cr_assert_eq(tj_verify(k), 0, "%s", tj_diag_render(c));
    tj_arg args[2] = {{.is_tensor = 1,
                       .tensor = {.data = x + offset, .dtype = TJ_DT_BF16, .rank = 2, .shape = {rows, COLS},
                                  .strides = {pitch, 1}}},
                      {.is_tensor = 1,
                       .tensor = {.data = y, .dtype = TJ_DT_BF16, .rank = 1, .shape = {OUT}, .strides = {1}}}};
    int rc = tj_simt_run(k, args, 2);
    static char saved[2048];
    snprintf(saved, sizeof saved, "%s", tj_diag_render(c));
    *msg = saved;
    tj_ctx_free(c);
    return rc;
}

static int run(const char *from, const char *to, uint16_t *y, int64_t pitch, int offset, const char **msg)
{
    return run_rows(from, to, y, ROWS, pitch, offset, msg);
}

/* Thread t read the 16 bytes at t * 16: row t / 8, chunk t % 8, which the
 * 128-byte swizzle filled from chunk (t % 8) ^ (row % 8) of that row. */
Test(simt_tma, a_box_lands_swizzled_and_zero_filled)
{
    uint16_t y[OUT];
    const char *msg;
    cr_assert_eq(run(NULL, NULL, y, PITCH, 0, &msg), 0, "%s", msg);
    static uint16_t x[ROWS * PITCH];
    for (int i = 0; i < ROWS * PITCH; i++)
        x[i] = (uint16_t)(0x3f80 + i);
    for (int t = 0; t < 64; t++) {
        int row = t / 8, chunk = (t % 8) ^ row;
        for (int e = 0; e < 8; e++) {
            int col = chunk * 8 + e;
            uint16_t want = row < ROWS && col < COLS ? x[row * PITCH + col] : 0;
            cr_assert_eq(y[t * 8 + e], want, "thread %d, element %d (row %d, column %d)", t, e, row, col);
        }
    }
}

static void expect(const char *from, const char *to, const char *what)
{
    uint16_t y[OUT];
    const char *msg;
    cr_assert_neq(run(from, to, y, PITCH, 0, &msg), 0, "expected an error about '%s'", what);
    cr_assert(strstr(msg, what), "expected '%s' in:\n%s", what, msg);
}

Test(simt_tma, reports_broken_protocols)
{
    expect("  mbar_wait %5, %9, _\n", "", "which no thread has written"); /* read before the wait */
    expect("%9 = const 0 : u32", "%9 = const 1 : u32", "which nothing in flight completes");
    expect("  fence_proxy_async\n", "  mbar_init %5, %6, %4\n", "inside a live mbarrier");
    expect("  mbar_expect_tx %5, %7, %4\n", "  mbar_expect_tx %5, %7, _\n", "more often than its count");
    expect("  mbar_inval %5, %4\n", "  tma_load %1, %8, %5, %3, %3, %4 {cols = 64, rows = 8, swizzle = 128}\n",
           "TMA copies not awaited");
    expect("  mbar_inval %5, %4\n", "  mbar_expect_tx %5, %7, %4\n  mbar_inval %5, %4\n", "in the middle of a phase");
    expect("%8 = const 0 : u32", "%8 = const 64 : u32", "not 128-byte aligned");
}

/* After the reads, a release mbarrier of one arrival per warp (count 2):
 * lane 0 of each warp arrives, then thread 0 alone waits for the phase. */
static const char *const RELEASE = "  %18 = const 1032 : u32\n"
                                   "  %19 = const 2 : u32\n"
                                   "  mbar_init %18, %19, %4\n"
                                   "  %20 = const 31 : i32\n"
                                   "  %21 = and %2, %20 : i32\n"
                                   "  %22 = eq %21, %3 : bool\n"
                                   "  mbar_arrive %18, %22\n"
                                   "  mbar_wait %18, %9, %4\n"
                                   "  mbar_inval %18, %4\n"
                                   "  mbar_inval %5, %4\n";

static void with_release(const char *from, const char *to, const char *what)
{
    char text[1024];
    const char *at = strstr(RELEASE, from);
    cr_assert(at, "no '%s' in the release", from);
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - RELEASE), RELEASE, to, at + strlen(from));
    expect("  mbar_inval %5, %4\n", text, what);
}

Test(simt_tma, a_release_completes_with_one_arrival_per_warp)
{
    uint16_t y[OUT];
    const char *msg;
    cr_assert_eq(run("  mbar_inval %5, %4\n", RELEASE, y, PITCH, 0, &msg), 0, "%s", msg);
    with_release("mbar_arrive %18, %22", "mbar_arrive %18, %4", "which nothing in flight completes (1 arrivals");
    with_release("mbar_wait %18, %9, %4", "mbar_wait %18, %6, %4", "which nothing in flight completes");
}

/* A box of two 8-row blocks two blocks apart (pair = 2, a 3-D tensor
 * map): rows 0-7 and 16-23 of a 24-row tensor land one after the other,
 * 2048 bytes (the mbarrier after them); thread t reads the 16 bytes at
 * t * 32 (row t / 4 of the box, chunk 2 (t % 4)) and stores them at
 * element 16 t of y. Rows that are no whole number of blocks are
 * refused. */
Test(simt_tma, a_paired_box_brings_two_blocks)
{
    static const char *const from[] = {"smem = 1088", "%5 = const 1024 : u32", "%7 = const 1024 : u32",
                                       "{cols = 64, rows = 8, swizzle = 128}", "%11 = const 16 : u32"};
    static const char *const to[] = {"smem = 2112", "%5 = const 2048 : u32", "%7 = const 2048 : u32",
                                     "{cols = 64, rows = 8, swizzle = 128, pair = 2}", "%11 = const 32 : u32"};
    char text[4096], next[4096];
    snprintf(text, sizeof text, "%s", TMA);
    for (int i = 0; i < 5; i++) {
        char *at = strstr(text, from[i]);
        cr_assert(at, "no '%s'", from[i]);
        snprintf(next, sizeof next, "%.*s%s%s", (int)(at - text), text, to[i], at + strlen(from[i]));
        memcpy(text, next, sizeof text);
    }
    uint16_t y[OUT];
    const char *msg;
    cr_assert_eq(run_rows(TMA, text, y, 24, PITCH, 0, &msg), 0, "%s", msg);
    for (int t = 0; t < 64; t++) {
        int row = t / 4, chunk = (2 * (t % 4)) ^ (row % 8), src = row < 8 ? row : row + 8;
        for (int e = 0; e < 8; e++) {
            int col = chunk * 8 + e;
            uint16_t want = col < COLS ? (uint16_t)(0x3f80 + src * PITCH + col) : 0;
            cr_assert_eq(y[t * 16 + e], want, "thread %d, element %d (box row %d, column %d)", t, e, row, col);
        }
    }
    cr_assert_neq(run_rows(TMA, text, y, 20, PITCH, 0, &msg), 0);
    cr_expect(strstr(msg, "its 3-D tensor map needs both multiples of 8"), "%s", msg);
}

/* A tensor map needs 16-byte aligned data and rows (cuTensorMapEncodeTiled). */
Test(simt_tma, refuses_what_a_tensor_map_cannot_describe)
{
    uint16_t y[OUT];
    const char *msg;
    cr_expect_neq(run(NULL, NULL, y, 60, 0, &msg), 0);
    cr_expect(strstr(msg, "a tensor map needs"), "%s", msg);
    cr_expect_neq(run(NULL, NULL, y, PITCH, 1, &msg), 0);
    cr_expect(strstr(msg, "a tensor map needs"), "%s", msg);
}

/* SIMT text in the form before the wgmma family took a predicate (a bare
 * `wgmma_fence`), run without the verifier: a located error, not a read
 * past the instruction's operands. */
Test(simt_tma, a_wgmma_fence_without_its_predicate_is_reported)
{
    const char *at = strstr(TMA, "  fence_proxy_async\n");
    cr_assert(at, "no fence_proxy_async in the kernel");
    char text[4096];
    snprintf(text, sizeof text, "%.*s  wgmma_fence\n%s", (int)(at - TMA), TMA, at);
    static uint16_t x[MAX_ROWS * PITCH + 8], y[OUT];
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = NULL;
    cr_assert_eq(tj_parse_ir(c, "tma.tjir", text, strlen(text), &k, 1), 1, "%s", tj_diag_render(c));
    tj_arg args[2] = {{.is_tensor = 1,
                       .tensor = {.data = x, .dtype = TJ_DT_BF16, .rank = 2, .shape = {ROWS, COLS}, .strides = {PITCH, 1}}},
                      {.is_tensor = 1, .tensor = {.data = y, .dtype = TJ_DT_BF16, .rank = 1, .shape = {OUT}, .strides = {1}}}};
    cr_expect_neq(tj_simt_run(k, args, 2), 0);
    cr_expect(strstr(tj_diag_render(c), "takes a predicate operand"), "%s", tj_diag_render(c));
    tj_ctx_free(c);
}
