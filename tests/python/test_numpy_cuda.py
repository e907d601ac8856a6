"""tilejit.numpy on a CUDA device against NumPy and torch: the op families,
fusion counts of the issue's targets, DLPack both ways. Skips, with the
reason, without torch or a CUDA device."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device for torch", allow_module_level=True)

import tilejit.numpy as tnp  # noqa: E402

RNG = np.random.default_rng(3)


def cuda(a):
    return tnp.asarray(a, device="cuda")


def check(got, want, tol=1e-4):
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


def test_elementwise_reductions_views():
    a = RNG.standard_normal((64, 1000)).astype(np.float32)
    b = RNG.standard_normal(1000).astype(np.float32)
    x, y = cuda(a), cuda(b)
    assert x.device == "cuda:0"
    check(x * y + 1, a * b + 1)
    check((x * y).sum(axis=1), (a * b).sum(axis=1), 1e-3)
    check(x.max(axis=0), a.max(axis=0))
    check(x.argmin(axis=1), a.argmin(axis=1))
    check(x.T[::2] * 2, a.T[::2] * 2)
    check(tnp.sum(x, axis=(0, 1)), np.float32(a.sum()), 1e-2)


def test_compositions_and_matmul():
    a = RNG.standard_normal((64, 1000)).astype(np.float32)
    w = RNG.standard_normal((1000, 96)).astype(np.float32)
    x = cuda(a)
    e = np.exp(a - a.max(1, keepdims=True))
    check(tnp.softmax(x, axis=1), e / e.sum(1, keepdims=True), 1e-5)
    check(tnp.layer_norm(x), (a - a.mean(1, keepdims=True)) / np.sqrt(a.var(1, keepdims=True) + 1e-5), 1e-3)
    check(tnp.relu(x @ cuda(w) + 1), np.maximum(a @ w + 1, 0), 2e-3)


def test_other_ops():
    a = RNG.standard_normal((16, 300)).astype(np.float32)
    x = cuda(a)
    check(tnp.take(x, np.array([3, 1, 15]), axis=0), a[[3, 1, 15]])
    check(tnp.cumsum(x, axis=1), np.cumsum(a, axis=1), 1e-3)
    check(tnp.sort(x), np.sort(a))
    check(tnp.concatenate([x, x * 2]), np.concatenate([a, a * 2]))


def test_targets_kernel_counts():
    x, y, z = (torch.randn(1 << 20, device="cuda") for _ in range(3))
    before = tnp.stats("cuda")["kernels_launched"]
    g = tnp.gelu(tnp.asarray(x) * tnp.asarray(y) + tnp.asarray(z))
    tnp.eval(g)
    assert tnp.stats("cuda")["kernels_launched"] - before == 1
    torch.testing.assert_close(torch.from_dlpack(g), torch.nn.functional.gelu(x * y + z), rtol=1e-5, atol=1e-5)
    s, m = torch.randn(256, 1024, device="cuda"), torch.randn(256, 1024, device="cuda")
    before = tnp.stats("cuda")["kernels_launched"]
    r = tnp.softmax(tnp.asarray(s) * 0.125 + tnp.asarray(m), axis=-1)
    tnp.eval(r)
    assert tnp.stats("cuda")["kernels_launched"] - before == 1
    torch.testing.assert_close(torch.from_dlpack(r), torch.softmax(s * 0.125 + m, -1), rtol=1e-5, atol=1e-6)
    h, w, b = torch.randn(128, 256, device="cuda"), torch.randn(256, 512, device="cuda") / 16, torch.randn(512, device="cuda")
    before = tnp.stats("cuda")["kernels_launched"]
    o = tnp.gelu(tnp.layer_norm(tnp.asarray(h)) @ tnp.asarray(w) + tnp.asarray(b))
    tnp.eval(o)
    assert tnp.stats("cuda")["kernels_launched"] - before <= 2
    ref = torch.nn.functional.gelu(torch.nn.functional.layer_norm(h, (256,)) @ w + b)
    torch.testing.assert_close(torch.from_dlpack(o), ref, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_attention_block_is_one_flash_kernel(dtype):
    q, k, v = (torch.randn(2, 4, 200, 64, device="cuda").to(dtype) for _ in range(3))
    before = tnp.stats("cuda")["kernels_launched"]
    y = tnp.softmax(tnp.asarray(q) @ tnp.swapaxes(tnp.asarray(k), -1, -2) * (1 / math.sqrt(64)), axis=-1) @ \
        tnp.asarray(v)
    tnp.eval(y)
    assert tnp.stats("cuda")["kernels_launched"] - before == 1
    ref = torch.softmax(q.float() @ k.float().transpose(-1, -2) / 8, -1) @ v.float()
    tol = 1e-3 if dtype == torch.float32 else 3e-2
    torch.testing.assert_close(torch.from_dlpack(y).float(), ref, rtol=tol, atol=tol)


def test_masked_attention_is_one_flash_kernel():
    q, k, v = (torch.randn(2, 4, 200, 64, device="cuda") for _ in range(3))
    mask = torch.triu(torch.full((200, 200), float("-inf"), device="cuda"), diagonal=1)  # causal
    before = tnp.stats("cuda")["kernels_launched"]
    y = tnp.softmax(tnp.asarray(q) @ tnp.swapaxes(tnp.asarray(k), -1, -2) * 0.125 + tnp.asarray(mask), axis=-1) @ \
        tnp.asarray(v)
    tnp.eval(y)
    assert tnp.stats("cuda")["kernels_launched"] - before == 1
    ref = torch.softmax(q @ k.transpose(-1, -2) * 0.125 + mask, -1) @ v
    torch.testing.assert_close(torch.from_dlpack(y), ref, rtol=1e-3, atol=1e-3)


def test_an_f32_matmul_fast_tier_and_its_optimized_kernel_give_the_same_bits():
    # docs/arrays.md "Tiered compiles": the first evaluation runs the fast tier (8 warps), the next one the
    # optimized kernel (4 warps) once its background compile is done; ragged shapes mask every edge
    a, w, b = (torch.randn(*s, device="cuda") for s in [(300, 200), (200, 260), (260,)])

    def mm_gelu():
        h = tnp.asarray(a) @ tnp.asarray(w) + tnp.asarray(b)
        return 0.5 * h * (1 + tnp.tanh(0.7978845608028654 * (h + 0.044715 * h * h * h)))

    tnp.finish_compiles("cuda")  # earlier tests' background compiles would count as this one's swaps
    before = tnp.stats("cuda")
    first = mm_gelu()
    tnp.eval(first)
    mid = tnp.stats("cuda")
    assert mid["kernels_fast"] - before["kernels_fast"] == 1
    tnp.finish_compiles("cuda")
    done = tnp.stats("cuda")
    assert done["kernels_swapped"] - before["kernels_swapped"] == 1
    assert done["kernels_compiled"] - before["kernels_compiled"] == 2  # the fast tier, the optimized kernel
    second = mm_gelu()
    tnp.eval(second)
    assert tnp.stats("cuda")["kernels_compiled"] == done["kernels_compiled"]
    assert torch.equal(torch.from_dlpack(first), torch.from_dlpack(second))
    ref = torch.nn.functional.gelu(a @ w + b, approximate="tanh")
    torch.testing.assert_close(torch.from_dlpack(second), ref, rtol=1e-3, atol=1e-3)


def _tier_chains():
    def f16(x, y, z):
        return tnp.sigmoid(x * y + z)

    def bf16(x, y, z):
        return tnp.where(x > y, tnp.gelu(x), x - y)

    def f64(x, y, z):
        return tnp.log1p(tnp.abs(x)) / (y * y + 1)

    def i32(x, y, z):
        return tnp.maximum(x * y, z) + (x & y)

    def f16_to_f32(x, y, z):
        h = x.astype(np.float32) * z.astype(np.float32)
        return tnp.sin(h + tnp.sqrt(tnp.abs(h)))
    return [(f16, torch.float16), (bf16, torch.bfloat16), (f64, torch.float64), (i32, torch.int32),
            (f16_to_f32, torch.float16)]


@pytest.mark.parametrize("chain,dtype", _tier_chains(), ids=lambda c: getattr(c, "__name__", str(c)))
def test_an_elementwise_fast_tier_and_its_optimized_kernel_give_the_same_bits(chain, dtype):
    # docs/arrays.md "Tiered compiles" (a host of 4 or more cores): the fast tier runs one element a thread at
    # twice the warps, the optimized kernel several with vector accesses; 300 x 260 (78000: a partial tile)
    if dtype == torch.int32:
        x, y, z = (torch.randint(-50, 50, (300, 260), device="cuda", dtype=dtype) for _ in range(3))
    else:
        x, y, z = (torch.randn(300, 260, device="cuda").to(dtype) for _ in range(3))
    tnp.finish_compiles("cuda")
    before = tnp.stats("cuda")
    first = chain(*(tnp.asarray(a) for a in (x, y, z)))
    tnp.eval(first)
    assert tnp.stats("cuda")["kernels_fast"] - before["kernels_fast"] == 1
    tnp.finish_compiles("cuda")
    assert tnp.stats("cuda")["kernels_swapped"] - before["kernels_swapped"] == 1
    second = chain(*(tnp.asarray(a) for a in (x, y, z)))
    tnp.eval(second)
    f, s = torch.from_dlpack(first), torch.from_dlpack(second)
    assert torch.equal(f.view(torch.uint8) if f.is_floating_point() else f,
                       s.view(torch.uint8) if s.is_floating_point() else s)  # bytes: NaN equals NaN


def test_attention_with_large_logits():
    # scores of a few hundred (tests/python/test_numpy.py's case, here on the GPU's flash kernel): exp of the
    # raw scores would overflow; y within twice the row's bound on a score's f32 rounding (D * eps * (|q| @
    # |k|.T) * s) times max |v|, and within 8x torch's own f32 error on the same inputs
    g = torch.Generator(device="cuda").manual_seed(5)
    q, k = ((torch.rand(2, 4, 200, 64, device="cuda", generator=g) * 60 - 30) for _ in range(2))
    v = torch.rand(2, 4, 200, 64, device="cuda", generator=g) * 2 - 1
    y = tnp.softmax(tnp.asarray(q) @ tnp.swapaxes(tnp.asarray(k), -1, -2) * 0.125, axis=-1) @ tnp.asarray(v)
    tnp.eval(y)
    q64, k64, v64 = q.double(), k.double(), v.double()
    z = q64 @ k64.transpose(-1, -2) * 0.125
    assert 200 < z.abs().max() < 2000
    ref = torch.softmax(z, -1) @ v64
    dz = 64 * torch.finfo(torch.float32).eps * (q64.abs() @ k64.abs().transpose(-1, -2)) * 0.125
    bound = 2 * dz.amax(-1, keepdim=True) * v64.abs().max() + 1e-5
    got = torch.from_dlpack(y).double()
    err = (got - ref).abs()
    assert torch.isfinite(got).all() and (err <= bound).all(), (err.max().item(), bound.min().item())
    torch_err = ((torch.softmax(q @ k.transpose(-1, -2) * 0.125, -1) @ v).double() - ref).abs().max()
    assert err.max() <= 8 * torch_err + 1e-6, (err.max().item(), torch_err.item())
