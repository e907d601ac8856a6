#!/usr/bin/env python3
"""Where a tnp call's time goes on a GPU, layer by layer (issue 13; bench/NOTES.md).

    TILEJIT_LIB=BUILD/libtilejit.so PYTHONPATH=python python3 bench/gpu/arrays_layers.py [--quick] [--only PART]

Parts, each printed as it ends:

- "sync": bench/arrays_bench.py's warm gelu(x*y+z) call (f32, 2^26 elements, synchronized) taken
  apart: building the graph from Python, tnp.eval on the host (it returns once the kernel is
  queued), the wait in torch.cuda.synchronize, and the kernel alone (CUDA events around a call
  queued behind torch.cuda._sleep, so the host's work is hidden and the events time the GPU).
  The same for torch's copy of 2^26 floats (the bandwidth peer), a 1-element add (the floor of
  a launch and a synchronization) and a synchronization with nothing queued.
- "build": the graph building alone, op by op kinds: an op of two arrays, an op with a Python
  scalar, a unary op; each made and released.
- "cold": a fresh process (subprocess, fresh TILEJIT_CACHE_DIR, CUDA_CACHE_DISABLE=1): importing
  tilejit.numpy, the graph (the first tnp.asarray of a torch tensor), a first tiny kernel (which
  opens nvJitLink), then gelu(x*y+z) cold, with the compile time the stats count (its fast tier's
  and what the optimized kernel had compiled by then; "compiles_done": both, after the wait).
- "accuracy": f32 tanh, sigmoid and erf on the GPU against float64 NumPy/math rounded to f32,
  in ulp, beside torch's tanh and sigmoid (docs/language.md: about an ulp without fastmath).
Medians over the repetitions; us unless marked."""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench"))


def med(v):
    return statistics.median(v)


def gelu_parts():
    import tilejit.numpy as tnp
    from arrays_bench import m_gelu
    return tnp, m_gelu


def part_sync(n, reps, out):
    import torch
    tnp, m_gelu = gelu_parts()
    sync = torch.cuda.synchronize
    xs = [torch.randn(n, device="cuda") for _ in range(3)]
    x, y, z = (tnp.asarray(t) for t in xs)
    for _ in range(5):
        tnp.eval(m_gelu(tnp, x * y + z))
    tnp.finish_compiles("cuda")  # the optimized kernel, not the fast tier of the first call (docs/arrays.md)
    tnp.eval(m_gelu(tnp, x * y + z))
    sync()
    build, ev, wait, total = [], [], [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        r = m_gelu(tnp, x * y + z)
        t1 = time.perf_counter()
        tnp.eval(r)
        t2 = time.perf_counter()
        sync()
        t3 = time.perf_counter()
        del r
        build.append(t1 - t0), ev.append(t2 - t1), wait.append(t3 - t2), total.append(t3 - t0)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def gpu_alone(launch):
        """the GPU's time of launch(), queued behind a sleep that outlasts the host's work"""
        times = []
        for _ in range(reps):
            torch.cuda._sleep(2_000_000)  # ~1 ms of spinning at the H200's clock
            e0.record()
            launch()
            e1.record()
            sync()
            times.append(e0.elapsed_time(e1) * 1e3)
        return med(times)

    kernel = gpu_alone(lambda: tnp.eval(m_gelu(tnp, x * y + z)))
    queued = []
    for _ in range(max(3, reps // 4)):
        sync()
        t0 = time.perf_counter()
        for _ in range(10):
            tnp.eval(m_gelu(tnp, x * y + z))
        sync()
        queued.append((time.perf_counter() - t0) / 10)
    a, b = torch.empty(n, device="cuda"), torch.empty(n, device="cuda")
    c_launch, c_wait, c_total = [], [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        b.copy_(a)
        t1 = time.perf_counter()
        sync()
        t2 = time.perf_counter()
        c_launch.append(t1 - t0), c_wait.append(t2 - t1), c_total.append(t2 - t0)
    copy_kernel = gpu_alone(lambda: b.copy_(a))
    one = torch.zeros(1, device="cuda")
    tiny, empty = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        one.add_(1)
        sync()
        t1 = time.perf_counter()
        sync()
        t2 = time.perf_counter()
        tiny.append(t1 - t0), empty.append(t2 - t1)
    s = tnp.stats("cuda")
    us = 1e6
    row = {"gelu_build_us": med(build) * us, "gelu_eval_host_us": med(ev) * us, "gelu_wait_us": med(wait) * us,
           "gelu_sync_call_us": med(total) * us, "gelu_kernel_alone_us": kernel, "gelu_queued_call_us": med(queued) * us,
           "copy_launch_us": med(c_launch) * us, "copy_wait_us": med(c_wait) * us, "copy_sync_call_us": med(c_total) * us,
           "copy_kernel_alone_us": copy_kernel, "tiny_add_and_sync_us": med(tiny) * us, "empty_sync_us": med(empty) * us,
           "plans_reused": s["plans_reused"], "kernels_compiled": s["kernels_compiled"]}
    gap = row["gelu_sync_call_us"] - row["gelu_kernel_alone_us"]
    print(f"sync: gelu call {row['gelu_sync_call_us']:.1f} = build {row['gelu_build_us']:.1f} + eval (host) "
          f"{row['gelu_eval_host_us']:.1f} + wait {row['gelu_wait_us']:.1f}; the kernel alone "
          f"{row['gelu_kernel_alone_us']:.1f}, queued call {row['gelu_queued_call_us']:.1f}; "
          f"call - kernel = {gap:.1f}")
    print(f"sync: torch copy call {row['copy_sync_call_us']:.1f} = launch {row['copy_launch_us']:.1f} + wait "
          f"{row['copy_wait_us']:.1f}; its kernel alone {row['copy_kernel_alone_us']:.1f}; a 1-element add and sync "
          f"{row['tiny_add_and_sync_us']:.1f}; a sync with nothing queued {row['empty_sync_us']:.1f}")
    out["sync"] = row


def part_build(reps, out):
    import torch
    tnp, _ = gelu_parts()
    x, y = (tnp.asarray(torch.randn(1 << 16, device="cuda")) for _ in range(2))
    cases = {"array op array": lambda: x * y, "array op scalar": lambda: x * 0.5, "unary": lambda: tnp.tanh(x)}
    row = {}
    for name, fn in cases.items():
        for _ in range(200):
            fn()
        t = []
        for _ in range(reps * 20):
            t0 = time.perf_counter()
            fn()  # made and released (the result is dropped)
            t.append(time.perf_counter() - t0)
        row[name] = med(t) * 1e6
    print("build: " + ", ".join(f"{k} {v:.2f}" for k, v in row.items()) + " us each (made and released)")
    out["build"] = row


COLD = r"""
import json, os, sys, time
t0 = time.perf_counter()
import torch
xs = [torch.randn(N, device="cuda") for _ in range(3)]
small = torch.randn(16, device="cuda")
torch.cuda.synchronize()
t1 = time.perf_counter()
sys.path.insert(0, os.path.join(ROOT, "python")); sys.path.insert(0, os.path.join(ROOT, "bench"))
import tilejit.numpy as tnp
from arrays_bench import m_gelu
t2 = time.perf_counter()
s0 = tnp.asarray(small)
x, y, z = (tnp.asarray(t) for t in xs)
t3 = time.perf_counter()
tnp.eval(s0 + 1); torch.cuda.synchronize()
t4 = time.perf_counter()
c0 = tnp.stats("cuda")["compile_ms"]
tnp.eval(m_gelu(tnp, x * y + z)); torch.cuda.synchronize()
t5 = time.perf_counter()
c1 = tnp.stats("cuda")["compile_ms"]
tnp.finish_compiles("cuda")  # the optimized kernel, compiled on a thread while the fast tier ran
s = tnp.stats("cuda")
print(json.dumps({"torch_setup_ms": (t1 - t0) * 1e3, "import_ms": (t2 - t1) * 1e3, "graph_ms": (t3 - t2) * 1e3,
                  "first_kernel_ms": (t4 - t3) * 1e3, "first_kernel_compile_ms": c0,
                  "gelu_cold_ms": (t5 - t4) * 1e3, "gelu_compile_ms": c1 - c0,
                  "gelu_fast_tiers": s["kernels_fast"], "gelu_compiles_done_ms": s["compile_ms"] - c0}))
"""


def part_cold(n, out):
    env = dict(os.environ, TILEJIT_CACHE_DIR=tempfile.mkdtemp(prefix="tj-layers-"), CUDA_CACHE_DISABLE="1",
               PYTHONUNBUFFERED="1")
    code = f"N = {n}\nROOT = {ROOT!r}\n" + COLD
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    if r.returncode:
        print("cold: failed\n" + r.stdout + r.stderr)
        return
    row = json.loads(r.stdout.strip().splitlines()[-1])
    print("cold: " + ", ".join(f"{k} {v:.1f}" for k, v in row.items()))
    out["cold"] = row


def ulps(got, want):
    """|got - want| in units of want's last place (f32), 0 where both are the same NaN/inf"""
    import numpy as np
    g = got.astype(np.float32).view(np.int32).astype(np.int64)
    w = want.astype(np.float32).view(np.int32).astype(np.int64)
    g = np.where(g < 0, -(g & 0x7fffffff), g)  # ordered integers across zero
    w = np.where(w < 0, -(w & 0x7fffffff), w)
    d = np.abs(g - w)
    same = (np.isnan(got) & np.isnan(want)) | (got == want)
    return np.where(same, 0, d)


def part_accuracy(out):
    import numpy as np
    import torch
    tnp, _ = gelu_parts()
    v = np.concatenate([np.linspace(-20, 20, 1 << 20), np.linspace(-1, 1, 1 << 18), np.geomspace(1e-30, 100, 1 << 16),
                        -np.geomspace(1e-30, 100, 1 << 16),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 87.0, 88.0, 89.0, -87.0, -88.0, -104.0, 1e-45, 0.55,
                         0.5499999, 9.01, 44.0]]).astype(np.float32)
    t = torch.from_numpy(v).cuda()
    xa = tnp.asarray(t)
    v64 = v.astype(np.float64)
    with np.errstate(over="ignore"):
        want = {"tanh": np.tanh(v64), "sigmoid": 1 / (1 + np.exp(-v64)),
                "erf": np.array([math.erf(a) if np.isfinite(a) else (math.copysign(1, a) if np.isinf(a) else a)
                                 for a in v64])}
    row = {}
    for name in ("tanh", "sigmoid", "erf"):
        r = getattr(tnp, name)(xa)
        tnp.eval(r)
        got = torch.from_dlpack(r).cpu().numpy()
        u = ulps(got.astype(np.float64), want[name].astype(np.float32).astype(np.float64))
        row[f"tnp_{name}_max_ulp"] = int(u.max())
        row[f"tnp_{name}_mean_ulp"] = float(u.mean())
        if name != "erf":
            tg = getattr(torch, name)(t).cpu().numpy()
            row[f"torch_{name}_max_ulp"] = int(ulps(tg.astype(np.float64),
                                                    want[name].astype(np.float32).astype(np.float64)).max())
    print("accuracy: " + ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()))
    out["accuracy"] = row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=["sync", "build", "cold", "accuracy"])
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--json")
    args = ap.parse_args()
    n = 1 << (22 if args.quick else 26)
    out = {}
    for name, run in (("sync", lambda: part_sync(n, args.reps, out)), ("build", lambda: part_build(args.reps, out)),
                      ("cold", lambda: part_cold(n, out)), ("accuracy", lambda: part_accuracy(out))):
        if not args.only or args.only == name:
            run()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
