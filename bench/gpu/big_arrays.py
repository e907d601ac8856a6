"""tilejit.lib beyond 2^31 elements on a CUDA GPU (docs/library.md, "Arrays
beyond 2^31 elements"): cumsum, sort and argsort of one f32 line of
2^31 + 3 elements (segments of 2^31 - 2^16, the default: two of them),
checked in full and timed beside torch where torch can do it.

    python3 bench/gpu/big_arrays.py [--log2n 31] [--extra 3] [--segment S]

Checks (in chunks, so that they need little memory beyond the results):
- cumsum of values in {-1, 0, 1}: every partial sum is an integer far
  below 2^24, so any association gives it exactly; against a chunked
  torch.cumsum with the chunks' carries (f64), element for element;
- argsort (keys with many equal values, NaN, -0.0 and infinities): the
  keys' order (NumPy's: NaN last, -0.0 equal to 0.0, as the library's
  unsigned keys) never decreases along x[idx], equal keys have increasing
  indices (stable), and sort's y is x[idx] bit for bit. Together these prove
  y and idx right: equal indices would need equal keys, which the strict
  increase forbids, so idx is a permutation.
Memory at its peak (argsort): x 8 GiB, y 8, idx 16, the library's scratch
34 (two key and two payload buffers, the tiles' tables): about 67 GiB.
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402,F401  (puts the repository's python/ on the path)
import tilejit.lib as tlib  # noqa: E402

CHUNK = 1 << 26  # 64 Mi elements: the checks' temporaries stay near 2 GiB


def timed(fn, reps):
    """(result of the last call, median seconds of `reps` calls after one
    warm-up: the first compiles and allocates the scratch)"""
    out = fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        del out
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return out, sorted(times)[len(times) // 2]


def try_torch(label, fn, reps, n):
    """torch's time for the same work, or why there is none"""
    try:
        out, s = timed(fn, reps)
        del out
        print(f"{label}: {s * 1e3:.1f} ms, {n / s / 1e9:.2f} G elements/s", flush=True)
        return s
    except Exception as e:  # noqa: BLE001 (too large for torch, or out of memory: say so, go on)
        print(f"{label}: failed: {str(e).splitlines()[0][:200]}", flush=True)
        return None
    finally:
        torch.cuda.empty_cache()


def check_cumsum(x, y):
    carry = torch.zeros((), dtype=torch.float64, device=x.device)
    for at in range(0, x.numel(), CHUNK):
        want = torch.cumsum(x[at:at + CHUNK].double(), 0) + carry
        got = y[at:at + CHUNK].double()
        if not torch.equal(got, want):
            bad = (got != want).nonzero()[0].item()
            raise AssertionError(f"cumsum differs at {at + bad}: {got[bad].item()} != {want[bad].item()}")
        carry = want[-1]


def order_keys(bits):
    """the library's unsigned key of f32 bit patterns (NumPy's order), as i64"""
    u = bits.to(torch.int64) & 0xFFFFFFFF
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    u = torch.where(u == 0x80000000, torch.zeros_like(u), u)
    k = torch.where((u >> 31) == 1, ~u & 0xFFFFFFFF, u | 0x80000000)
    return torch.where(nan, torch.full_like(k, 0xFFFFFFFF), k)


def check_sorted(x, y, idx):
    bits, n = x.view(torch.int32), x.numel()
    for at in range(0, n, CHUNK):
        hi = min(n, at + CHUNK + 1)  # one element of overlap with the next chunk
        i = idx[at:hi]
        if i.min().item() < 0 or i.max().item() >= n:
            raise AssertionError(f"argsort: an index outside [0, {n}) in [{at}, {hi})")
        got = bits[i]
        if not torch.equal(y.view(torch.int32)[at:hi], got):
            raise AssertionError(f"sort: y is not x[argsort(x)] bit for bit in [{at}, {hi})")
        k = order_keys(got)
        if (k[1:] < k[:-1]).any():
            bad = (k[1:] < k[:-1]).nonzero()[0].item()
            raise AssertionError(f"argsort: keys decrease at {at + bad}")
        tie = k[1:] == k[:-1]
        if (tie & (i[1:] <= i[:-1])).any():
            bad = (tie & (i[1:] <= i[:-1])).nonzero()[0].item()
            raise AssertionError(f"argsort: equal keys out of input order at {at + bad} (not stable)")


def keys(n):
    """many equal values (2001 of them), NaN of two payloads and both signs,
    -0.0, 0.0 and infinities spread through the line"""
    x = torch.randint(-1000, 1001, (n,), device="cuda", dtype=torch.int32).float().div_(8)
    bits = x.view(torch.int32)
    for i, b in enumerate([0x7FC00000, 0x7FC00001, -0x400000, -0x80000000, 0, 0x7F800000, -0x800000]):
        bits[i * 1000003::7919] = b
    bits[-1] = 0x7FC00000  # the last element, past 2^31, a NaN
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", type=int, default=31)
    ap.add_argument("--extra", type=int, default=3)
    ap.add_argument("--segment", type=int, default=None, help="tj_lib_options.segment (default: the library's)")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    n, seg = 2 ** args.log2n + args.extra, args.segment
    props = torch.cuda.get_device_properties(0)
    print(f"# {props.name}, {props.total_memory / 2 ** 30:.1f} GiB; n = 2^{args.log2n} + {args.extra} = {n} f32, "
          f"segment {seg or 'default'}", flush=True)
    t0 = time.time()

    x = torch.randint(-1, 2, (n,), device="cuda", dtype=torch.int32).float()
    y, s = timed(lambda: tlib.cumsum(x, segment=seg), args.reps)
    check_cumsum(x, y)
    print(f"lib cumsum: {s * 1e3:.1f} ms, {n / s / 1e9:.2f} G elements/s, {8 * n / s / 1e12:.2f} TB/s; "
          f"checked in full", flush=True)
    del y
    try_torch("torch.cumsum", lambda: torch.cumsum(x, 0), args.reps, n)
    del x
    torch.cuda.empty_cache()

    x = keys(n)
    torch.cuda.empty_cache()
    try_torch("torch.sort", lambda: torch.sort(x), 1, n)
    try_torch("torch.sort(stable=True)", lambda: torch.sort(x, stable=True), 1, n)
    y, s = timed(lambda: tlib.sort(x, segment=seg), args.reps)
    print(f"lib sort: {s * 1e3:.1f} ms, {n / s / 1e9:.2f} G keys/s", flush=True)
    idx, s = timed(lambda: tlib.argsort(x, segment=seg), args.reps)
    print(f"lib argsort: {s * 1e3:.1f} ms, {n / s / 1e9:.2f} G keys/s", flush=True)
    check_sorted(x, y, idx)
    print(f"sort, argsort: checked in full (order, stability, y == x[idx] bit for bit); "
          f"peak {torch.cuda.max_memory_allocated() / 2 ** 30:.1f} GiB through torch; {time.time() - t0:.0f} s",
          flush=True)


if __name__ == "__main__":
    main()
