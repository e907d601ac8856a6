"""A warm tnp gelu(x*y+z) call's host time, taken apart (issue 13, docs/arrays.md's plan memo).

    LD_LIBRARY_PATH=BUILD/tests/fake_driver TILEJIT_LIB=BUILD/libtilejit.so PYTHONPATH=python \
        python3 bench/arrays_warm_host.py [cpu|cuda] [--calls N] [--compiled]

After 50 warm-up calls (the first compiles), each of N calls times building the graph from
Python ("build": bench/arrays_bench.py's gelu over three f32[65536] arrays) and `tnp.eval` of
it ("eval"), and the two together ("call"); medians and bests in us. Under the tests' stand-in
driver the cuda launches do nothing, so "eval" is the host's part alone (no synchronization:
nothing is pending on a stand-in); on the cpu, eval includes running the kernel. --compiled: "build" is
a call of the tnp.compile'd function (its graph rebuilt in C from the program its traced text was read into once)."""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402
import tilejit.numpy as tnp  # noqa: E402
from arrays_bench import m_gelu  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("device", nargs="?", default="cuda", choices=["cpu", "cuda"])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--compiled", action="store_true")
    args = ap.parse_args()
    traced = tnp.compile(lambda a, b, c: m_gelu(tnp, a * b + c))
    graph = traced if args.compiled else (lambda a, b, c: m_gelu(tnp, a * b + c))
    rng = np.random.default_rng(0)
    x, y, z = (tnp.asarray(rng.standard_normal(1 << 16).astype(np.float32), device=args.device)
               for _ in range(3))
    for _ in range(50):
        tnp.eval(graph(x, y, z))
    tnp.finish_compiles(args.device)
    before = tnp.stats(args.device)
    build, ev = [], []
    for _ in range(args.calls):
        t0 = time.perf_counter()
        r = graph(x, y, z)
        t1 = time.perf_counter()
        tnp.eval(r)
        t2 = time.perf_counter()
        build.append(t1 - t0)
        ev.append(t2 - t1)
        del r
    after = tnp.stats(args.device)
    call = [b + e for b, e in zip(build, ev)]

    def us(v):
        return f"{statistics.median(v) * 1e6:.1f} (best {min(v) * 1e6:.1f})"

    delta = {k: after[k] - before[k] for k in ("kernels_compiled", "kernels_launched", "plans_reused")
             if k in after}
    print(f"{args.device}{' compiled' if args.compiled else ''}: build {us(build)}  eval {us(ev)}  call {us(call)} us; over {args.calls} calls: {delta}")


if __name__ == "__main__":
    main()
