/* The SIMT interpreter's TMA stores (interp/simt_tma.c): a box goes from
 * shared memory, read through the 128-byte swizzle, to the elements of the
 * tensor it covers (the rest dropped); and the mistakes a lowering could
 * make are reported: shared bytes stored with no fence_proxy_async since
 * their generic writes, or never written, a store whose group is not
 * committed or not retired at the end, its bytes written again before a
 * wait retired it, a tensor a tensor map cannot describe. The kernel is
 * the one of tests/lit/ptx/tma_store.tjir, edited per case. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "text_edit.h"
#include "tilejit/tilejit.h"

static const char *const STORE = "kernel @tma_store(x: bf16[N], y: bf16[R, C]) simt(threads = 64, smem = 1024) "
                                 "config(warps = 2) {\n"
                                 "grid:\n"
                                 "  %0 = const 1 : i32\n"
                                 "  yield %0\n"
                                 "body:\n"
                                 "  %1 = param {index = 0} : tensor<bf16, 1>\n"
                                 "  %2 = tid {axis = 0} : i32\n"
                                 "  %3 = const 0 : i32\n"
                                 "  %4 = eq %2, %3 : bool\n"
                                 "  %5 = tensor_ptr %1 : u64\n"
                                 "  %6 = cast %2 : u32\n"
                                 "  %7 = const 16 : u32\n"
                                 "  %8 = mul %6, %7 : u32\n"
                                 "  %9 = cast %8 : u64\n"
                                 "  %10 = add %5, %9 : u64\n"
                                 "  %11 = ld_global %10, _, _ : bf16[8]\n"
                                 "  st_shared %8, %11\n"
                                 "  fence_proxy_async\n"
                                 "  barrier\n"
                                 "  %12 = param {index = 1} : tensor<bf16, 2>\n"
                                 "  %13 = const 0 : u32\n"
                                 "  tma_store %12, %13, %3, %3, %4 {cols = 64, rows = 8, swizzle = 128}\n"
                                 "  tma_store_commit %4\n"
                                 "  tma_store_wait %4 {pending = 0}\n"
                                 "  yield\n"
                                 "}\n";

enum { ROWS = 5, COLS = 60, PITCH = 64, MAX_ROWS = 16, SENTINEL = 0x7fc1 };

/* The kernel with `from` replaced by `to` (NULL: as it is), run on x (512
 * distinct bf16 values) into y (ROWS x COLS of rows `pitch` apart, in a
 * buffer of MAX_ROWS rows of SENTINEL); the return code, with the
 * diagnostics in *msg. */
static int run(const char *from, const char *to, uint16_t *y, int64_t pitch, const char **msg)
{
    static uint16_t x[512];
    char text[4096];
    cr_assert_eq(te_replace(text, sizeof text, STORE, from, to), 0, "no '%s' in the kernel", from);
    for (int i = 0; i < 512; i++)
        x[i] = (uint16_t)(0x3f80 + i);
    for (int i = 0; i < MAX_ROWS * PITCH; i++)
        y[i] = SENTINEL;
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = NULL;
    cr_assert_eq(tj_parse_ir(c, "tma_store.tjir", text, strlen(text), &k, 1), 1, "%s", tj_diag_render(c));
    cr_assert_eq(tj_verify(k), 0, "%s", tj_diag_render(c));
    tj_arg args[2] = {{.is_tensor = 1,
                       .tensor = {.data = x, .dtype = TJ_DT_BF16, .rank = 1, .shape = {512}, .strides = {1}}},
                      {.is_tensor = 1,
                       .tensor = {.data = y, .dtype = TJ_DT_BF16, .rank = 2, .shape = {ROWS, COLS},
                                  .strides = {pitch, 1}}}};
    int rc = tj_simt_run(k, args, 2);
    static char saved[2048];
    snprintf(saved, sizeof saved, "%s", tj_diag_render(c));
    *msg = saved;
    tj_ctx_free(c);
    return rc;
}

/* Element (i, j) of the box is at shared byte i * 128 + 2 j with its
 * 16-byte chunk XORed with row i % 8, where thread t wrote x[8 t ..]. */
Test(simt_tma_store, a_box_is_read_swizzled_and_clipped)
{
    static uint16_t y[MAX_ROWS * PITCH];
    const char *msg;
    cr_assert_eq(run(NULL, NULL, y, PITCH, &msg), 0, "%s", msg);
    for (int i = 0; i < MAX_ROWS; i++)
        for (int j = 0; j < PITCH; j++) {
            int at = i * 128 + 2 * j;
            at ^= ((at >> 7) & 7) << 4;
            uint16_t want = i < ROWS && j < COLS ? (uint16_t)(0x3f80 + at / 2) : SENTINEL;
            cr_assert_eq(y[i * PITCH + j], want, "row %d, column %d", i, j);
        }
}

static void expect(const char *from, const char *to, const char *what)
{
    static uint16_t y[MAX_ROWS * PITCH];
    const char *msg;
    cr_assert_neq(run(from, to, y, PITCH, &msg), 0, "expected an error about '%s'", what);
    cr_assert(strstr(msg, what), "expected '%s' in:\n%s", what, msg);
}

Test(simt_tma_store, reports_broken_protocols)
{
    expect("  fence_proxy_async\n", "", "written by the generic proxy with no fence_proxy_async since");
    expect("  tma_store_wait %4 {pending = 0}\n", "", "no tma_store_wait retired");
    expect("  tma_store_commit %4\n", "", "no tma_store_wait retired"); /* the wait retires committed groups */
    expect("{pending = 0}", "{pending = 1}", "no tma_store_wait retired");
    expect("  tma_store_commit %4\n", "  tma_store_commit %4\n  st_shared %8, %11\n",
           "which a TMA store of thread 0 still reads");
    expect("  st_shared %8, %11\n", "", "stores shared byte 0, which no thread has written");
    expect("%13 = const 0 : u32", "%13 = const 64 : u32", "not 128-byte aligned");
    expect("rows = 8,", "rows = 16,", "outside the 1024 bytes of shared memory");
}

/* A row stride of 100 bytes: no tensor map describes it. */
Test(simt_tma_store, refuses_a_tensor_no_map_describes)
{
    static uint16_t y[MAX_ROWS * PITCH];
    const char *msg;
    cr_assert_neq(run(NULL, NULL, y, 50, &msg), 0);
    cr_assert(strstr(msg, "a tensor map needs"), "%s", msg);
}

/* Thread 1 waits for nothing of its own: its wait retires no group of
 * thread 0's, which then ends in flight. */
Test(simt_tma_store, groups_are_the_threads_own)
{
    expect("  tma_store_wait %4 {pending = 0}\n", "  %14 = not %4 : bool\n  tma_store_wait %14 {pending = 0}\n",
           "no tma_store_wait retired");
}
