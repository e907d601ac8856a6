#!/usr/bin/env python3
"""The persistent matmuls (examples/matmul.tj: matmul_persistent,
matmul_persistent_bias_gelu; docs/simt.md "A persistent matmul") beside the
one-tile-a-program kernels they replace and cuBLAS, in one process: bf16
2048^3, 4096^3 and 8192^3 plain, 4096^3 and 8192^3 with the fused bias +
gelu epilogue, each over a few configurations (every time printed):

    TILEJIT_LIB=BUILD/libtilejit.so python3 bench/gpu/persistent_rows.py [--json OUT.json] [--tma-store]

Every result is checked against PyTorch before it is timed. A persistent
launch has `programs` = the SM count times 1 or 2 (both tried where two
programs' rings fit an SM's shared memory: what the timing finds is what
the driver made resident). The last lines give persistent over one-tile
for each row. --tma-store adds persistent configurations with tma_store = 1
(C by TMA stores in flight into the next tile, docs/simt.md "TMA stores";
the ring and its staging fit at 3 stages for 128 x 256), not yet run on a GPU.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

# the one-tile kernels' best (bench/RESULTS.md), with and without a producer warp
TILE_CONFIGS = [dict(BM=128, BN=256, BK=64, warps=8, stages=4), dict(BM=128, BN=256, BK=64, warps=8, stages=3),
                dict(BM=256, BN=128, BK=64, warps=8, stages=4), dict(BM=128, BN=128, BK=64, warps=8, stages=3),
                dict(BM=128, BN=256, BK=64, warps=8, stages=4, producer=1)]
# and the grouped order over 16 row blocks instead of 8 (examples/matmul.tj's GROUP)
PERSISTENT_CONFIGS = TILE_CONFIGS + [dict(BM=128, BN=256, BK=64, warps=8, stages=3, producer=1),
                                     dict(BM=128, BN=256, BK=64, warps=8, stages=4, GROUP=16),
                                     dict(BM=128, BN=256, BK=64, warps=8, stages=4, producer=1, GROUP=16)]
TMA_STORE_CONFIGS = [dict(BM=128, BN=256, BK=64, warps=8, stages=3, tma_store=1),
                     dict(BM=128, BN=128, BK=64, warps=8, stages=4, tma_store=1),
                     dict(BM=128, BN=128, BK=64, warps=8, stages=3, tma_store=1)]


def programs_per_sm(p):
    """1, or (1, 2) where two programs' rings (and TMA-store staging) fit the SM's 228 KiB (each 1 KiB more)."""
    smem = p["stages"] * (p["BM"] + p["BN"]) * p["BK"] * 2 + 1024 + (p["BM"] * p["BN"] * 2 if p.get("tma_store") else 0)
    return (1, 2) if 2 * (smem + 1024) <= 228 * 1024 else (1,)


def tensors(n, bias):
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    gelu = torch.nn.functional.gelu
    if not bias:
        return a, b, None, c, (a.float() @ b.float()).to(torch.bfloat16), lambda: a @ b
    v = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    ref = gelu(torch.addmm(v.float(), a.float(), b.float())).to(torch.bfloat16)
    return a, b, v, c, ref, lambda: gelu(torch.addmm(v, a, b))


def timer(jit, src, kernel, ins, c, ref):
    """attempt(cfg) for bench.fastest: compiles kernel for cfg = (params, extra scalars), runs it on
    a zeroed C, checks C against ref (so a configuration that stores nothing cannot pass on an
    earlier one's result), then times it; prints the time."""
    def attempt(cfg):
        params, scalars = cfg
        fn = jit.compile(src, kernel, *ins, *scalars, params=params, file="examples/matmul.tj")
        c.zero_()
        fn(*ins, *scalars)
        torch.cuda.synchronize()
        bench.close_enough(kernel, c, ref, 2e-2)
        t = bench.do_bench(lambda: fn(*ins, *scalars))
        print(f"  {kernel} {params}{f' programs={scalars[0]}' if scalars else ''}: {t:.3f} ms", flush=True)
        return t
    return attempt


def row(jit, src, n, bias, sms, persistent_configs):
    a, b, v, c, ref, peer = tensors(n, bias)
    name = "matmul_bias_gelu" if bias else "matmul"
    ins = [a, b, v, c] if bias else [a, b, c]
    tile, tile_err = bench.fastest([(p, ()) for p in TILE_CONFIGS], timer(jit, src, name, ins, c, ref))
    pname = "matmul_persistent_bias_gelu" if bias else "matmul_persistent"
    cfgs = [(p, (sms * per,)) for p in persistent_configs for per in programs_per_sm(p)]
    pers, pers_err = bench.fastest(cfgs, timer(jit, src, pname, ins, c, ref))
    peer_ms = bench.do_bench(peer)
    flops = 2 * n ** 3
    tag = f"{'bias+gelu ' if bias else ''}{n}^3"
    for label, found, err in (("one tile a program", tile, tile_err), ("persistent", pers, pers_err)):
        if found:
            print(f"# {tag} {label}: {found[0]:.3f} ms {flops / found[0] / 1e9:.1f} TFLOP/s, "
                  f"{peer_ms / found[0]:.3f} of {'cuBLAS+gelu' if bias else 'cuBLAS'} ({found[1]})", flush=True)
        else:
            print(f"# {tag} {label}: FAILED {err}", flush=True)
    if tile and pers:
        print(f"# {tag} persistent over one tile a program: {tile[0] / pers[0]:.3f}", flush=True)
    return {"row": tag, "tile": tile and tile[0], "persistent": pers and pers[0], "peer": peer_ms,
            "tile_config": tile and str(tile[1]), "persistent_config": pers and str(pers[1])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--tma-store", action="store_true", help="persistent configurations with tma_store = 1 too")
    args = ap.parse_args()
    configs = PERSISTENT_CONFIGS + (TMA_STORE_CONFIGS if args.tma_store else [])
    torch.manual_seed(0)
    jit = bench.tilejit.Jit("cuda")
    src = bench.example("matmul.tj")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"# {torch.cuda.get_device_name(0)}, {sms} SMs", flush=True)
    rows = [row(jit, src, n, False, sms, configs) for n in (2048, 4096, 8192)]
    rows += [row(jit, src, n, True, sms, configs) for n in (4096, 8192)]
    if args.json:
        import json
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1, default=str)


if __name__ == "__main__":
    main()
