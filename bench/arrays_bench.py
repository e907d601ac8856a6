#!/usr/bin/env python3
"""The array front end (tilejit.numpy) on whole expressions, beside NumPy on
the cpu and beside PyTorch eager and torch.compile on a GPU, in one process.

    python3 bench/arrays_bench.py [--device cpu|cuda] [--quick] [--only ROW] [--compile-only] [--json OUT]

Rows (docs/arrays.md): gelu(x*y+z), softmax(x*scale+mask), layer_norm ->
matmul -> bias -> gelu, the transformer MLP block x + gelu(ln(x) @ W1 + b1)
@ W2 + b2, and attention softmax(q @ k^T * s) @ v. For each: kernels per
evaluation, cold time (the first call in a fresh cache: graph building,
fusion, compiles and the run), warm time per call (building the graph and
evaluating it, the median of repeated calls), the peers' times, and for
gelu the bandwidth against a copy of the same bytes. On a GPU also
"queued": a call's share of 10 calls made before one synchronization, so
the host's graph building overlaps the kernels (near the GPU's own time
where the kernels take longer than the host). Results are checked against
the peer before they are timed.
"""
import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("TILEJIT_CACHE_DIR", tempfile.mkdtemp(prefix="tj-arrays-"))  # cold: nothing on disk
# nor in the driver's JIT cache, which keeps PTX it compiled (without nvJitLink, tilejit hands it PTX) for
# later processes (the second process's MLP of 2026-12-02 loaded in 28 ms what the first had compiled)
os.environ.setdefault("CUDA_CACHE_DISABLE", "1")

import numpy as np  # noqa: E402

import tilejit.numpy as tnp  # noqa: E402


QUEUED = 10  # calls queued before one synchronization: the host's work overlaps the GPU's


def median_ms(fn, sync, reps):
    fn()
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def workloads(quick, only=None):
    """name, shapes, the tnp function, the NumPy/torch function (same code:
    module m), flops or bytes for the rate; only: the rows whose name
    starts with it."""
    n = 2 ** 22 if quick else 2 ** 26
    rows, cols = (1024, 1024) if quick else (8192, 4096)
    tok, dim, hid = (256, 256, 1024) if quick else (4096, 1024, 4096)
    b, h, s, d = (1, 4, 256, 64) if quick else (4, 16, 1024, 64)

    def gelu(m, x, y, z):
        return m_gelu(m, x * y + z)

    def softmax(m, x, mask):
        return m_softmax(m, x * 0.125 + mask)

    def ln_mm(m, x, w, bias):
        return m_gelu(m, m.matmul(m_layer_norm(m, x), w) + bias)

    def mlp(m, x, w1, b1, w2, b2):
        return x + m.matmul(m_gelu(m, m.matmul(m_layer_norm(m, x), w1) + b1), w2) + b2

    def attention(m, q, k, v):
        return m.matmul(m_softmax(m, m.matmul(q, m_swap(m, k)) * (1 / math.sqrt(d))), v)

    rows = [
        ("gelu(x*y+z)", [(n,), (n,), (n,)], gelu, 4 * n * 4),
        ("softmax(x*s+mask)", [(rows, cols), (rows, cols)], softmax, 3 * rows * cols * 4),
        ("ln->matmul->bias->gelu", [(tok, dim), (dim, hid), (hid,)], ln_mm, 2 * tok * dim * hid),
        ("mlp block", [(tok, dim), (dim, hid), (hid,), (hid, dim), (dim,)], mlp, 4 * tok * dim * hid),
        ("attention", [(b, h, s, d)] * 3, attention, 4 * b * h * s * s * d),
    ]
    return [r for r in rows if not only or r[0].startswith(only)]


# the same compositions for tnp, NumPy and torch: gelu is the tanh form,
# which NumPy can say (it has no erf)
def m_gelu(m, x):
    if m is tnp or m is np:
        return 0.5 * x * (1 + m.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
    return m.nn.functional.gelu(x, approximate="tanh")


def m_softmax(m, x):
    if m is tnp:
        return tnp.softmax(x, axis=-1)
    if m is np:
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    return m.softmax(x, -1)


def m_layer_norm(m, x):
    if m is tnp:
        return tnp.layer_norm(x)
    if m is np:
        mu = x.mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
    return m.nn.functional.layer_norm(x, (x.shape[-1],))


def m_swap(m, x):
    return m.swapaxes(x, -1, -2) if m is not np else np.swapaxes(x, -1, -2)


def run_cpu(quick, reps, only=None):
    rng = np.random.default_rng(0)
    out = []
    for name, shapes, fn, work in workloads(quick, only):
        args = [rng.standard_normal(s).astype(np.float32) * 0.5 for s in shapes]
        targs = [tnp.asarray(a) for a in args]
        before = tnp.stats()
        t0 = time.perf_counter()
        r = fn(tnp, *targs)
        tnp.eval(r)
        cold = (time.perf_counter() - t0) * 1e3
        mid = tnp.stats()
        kernels = mid["kernels_launched"] - before["kernels_launched"]
        compile_ms = mid["compile_ms"] - before["compile_ms"]
        want = fn(np, *args)
        np.testing.assert_allclose(np.asarray(r), want, rtol=2e-3, atol=2e-3)

        def warm():
            tnp.eval(fn(tnp, *targs))
        tj_ms = median_ms(warm, lambda: None, reps)
        assert tnp.stats()["kernels_compiled"] == mid["kernels_compiled"], "a warm call compiled"
        np_ms = median_ms(lambda: fn(np, *args), lambda: None, max(1, reps // 4))
        out.append({"workload": name, "kernels": kernels, "cold_ms": cold, "compile_ms": compile_ms,
                    "tilejit_ms": tj_ms, "numpy_ms": np_ms})
    return out


def run_cuda(quick, reps, only=None):
    import torch
    torch.manual_seed(0)
    sync = torch.cuda.synchronize
    out = []
    a = torch.empty(2 ** 26 if not quick else 2 ** 22, device="cuda")
    b = torch.empty_like(a)
    copy_ms = median_ms(lambda: b.copy_(a), sync, reps)
    copy_tbps = 2 * a.numel() * 4 / (copy_ms * 1e-3) / 1e12
    for name, shapes, fn, work in workloads(quick, only):
        args = [torch.randn(s, device="cuda") * 0.5 for s in shapes]
        targs = [tnp.asarray(t) for t in args]  # in place, through DLPack
        before = tnp.stats("cuda")
        sync()
        t0 = time.perf_counter()
        r = fn(tnp, *targs)
        tnp.eval(r)
        sync()
        cold = (time.perf_counter() - t0) * 1e3
        mid = tnp.stats("cuda")
        kernels = mid["kernels_launched"] - before["kernels_launched"]
        want = fn(torch, *args)
        got = torch.from_dlpack(r)
        torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
        # warm calls time the optimized kernels: wait for the fast tier's background compiles, and check that
        # the optimized kernels give the fast tier's bits (docs/arrays.md, "Tiered compiles")
        fast = mid["kernels_fast"] - before["kernels_fast"]
        tnp.finish_compiles("cuda")
        same_bits = None
        if fast:
            again = fn(tnp, *targs)
            tnp.eval(again)
            same_bits = bool(torch.equal(torch.from_dlpack(again), got))
            assert tnp.stats("cuda")["kernels_swapped"] - before["kernels_swapped"] == fast, "a fast tier stayed"

        def warm():
            tnp.eval(fn(tnp, *targs))
        tj_ms = median_ms(warm, sync, reps)
        tj_queued_ms = median_ms(lambda: [warm() for _ in range(QUEUED)], sync, max(3, reps // 4)) / QUEUED
        eager_ms = median_ms(lambda: fn(torch, *args), sync, reps)
        compiled = torch.compile(lambda *xs: fn(torch, *xs))
        t0 = time.perf_counter()
        compiled(*args)
        sync()
        tc_cold = (time.perf_counter() - t0) * 1e3
        tc_ms = median_ms(lambda: compiled(*args), sync, reps)
        row = {"workload": name, "kernels": kernels, "cold_ms": cold, "compile_ms": mid["compile_ms"] -
               before["compile_ms"], "tilejit_ms": tj_ms, "torch_ms": eager_ms, "torch_compile_ms": tc_ms,
               "torch_compile_cold_ms": tc_cold, "tilejit_queued_ms": tj_queued_ms,
               "kernels_ahead": mid["kernels_ahead"] - before["kernels_ahead"], "kernels_fast": fast,
               "fast_tier_same_bits": same_bits}
        if name == "gelu(x*y+z)":
            row["tilejit_tbps"] = work / (tj_ms * 1e-3) / 1e12
            row["tilejit_queued_tbps"] = work / (tj_queued_ms * 1e-3) / 1e12
            row["copy_tbps"] = copy_tbps
        out.append(row)
    return out


def run_compile_only(quick, only=None):
    """The cold path alone on the default device, from NumPy inputs (no torch, no peers, nothing checked):
    with tests' stand-in driver (LD_LIBRARY_PATH=build/tests/fake_driver) the compiles are real and the
    kernels do nothing, so a machine without a GPU measures where a cold call's time goes. "finish" is
    the wait for the fast tier's background compiles after the cold call."""
    rng = np.random.default_rng(0)
    out = []
    for name, shapes, fn, work in workloads(quick, only):
        targs = [tnp.asarray(rng.standard_normal(s).astype(np.float32)) for s in shapes]
        before = tnp.stats()
        t0 = time.perf_counter()
        tnp.eval(fn(tnp, *targs))
        tnp.stats()  # returns once the evaluation has queued its kernels (the host's part of a cold call)
        cold = (time.perf_counter() - t0) * 1e3
        mid = tnp.stats()
        t1 = time.perf_counter()
        tnp.finish_compiles()
        finish = (time.perf_counter() - t1) * 1e3
        out.append({"workload": name, "kernels": mid["kernels_launched"] - before["kernels_launched"],
                    "cold_ms": cold, "compile_ms": mid["compile_ms"] - before["compile_ms"],
                    "kernels_fast": mid["kernels_fast"] - before["kernels_fast"], "finish_ms": finish})
    print(f"{'workload':<26}{'kernels':>8}{'cold ms':>10}{'compile':>10}{'fast':>6}{'finish':>10}")
    for r in out:
        print(f"{r['workload']:<26}{r['kernels']:>8}{r['cold_ms']:10.1f}{r['compile_ms']:10.1f}"
              f"{r['kernels_fast']:>6}{r['finish_ms']:10.1f}")
    return out


def report(rows, device):
    peers = ["numpy_ms"] if device == "cpu" else ["tilejit_queued_ms", "torch_ms", "torch_compile_ms",
                                                  "torch_compile_cold_ms"]
    head = f"{'workload':<26}{'kernels':>8}{'cold ms':>10}{'compile':>10}{'warm ms':>10}" + "".join(
        f"{p[:-3]:>16}" for p in peers)
    print(head)
    for r in rows:
        cells = "".join(f"{r[p]:16.3f}" if r.get(p) is not None else f"{'-':>16}" for p in peers)
        extra = f"  {r['tilejit_tbps']:.2f} TB/s = {r['tilejit_tbps'] / r['copy_tbps']:.2f} of copy" \
            f" (queued {r['tilejit_queued_tbps'] / r['copy_tbps']:.2f})" if "tilejit_tbps" in r else ""
        if r.get("kernels_fast"):
            extra += f"  fast tier: {r['kernels_fast']} kernel(s), same bits: {r['fast_tier_same_bits']}"
        print(f"{r['workload']:<26}{r['kernels']:>8}{r['cold_ms']:10.1f}{r['compile_ms']:10.1f}"
              f"{r['tilejit_ms']:10.3f}{cells}{extra}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--json")
    ap.add_argument("--only", help="the rows whose name starts with this (a cold row in a fresh process)")
    ap.add_argument("--compile-only", action="store_true",
                    help="cold calls alone, from NumPy inputs (with --device cuda: the stand-in driver works)")
    args = ap.parse_args()
    if args.device == "cuda":
        tnp.set_default_device("cuda")
    print(f"TILEJIT_CACHE_DIR={os.environ.get('TILEJIT_CACHE_DIR')}")
    if args.compile_only:
        rows = run_compile_only(args.quick, args.only)
    else:
        rows = (run_cuda if args.device == "cuda" else run_cpu)(args.quick, args.reps, args.only)
        report(rows, args.device)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": args.device, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
