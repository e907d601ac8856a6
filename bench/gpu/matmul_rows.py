#!/usr/bin/env python3
"""bench.py's matrix-product rows alone, on the wgmma sweeps (no attention, no
mma.sync-only configurations), for same-run A/B timings of the lowering:

    TILEJIT_LIB=BUILD/libtilejit.so python3 bench/gpu/matmul_rows.py [--json OUT.json] [--skinny-only | --splitk-only]

Every result is checked against PyTorch before it is timed (bench.matmul,
bench.matmul_bias_gelu; split-K also for the same bits on a second call);
cuBLAS is timed in the same process. Each configuration's time is printed as
it is measured. The skinny rows and 2048^3 report the fastest of the plain
matmul and the split-K pair (M = 64 and 128 also split-K with the sum in the
last arriver, bench/gpu/kernels.tj.in); --splitk-only runs those rows alone.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402


def rows(jit, skinny_only, splitk_only):
    if splitk_only:
        return [bench.matmul(jit, 2048, configs=bench.WGMMA_CONFIGS, splitk=bench.SPLITK_CONFIGS)] + \
            bench.skinny_matmuls(jit)
    skinny = bench.skinny_matmuls(jit)
    if skinny_only:
        return skinny
    big = [bench.matmul(jit, n, configs=bench.WGMMA_CONFIGS) for n in (4096, 8192)]
    big += [bench.matmul(jit, 2048, configs=bench.WGMMA_CONFIGS, splitk=bench.SPLITK_CONFIGS)]
    big += [bench.matmul(jit, 4096, dtype="f16", configs=bench.WGMMA_CONFIGS), bench.matmul_bias_gelu(jit, 4096)]
    return big + skinny


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    only = ap.add_mutually_exclusive_group()
    only.add_argument("--skinny-only", action="store_true", help="only M = 64 .. 512, N = K = 8192")
    only.add_argument("--splitk-only", action="store_true", help="only the rows that also time split-K: "
                      "2048^3 and M = 64 .. 512")
    args = ap.parse_args()
    torch.manual_seed(0)
    jit = bench.tilejit.Jit("cuda")
    bench.report([bench.copy_row()] + rows(jit, args.skinny_only, args.splitk_only), args.json)


if __name__ == "__main__":
    main()
