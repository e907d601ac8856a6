// mamba_ssm's selective_scan forward (the CUDA kernel of selective_scan_fn,
// vendored unchanged beside this file) behind a C entry point, so that
// bench/gpu/bench.py can time it through ctypes on tensors it made itself.
// Real weights (A f32), variable B and C of shape (batch, dstate, L) as one
// group, contiguous u, delta, z, out of shape (batch, dim, L).
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <c10/util/complex.h>
namespace at {
using c10::BFloat16;
using c10::Half;
}  // namespace at
#include "selective_scan_fwd_kernel.cuh"

namespace {

template <typename input_t>
int launch(int batch, int dim, int seqlen, int dstate, void *u, void *delta, void *A,
           void *B, void *C, void *D, void *z, void *delta_bias, int softplus, void *out,
           void *out_z, void *x, cudaStream_t stream) {
    if (dstate > MAX_DSTATE || dim <= 0 || seqlen <= 0 || batch <= 0) return -1;
    SSMParamsBase p = {};
    const int chunk = 2048;
    p.batch = batch, p.dim = dim, p.seqlen = seqlen, p.dstate = dstate, p.n_groups = 1;
    p.n_chunks = (seqlen + chunk - 1) / chunk;
    p.dim_ngroups_ratio = dim;
    p.is_variable_B = p.is_variable_C = true;
    p.delta_softplus = softplus != 0;
    p.A_d_stride = dstate, p.A_dstate_stride = 1;
    p.B_batch_stride = p.C_batch_stride = (uint64_t)dstate * seqlen;
    p.B_group_stride = p.C_group_stride = (uint64_t)dstate * seqlen;
    p.B_dstate_stride = p.C_dstate_stride = seqlen;
    p.u_batch_stride = p.delta_batch_stride = p.out_batch_stride = (uint64_t)dim * seqlen;
    p.z_batch_stride = p.out_z_batch_stride = (uint64_t)dim * seqlen;
    p.u_d_stride = p.delta_d_stride = p.out_d_stride = seqlen;
    p.z_d_stride = p.out_z_d_stride = seqlen;
    p.A_ptr = A, p.B_ptr = B, p.C_ptr = C, p.D_ptr = D, p.u_ptr = u, p.delta_ptr = delta;
    p.delta_bias_ptr = delta_bias, p.out_ptr = out, p.x_ptr = x, p.z_ptr = z;
    p.out_z_ptr = out_z;
    (void)cudaGetLastError();
    selective_scan_fwd_cuda<input_t, float>(p, stream);
    return (int)cudaGetLastError();
}

}  // namespace

// dtype 0: f32, 1: bf16 (u, delta, B, C, z, out). x: scratch of
// batch * dim * n_chunks * dstate * 2 floats (the chunks' last states).
// With z, out holds y and out_z the result, y * silu(z), as in mamba_ssm.
extern "C" int mamba_ssm_fwd(int dtype, int batch, int dim, int seqlen, int dstate, void *u,
                             void *delta, void *A, void *B, void *C, void *D, void *z,
                             void *delta_bias, int softplus, void *out, void *out_z, void *x,
                             void *stream) {
    cudaStream_t s = (cudaStream_t)stream;
    if (dtype == 0)
        return launch<float>(batch, dim, seqlen, dstate, u, delta, A, B, C, D, z, delta_bias,
                             softplus, out, out_z, x, s);
    if (dtype == 1)
        return launch<at::BFloat16>(batch, dim, seqlen, dstate, u, delta, A, B, C, D, z,
                                    delta_bias, softplus, out, out_z, x, s);
    return -1;
}
