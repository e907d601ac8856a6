#!/usr/bin/env python3
"""lib/kernels/sort.tj's sort_rows (a program a row, the tile sort) at chosen
warp counts, substituted as lib/sort.c substitutes it for f32 keys and
launched as the library launches it (the keys as u32 bit patterns, the
values gathered), each checked against torch.sort(stable=True) before it is
timed, beside torch.sort and tilejit.lib.sort in the same process.

    python3 bench/gpu/sort_rows_sweep.py [--rows 16384] [--cols 1024] [--warps 1 2 4 8]

Prints one line per warp count: ms and G keys/s.
"""
import argparse
import os
import sys

import torch
import triton

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
import tilejit  # noqa: E402
import tilejit.lib as tlib  # noqa: E402

SUBST = {"$KEY": "key_f32", "$DESC": "0", "$VALUES": "1", "$RB": "4096", "$K": "u32", "$W": "u32"}


def sort_rows_source():
    with open(os.path.join(ROOT, "lib", "kernels", "sort.tj")) as f:
        src = f.read()
    for key, value in SUBST.items():  # $KEY before $K
        src = src.replace(key, value)
    return src


def rate(ms, n):
    return n / (ms * 1e-3) / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=16384)
    ap.add_argument("--cols", type=int, default=1024)
    ap.add_argument("--warps", type=int, nargs="*", default=[1, 2, 4, 8])
    args = ap.parse_args()
    torch.manual_seed(0)
    x = torch.randn(args.rows, args.cols, device="cuda")
    x[:, ::7] = x[:, :1]  # equal keys in every row: stability is checked
    want = torch.sort(x, stable=True)
    n = x.numel()
    bench = lambda fn: triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")  # noqa: E731
    print(f"torch.sort {args.rows} x {args.cols} f32: {rate(bench(lambda: torch.sort(x, stable=True)), n):.2f} G keys/s")
    if not torch.equal(tlib.sort(x), want.values):
        raise AssertionError("tilejit.lib.sort differs from torch.sort")
    print(f"tilejit.lib.sort: {rate(bench(lambda: tlib.sort(x)), n):.2f} G keys/s")
    src = sort_rows_source()
    keys = x.view(torch.uint32)
    y = torch.empty_like(keys)
    idx = torch.empty(x.shape, device="cuda", dtype=torch.int64)
    block = 1 << (args.cols - 1).bit_length()
    for warps in args.warps:
        try:
            k = tilejit.Kernel(src, "sort_rows", file="lib/kernels/sort.tj", params={"B": block, "warps": warps})
            call = lambda: k(keys, y, idx)  # noqa: E731
            call()
            torch.cuda.synchronize()
            if not (torch.equal(idx, want.indices) and torch.equal(y.view(torch.float32), want.values)):
                raise AssertionError("differs from torch.sort(stable=True)")
            ms = bench(call)
            print(f"sort_rows B {block} warps {warps}: {ms:.3f} ms {rate(ms, n):.2f} G keys/s", flush=True)
        except Exception as e:  # noqa: BLE001 (the other warp counts still run)
            print(f"sort_rows B {block} warps {warps}: failed: {str(e).splitlines()[0][:300]}", flush=True)


if __name__ == "__main__":
    main()
