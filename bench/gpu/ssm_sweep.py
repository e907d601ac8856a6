#!/usr/bin/env python3
"""selective_scan's segment length and steps a thread on the GPU:
lib/kernels/selective_scan.tj's two kernels launched as lib/selective_scan.c
launches them (D, z, delta_bias, softplus: Mamba's use; batch 1, dstate 16),
with $SEG and $TTS given here instead of the library's choice, each checked
against tilejit.lib.selective_scan and timed replayed from a CUDA graph (the
GPU's time, no host cost), beside the library's own call (eager and graph).

    python3 bench/gpu/ssm_sweep.py [--shapes 2048x1024 4096x8192] [--segs 32 64 128] [--tts 2 4] [--warps 512-2048]
                                   [--chunked auto 2,16 4,8] [--mamba]

--chunked times the one pass (ss_chunked) through the library with
TILEJIT_LIB_SSM=chunked,W,TT ('auto': chunked, the library's own W and TT;
'rows:W,TT' or 'rows:auto' the one with a warp a channel), each checked
against the two phases; --mamba adds mamba_ssm's kernel
(bench.py's peer, where built). `--segs` with no values skips the
segment sweep.

The roofline: u, delta, z and out at (batch, dim, L), B and C at (batch,
dstate, L), A and D read or written once, at the copy's TB/s.
"""
import argparse
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tilejit  # noqa: E402
import tilejit.lib as tlib  # noqa: E402
from bench import do_bench, graph_ms, mamba_peer, ssm_inputs  # noqa: E402


def source(dtype, seg, tt):
    with open(os.path.join(ROOT, "lib", "kernels", "selective_scan.tj")) as f:
        src = f.read()
    subst = {"$TTS": str(tt), "$TT": "16", "$T": "f32" if dtype == torch.float32 else "bf16", "$HAS_D": "1",
             "$HAS_Z": "1", "$HAS_BIAS": "1", "$SOFTPLUS": "1", "$SEG": str(seg), "$W": "4"}
    for k, v in subst.items():  # $TTS, then $TT (ss_chunked's, unused here), before $T
        src = src.replace(k, v)
    return src


def two_phase(x, seg, tt):
    """the library's two launches with segments of seg steps, tt steps a thread"""
    u, A = x["u"], x["A"]
    nb, dm, length = u.shape
    ns = A.shape[1]
    nsp = 1 << (ns - 1).bit_length()
    nseg = (length + seg - 1) // seg
    src = source(u.dtype, seg, tt)
    k1 = tilejit.Kernel(src, "ss_segment_state", file="lib/kernels/selective_scan.tj")
    k2 = tilejit.Kernel(src, "ss_segment_out", file="lib/kernels/selective_scan.tj")
    hs = torch.empty(nb, nseg, nsp, dm, 1, device="cuda")
    ps = torch.empty_like(hs)
    over = lambda t: t.as_strided((nb, ns, dm, length), (t.stride(0), t.stride(1), 0, t.stride(2)))  # noqa: E731
    b4, c4 = over(x["B"]), over(x["C"])
    out = torch.empty_like(u)

    def call():
        k1(u, x["delta"], A, b4, x["delta_bias"], hs, ps)
        k2(u, x["delta"], A, b4, c4, x["D"], x["z"], x["delta_bias"], hs, ps, out)
        return out
    return call


def chunked(cfg, lib, want, roof_us, tol):
    """the library's one pass with TILEJIT_LIB_SSM=chunked[,W,TT], or with a
    warp a channel for 'rows:...' (rows[,W,TT]); 'auto': the library's W
    and TT (tol: its difference from the two phases, whose bf16 outputs may
    round the other way). Returns what was wrong with its result, or None
    (also when it failed to compile or launch: that is printed)."""
    kind, _, cfg = cfg.rpartition(":")
    kind = kind or "chunked"
    os.environ["TILEJIT_LIB_SSM"] = kind if cfg == "auto" else kind + "," + cfg
    try:
        got = lib().float()
        torch.cuda.synchronize()
        err = ((got - want).norm() / want.norm()).item()
        if not err <= tol:
            raise AssertionError(f"relative error {err:.3g} against the two phases")
        eager, g = do_bench(lib), graph_ms(lib)
        replay = f"{g * 1e3:.1f} us replayed, {roof_us / (g * 1e3):.3f} of the roofline" if g else "no graph"
        print(f"  {os.environ['TILEJIT_LIB_SSM']}: {eager * 1e3:.1f} us a call, {replay} "
              f"(relative difference {err:.2g})", flush=True)
    except AssertionError as e:  # a wrong result: the run fails at its end (the other configurations still run)
        print(f"  {os.environ['TILEJIT_LIB_SSM']}: WRONG RESULT: {e}", flush=True)
        return f"{os.environ['TILEJIT_LIB_SSM']}: {e}"
    except Exception as e:  # noqa: BLE001 (a compile or launch error; the other configurations still run)
        print(f"  {os.environ['TILEJIT_LIB_SSM']}: failed: {str(e).splitlines()[0][:300]}", flush=True)
    finally:
        os.environ["TILEJIT_LIB_SSM"] = "segments"
    return None


def main():
    """The sweep; returns the configurations whose results were wrong (the
    script then exits nonzero)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", nargs="*", default=["2048x1024", "4096x1024", "2048x8192", "4096x8192"])
    ap.add_argument("--segs", nargs="*", type=int, default=[32, 64, 128, 256, 512, 1024, 2048])
    ap.add_argument("--warps", default="512-2048", help="only segment lengths that give this many one-warp programs")
    ap.add_argument("--tts", nargs="*", type=int, default=[2, 4])
    ap.add_argument("--dtypes", nargs="*", default=["float32", "bfloat16"])
    ap.add_argument("--chunked", nargs="*", default=[],
                    help="the one pass's W,TT to time ('auto': the library's; rows:W,TT or rows:auto: a warp a channel)")
    ap.add_argument("--mamba", action="store_true", help="also time mamba_ssm's kernel")
    args = ap.parse_args()
    mamba = mamba_peer() if args.mamba else None
    wrong = []
    a = torch.empty(2 ** 29, device="cuda")
    b = torch.empty_like(a)
    copy = 2 * a.numel() * 4 / (do_bench(lambda: b.copy_(a)) * 1e-3) / 1e12
    del a, b
    print(f"copy: {copy:.2f} TB/s")
    for dname in args.dtypes:
        dtype = getattr(torch, dname)
        for shape in args.shapes:
            dm, length = map(int, shape.split("x"))
            x = ssm_inputs(1, dm, length, 16, dtype)
            es = x["u"].element_size()
            nbytes = 4 * dm * length * es + 2 * 16 * length * es + dm * 16 * 4 + dm * 4
            roof_us = nbytes / (copy * 1e12) * 1e6
            lib = lambda: tlib.selective_scan(**x, delta_softplus=True)  # noqa: E731
            os.environ["TILEJIT_LIB_SSM"] = "segments"
            want = lib().float()
            eager, graph = do_bench(lib), graph_ms(lib)
            print(f"{dname} D{dm} L{length}: roofline {roof_us:.1f} us; library {eager * 1e3:.1f} us a call, "
                  f"{graph * 1e3 if graph else float('nan'):.1f} us replayed ({roof_us / (graph * 1e3) if graph else 0:.2f} "
                  f"of the roofline)", flush=True)
            if mamba:
                peer = mamba(**x)
                err = ((peer().float() - want).norm() / want.norm()).item()
                # a call only: its stream is fixed when prepared, so a capture on another would hold nothing
                print(f"  mamba_ssm: {do_bench(peer) * 1e3:.1f} us a call (relative difference {err:.2g})", flush=True)
            for cfg in args.chunked:
                bad = chunked(cfg, lib, want, roof_us, 1e-3 if dtype == torch.float32 else 2e-2)
                wrong += [f"{dname} {shape} {bad}"] if bad else []
            for seg in args.segs:
                lo, hi = map(int, args.warps.split("-"))
                if seg > length or not lo <= (dm // 32) * ((length + seg - 1) // seg) <= hi:
                    continue
                for tt in args.tts:
                    try:
                        call = two_phase(x, seg, tt)
                        got = call().float()
                        torch.cuda.synchronize()
                        err = ((got - want).norm() / want.norm()).item()
                        if not err <= 1e-3:
                            raise AssertionError(f"relative error {err:.3g} against the library")
                        g = graph_ms(call)
                        warps = (dm // 32) * ((length + seg - 1) // seg)
                        print(f"  SEG {seg} TT {tt} ({warps} warps): {g * 1e3:.1f} us replayed, "
                              f"{roof_us / (g * 1e3):.3f} of the roofline", flush=True)
                    except AssertionError as e:  # a wrong result: the run fails at its end
                        print(f"  SEG {seg} TT {tt}: WRONG RESULT: {e}", flush=True)
                        wrong.append(f"{dname} {shape} SEG {seg} TT {tt}: {e}")
                    except Exception as e:  # noqa: BLE001 (the other configurations still run)
                        print(f"  SEG {seg} TT {tt}: failed: {str(e).splitlines()[0][:300]}", flush=True)
    return wrong


if __name__ == "__main__":
    wrong = main()
    if wrong:
        sys.exit("ssm_sweep: wrong results: " + "; ".join(wrong))
