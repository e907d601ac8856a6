"""tilejit.cuda_kernel: CUDA C through NVRTC. The PTX tests need only
NVRTC (and ptxas, where the toolkit has it), no GPU; the launch tests skip,
saying why, without torch or a CUDA device."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import tilejit

SCALE = r"""
#include "scale_config.h"
// scale(...) in a comment is not the declaration
template <typename T, int BLOCK>
__global__ void scale(T *__restrict__ y, const T *x, T alpha, unsigned int n)
{
    __shared__ T tile[BLOCK];
    unsigned int i = blockIdx.x * BLOCK + threadIdx.x;
    tile[threadIdx.x] = i < n ? x[i] : T(0);
    __syncthreads();
    if (i < n)
        y[i] = alpha * tile[threadIdx.x] + OFFSET + BIAS;
}
"""
HEADERS = {"scale_config.h": "#pragma once\n#define OFFSET 1\n"}

REVERSE = r"""
extern "C" __global__ void reverse(float *y, const float *x, int n)
{
    extern __shared__ float buf[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    int j = blockIdx.x * blockDim.x + (blockDim.x - 1 - threadIdx.x);
    if (j < n)
        y[j] = buf[threadIdx.x];
}
"""


def _nvrtc_or_skip(k, arch="sm_90a"):
    try:
        return k.ptx(arch)
    except tilejit.TilejitError as e:
        if "no NVRTC" in str(e):
            pytest.skip(str(e))
        raise


def scale_kernel(**extra):
    return tilejit.cuda_kernel(SCALE, "scale", template=(np.float32, 128), headers=HEADERS,
                               defines={"BIAS": 0}, file="scale.cu", **extra)


def test_template_header_define_shared_to_ptx_without_gpu():
    k = scale_kernel()
    assert k.name == "scale<float, 128>"
    assert k.params == [("y", "f32", True, False), ("x", "f32", True, True), ("alpha", "f32", False, False),
                        ("n", "u32", False, False)]
    for arch in ("sm_80", "sm_90a"):
        ptx = _nvrtc_or_skip(k, arch)
        assert f".target {arch}" in ptx
        assert ".shared" in ptx
        assert k.lowered_name == "_Z5scaleIfLi128EEvPT_PKS0_S0_j"
        ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
        if os.path.exists(ptxas):
            subprocess.run([ptxas, f"-arch={arch}", "-", "-o", os.devnull], input=ptx.encode(), check=True)


def test_template_arguments_spelled_for_cuda():
    k = tilejit.cuda_kernel(SCALE, "scale", template=("double", 64), headers=HEADERS, defines=["BIAS=2"])
    assert k.name == "scale<double, 64>"
    assert k.params[0][1] == "f64"
    ptx = _nvrtc_or_skip(k, "sm_80")
    assert "_Z5scaleIdLi64EEvPT_PKS0_S0_j" in ptx
    with pytest.raises(tilejit.TilejitError, match="template argument"):
        tilejit.cuda_kernel(SCALE, "scale", template=(object(),))


def test_defines_reach_the_source():
    src = "extern \"C\" __global__ void k(int *y) { *y = VALUE; }\n"
    ptx = _nvrtc_or_skip(tilejit.cuda_kernel(src, "k", defines={"VALUE": 12345}), "sm_80")
    assert "12345" in ptx
    with pytest.raises(tilejit.TilejitError, match="VALUE"):
        tilejit.cuda_kernel(src, "k").ptx("sm_80")


def test_errors_are_file_line_col_diagnostics():
    src = "extern \"C\" __global__ void broken(float *y)\n{\n    y[0] = undefined_name;\n}\n"
    k = tilejit.cuda_kernel(src, "broken", file="broken.cu")
    with pytest.raises(tilejit.TilejitError) as e:
        _nvrtc_or_skip(k, "sm_80")
    text = str(e.value)
    assert "NVRTC: 1 error compiling broken.cu" in text
    assert "broken.cu:3:12: error:" in text and "undefined_name" in text


def test_header_error_names_the_header():
    k = tilejit.cuda_kernel(SCALE, "scale", template=("float", 128), headers={"scale_config.h": "#define OFFSET bad;\n"},
                            defines={"BIAS": 0}, file="scale.cu")
    with pytest.raises(tilejit.TilejitError, match="scale.cu:"):
        _nvrtc_or_skip(k, "sm_80")


def test_bad_arch_and_unknown_kernel():
    with pytest.raises(tilejit.TilejitError, match="arch"):
        tilejit.cuda_kernel(REVERSE, "reverse").ptx("sm_9")
    with pytest.raises(tilejit.TilejitError, match="no __global__ declaration of 'nope'"):
        tilejit.cuda_kernel(REVERSE, "nope")


def test_signature_checked_against_the_ptx():
    k = tilejit.cuda_kernel(REVERSE, "reverse", signature="y: f32*, x: f32*, n: i64")
    assert k.params[2] == ("n", "i64", False, False)
    with pytest.raises(tilejit.TilejitError, match="parameter 2 \\('n'\\): 4 bytes in the PTX, but its type takes 8"):
        _nvrtc_or_skip(k, "sm_80")


def test_a_cu_file_by_path(tmp_path):
    path = tmp_path / "reverse.cu"
    path.write_text(REVERSE)
    k = tilejit.cuda_kernel(str(path), "reverse")
    assert k.file == str(path)
    assert [p[0] for p in k.params] == ["y", "x", "n"]


def test_numpy_arrays_are_refused_with_a_reason():
    k = tilejit.cuda_kernel(REVERSE, "reverse")
    x = np.zeros(4, np.float32)
    with pytest.raises(tilejit.TilejitError, match="CUDA C kernels run on CUDA arrays"):
        k(x, x, 4, grid=1, block=4)
    with pytest.raises(tilejit.TilejitError, match="takes 3 arguments"):
        k(x, x, grid=1, block=4)


# ---- on a GPU ------------------------------------------------------------------


def _torch_cuda():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device for torch")
    return torch


def test_launch_template_kernel_on_torch_tensors():
    torch = _torch_cuda()
    k = scale_kernel()
    n = 1000
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    k(y, x, 2.5, n, grid=(n + 127) // 128, block=128)
    torch.testing.assert_close(y, 2.5 * x + 1)
    with pytest.raises(tilejit.TilejitError, match="expected a f32 tensor, got f64"):
        k(y.double(), x.double(), 2.5, n, grid=8, block=128)
    with pytest.raises(tilejit.TilejitError, match="not row-major contiguous"):
        k(y[::2], x[::2], 2.5, n // 2, grid=4, block=128)


def test_dynamic_shared_memory_and_explicit_stream():
    torch = _torch_cuda()
    k = tilejit.cuda_kernel(REVERSE, "reverse")
    n, block = 4096, 256
    x = torch.arange(n, device="cuda", dtype=torch.float32)
    y = torch.empty_like(x)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        k(y, x, n, grid=n // block, block=block, shared_mem=block * 4, stream=s)
    s.synchronize()
    torch.testing.assert_close(y, x.view(-1, block).flip(1).reshape(-1))
    # over 48 KiB of dynamic shared memory is allowed first
    big = 64 * 1024 // 4
    x2 = torch.arange(big, device="cuda", dtype=torch.float32)
    y2 = torch.empty_like(x2)
    k2 = tilejit.cuda_kernel(REVERSE.replace("reverse", "reverse_one_block"), "reverse_one_block")
    k2(y2, x2, big, grid=1, block=1024, shared_mem=big * 4)  # reads only the first 1024
    torch.cuda.synchronize()
    torch.testing.assert_close(y2[:1024], x2[:1024].flip(0))


def test_second_process_loads_from_disk(tmp_path):
    _torch_cuda()
    package = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "python")
    env = dict(os.environ, TILEJIT_CACHE_DIR=str(tmp_path), PYTHONPATH=package)
    code = ("import tilejit, torch; k = tilejit.cuda_kernel(%r, 'reverse'); x = torch.ones(256, device='cuda'); "
            "k(x, x.clone(), 256, grid=1, block=256, shared_mem=1024); i = k.info(); "
            "print(i['from_disk'], i['total_ms'], i['nvrtc_ms'])" % REVERSE)
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert first.stdout.split()[0] == "False" and float(first.stdout.split()[2]) > 0
    assert second.stdout.split()[0] == "True" and float(second.stdout.split()[2]) == 0


def test_current_stream_through_the_exchange_api():
    """No stream= given: the launch goes to torch's current stream (here a
    non-blocking one, busy first), so it reads x only after x is written."""
    torch = _torch_cuda()
    k = tilejit.cuda_kernel(REVERSE, "reverse")
    n, block = 2048, 256
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(50_000_000)
        x = torch.arange(n, device="cuda", dtype=torch.float32)
        y = torch.zeros_like(x)
        k(y, x, n, grid=n // block, block=block, shared_mem=block * 4)
    s.synchronize()
    torch.testing.assert_close(y, x.view(-1, block).flip(1).reshape(-1))
    cpu = torch.zeros(4)
    with pytest.raises(tilejit.TilejitError, match="CUDA C kernels run on CUDA arrays"):
        k(cpu, cpu, 4, grid=1, block=4)
