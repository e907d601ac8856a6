#!/usr/bin/env python3
"""Host cost of launching tilejit kernels from Python (issue 11's targets:
a cached kernel <= 10 us, a new signature that hits the memory cache
<= 5 us more), beside Triton and a PyTorch op on cuda when present.

    PYTHONPATH=python python3 bench/python_launch.py [--json OUT] [--n N]

cpu (NumPy): an empty grid (M = 0 rows: the checks and the call, no
program runs) measures the host overhead alone; a 1 x 16 launch adds the
cpu device's run (native code, or the interpreter without LLVM). cuda (torch tensors): launches with no synchronization
in the loop, so the figure is the host's cost per launch (the GPU queue
absorbs the kernels); the same for a Triton kernel and torch.softmax.
Whatever is missing is skipped with the reason printed.
"""
import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

SOFTMAX = os.path.join(ROOT, "examples", "softmax.tj")


def per_call_us(fn, n):
    """The median over 5 rounds of n calls, in microseconds per call."""
    fn()
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        rounds.append((time.perf_counter() - t0) / n * 1e6)
    return sorted(rounds)[2]


def first_launches_us(make, shapes, warmup, kernels=10):
    """The first launch of each shape on fresh Kernels, whose compiled
    functions the jit's memory cache already holds (a warm-up Kernel over
    the same source compiled them): per launch, in microseconds. Each
    Kernel has launched once on `warmup` (arguments of another row-count
    bucket than `shapes`') before the clock starts, so its tables and routing
    exist and what is timed is the dispatch's miss answered by the jit's
    memory cache."""
    import tilejit
    warm = tilejit.kernel(SOFTMAX, "softmax")
    calls = [make(s) for s in shapes]
    for args in calls:
        warm(*args)
    warm(*warmup)
    fresh = [tilejit.kernel(SOFTMAX, "softmax") for _ in range(kernels)]
    for k in fresh:
        k(*warmup)
    t0 = time.perf_counter()
    for k in fresh:
        for args in calls:
            k(*args)
    return (time.perf_counter() - t0) / (kernels * len(calls)) * 1e6


def bench_cpu(n, rows):
    try:
        import numpy as np
        import tilejit
    except ImportError as e:
        print(f"skip cpu: {e}")
        return
    k = tilejit.kernel(SOFTMAX, "softmax")
    empty = np.zeros((0, 16), np.float32)
    out = np.zeros((0, 16), np.float32)
    rows["cpu empty grid (host overhead)"] = per_call_us(lambda: k(empty, out), n)
    x, y = np.ones((1, 16), np.float32), np.zeros((1, 16), np.float32)
    rows["cpu 1x16 softmax (host + the cpu device)"] = per_call_us(lambda: k(x, y), n // 10)
    fn = k.compile(empty, out)
    rows["cpu empty grid, fixed Function"] = per_call_us(lambda: fn(empty, out), n)
    empty_of = lambda n: (np.zeros((0, n), np.float32), np.zeros((0, n), np.float32))  # noqa: E731
    rows["cpu new shape, same bucket (dispatch table)"] = first_launches_us(empty_of, range(257, 512, 2), (x, y))
    rows["cpu new bucket, memory-cache hit (tj_jit_compile)"] = first_launches_us(
        empty_of, [2 ** a for a in range(14)], (x, y))


def bench_cuda(n, rows):
    try:
        import torch
    except ImportError as e:
        print(f"skip cuda: {e}")
        return
    if not torch.cuda.is_available():
        print("skip cuda: torch sees no CUDA device")
        return
    import tilejit
    k = tilejit.kernel(SOFTMAX, "softmax")
    x = torch.randn(64, 1000, device="cuda")
    y = torch.empty_like(x)
    k(x, y)
    torch.cuda.synchronize()
    assert torch.allclose(y, torch.softmax(x, dim=1), atol=1e-5), "tilejit softmax is wrong on cuda"
    from tilejit import _kernel
    api = _kernel.exchange_api(type(x))
    print(f"torch {torch.__version__}: DLPack exchange API (__dlpack_c_exchange_api__) "
          f"{'found: launches view tensors in C' if api else 'absent: launches go through __dlpack__ capsules'}")
    rows["cuda tilejit softmax 64x1000 (host per launch)"] = per_call_us(lambda: k(x, y), n)
    torch.cuda.synchronize()
    if api:
        _kernel._exchange_apis[type(x)] = 0  # the capsule path, for comparison
        rows["cuda tilejit softmax 64x1000, through capsules"] = per_call_us(lambda: k(x, y), n)
        _kernel._exchange_apis[type(x)] = api
        torch.cuda.synchronize()
    bench_cuda_parts(k, x, y, n // 4, rows)
    pair_of = lambda n: (torch.randn(64, n, device="cuda"), torch.empty(64, n, device="cuda"))  # noqa: E731
    warmup = (torch.randn(128, 16, device="cuda"), torch.empty(128, 16, device="cuda"))  # M: another bucket
    rows["cuda tilejit new shape, same bucket"] = first_launches_us(pair_of, range(513, 1024, 8), warmup)
    rows["cuda tilejit new bucket, memory-cache hit"] = first_launches_us(pair_of, [2 ** a for a in range(14)], warmup)
    torch.cuda.synchronize()
    rows["cuda torch.softmax 64x1000 (host per launch)"] = per_call_us(lambda: torch.softmax(x, dim=1), n)
    torch.cuda.synchronize()
    bench_triton(x, y, n, rows)


def bench_cuda_parts(k, x, y, n, rows):
    """Where a tilejit launch's host time goes: the framework's stream
    query, the DLPack exports, and the C call alone on exports made once."""
    import ctypes
    import torch
    from tilejit import _lib
    rows["cuda part: torch.cuda.current_stream().cuda_stream"] = per_call_us(
        lambda: torch.cuda.current_stream(0).cuda_stream, n)
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw:
        rows["cuda part: torch._C._cuda_getCurrentRawStream"] = per_call_us(lambda: raw(0), n)
    s = torch.cuda.current_stream(0).cuda_stream or 1
    rows["cuda part: x.__dlpack__(stream=s)"] = per_call_us(lambda: x.__dlpack__(stream=s), n)
    rows["cuda part: x.__dlpack__()"] = per_call_us(lambda: x.__dlpack__(), n)
    rows["cuda part: x.__dlpack__(stream=-1)"] = per_call_us(lambda: x.__dlpack__(stream=-1), n)
    cap = x.__dlpack__()
    rows["cuda part: capsule pointer (ctypes)"] = per_call_us(lambda: _lib.capsule_pointer(cap, b"dltensor"), n)
    d = next((v for v in k._dispatches.values() if v.cuda), None)
    if d is not None:
        caps = [x.__dlpack__(), y.__dlpack__()]
        bufs = d.take()
        for i, c in zip(d.tensors, caps):
            bufs.ptrs[i] = _lib.capsule_pointer(c, b"dltensor")
        rows["cuda part: tj_dispatch_launch_dlpack (C, one ctypes call)"] = per_call_us(
            lambda: d.lib.tj_dispatch_launch_dlpack(d.h, bufs.args, bufs.ptrs, d.n, s, bufs.err), n)
    torch.cuda.synchronize()


def bench_triton(x, y, n, rows):
    try:
        import triton
        import triton.language as tl
    except ImportError as e:
        print(f"skip triton: {e}")
        return

    @triton.jit
    def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        v = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
        e = tl.exp(v - tl.max(v, 0))
        tl.store(y_ptr + row * n_cols + cols, e / tl.sum(e, 0), mask=cols < n_cols)

    def launch():
        softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=1024)

    import torch
    rows["cuda triton softmax 64x1000 (host per launch)"] = per_call_us(launch, n)
    torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--n", type=int, default=20000, help="calls per round")
    args = ap.parse_args()
    rows = {}
    bench_cpu(args.n, rows)
    bench_cuda(args.n, rows)
    for name, us in rows.items():
        print(f"{name:50s} {us:8.2f} us")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
