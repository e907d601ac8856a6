"""tilejit.lib's sorts on a CUDA GPU: bench.py's sort rows (the same timing,
checks and torch.sort peer, beside the copy roofline), then where the time of
one call goes: the GPU time of each kernel of tilejit.lib.sort on 2^24 f32
keys (the default path, then the single pass), from torch.profiler (CUPTI
sees the library's driver-API launches), summed by kernel name over the
profiled calls.

    python3 bench/gpu/sort_profile.py [--calls 5]
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (puts the repository's python/ on the path)
import tilejit.lib as tlib  # noqa: E402


def kernel_breakdown(calls, n=2 ** 24):
    from torch.profiler import ProfilerActivity, profile
    x = torch.randn(n, device="cuda")
    tlib.sort(x)  # compiled and scratch allocated before the profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            tlib.sort(x)
        torch.cuda.synchronize()
    def gpu_us(e):  # device_time_total, cuda_time_total in older torch
        t = getattr(e, "device_time_total", None)
        return t if t is not None else getattr(e, "cuda_time_total", 0)
    kernels = [e for e in prof.key_averages() if gpu_us(e) > 0]
    total = sum(gpu_us(e) for e in kernels)
    path = "single pass" if os.environ.get("TILEJIT_LIB_SORT_MULTI_PHASE") == "0" else "default path"
    print(f"# tilejit.lib.sort of 2^{n.bit_length() - 1} f32 ({path}), {calls} calls: GPU time by kernel")
    print(f"{'kernel':<40}{'launches':>9}{'us a call':>11}{'share':>8}")
    for e in sorted(kernels, key=lambda e: -gpu_us(e)):
        print(f"{e.key[:39]:<40}{e.count:>9}{gpu_us(e) / calls:>11.1f}{gpu_us(e) / total:>8.1%}")
    print(f"{'all':<40}{sum(e.count for e in kernels):>9}{total / calls:>11.1f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=5, help="calls profiled")
    args = ap.parse_args()
    torch.manual_seed(0)
    bench.report([bench.copy_row()] + bench.lib_sort_rows(), None)
    kernel_breakdown(args.calls)
    os.environ["TILEJIT_LIB_SORT_MULTI_PHASE"] = "0"  # the single pass (Onesweep), the default off CUDA
    kernel_breakdown(args.calls)
    del os.environ["TILEJIT_LIB_SORT_MULTI_PHASE"]


if __name__ == "__main__":
    main()
