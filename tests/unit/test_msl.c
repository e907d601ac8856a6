/* The MSL generator without a compiler: the kernel ABI (binding order,
 * the argument block's layout and packing), the shape of the source, and
 * what Metal cannot run being refused with the reason. Running the MSL is
 * tests/msl_emu's job. */
#include <criterion/criterion.h>

#include "simt_kernels.h"
#include "tilejit/metal.h"

static char *emit(tt_kb *kb)
{
    tj_buf b = {0};
    cr_assert_eq(tj_emit_msl(kb->k, &b), 0, "%s", tj_diag_render(kb->c));
    return b.data; /* freed by the caller */
}

/* A kernel taking a 2-D f32 tensor, scalars of several widths, and a 1-D
 * u8 tensor it writes. */
static void build_abi_kernel(tt_kb *kb)
{
    sk_begin(kb, "abi", 32, 1);
    tj_ref x = tt_param(kb, "x", TJ_DT_F32, "3, 5");
    tt_param(kb, "flag", TJ_DT_BOOL, NULL);
    tt_param(kb, "big", TJ_DT_I64, NULL);
    tj_ref h = tt_param(kb, "h", TJ_DT_F16, NULL);
    tj_ref y = tt_param(kb, "y", TJ_DT_U8, "7");
    tj_ref v = sk_load_at(kb, x, sk_i32(kb, 0), TJ_NONE);
    tj_ref s = tt_bin(kb, TJ_OP_ADD, v, tt_cast(kb, h, TJ_DT_F32));
    sk_st(kb, sk_addr(kb, y, sk_i32(kb, 1)), tt_cast(kb, s, TJ_DT_U8), TJ_NONE);
    tt_end(kb);
}

Test(msl, block_layout_and_packing)
{
    tt_kb kb;
    build_abi_kernel(&kb);
    int32_t sizes[5][TJ_MAX_RANK], strides[5][TJ_MAX_RANK], scalars[5];
    /* strides first (8 bytes), then sizes (4), then scalars at their alignment */
    cr_assert_eq(tj_msl_block_layout(kb.k, sizes, strides, scalars), 50);
    cr_assert_eq(strides[0][0], 0);
    cr_assert_eq(strides[0][1], 8);
    cr_assert_eq(strides[4][0], 16);
    cr_assert_eq(sizes[0][0], 24);
    cr_assert_eq(sizes[0][1], 28);
    cr_assert_eq(sizes[4][0], 32);
    cr_assert_eq(scalars[1], 36); /* bool: 1 byte */
    cr_assert_eq(scalars[2], 40); /* i64, after 3 bytes of padding */
    cr_assert_eq(scalars[3], 48); /* f16 */
    cr_assert_eq(sizes[1][0], -1);
    cr_assert_eq(scalars[0], -1);
    tt_free(&kb);
}

Test(msl, pack_args)
{
    tt_kb kb;
    build_abi_kernel(&kb);
    float x[15] = {0};
    uint8_t y[7] = {0};
    tj_arg args[5] = {tt_tensor(x, TJ_DT_F32, 2, 3, 5), {.scalar.i = 1}, {.scalar.i = -2}, {.scalar.f = 1.5},
                      tt_tensor(y, TJ_DT_U8, 1, 7)};
    tj_msl_args *a = malloc(sizeof *a);
    cr_assert_eq(tj_msl_pack_args(kb.k, args, 5, a), 0, "%s", tj_diag_render(kb.c));
    cr_assert_eq(a->ntensors, 2);
    cr_assert_eq(a->block_index, 2);
    cr_assert(a->data[0] == x && a->data[1] == y);
    cr_assert_eq(a->hi[0], 15 * 4);
    cr_assert_eq(a->hi[1], 7);
    cr_assert(!a->written[0] && a->written[1]);
    cr_assert_eq(a->grid[0], 1);
    cr_assert_eq(a->threads, 32);
    int64_t st;
    int32_t n;
    memcpy(&st, a->block + 8, 8);
    cr_assert_eq(st, 1, "x's inner stride");
    memcpy(&n, a->block + 28, 4);
    cr_assert_eq(n, 5, "x's inner size");
    cr_assert_eq(a->block[36], 1, "flag");
    int64_t big;
    memcpy(&big, a->block + 40, 8);
    cr_assert_eq(big, -2);
    uint16_t h;
    memcpy(&h, a->block + 48, 2);
    cr_assert_eq(h, 0x3E00, "1.5 as f16");
    cr_assert_eq(a->block_bytes, 50);
    free(a);
    tt_free(&kb);
}

Test(msl, signature_binds_tensors_in_order_then_the_block)
{
    tt_kb kb;
    build_abi_kernel(&kb);
    char *src = emit(&kb);
    const char *p0 = strstr(src, "device const float *p0 [[buffer(0)]]");
    const char *p4 = strstr(src, "device uchar *p4 [[buffer(1)]]");
    const char *blk = strstr(src, "constant tj_args &tj_a [[buffer(2)]]");
    cr_assert(p0 && p4 && blk && p0 < p4 && p4 < blk, "%s", src);
    cr_assert(strstr(src, "[[max_total_threads_per_threadgroup(32)]]\nkernel void abi("));
    cr_assert(strstr(src, "    long p2; // big") && strstr(src, "    half p3; // h"), "%s", src);
    free(src);
    tt_free(&kb);
}

Test(msl, every_catalogue_kernel_emits_or_is_refused_for_a_metal_limit)
{
    for (int i = 0;; i++) {
        tt_kb kb;
        int rc = sk_build(&kb, i);
        if (rc == 0)
            break;
        if (rc < 0)
            continue;
        tj_buf b = {0};
        if (tj_emit_msl(kb.k, &b)) {
            const char *d = tj_diag_render(kb.c);
            cr_expect(strstr(d, "f64") || strstr(d, "64-bit atomics") || strstr(d, "Metal has no asynchronous copies"),
                      "%s: %s", kb.k->name, d);
        } else {
            cr_expect(!strstr(b.data, "#error"), "%s: an expression too long", kb.k->name);
            /* MSL 3.1 only where there are bfloat matrices */
            uint32_t want = strcmp(kb.k->name, "mma_bf16") ? TJ_MSL_3_0 : TJ_MSL_3_1;
            cr_expect(tj_msl_version(b.data) == want, "%s: the first line asks for the wrong version", kb.k->name);
        }
        tj_buf_free(&b);
        tt_free(&kb);
    }
}

Test(msl, version_line)
{
    cr_expect(tj_msl_version("// tilejit: MSL 3.1\n#include <metal_stdlib>\n") == TJ_MSL_3_1);
    cr_expect(tj_msl_version("// tilejit: MSL 3.1") == TJ_MSL_3_1);
    cr_expect(tj_msl_version("// tilejit: MSL 3.0\n") == TJ_MSL_3_0);
    cr_expect(tj_msl_version("// tilejit: MSL 3.10\n") == TJ_MSL_3_0);
    cr_expect(tj_msl_version("#include <metal_stdlib>\n// tilejit: MSL 3.1\n") == TJ_MSL_3_0);
    cr_expect(tj_msl_version("") == TJ_MSL_3_0);
}

static void expect_refused(tt_kb *kb, const char *why)
{
    tj_buf b = {0};
    cr_expect(tj_emit_msl(kb->k, &b) != 0, "%s: emitted", kb->k->name);
    cr_expect(strstr(tj_diag_render(kb->c), why), "%s: expected \"%s\" in: %s", kb->k->name, why,
              tj_diag_render(kb->c));
    tj_buf_free(&b);
    tt_free(kb);
}

Test(msl, refuses_what_metal_cannot_run)
{
    tt_kb kb;
    sk_begin(&kb, "big_smem", 32, 1);
    kb.k->smem_bytes = 40000;
    tt_op(&kb, TJ_OP_BARRIER, TJ_TYPE_NONE, 0);
    tt_end(&kb);
    expect_refused(&kb, "Metal allows 32768");
    static const char *const names[] = {"kernel", "float4", "device", "tj_k", "buffer", "half2x2"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        sk_begin(&kb, names[i], 32, 1);
        tt_end(&kb);
        expect_refused(&kb, "reserved");
    }
    sk_begin(&kb, "addr_as_number", 32, 1);
    tj_ref x = sk_tensor(&kb, "x", TJ_DT_U64, 32);
    tj_ref a = sk_addr(&kb, x, sk_i32(&kb, 0));
    sk_st(&kb, a, tt_bin(&kb, TJ_OP_MUL, a, tt_ci(&kb, TJ_DT_U64, 2)), TJ_NONE);
    tt_end(&kb);
    expect_refused(&kb, "address used as a number");
    sk_begin(&kb, "tile_ir", 32, 1);
    kb.k->level = TJ_LEVEL_TILE;
    tt_end(&kb);
    expect_refused(&kb, "lower it to SIMT IR first");
}
