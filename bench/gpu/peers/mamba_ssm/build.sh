#!/bin/sh
# Builds the peer of tilejit.lib.selective_scan: mamba_ssm's own CUDA forward
# kernel (the files beside this script, from mamba_ssm 2.3.2.post1's
# csrc/selective_scan, unchanged) with the nvcc flags of mamba's setup.py,
# for sm_90, into DIR/libmamba_ssm_peer.so (default: ./build here).
#   sh bench/gpu/peers/mamba_ssm/build.sh [DIR]
# It needs nvcc and PyTorch's headers (c10's BFloat16, Half, complex: found
# through torch, or given as TORCH_INCLUDE), not PyTorch's libraries.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/build}
inc=${TORCH_INCLUDE:-$(python3 -c 'import torch.utils.cpp_extension as c; print(c.include_paths()[0])')}
mkdir -p "$out"
nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -gencode arch=compute_90,code=sm_90 \
    -U__CUDA_NO_HALF_OPERATORS__ -U__CUDA_NO_HALF_CONVERSIONS__ \
    -U__CUDA_NO_BFLOAT16_OPERATORS__ -U__CUDA_NO_BFLOAT16_CONVERSIONS__ \
    -U__CUDA_NO_BFLOAT162_OPERATORS__ -U__CUDA_NO_BFLOAT162_CONVERSIONS__ \
    --expt-relaxed-constexpr --expt-extended-lambda --use_fast_math \
    -I"$here/shim" -I"$inc" -I"$here" "$here/ssm_peer.cu" -o "$out/libmamba_ssm_peer.so"
echo "built $out/libmamba_ssm_peer.so"
