"""The Python package on a CUDA device, through torch and CuPy arrays (DLPack):
the README softmax right at every N from 1 to 8192 through one Kernel, the
fixed function's refusal, bf16, strided views, the current stream (CUDA
graph capture), CuPy arrays. Every
case skips, with the reason, where torch (or CuPy) or a CUDA device is
missing."""
import os

import pytest

import tilejit

torch = pytest.importorskip("torch", reason="torch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device for torch", allow_module_level=True)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOFTMAX = os.path.join(ROOT, "examples", "softmax.tj")

ADD_BF16 = """
kernel add(x: bf16[N], y: bf16[N], out: bf16[N])
    grid (cdiv(N, 256))
    const BLOCK = 256
{
    i = program_id(0) * BLOCK
    store(out[i:i+BLOCK], load(x[i:i+BLOCK]) + load(y[i:i+BLOCK]))
}
"""


@pytest.fixture(scope="module")
def softmax():
    return tilejit.kernel(SOFTMAX, "softmax")


def test_softmax_right_for_every_n_from_1_to_8192(softmax):
    gen = torch.Generator(device="cuda").manual_seed(0)
    for n in range(1, 8193):
        x = torch.randn(4, n, device="cuda", generator=gen)
        y = torch.full_like(x, float("nan"))
        softmax(x, y)
        err = (y - torch.softmax(x, dim=1)).abs().max().item()
        assert err < 1e-5, f"N={n}: max abs error {err}"


def test_fixed_function_for_200_refuses_1000(softmax):
    x = torch.randn(4, 200, device="cuda")
    fn = softmax.compile(x, torch.empty_like(x))
    y = torch.empty_like(x)
    fn(x, y)
    torch.cuda.synchronize()
    assert torch.allclose(y, torch.softmax(x, dim=1), atol=1e-5)
    big = torch.randn(4, 1000, device="cuda")
    with pytest.raises(tilejit.TilejitError, match=r"BLOCK >= N.*N=1000"):
        fn(big, torch.empty_like(big))


def test_bf16_and_strided_views():
    add = tilejit.kernel(ADD_BF16, "add")
    x = torch.randn(3000, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(3000, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(x)
    add(x, y, out)
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)
    xs, ys, outs = x[::3], y[1::3], torch.empty(6000, device="cuda", dtype=torch.bfloat16)[::6]
    add(xs, ys, outs)
    torch.cuda.synchronize()
    assert torch.equal(outs, xs + ys)


def test_launches_on_the_current_stream_and_under_graph_capture(softmax):
    """torch.cuda.graph captures on a side stream it makes current: a launch
    on any other stream would fail the capture (or run outside the graph),
    so a replay writing y proves the launch went to the current stream."""
    x = torch.randn(64, 1000, device="cuda")
    y = torch.zeros_like(x)
    softmax(x, y)  # compiled before the capture
    torch.cuda.synchronize()
    y.zero_()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        softmax(x, y)
    torch.cuda.synchronize()
    assert torch.count_nonzero(y).item() == 0, "the captured launch ran at capture time"
    graph.replay()
    torch.cuda.synchronize()
    assert torch.allclose(y, torch.softmax(x, dim=1), atol=1e-5)


def test_cupy_arrays():
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    k = tilejit.kernel(SOFTMAX, "softmax")
    x = cupy.random.standard_normal((8, 777), dtype=cupy.float32)
    y = cupy.empty_like(x)
    k(x, y)
    e = cupy.exp(x - x.max(axis=1, keepdims=True))
    assert float(cupy.abs(y - e / e.sum(axis=1, keepdims=True)).max()) < 1e-5


def test_one_kernel_follows_torch_tensors_between_devices(softmax):
    """The launch path remembers the device a tensor type went to last; a
    tensor of that type on another device must still go where it lives."""
    for device in ["cuda", "cpu", "cuda", "cpu", "cpu", "cuda"]:
        x = torch.randn(4, 300, device=device)
        y = torch.empty_like(x)
        softmax(x, y)
        if device == "cuda":
            torch.cuda.synchronize()
        assert torch.allclose(y, torch.softmax(x, dim=1), atol=1e-5), device
