#!/usr/bin/env python3
"""The look-back cumsum's tile configurations on the GPU: lib/kernels/scan.tj's
scan_lookback_packed (the flag and value in one u64 word, the library's
kernel for f32) with its tile (B), window (W) and warps replaced, launched as
lib/scan.c launches it (the words and the ticket counter zeroed before each
call, in the timed call), checked against torch.cumsum, beside torch's copy.
--diagnostics adds, for each packed configuration, two kernels that are not
cumsums (timed, not checked, labelled so): "no look-back" (the loop never
runs: the ticket, loads, sum, publication, scan and stores alone: the bound
of this structure) and "tiles by program id" (no ticket: a tile's index is
its program's, which relies on the GPU starting programs in order, so it is
no kernel to ship). --spin adds, for each packed configuration, the kernel that waits on the word
of the nearest tile not combined yet alone (a load a warp) before it reads a
window again. --ordered adds, for each packed configuration, the kernel with its words
written by store_release and read by load_acquire (the packed kernel as
first written). --two-word B,W,warps ... times scan_lookback (separate flags and values, the
library's kernel for 64-bit values, and for f32 before the packed words) the
same way; --early adds, for each of those, the variant with its aggregate
published before the in-tile scan. --baseline FILE[@B,W,warps[,K]] ... times
other scan.tj files' scan_lookback (an earlier commit's, a variant) the same
way (B 8192 when not given).

    python3 bench/gpu/scan_sweep.py [--log2n 28] [--configs 8192,256,8 4096,128,4 ...] [--two-word 8192,256,8 ...]
        [--baseline FILE[@B,W,warps[,K]] ...] [--early] [--ordered] [--diagnostics] [--lib-layout]

Prints the library's look-back and multi-phase cumsum and torch.cumsum, then
one line per configuration: ms, TB/s (the input read and the output written
once) and the fraction of the copy's TB/s.
"""
import argparse
import os
import re
import sys

import torch
import triton

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
import tilejit  # noqa: E402

DEFAULT = ["8192,256,8", "8192,32,8", "16384,256,8", "4096,128,4", "2048,64,2"]


NEAREST = {"sum": "sum(where(m <= last, v, 0))",  # lib/scan.c's for cumsum
           "scan": "sum(where(m == last, scan(v, axis = 0, combine = combine_nearest_first), 0))"}


def lookback_source(consts, path=None, kernel="scan_lookback", nearest="sum"):
    """scan.tj substituted as lib/scan.c does for a cumsum of f32 ($U the
    bits' type, $AGGREGATE the tile's sum, $NEAREST a window's combine: the
    library's masked sum, or with nearest="scan" the scan form any other
    combine takes), with the constants of `kernel`
    (a dict: B, W, warps, K) replaced"""
    with open(path or os.path.join(ROOT, "lib", "kernels", "scan.tj")) as f:
        src = f.read().replace("$T", "f32").replace("$COMBINE", "a + b").replace("$U", "u32")
    src = src.replace("$AGGREGATE", "f32(sum(where(arange(B) < n, x, 0)))").replace("$NEAREST", NEAREST[nearest])
    head, body = src.split(f"kernel {kernel}(", 1)
    for name, value in consts.items():
        body = re.sub(rf"const {name} = \d+", f"const {name} = {value}", body, count=1)
    return head + f"kernel {kernel}(" + body


def early_variant(src):
    """scan_lookback with its aggregate published before the in-tile scan (a
    sum of the tile for cumsum, then the look-back, then one scan): the next
    step of bench/NOTES.md, made from the library's kernel text so that it
    measures against the same kernel; fails loudly if that text has moved"""
    steps = [("    s = scan(load(X[p, i:i+B]), axis = 0, combine = combine)\n    agg = last_of(s, minimum(B, N - i))\n",
              "    x = load(X[p, i:i+B])\n    agg = f32(sum(where(arange(B) < minimum(B, N - i), x, 0)))\n"
              "    excl = agg # replaced by the look-back's prefix (tiles after the first)\n"),
             ("        excl = agg # replaced by the first part found (a combine has no identity here)\n", ""),
             ("        s = combine(excl, s)\n    }\n    store(Y[p, i:i+B], s)",
              "    }\n    s = scan(x, axis = 0, combine = combine)\n    if t > 0 {\n        s = combine(excl, s)\n    }\n"
              "    store(Y[p, i:i+B], s)")]
    head, body = src.split("kernel scan_lookback(", 1)
    for old, new in steps:
        if body.count(old) != 1:
            raise ValueError(f"scan.tj's scan_lookback no longer has {old.strip()!r}")
        body = body.replace(old, new)
    return head + "kernel scan_lookback(" + body


DIAGNOSTICS = [("no look-back", "        looking = true\n", "        looking = false\n"),
               ("tiles by program id", "    g = atomic_add(C[0], 1)\n", "    g = program_id(1) * cdiv(N, B) + program_id(0)\n")]


def packed_variant(src, old, new, count=1):
    """src with `old` replaced by `new` inside scan_lookback_packed only, where
    it must occur `count` times (fails loudly if the kernel has moved)"""
    head, body = src.split("kernel scan_lookback_packed(", 1)
    body, sep, tail = body.partition("\nkernel ")
    if body.count(old) != count:
        raise ValueError(f"scan.tj's scan_lookback_packed no longer has {count} of {old.strip()!r}")
    return head + "kernel scan_lookback_packed(" + body.replace(old, new) + sep + tail


SPIN = ("            w = j - m\n",
        "            near = load_relaxed(F[j]) # the nearest tile not combined yet: one word until it is published\n"
        "            while (near >> 32) == 0 {\n                near = load_relaxed(F[j])\n            }\n"
        "            w = j - m\n")


def ordered_variant(src):
    """scan_lookback_packed with its relaxed accesses of the words made acquire
    loads and release stores"""
    return packed_variant(packed_variant(src, "store_relaxed", "store_release", 3), "load_relaxed", "load_acquire")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", type=int, default=28)
    ap.add_argument("--configs", nargs="*", default=DEFAULT, help="B,W,warps of scan_lookback_packed")
    ap.add_argument("--two-word", nargs="*", default=[], help="B,W,warps[,K] of scan_lookback")
    ap.add_argument("--baseline", nargs="*", default=[],
                    help="other scan.tj files whose scan_lookback to time: FILE (as is) or FILE@B,W,warps[,K]")
    ap.add_argument("--early", action="store_true",
                    help="time each configuration also with its aggregate published before the in-tile scan")
    ap.add_argument("--ordered", action="store_true",
                    help="time each packed configuration also with acquire loads and release stores of its words")
    ap.add_argument("--nearest-scan", action="store_true",
                    help="time each packed configuration also with a window combined by a scan")
    ap.add_argument("--spin", action="store_true",
                    help="time each packed configuration also waiting on the nearest word alone before each window")
    ap.add_argument("--diagnostics", action="store_true",
                    help="time each packed configuration also without its look-back and without its ticket (unchecked)")
    ap.add_argument("--lib-layout", action="store_true",
                    help="time each also with lib/scan.c's scratch (one buffer, zeroed whole)")
    args = ap.parse_args()
    n = 2 ** args.log2n
    x = torch.randint(-2, 3, (n,), device="cuda").float()  # integer-valued: sums exact in f32
    y = torch.empty_like(x)
    want = torch.cumsum(x, 0)
    nbytes = 2 * n * 4
    copy_ms = triton.testing.do_bench(lambda: y.copy_(x), warmup=25, rep=200, return_mode="median")
    copy = nbytes / (copy_ms * 1e-3) / 1e12
    print(f"copy 2^{args.log2n} f32: {copy_ms:.3f} ms {copy:.2f} TB/s")
    import tilejit.lib as tlib
    os.environ["TILEJIT_LIB_LOOKBACK"] = "1"  # CUDA's look-back where the library does not take it yet
    for name, call in [("library look-back", lambda: tlib.cumsum(x)),
                       ("library multi-phase", lambda: tlib.cumsum_multi_phase(x)),
                       ("torch.cumsum", lambda: torch.cumsum(x, 0))]:
        same = torch.equal(call(), want)
        ms = triton.testing.do_bench(call, warmup=25, rep=200, return_mode="median")
        tb = nbytes / (ms * 1e-3) / 1e12
        print(f"{name}: {ms:.3f} ms {tb:.2f} TB/s {tb / copy:.2f} of copy{'' if same else ' WRONG RESULT'}", flush=True)
    runs = []
    for spec in args.baseline:
        path, _, cfg = spec.partition("@")
        consts = dict(zip(["B", "W", "warps", "K"], map(int, cfg.split(",")))) if cfg else {}
        runs.append((f"{os.path.basename(path)} {cfg or 'as is'}", lookback_source(consts, path), consts.get("B", 8192),
                     "scan_lookback"))
    for cfg in args.two_word:
        consts = dict(zip(["B", "W", "warps", "K"], map(int, cfg.split(","))))
        label = "two words, " + " ".join(f"{k} {v}" for k, v in consts.items())
        runs.append((label, lookback_source(consts), consts["B"], "scan_lookback"))
        if args.early:
            runs.append((label + " aggregate first", early_variant(lookback_source(consts)), consts["B"],
                         "scan_lookback"))
    for cfg in args.configs:
        consts = dict(zip(["B", "W", "warps"], map(int, cfg.split(","))))
        label = "packed, " + " ".join(f"{k} {v}" for k, v in consts.items())
        src = lookback_source(consts, kernel="scan_lookback_packed")
        runs.append((label, src, consts["B"], "scan_lookback_packed"))
        if args.nearest_scan:
            runs.append((label + " window by a scan", lookback_source(consts, kernel="scan_lookback_packed", nearest="scan"),
                         consts["B"], "scan_lookback_packed"))
        if args.ordered:
            runs.append((label + " acquire/release", ordered_variant(src), consts["B"], "scan_lookback_packed"))
        if args.spin:
            runs.append((label + " spin on the nearest", packed_variant(src, *SPIN), consts["B"], "scan_lookback_packed"))
        if args.diagnostics:
            for what, old, new in DIAGNOSTICS:
                runs.append((f"{label} (diagnostic, not a cumsum: {what})", packed_variant(src, old, new),
                             consts["B"], "scan_lookback_packed unchecked"))
    for label, src, b, name in runs:
        time_lookback(label, src, name, b, x, y, want, nbytes, copy, False)
        if args.lib_layout and name == "scan_lookback":
            time_lookback(label + " (the library's scratch)", src, name, b, x, y, want, nbytes, copy, True)


def scratch(g, lib_layout):
    """the look-back's scratch (A, I, S, C) and the buffer zeroed before each
    call: separate buffers with S and C zeroed, or lib/scan.c's one buffer
    (S, C, A from the next 8 bytes, I), zeroed whole as lib_scratch_get does"""
    if not lib_layout:
        flags = torch.zeros(g + 1, device="cuda", dtype=torch.int32)  # S, then the ticket counter
        return torch.empty(g, device="cuda"), torch.empty(g, device="cuda"), flags[:g], flags[g:], flags
    values = (g * 4 + 4 + 7) // 8 * 8 // 4
    buf = torch.zeros(values + 2 * g, device="cuda", dtype=torch.int32)
    f = buf.view(torch.float32)
    return f[values:values + g], f[values + g:], buf[:g], buf[g:g + 1], buf


def time_lookback(label, src, name, b, x, y, want, nbytes, copy, lib_layout):
    """one look-back kernel (scan_lookback or scan_lookback_packed) compiled,
    checked against torch.cumsum and timed"""
    n = x.numel()
    g = (n + b - 1) // b
    name, _, unchecked = name.partition(" ")
    if name != "scan_lookback":  # lib/scan.c's scratch: the words, then the ticket counter
        zeroed = torch.zeros(g + 1, device="cuda", dtype=torch.int64)
        scratch_args = (zeroed[:g].view(torch.uint64), zeroed[g:].view(torch.int32)[:1])
    else:
        a, i, s, c, zeroed = scratch(g, lib_layout)
        scratch_args = (a, i, s, c)
    try:
        k = tilejit.Kernel(src, name, file="lib/kernels/scan.tj")
        x3, y3 = x.view(1, n), y.view(1, n)

        header = src.split(f"kernel {name}(", 1)[1].split(")", 1)[0]
        carry = (y3[:, 0], 0) if "Prev:" in header else ()  # the axis is one segment (older kernels: no carry)

        def call():
            zeroed.zero_()
            k(x3, y3, *scratch_args, *carry)

        y.zero_()
        call()
        torch.cuda.synchronize()
        if not unchecked and not torch.equal(y, want):
            bad = (y != want).nonzero()[0].item()
            raise AssertionError(f"differs from torch.cumsum first at {bad}: {y[bad].item()} != {want[bad].item()}")
        ms = triton.testing.do_bench(call, warmup=25, rep=200, return_mode="median")
        tb = nbytes / (ms * 1e-3) / 1e12
        print(f"{label}: {ms:.3f} ms {tb:.2f} TB/s {tb / copy:.2f} of copy", flush=True)
    except Exception as e:  # noqa: BLE001 (the other configurations still run)
        print(f"{label}: failed: {str(e).splitlines()[0][:300]}", flush=True)


if __name__ == "__main__":
    main()
