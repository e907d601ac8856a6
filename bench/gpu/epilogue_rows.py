#!/usr/bin/env python3
"""The fused epilogue against the plain product, every configuration printed
(issue 16: matmul + bias + gelu >= 0.95 of the plain matmul; bench/NOTES.md,
"The fused epilogue"): bf16 matmul and matmul_bias_gelu at 4096^3, f16
matmul_bias_gelu at 4096^3, bf16 matmul at 2048^3, each over bench.py's
wgmma configurations plus the 128 x 128 ones that let two programs share an
SM (lower/wgmma.c, lw_wgmma_programs), cuBLAS (+ torch's gelu) in the same
process:

    TILEJIT_LIB=BUILD/libtilejit.so python3 bench/gpu/epilogue_rows.py [--json OUT.json]

Every result is checked against PyTorch before it is timed (bench.matmul,
bench.matmul_bias_gelu). The last lines say the fused kernel's best time over
the plain product's.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

# two programs an SM by shared memory (<= 113 KiB each) and registers
TWO_PROGRAM_CONFIGS = [dict(BM=bm, BN=bn, BK=bk, warps=w, stages=s)
                       for bm, bn, bk, w, s in ((128, 128, 64, 8, 2), (128, 128, 32, 8, 4), (128, 128, 32, 8, 6),
                                                (128, 128, 64, 4, 2), (64, 256, 64, 4, 2))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.manual_seed(0)
    jit = bench.tilejit.Jit("cuda")
    bench.WGMMA_CONFIGS += TWO_PROGRAM_CONFIGS
    plain = bench.matmul(jit, 4096, configs=bench.WGMMA_CONFIGS)
    fused = bench.matmul_bias_gelu(jit, 4096)
    rows = [plain, fused, bench.matmul_bias_gelu(jit, 4096, "f16"),
            bench.matmul(jit, 2048, configs=bench.WGMMA_CONFIGS)]
    bench.report(rows, args.json)
    if plain.times.get("tilejit") and fused.times.get("tilejit"):
        print(f"# bias + gelu over plain (bf16 4096^3): {plain.times['tilejit'] / fused.times['tilejit']:.3f} "
              f"({fused.times['tilejit']:.3f} ms against {plain.times['tilejit']:.3f})", flush=True)


if __name__ == "__main__":
    main()
