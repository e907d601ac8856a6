"""tilejit.lib.topk and selective_scan on a CUDA device against PyTorch:
topk against torch.topk (values exactly; indices where values are
distinct, and pointing at the right values everywhere), selective_scan
against a pure-torch loop of selective_scan_fn's math (f32 and bf16).
Skips, with the reason, where torch or a CUDA device is missing."""
import pytest

import tilejit.lib as tl

torch = pytest.importorskip("torch", reason="torch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device for torch", allow_module_level=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32])
@pytest.mark.parametrize("shape,k,axis", [((1000, 1024), 64, -1), ((37, 3), 5, 0), ((1,), 1, 0), ((3, 5000), 300, 1),
                                          ((4, 16384), 7, -1), ((3, 128256), 50, -1), ((0, 9), 2, -1)])
def test_topk_vs_torch(dtype, shape, k, axis):
    g = torch.Generator(device="cuda").manual_seed(k)
    x = (torch.randn(shape, device="cuda", generator=g) * 100).to(dtype)
    v, i = tl.topk(x, k, axis=axis)
    tv, _ = torch.topk(x, k, dim=axis)
    assert v.device == x.device and v.dtype == x.dtype and i.dtype == torch.int64
    assert torch.equal(v, tv)
    assert torch.equal(torch.gather(x, axis, i), v)
    ref = torch.sort(x.float() if dtype != torch.int32 else x, dim=axis, descending=True, stable=True)
    assert torch.equal(i, ref.indices.narrow(axis, 0, k))


def test_topk_nan_inf():
    x = torch.randn(64, 777, device="cuda")
    x[:, ::5] = float("nan")
    x[:, 1::7] = float("inf")
    x[:, 2::9] = -float("inf")
    v, i = tl.topk(x, 200)
    tv, _ = torch.topk(x, 200)
    assert torch.equal(v.isnan(), tv.isnan()) and torch.equal(v.nan_to_num(), tv.nan_to_num())
    assert torch.equal(torch.gather(x, 1, i).nan_to_num(), v.nan_to_num())


def ssm_torch(u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False):
    """selective_scan_fn's math in float32 torch, one step at a time"""
    delta = delta.float()
    if delta_bias is not None:
        delta = delta + delta_bias[:, None]
    if delta_softplus:
        delta = torch.nn.functional.softplus(delta)
    u, B, C = u.float(), B.float(), C.float()
    h = torch.zeros(u.shape[0], u.shape[1], A.shape[1], device=u.device)
    ys = []
    for t in range(u.shape[2]):
        h = torch.exp(delta[:, :, t, None] * A) * h + (delta[:, :, t] * u[:, :, t])[:, :, None] * B[:, None, :, t]
        ys.append(torch.einsum("bdn,bn->bd", h, C[:, :, t]))
    out = torch.stack(ys, -1)
    if D is not None:
        out = out + u * D[:, None]
    if z is not None:
        out = out * torch.nn.functional.silu(z.float())
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("nb,dm,length,ns", [(1, 256, 1000, 16), (2, 33, 77, 3), (1, 1, 1, 1), (1, 64, 300, 64)])
# the default (the one pass for bf16, the two phases for f32), the two
# phases, the one pass in chunks of up to 2048 steps and of 128, and with a
# warp a channel
@pytest.mark.parametrize("path", ["", "segments", "chunked", "chunked,1,4", "rows", "rows,2,8"])
def test_selective_scan_vs_torch(dtype, nb, dm, length, ns, path, monkeypatch):
    monkeypatch.setenv("TILEJIT_LIB_SSM", path)
    g = torch.Generator(device="cuda").manual_seed(dm)
    r = lambda *s: torch.randn(*s, device="cuda", generator=g)  # noqa: E731
    u, delta, z = r(nb, dm, length).to(dtype), (r(nb, dm, length) * 0.5 - 1).to(dtype), r(nb, dm, length).to(dtype)
    A, D, bias = -torch.exp(r(dm, ns) * 0.5), r(dm), r(dm) * 0.1
    B, C = r(nb, ns, length).to(dtype), r(nb, ns, length).to(dtype)
    out = tl.selective_scan(u, delta, A, B, C, D, z, bias, True)
    want = ssm_torch(u, delta, A, B, C, D, z, bias, True)
    assert out.dtype == dtype and out.shape == want.shape
    tol = 1e-4 if dtype == torch.float32 else 2e-2
    assert ((out.float() - want).norm() / want.norm()).item() <= tol
