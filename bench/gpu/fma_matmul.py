#!/usr/bin/env python3
"""The f32 FMA matmul (precision = "ieee", examples/matmul.tj's matmul_f32)
at chosen configurations, beside cuBLAS SGEMM with TF32 off, in one process.

    python3 bench/gpu/fma_matmul.py [--n 4096] [--mnk M,N,K ...] [--configs BM,BN,BK,WARPS,STAGES[,OCCUPANCY] ...] [--once]

Every configuration is checked against torch (max error <= 1e-4 of the
largest |value|) before it is timed (triton.testing.do_bench, median).
--once launches each configuration once after its check and times nothing,
for a profiler (ncu -k regex:matmul_f32 ...). A sixth field declares
`const occupancy = N` in the kernel's text (programs an SM: ptxas caps the
registers to fit them).
"""
import argparse
import os
import sys

import torch
import triton

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
import tilejit  # noqa: E402

DEFAULT_CONFIGS = ["64,64,32,4,2", "128,64,16,4,2", "64,128,16,4,2", "128,128,16,8,2", "128,128,32,8,3",
                   "128,64,32,8,2"]


def do_bench(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")


def with_occupancy(src, occupancy):
    """matmul_f32's text with `const occupancy = N` after its tune line."""
    at = src.index("{", src.index("kernel matmul_f32"))
    return src[:at] + f"    const occupancy = {occupancy}\n" + src[at:]


def run_shape(jit, src, m, n, k, configs, once):
    a = torch.randn(m, k, device="cuda")
    b = torch.randn(k, n, device="cuda")
    c = torch.empty(m, n, device="cuda")
    ref = a @ b
    flops = 2 * m * n * k
    if not once:
        t = do_bench(lambda: a @ b)
        print(f"{m}x{n}x{k} cuBLAS SGEMM: {t:.4f} ms {flops / t / 1e9:.1f} TFLOP/s", flush=True)
    for cfg in configs:
        fields = [int(v) for v in cfg.split(",")]
        bm, bn, bk, warps, stages = fields[:5]
        params = dict(BM=bm, BN=bn, BK=bk, warps=warps, stages=stages)
        text = with_occupancy(src, fields[5]) if len(fields) > 5 else src
        try:
            fn = jit.compile(text, "matmul_f32", a, b, c, params=params, file="examples/matmul.tj")
            c.fill_(float("nan"))
            fn(a, b, c)
            torch.cuda.synchronize()
            err = (c - ref).abs().max().item() / ref.abs().max().item()
            if not err <= 1e-4:
                print(f"{m}x{n}x{k} {cfg}: WRONG, max error {err:.3g}", flush=True)
                continue
            if once:
                continue
            t = do_bench(lambda: fn(a, b, c))
            print(f"{m}x{n}x{k} {cfg}: {t:.4f} ms {flops / t / 1e9:.1f} TFLOP/s", flush=True)
        except Exception as e:  # a configuration that does not compile says why and the rest go on
            print(f"{m}x{n}x{k} {cfg}: FAILED: {str(e).splitlines()[0][:200]}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--mnk", nargs="*", default=[], help="M,N,K shapes (default: n^3)")
    ap.add_argument("--configs", nargs="*", default=DEFAULT_CONFIGS)
    ap.add_argument("--once", action="store_true")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    with open(os.path.join(ROOT, "examples", "matmul.tj")) as f:
        src = f.read()
    jit = tilejit.Jit("cuda")
    shapes = [tuple(int(v) for v in s.split(",")) for s in args.mnk] or [(args.n, args.n, args.n)]
    for m, n, k in shapes:
        run_shape(jit, src, m, n, k, args.configs, args.once)


if __name__ == "__main__":
    main()
