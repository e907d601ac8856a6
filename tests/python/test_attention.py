"""The attention examples (base-2 softmax, examples/attention*.tj, and the same
in FlashAttention-3's order, bench/gpu/kernels.tj.in's *_fa3) on NumPy
arrays (the cpu device) against attention computed in float64 by NumPy:
plain, causal and grouped-query heads, sequence lengths that leave partial
query and key blocks. The interpreter and the native code are compared with
each other by tests/cli/examples.sh; this checks the formula itself (a
missing log2(e), a mask off by one, a wrong K/V head would pass there).
Skips without ml_dtypes (NumPy has no bf16)."""
import os

import numpy as np
import pytest

import tilejit

ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")
BF16 = ml_dtypes.bfloat16
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def reference(q, k, v, scale, causal):
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * scale
    if causal:
        seq = q.shape[2]
        s = np.where(np.tril(np.ones((seq, seq), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("bhqk,bhkd->bhqd", p / p.sum(-1, keepdims=True), v)


@pytest.mark.parametrize("kernel,heads,kv_heads,seq,dim", [
    ("attention", 2, 2, 150, 64), ("attention", 1, 1, 77, 128),
    ("attention", 1, 1, 20, 32), ("attention", 1, 1, 64, 32),  # one key block (no loop), whole blocks
    ("attention_causal", 2, 2, 200, 32), ("attention_causal", 1, 1, 20, 32),
    ("attention_gqa", 4, 2, 130, 32)])
def test_attention_example_matches_numpy(kernel, heads, kv_heads, seq, dim):
    check(tilejit.kernel(os.path.join(ROOT, "examples", kernel + ".tj"), kernel), kernel, heads, kv_heads, seq, dim)


# The examples in FlashAttention-3's order and one block further ahead (bench/gpu/kernels.tj.in):
# block 0's softmax before the loop, the last block's P V after it; one block (no iteration), whole
# blocks, partial blocks.
@pytest.mark.parametrize("kernel,heads,kv_heads,seq,dim", [
    ("attention_fa3", 2, 2, 150, 64), ("attention_fa3", 1, 1, 20, 32), ("attention_fa3", 1, 1, 64, 32),
    ("attention_causal_fa3", 2, 2, 200, 32), ("attention_causal_fa3", 1, 1, 20, 32),
    ("attention_gqa_fa3", 4, 2, 130, 32),
    ("attention_ahead", 2, 2, 150, 64), ("attention_ahead", 1, 1, 20, 32), ("attention_ahead", 1, 1, 64, 32),
    ("attention_causal_ahead", 2, 2, 200, 32), ("attention_causal_ahead", 1, 1, 20, 32)])
def test_attention_fa3_order_matches_numpy(kernel, heads, kv_heads, seq, dim):
    with open(os.path.join(ROOT, "bench", "gpu", "kernels.tj.in")) as f:
        source = f.read().replace("{T}", "f32")
    check(tilejit.kernel(source, kernel), kernel, heads, kv_heads, seq, dim)


def check(fn, kernel, heads, kv_heads, seq, dim):
    rng = np.random.default_rng(seq + dim)
    q = rng.standard_normal((1, heads, seq, dim)).astype(BF16)
    k, v = (rng.standard_normal((1, kv_heads, seq, dim)).astype(BF16) for _ in range(2))
    o = np.full((1, heads, seq, dim), np.nan, BF16)
    scale = dim ** -0.5
    fn(q, k, v, o, scale)
    kk, vv = (np.repeat(t.astype(np.float64), heads // kv_heads, axis=1) for t in (k, v))
    want = reference(q.astype(np.float64), kk, vv, scale, kernel.startswith("attention_causal"))
    err = np.abs(o.astype(np.float64) - want).max() / np.abs(want).max()
    # P rounded to bf16 for P V and O to bf16: a few 2^-9 of the largest value
    assert err < 8e-3, f"{kernel} H{heads} G{kv_heads} S{seq} D{dim}: max error {err:.3g} of the largest |value|"
