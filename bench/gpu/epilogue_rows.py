#!/usr/bin/env python3
"""The fused epilogue against the plain product, every configuration printed
(issue 16: matmul + bias + gelu >= 0.95 of the plain matmul; bench/NOTES.md,
"The fused epilogue"): bf16 matmul and matmul_bias_gelu at 4096^3, f16
matmul_bias_gelu at 4096^3, bf16 matmul at 2048^3, each over bench.py's
wgmma configurations plus the 128 x 128 ones that let two programs share an
SM (lower/wgmma.c, lw_wgmma_programs), cuBLAS (+ torch's gelu) in the same
process:

    TILEJIT_LIB=BUILD/libtilejit.so python3 bench/gpu/epilogue_rows.py [--json OUT.json] [--tma-store-ab]
        [--configs BM,BN,BK,warps,stages ...]

Every result is checked against PyTorch before it is timed (bench.matmul,
bench.matmul_bias_gelu). The last lines say the fused kernel's best time over
the plain product's. With --tma-store-ab every row is timed twice in this
process, over the same configurations with tma_store = 1 (C through shared
memory by the copy engine, lower/tma_store.c) and tma_store = 0 (every
thread's own stores, the default), the producer-warp ones left out (they store C
themselves either way). --configs times only those configurations.
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


def epilogue_rows(jit, configs, tag):
    """The four rows over `configs`; prints the fused kernel's best over the plain one's."""
    plain = bench.matmul(jit, 4096, configs=configs)
    fused = bench.matmul_bias_gelu(jit, 4096, configs=configs)
    rows = [plain, fused, bench.matmul_bias_gelu(jit, 4096, "f16", configs=configs),
            bench.matmul(jit, 2048, configs=configs)]
    if plain.times.get("tilejit") and fused.times.get("tilejit"):
        print(f"# {tag}bias + gelu over plain (bf16 4096^3): {plain.times['tilejit'] / fused.times['tilejit']:.3f} "
              f"({fused.times['tilejit']:.3f} ms against {plain.times['tilejit']:.3f})", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--tma-store-ab", action="store_true", help="every row with tma_store = 1 and = 0")
    ap.add_argument("--configs", nargs="+", metavar="BM,BN,BK,warps,stages",
                    help="only these configurations (default: bench.py's wgmma ones and the two-program ones)")
    args = ap.parse_args()
    torch.manual_seed(0)
    jit = bench.tilejit.Jit("cuda")
    configs = bench.WGMMA_CONFIGS + TWO_PROGRAM_CONFIGS
    if args.configs:
        configs = [dict(zip(("BM", "BN", "BK", "warps", "stages"), map(int, c.split(",")))) for c in args.configs]
    if not args.tma_store_ab:
        bench.report(epilogue_rows(jit, configs, ""), args.json)
        return
    own = [c for c in configs if not c.get("producer")]
    rows = epilogue_rows(jit, [dict(c, tma_store=1) for c in own], "tma_store=1: ")
    rows += epilogue_rows(jit, [dict(c, tma_store=0) for c in own], "tma_store=0: ")
    bench.report(rows, args.json)


if __name__ == "__main__":
    main()
