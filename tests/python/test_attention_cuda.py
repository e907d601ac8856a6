"""The attention examples on a CUDA device against torch's SDPA: plain,
causal (block skipping) and grouped-query heads, at head dims 64 and 128,
sequence lengths that leave partial blocks, and configurations that put
both products on wgmma on sm_90a (4 and 8 warps: one and two warpgroups)
and on mma.sync elsewhere. Skips, with the reason, without torch or a CUDA
device."""
import os

import pytest

import tilejit

torch = pytest.importorskip("torch", reason="torch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device for torch", allow_module_level=True)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = [dict(BM=64, BN=64, warps=4, stages=2), dict(BM=128, BN=64, warps=8, stages=3),
           dict(BM=128, BN=128, warps=8, stages=2)]


def example(name):
    with open(os.path.join(ROOT, "examples", name + ".tj")) as f:
        return f.read()


def check(kernel, heads, kv_heads, seq, dim, causal):
    gen = torch.Generator(device="cuda").manual_seed(seq + dim)
    q = torch.randn(2, heads, seq, dim, device="cuda", dtype=torch.bfloat16, generator=gen)
    k, v = (torch.randn(2, kv_heads, seq, dim, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(2))
    scale = dim ** -0.5
    want = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float().repeat_interleave(heads // kv_heads, 1),
                                                             v.float().repeat_interleave(heads // kv_heads, 1),
                                                             is_causal=causal)
    src = example(kernel)
    for params in CONFIGS:
        o = torch.full_like(q, float("nan"))
        fn = tilejit.Jit("cuda").compile(src, kernel, q, k, v, o, scale, params=params, file=f"examples/{kernel}.tj")
        fn(q, k, v, o, scale)
        torch.cuda.synchronize()
        err = (o.float() - want).abs().max().item()
        assert err < 2e-2, f"{kernel} {params} S={seq} D={dim}: max abs error {err}"


@pytest.mark.parametrize("seq,dim", [(200, 64), (333, 128)])
def test_attention_matches_sdpa(seq, dim):
    check("attention", 4, 4, seq, dim, False)


@pytest.mark.parametrize("seq,dim", [(200, 64), (333, 128)])
def test_causal_attention_matches_sdpa(seq, dim):
    check("attention_causal", 4, 4, seq, dim, True)


@pytest.mark.parametrize("seq,dim", [(200, 64), (333, 128)])
def test_grouped_query_attention_matches_sdpa(seq, dim):
    check("attention_gqa", 8, 2, seq, dim, False)
