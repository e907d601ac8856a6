#!/usr/bin/env python3
"""The native cpu back end beside NumPy, in one run (bench/RESULTS.md).

    python3 bench/cpu_numpy.py BUILD_DIR [kernels|matmul|examples ...]

Runs BUILD_DIR/bench/bench_cpu for each mode and prints, per figure, the
native time and NumPy's: memory-bound kernels as GB/s and as a fraction of
the bandwidth a NumPy copy of the same bytes reaches; the f32 matmul as
GFLOP/s against NumPy's (OpenBLAS); every example against the interpreter,
in wall time (medians) and in CPU time of all threads per run (the least
of 5 batches: the figure the machine's other load moves least; with
several threads it counts every core the native run kept busy).
Threads: TILEJIT_CPU_THREADS (NumPy's own ops are single-threaded except
the matmul, which uses OpenBLAS's threads)."""
import math
import os
import subprocess
import sys
import time

import numpy as np

M, N = 16384, 1024


def median_time(fn, reps=15):
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2]


def erf(x):
    """NumPy has no erf: Abramowitz-Stegun 7.1.26 in NumPy ops."""
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    p = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return s * (1.0 - p * np.exp(-a * a))


def numpy_ops():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, M * N).astype(np.float32)
    y, z, out = np.empty_like(x), np.empty_like(x), np.empty_like(x)
    y[:] = x[::-1]
    z[:] = x
    x2, o2 = x.reshape(M, N), out.reshape(M, N)
    w = np.ones(N, np.float32)
    b = np.zeros(N, np.float32)

    def softmax():
        e = np.exp(x2 - x2.max(axis=1, keepdims=True))
        np.divide(e, e.sum(axis=1, keepdims=True), out=o2)

    def layernorm():
        mean = x2.mean(axis=1, keepdims=True)
        d = x2 - mean
        y2 = np.multiply(d / np.sqrt((d * d).mean(axis=1, keepdims=True) + 1e-5), w, out=o2)
        np.add(y2, b, out=o2)

    def gelu():
        v = x * y + z
        np.multiply(0.5 * v, 1.0 + erf(v * np.float32(0.7071067811865476)), out=out)

    ops = {
        "add": lambda: np.add(x, y, out=out),
        "gelu": gelu,
        "softmax": softmax,
        "layernorm": layernorm,
        "rowsum": lambda: x2.sum(axis=1),
        "colsum": lambda: x2.sum(axis=0),
    }
    copy = median_time(lambda: np.copyto(out, x))
    return {k: median_time(f, 7) for k, f in ops.items()}, 2 * x.nbytes / copy


def bench(build, mode, *extra):
    exe = os.path.join(build, "bench", "bench_cpu")
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")
    out = subprocess.run([exe, mode, *(extra or [root])], capture_output=True, text=True)
    sys.stderr.write(out.stderr)  # its diagnostics, a failure's included
    if out.returncode:
        sys.exit(f"{exe} {mode}: exit status {out.returncode}")
    return [line.split() for line in out.stdout.splitlines()]


def kernels(build):
    ops, copy_bw = numpy_ops()
    print(f"NumPy copy: {copy_bw / 1e9:.2f} GB/s (read + write)")
    print(f"{'kernel':10} {'native GB/s':>11} {'of copy':>8} {'NumPy GB/s':>10} {'vs NumPy':>8} {'compile ms':>10} "
          f"{'(CPU ms)':>8} {'run CPU ms':>10}")
    for _, name, nbytes, secs, ms, cms, cpu_s in bench(build, "kernels"):
        bw = float(nbytes) / float(secs)
        np_bw = float(nbytes) / ops[name]
        print(f"{name:10} {bw / 1e9:11.2f} {bw / copy_bw:8.2f} {np_bw / 1e9:10.2f} {bw / np_bw:8.2f} {float(ms):10.1f} "
              f"{float(cms):8.1f} {float(cpu_s) * 1e3:10.2f}")


def matmul(build, defines="BM=64,BN=64,BK=64"):
    a = np.random.default_rng(1).standard_normal((1024, 1024), dtype=np.float32)
    b = np.random.default_rng(2).standard_normal((1024, 1024), dtype=np.float32)
    t_np = median_time(lambda: a @ b, 7)
    for _, _, flops, secs, ms, cms in bench(build, "matmul", defines):
        g = float(flops) / float(secs) / 1e9
        g_np = 2 * 1024**3 / t_np / 1e9
        print(f"matmul f32 1024^3 ({defines}): native {g:.1f} GFLOP/s, NumPy {g_np:.1f} GFLOP/s, "
              f"ratio {g / g_np:.2f}, compile {float(ms):.1f} ms ({float(cms):.1f} ms CPU)")


def examples(build):
    print(f"{'example':48} {'native us':>9} {'interp us':>9} {'speed-up':>8} {'compile ms':>10} {'(CPU ms)':>8} "
          f"{'CPU: native us':>14} {'interp us':>9} {'speed-up':>8}")
    rows = bench(build, "examples")
    for row in rows:
        _, f, k, shapes, nat, itp, ms, cms, nat_cpu, itp_cpu = row
        nat, nat_cpu = max(float(nat), 1e-7), max(float(nat_cpu), 1e-7)
        print(f"{f + ' ' + shapes:48} {nat * 1e6:9.1f} {float(itp) * 1e6:9.1f} "
              f"{float(itp) / nat:8.0f} {float(ms):10.1f} {float(cms):8.1f} "
              f"{nat_cpu * 1e6:14.1f} {float(itp_cpu) * 1e6:9.1f} {float(itp_cpu) / nat_cpu:8.0f}")
    ms = sorted(float(r[6]) for r in rows)
    cms = sorted(float(r[7]) for r in rows)

    def geomean(i, j):
        return math.exp(sum(math.log(float(r[j]) / max(float(r[i]), 1e-7)) for r in rows) / len(rows))

    print(f"compile: median {ms[len(ms) // 2]:.1f} ms wall ({cms[len(cms) // 2]:.1f} ms CPU), max {ms[-1]:.1f} ms; "
          f"speed-up geomean {geomean(4, 5):.0f} (wall), {geomean(8, 9):.0f} (CPU time)")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build, modes = sys.argv[1], sys.argv[2:] or ["kernels", "matmul", "examples"]
    for m in modes:
        {"kernels": kernels, "matmul": matmul, "examples": examples}[m](build)
