#!/usr/bin/env python3
"""Attention kernels of bench/gpu/kernels.tj.in and examples/ against SDPA
(cuDNN / flash) in one process, a few configurations each (issue 16):

    TILEJIT_LIB=.../libtilejit.so python3 bench/gpu/attention_variants.py [--only NAME,...] [--dims 128,64]
        [--tag TAG] [--json OUT]

rows            attention_rows: [B*H*S, D] views, K and V by TMA rings (fastmath)
exp2            attention_rows_exp2: the softmax in base 2, scale * log2(e) folded into the scores (fastmath)
exp2_accurate   the same without fastmath (exp2 is ex2.approx; exp would add its rounding correction)
pipelined       attention_rows_pipelined: exp2, the next scores in flight over this block's softmax
fa3             attention_fa3: examples/attention.tj in FlashAttention-3's order (the next block's scores and
                this block's P V issued back to back, the next block's softmax under them), [B, H, S, D]
                by cp.async rings (fastmath); `example` is the same kernel in its sequential order
fa3_turns       the same with the warpgroups taking turns, one an iteration (`turns = 1`)
fa3_accurate    attention_fa3 without fastmath
causal_fa3, causal_fa3_turns, gqa_fa3  the causal and grouped-query examples in that order
rows_fa3        attention_rows_fa3: attention_fa3 over packed rows by TMA rings (fastmath)
rows_fa3_turns  the same with `turns = 1`
ahead           attention_ahead: one block further ahead, S(j + 1) and P(j - 1) V(j - 1) issued before the
                softmax of S(j), both under it, nothing waited for inside an iteration (fastmath)
causal_ahead    attention_causal_ahead: the causal example in that order (fastmath; FLOPs counted as half)
rows_ahead      attention_rows_ahead: the same over packed rows by TMA rings (fastmath)
rows_ahead_turns  the same with `turns = 1`
example         examples/attention.tj, [B, H, S, D] by cp.async rings, as written (base 2; fastmath)
example_accurate  the same without fastmath
example_base_e  examples/attention.tj put back in base e (exp, the scores times scale alone: the
                form before the examples took base 2), for an A/B in one process (fastmath)
example_base_e_accurate  the same without fastmath
example_fma     diagnostic: examples/attention.tj with FlashAttention-3's order, the row maxima of the raw
                scores times scale * log2(e) and p = exp2(fma(s, scale2, -m)) (one FFMA an element for
                the multiply and the subtraction; right only for scale > 0) (fastmath)
example_unmasked  diagnostic: examples/attention.tj without the key mask (right only where BN divides S,
                as at S = 4096): what the mask's compares and selects cost (fastmath)
example_last_masked  examples/attention.tj with the key mask under `if j + BN > S` (only a last, partial
                key block is masked, as FlashAttention does; right for every S) (fastmath)
causal          examples/attention_causal.tj (fastmath; FLOPs counted as half)
causal_accurate the same without fastmath
causal_every_block  examples/attention_causal.tj with its mask on every key block, the form before it
                masked only the blocks that cross the diagonal or the end, for an A/B (fastmath)
gqa             examples/attention_gqa.tj, G = 8 K/V heads for H = 32 (fastmath)
gqa_accurate    the same without fastmath

Every result is checked against SDPA (max error 2e-2 of the largest |value|)
before it is timed; SDPA is timed in the same process for every shape. With
--small the kernels run once at B1 H2 S512 (for compute-sanitizer).
"""
import argparse
import functools
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (do_bench, fastest, close_enough, source, example; imports tilejit)

ROWS = [dict(BM=128, BN=128, warps=8, stages=2), dict(BM=128, BN=64, warps=8, stages=2),
        dict(BM=128, BN=64, warps=8, stages=3)]
ROWS_AHEAD = ROWS[1:] + [dict(BM=64, BN=64, warps=4, stages=2)]  # 128 x 128 spills with two S held
FAST, ACCURATE = {"fastmath": 1}, {"fastmath": 0}
# name: (kernel, where it is, extra params (examples: edits of their text), configurations)
VARIANTS = {
    "rows": ("attention_rows", "kernels", {}, ROWS),
    "exp2": ("attention_rows_exp2", "kernels", FAST, ROWS),
    "exp2_accurate": ("attention_rows_exp2", "kernels", ACCURATE, ROWS[:2]),
    "pipelined": ("attention_rows_pipelined", "kernels", FAST, ROWS),
    "rows_fa3": ("attention_rows_fa3", "kernels", dict(turns=0), ROWS),
    "rows_fa3_turns": ("attention_rows_fa3", "kernels", dict(turns=1), ROWS),
    "fa3": ("attention_fa3", "kernels", dict(FAST, turns=0), ROWS),
    "fa3_turns": ("attention_fa3", "kernels", dict(FAST, turns=1), ROWS),
    "fa3_accurate": ("attention_fa3", "kernels", dict(ACCURATE, turns=0), ROWS[:2]),
    "causal_fa3": ("attention_causal_fa3", "kernels", dict(FAST, turns=0), ROWS),
    "causal_fa3_turns": ("attention_causal_fa3", "kernels", dict(FAST, turns=1), ROWS),
    "gqa_fa3": ("attention_gqa_fa3", "kernels", dict(FAST, turns=0), ROWS),
    "ahead": ("attention_ahead", "kernels", FAST, ROWS_AHEAD),
    "causal_ahead": ("attention_causal_ahead", "kernels", FAST, ROWS_AHEAD),
    "rows_ahead": ("attention_rows_ahead", "kernels", dict(turns=0), ROWS_AHEAD),
    "rows_ahead_turns": ("attention_rows_ahead", "kernels", dict(turns=1), ROWS_AHEAD),
    "example": ("attention", "examples", FAST, ROWS[:2]),
    "example_accurate": ("attention", "examples", ACCURATE, ROWS[:2]),
    "example_base_e": ("attention", "examples", dict(FAST, edit="base_e"), ROWS[:2]),
    "example_base_e_accurate": ("attention", "examples", dict(ACCURATE, edit="base_e"), ROWS[:2]),
    "example_fma": ("attention", "examples", dict(FAST, edit="fma"), ROWS[:2]),
    "example_unmasked": ("attention", "examples", dict(FAST, edit="unmasked"), ROWS[:2]),
    "example_last_masked": ("attention", "examples", dict(FAST, edit="last_masked"), ROWS[:2]),
    "causal": ("attention_causal", "examples", FAST, ROWS[:2]),
    "causal_accurate": ("attention_causal", "examples", ACCURATE, ROWS[:2]),
    "causal_every_block": ("attention_causal", "examples", dict(FAST, edit="causal_every_block"), ROWS[:2]),
    "gqa": ("attention_gqa", "examples", FAST, ROWS[:2]),
    "gqa_accurate": ("attention_gqa", "examples", ACCURATE, ROWS[:2]),
}
SMALL = dict(BM=128, BN=64, warps=8, stages=2)
GROUP = 4  # gqa: query heads a K/V head (H32 G8, as bench.py's grouped-query row; --small: H2 G1)
LOG2E = "scale2 = scale * 1.4426950408889634"


def replaced(text, old, new):
    """text with old made new; an error where old is not there, so that a
    variant never times an unedited kernel under another name."""
    if old not in text:
        raise ValueError(f"{old!r} is not in the example")
    return text.replace(old, new)


def base_e(text):
    """An example in base e, the form it had before base 2: the scores times
    scale alone, exp for p and alpha."""
    return replaced(replaced(text, LOG2E, "scale2 = scale"), "exp2(", "exp(")


def fma_order(text):
    """The maxima of the raw scores, scaled (the same maxima for scale > 0),
    and the scale's multiply fused with the subtraction of the maximum."""
    text = replaced(text, "0:D]))) * scale2\n", "0:D])))\n")
    text = replaced(text, "max(s, axis = 1))", "max(s, axis = 1) * scale2)")
    return replaced(text, "exp2(s - m_new[:, None])", "exp2(fma(s, scale2, -m_new[:, None]))")


MASK = "        s = where((j + arange(BN))[None, :] < S, s, -inf)\n"


def unmasked(text):
    return replaced(text, MASK, "")


def last_masked(text):
    return replaced(text, MASK, "        if j + BN > S {\n    " + MASK + "        }\n")


CAUSAL_MASK = ("            cols = j + arange(BN)\n"
               "            s = where(cols[None, :] <= rows[:, None] && cols[None, :] < S, s, -inf)\n")
CAUSAL_IF = "        if j + BN > minimum(q0 + 1, S) { # only blocks crossing the diagonal or the end need the mask\n"


def causal_every_block(text):
    """The causal example with its mask on every key block (the if around it dropped)."""
    outer = "".join(line[4:] + "\n" for line in CAUSAL_MASK.splitlines())
    return replaced(text, CAUSAL_IF + CAUSAL_MASK + "        }\n", outer)


EDITS = {"base_e": base_e, "fma": fma_order, "unmasked": unmasked, "last_masked": last_masked,
         "causal_every_block": causal_every_block}


def source_of(kernel, where, extra):
    if where == "kernels":
        return bench.source().replace("{T}", "bf16"), "bench/gpu/kernels.tj"
    plain = bench.example(kernel + ".tj")
    if "edit" in extra:
        plain = EDITS[extra["edit"]](plain)
    tune = next(line for line in plain.splitlines() if line.lstrip().startswith("tune "))
    return replaced(plain, tune, tune + f"\n    const fastmath = {extra['fastmath']}"), f"examples/{kernel}.tj"


def run(jit, name, batch, heads, seq, dim, configs, repeat=True):
    kernel, where, extra, _ = VARIANTS[name]
    causal = kernel.startswith("attention_causal")
    kv_heads = max(1, heads // GROUP) if kernel.startswith("attention_gqa") else heads
    q = torch.randn(batch, heads, seq, dim, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(batch, kv_heads, seq, dim, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    o = torch.empty_like(q)
    scale = dim ** -0.5
    sdpa = functools.partial(torch.nn.functional.scaled_dot_product_attention, is_causal=causal,
                             **(dict(enable_gqa=True) if kv_heads != heads else {}))
    ref = sdpa(q, k, v)
    packed = kernel.startswith("attention_rows")  # [B * H * S, D] views and S
    args = [t.view(-1, dim) for t in (q, k, v, o)] + [scale, seq] if packed else [q, k, v, o, scale]
    src, file = source_of(kernel, where, extra)
    tuned = extra if where == "kernels" else {}  # an example's fastmath is a const in its text

    def attempt(params):
        fn = jit.compile(src, kernel, *args, params=dict(params, **tuned), file=file)
        fn(*args)
        torch.cuda.synchronize()
        bench.close_enough(kernel, o, ref, 2e-2)
        if not repeat:
            return 0.0
        t = bench.do_bench(lambda: fn(*args))
        print(f"  {name} D{dim} {params}: {t:.3f} ms", flush=True)
        return t

    best, error = bench.fastest(configs, attempt)
    peer = bench.do_bench(lambda: sdpa(q, k, v)) if repeat else None
    flops = 4 * batch * heads * seq * seq * dim // (2 if causal else 1)
    shape = f"B{batch} H{heads}" + (f" G{kv_heads}" if kv_heads != heads else "") + f" S{seq} D{dim}"
    row = dict(name=name, kernel=kernel, shape=shape, error=error)
    if best:
        row.update(ms=best[0], config=best[1])
    if best and peer:
        row.update(tflops=flops / best[0] / 1e9, sdpa_ms=peer, sdpa_tflops=flops / peer / 1e9,
                   ratio=peer / best[0])
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(VARIANTS))
    ap.add_argument("--dims", default="128")
    ap.add_argument("--configs", type=int, default=3, help="at most this many configurations a variant")
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--tag", default="")
    ap.add_argument("--json")
    args = ap.parse_args()
    jit = bench.tilejit.Jit("cuda")
    rows = []
    for name in args.only.split(","):
        for dim in map(int, args.dims.split(",")):
            if args.small:
                rows.append(run(jit, name, 1, 2, 512, dim, [SMALL], repeat=False))
            else:
                rows.append(run(jit, name, 4, 32, 4096, dim, VARIANTS[name][3][:args.configs]))
            r = rows[-1]
            print(f"{args.tag} {r['name']:24} {r['shape']:26} " +
                  (f"{r.get('tflops', 0):7.1f} TFLOP/s  SDPA {r.get('sdpa_tflops', 0):7.1f}  "
                   f"ratio {r.get('ratio', 0):.3f}  {r['config']}" if "config" in r else f"FAILED {r['error']}"),
                  flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(tag=args.tag, device=torch.cuda.get_device_name(), rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
