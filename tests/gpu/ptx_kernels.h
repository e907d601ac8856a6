/* Hand-written PTX kernels that follow the tilejit kernel ABI
 * (docs/runtime.md), shared by tests/unit/test_cuda.c and tests/gpu/smoke.c.
 * Each string is NUL-terminated PTX for sm_80 (ISA 8.0), which the driver
 * and nvJitLink also compile for later archs (sm_90a). */
#ifndef TJ_TEST_PTX_KERNELS_H
#define TJ_TEST_PTX_KERNELS_H

/* vadd(X: f32[N], Y: f32[N], Z: f32[N]): Z[i] = X[i] + Y[i] for i < size(Z),
 * one element per thread, every tensor read through its stride. */
static const char ptx_vadd[] =
    ".version 8.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry vadd(\n"
    "    .param .u64 X, .param .s32 X_size0, .param .s64 X_stride0,\n"
    "    .param .u64 Y, .param .s32 Y_size0, .param .s64 Y_stride0,\n"
    "    .param .u64 Z, .param .s32 Z_size0, .param .s64 Z_stride0)\n"
    "{\n"
    "    .reg .pred %p<2>;\n"
    "    .reg .b32 %r<6>;\n"
    "    .reg .b64 %rd<12>;\n"
    "    .reg .f32 %f<4>;\n"
    "    mov.u32 %r1, %ctaid.x;\n"
    "    mov.u32 %r2, %ntid.x;\n"
    "    mov.u32 %r3, %tid.x;\n"
    "    mad.lo.s32 %r4, %r1, %r2, %r3;\n"
    "    ld.param.s32 %r5, [Z_size0];\n"
    "    setp.ge.s32 %p1, %r4, %r5;\n"
    "    @%p1 bra DONE;\n"
    "    cvt.s64.s32 %rd1, %r4;\n"
    "    ld.param.u64 %rd2, [X];\n"
    "    ld.param.s64 %rd3, [X_stride0];\n"
    "    mul.lo.s64 %rd3, %rd1, %rd3;\n"
    "    shl.b64 %rd3, %rd3, 2;\n"
    "    cvta.to.global.u64 %rd2, %rd2;\n"
    "    add.s64 %rd2, %rd2, %rd3;\n"
    "    ld.global.f32 %f1, [%rd2];\n"
    "    ld.param.u64 %rd4, [Y];\n"
    "    ld.param.s64 %rd5, [Y_stride0];\n"
    "    mul.lo.s64 %rd5, %rd1, %rd5;\n"
    "    shl.b64 %rd5, %rd5, 2;\n"
    "    cvta.to.global.u64 %rd4, %rd4;\n"
    "    add.s64 %rd4, %rd4, %rd5;\n"
    "    ld.global.f32 %f2, [%rd4];\n"
    "    add.f32 %f3, %f1, %f2;\n"
    "    ld.param.u64 %rd6, [Z];\n"
    "    ld.param.s64 %rd7, [Z_stride0];\n"
    "    mul.lo.s64 %rd7, %rd1, %rd7;\n"
    "    shl.b64 %rd7, %rd7, 2;\n"
    "    cvta.to.global.u64 %rd6, %rd6;\n"
    "    add.s64 %rd6, %rd6, %rd7;\n"
    "    st.global.f32 [%rd6], %f3;\n"
    "DONE:\n"
    "    ret;\n"
    "}\n";

/* abi_probe(O: u64[12], T: f32[A, B, C], flag: bool, h: f16, x: f64,
 * k: i32, c: i8): one thread writes every parameter it received into O,
 * widened to 64 bits: T's pointer, 3 sizes, 3 strides, flag, h's bits,
 * x's bits, k and c sign-extended. The .param offsets are those of
 * test_cuda.c's expected layout (93 bytes). */
static const char ptx_abi_probe[] =
    ".version 8.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry abi_probe(\n"
    "    .param .u64 O, .param .s32 O_size0, .param .s64 O_stride0,\n"
    "    .param .u64 T, .param .s32 T_size0, .param .s32 T_size1, .param .s32 T_size2,\n"
    "    .param .s64 T_stride0, .param .s64 T_stride1, .param .s64 T_stride2,\n"
    "    .param .u8 flag, .param .b16 h, .param .f64 x, .param .s32 k, .param .s8 c)\n"
    "{\n"
    "    .reg .b16 %rs<4>;\n"
    "    .reg .b32 %r<4>;\n"
    "    .reg .b64 %rd<4>;\n"
    "    .reg .f64 %fd<2>;\n"
    "    ld.param.u64 %rd1, [O];\n"
    "    cvta.to.global.u64 %rd1, %rd1;\n"
    "    ld.param.u64 %rd2, [T];\n"
    "    st.global.u64 [%rd1], %rd2;\n"
    "    ld.param.s32 %r1, [T_size0];\n"
    "    cvt.s64.s32 %rd2, %r1;\n"
    "    st.global.u64 [%rd1+8], %rd2;\n"
    "    ld.param.s32 %r1, [T_size1];\n"
    "    cvt.s64.s32 %rd2, %r1;\n"
    "    st.global.u64 [%rd1+16], %rd2;\n"
    "    ld.param.s32 %r1, [T_size2];\n"
    "    cvt.s64.s32 %rd2, %r1;\n"
    "    st.global.u64 [%rd1+24], %rd2;\n"
    "    ld.param.s64 %rd2, [T_stride0];\n"
    "    st.global.u64 [%rd1+32], %rd2;\n"
    "    ld.param.s64 %rd2, [T_stride1];\n"
    "    st.global.u64 [%rd1+40], %rd2;\n"
    "    ld.param.s64 %rd2, [T_stride2];\n"
    "    st.global.u64 [%rd1+48], %rd2;\n"
    "    ld.param.u8 %rs1, [flag];\n"
    "    cvt.u64.u16 %rd2, %rs1;\n"
    "    st.global.u64 [%rd1+56], %rd2;\n"
    "    ld.param.b16 %rs2, [h];\n"
    "    cvt.u64.u16 %rd2, %rs2;\n"
    "    st.global.u64 [%rd1+64], %rd2;\n"
    "    ld.param.f64 %fd1, [x];\n"
    "    mov.b64 %rd2, %fd1;\n"
    "    st.global.u64 [%rd1+72], %rd2;\n"
    "    ld.param.s32 %r2, [k];\n"
    "    cvt.s64.s32 %rd2, %r2;\n"
    "    st.global.u64 [%rd1+80], %rd2;\n"
    "    ld.param.s8 %rs3, [c];\n"
    "    cvt.s64.s16 %rd2, %rs3;\n"
    "    st.global.u64 [%rd1+88], %rd2;\n"
    "    ret;\n"
    "}\n";

/* Not PTX: the JIT's log names the offending line. */
static const char ptx_invalid[] =
    ".version 8.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    ".visible .entry broken()\n"
    "{\n"
    "    frobnicate.u32 %r1, 42;\n"
    "    ret;\n"
    "}\n";

#endif
