#!/usr/bin/env python3
"""The array front end's flash-attention kernel (softmax(q @ k^T * s) @ v,
f32) at other tile configurations than the cost model's, each in a fresh
process with an empty cache (issue 13: a cold compile against the warm
time it buys; bench/NOTES.md, "Arrays: where a cold compile goes, eleventh
session"):

    TILEJIT_LIB=.../libtilejit.so python3 bench/gpu/arrays_attention_configs.py
        [--configs BM,BN,WARPS ...] [--reps 20] [--launches 10] [--small]

The kernel text is the one tnp.plan prints for arrays_bench.py's attention
row (B 4, H 16, S 1024, D 64) with its tune line widened; each row reports
the first call's compile (front end, nvJitLink, module load) and the warm
kernel time (the median over rounds of --launches calls queued back to back
and synchronized once, so that the host's launch is not what is timed), after checking the result
against torch. --small (1 x 2 x 256 x 64, NumPy on the cpu) runs the flow
without a GPU."""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TUNE = "tune BM in [64, 16, 32, 128], BN in [64, 32, 128], warps in [8, 4, 16]"

CHILD = r"""
import json, math, statistics, sys, time
sys.path.insert(0, ROOT + "/python"); sys.path.insert(0, ROOT + "/bench")
import numpy as np
import tilejit, tilejit.numpy as tnp
from arrays_bench import m_softmax, m_swap
b, h, s, d = SHAPE
rng = np.random.default_rng(0)
q, k, v = (rng.standard_normal((b, h, s, d)).astype(np.float32) * 0.5 for _ in range(3))
if GPU:
    import torch
    q, k, v = (torch.from_numpy(a).cuda() for a in (q, k, v))
    sync, y = torch.cuda.synchronize, torch.empty_like(q)
else:
    sync, y = (lambda: None), np.empty_like(q)
tq, tk, tv = (tnp.asarray(a) for a in (q, k, v))
plan = tnp.plan(tnp.matmul(m_softmax(tnp, tnp.matmul(tq, m_swap(tnp, tk)) * (1 / math.sqrt(d))), tv), stage="emit")
text = plan[plan.index("kernel "):]
text = re.sub(r"tune [^\n]*", TUNE, text, count=1)
kern = tilejit.kernel(text, "fused", params={"BM": BM, "BN": BN, "warps": WARPS})
kt = k.transpose(-1, -2) if GPU else np.swapaxes(k, -1, -2)
sync(); t0 = time.perf_counter()
fn = kern.compile(q, kt, v, y)
fn(q, kt, v, y); sync()
cold = (time.perf_counter() - t0) * 1e3
if GPU:
    want = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), -1) @ v
    err = (y - want).abs().max().item() / want.abs().max().item()
else:
    sc = q @ np.swapaxes(k, -1, -2) / math.sqrt(d)
    e = np.exp(sc - sc.max(-1, keepdims=True))
    want = e / e.sum(-1, keepdims=True) @ v
    err = float(np.abs(y - want).max() / np.abs(want).max())
assert err < 2e-3, f"max error {err:.2e} of the largest |value|"
times = []  # a round: LAUNCHES calls queued back to back, one synchronization (the kernel, not the host's launch)
for _ in range(REPS):
    t1 = time.perf_counter()
    for _ in range(LAUNCHES):
        fn(q, kt, v, y)
    sync(); times.append((time.perf_counter() - t1) * 1e3 / LAUNCHES)
print(json.dumps({"config": f"{BM},{BN},{WARPS}", "cold_ms": cold, "warm_ms": statistics.median(times),
                  "max_err": err}))
"""


def run(cfg, args):
    bm, bn, warps = (int(x) for x in cfg.split(","))
    shape = (1, 2, 256, 64) if args.small else (4, 16, 1024, 64)
    code = (f"import re\nROOT = {ROOT!r}\nSHAPE = {shape!r}\nGPU = {not args.small}\nTUNE = {TUNE!r}\n"
            f"BM, BN, WARPS, REPS, LAUNCHES = {bm}, {bn}, {warps}, {args.reps}, {args.launches}\n" + CHILD)
    env = dict(os.environ, TILEJIT_CACHE_DIR=tempfile.mkdtemp(prefix="tj-attn-"), CUDA_CACHE_DISABLE="1")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    if r.returncode:
        print(f"{cfg}: failed\n{r.stdout}{r.stderr}")
        return None
    row = json.loads(r.stdout.strip().splitlines()[-1])
    print(f"BM,BN,warps {row['config']:<12} cold {row['cold_ms']:8.1f} ms  warm {row['warm_ms']:.3f} ms"
          f"  max err {row['max_err']:.1e}")
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", nargs="+", default=["64,64,8", "64,64,16", "32,64,16", "64,64,8"],
                    help="BM,BN,WARPS each (the first and last: the cost model's, for the spread)")
    ap.add_argument("--reps", type=int, default=20, help="rounds; the warm time is their median")
    ap.add_argument("--launches", type=int, default=10, help="calls queued a round before one synchronization")
    ap.add_argument("--small", action="store_true", help="1 x 2 x 256 x 64 on the cpu: the flow without a GPU")
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = [r for r in (run(c, args) for c in args.configs) if r]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
