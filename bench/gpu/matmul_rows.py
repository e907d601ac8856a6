#!/usr/bin/env python3
"""bench.py's matrix-product rows alone, on the wgmma sweeps (no attention, no
mma.sync-only configurations), for same-run A/B timings of the lowering:

    TILEJIT_LIB=BUILD/libtilejit.so python3 bench/gpu/matmul_rows.py [--json OUT.json] [--skinny-only]

Every result is checked against PyTorch before it is timed (bench.matmul,
bench.matmul_bias_gelu); cuBLAS is timed in the same process. Each
configuration's time is printed as it is measured.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402


def rows(jit, skinny_only):
    skinny = [bench.matmul(jit, m, 8192, 8192, configs=bench.SKINNY_CONFIGS) for m in (64, 128, 256, 512)]
    if skinny_only:
        return skinny
    big = [bench.matmul(jit, n, configs=bench.WGMMA_CONFIGS) for n in (4096, 8192, 2048)]
    big += [bench.matmul(jit, 4096, dtype="f16", configs=bench.WGMMA_CONFIGS), bench.matmul_bias_gelu(jit, 4096)]
    return big + skinny


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--skinny-only", action="store_true", help="only M = 64 .. 512, N = K = 8192")
    args = ap.parse_args()
    torch.manual_seed(0)
    jit = bench.tilejit.Jit("cuda")
    bench.report([bench.copy_row()] + rows(jit, args.skinny_only), args.json)


if __name__ == "__main__":
    main()
