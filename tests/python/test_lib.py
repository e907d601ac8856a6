"""tilejit.lib on the cpu (native code where LLVM is built in, else the
interpreter) against NumPy, and on CUDA against PyTorch when both exist."""
import numpy as np
import pytest

import tilejit
import tilejit.lib as tl

SIZES = [0, 1, 2, 1000, 8191, 8192, 8193, 70001]


def rng(seed=0):
    return np.random.default_rng(seed)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dt", [np.int32, np.int64, np.float32, np.float64])
def test_cumsum_1d(n, dt):
    x = (rng(n).integers(-9, 10, n)).astype(dt)
    y = tl.cumsum(x)
    assert type(y) is np.ndarray and y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(y, np.cumsum(x, dtype=dt))


@pytest.mark.parametrize("axis", [0, 1, -1, 2])
def test_cumsum_axes(axis):
    x = rng(1).integers(-5, 6, (7, 301, 3)).astype(np.int32)
    np.testing.assert_array_equal(tl.cumsum(x, axis=axis), np.cumsum(x, axis=axis, dtype=np.int32))


def test_cummax_and_scan():
    x = rng(2).standard_normal((3000, 5)).astype(np.float32)
    np.testing.assert_array_equal(tl.cummax(x, axis=0), np.maximum.accumulate(x, axis=0))
    np.testing.assert_array_equal(tl.scan(x, "minimum(a, b)", axis=0), np.minimum.accumulate(x, axis=0))
    with pytest.raises(tilejit.TilejitError, match="error"):
        tl.scan(x, "a +* b")


def test_cumsum_errors():
    x = np.zeros(10, np.float32)
    with pytest.raises(tilejit.TilejitError, match="axis 3 is out of range"):
        tl.cumsum(x, axis=3)
    with pytest.raises(tilejit.TilejitError, match="dtype bool is not supported"):
        tl.cumsum(np.zeros(4, bool))
    with pytest.raises(tilejit.TilejitError, match="NumPy, PyTorch or CuPy"):
        tl.cumsum([1, 2, 3])


def special_floats(shape, dt, seed):
    x = rng(seed).integers(-4, 5, shape).astype(dt)  # many equal keys: stability shows
    flat = x.reshape(-1)
    for i, v in enumerate([np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, np.nan]):
        if i * 7 < flat.size:
            flat[i * 7] = v
    return x


KEY_DTYPES = [np.float32, np.float16, np.int32, np.uint32]


@pytest.mark.parametrize("dt", KEY_DTYPES)
@pytest.mark.parametrize("n", [1, 2, 37, 1000, 4096])
def test_argsort_rows_stable(dt, n):
    x = special_floats((3, n), dt, n) if np.dtype(dt).kind == "f" else rng(n).integers(0, 7, (3, n)).astype(dt)
    got = tl.argsort(x)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.argsort(x, axis=-1, kind="stable"))
    s = tl.sort(x)
    np.testing.assert_array_equal(s.view(np.uint8), np.take_along_axis(x, got, -1).view(np.uint8))


@pytest.mark.parametrize("dt", KEY_DTYPES)
def test_argsort_descending_stable(dt):
    x = special_floats((4, 513), dt, 3) if np.dtype(dt).kind == "f" else rng(3).integers(0, 5, (4, 513)).astype(dt)
    got = tl.argsort(x, descending=True)
    # descending: NaN first, then largest first, equal keys in input order
    key = np.where(np.isnan(x), np.inf, x.astype(np.float64)) if np.dtype(dt).kind == "f" else x.astype(np.float64)
    first_nan = np.where(np.isnan(x), 0, 1) if np.dtype(dt).kind == "f" else np.zeros(x.shape, int)
    want = np.lexsort((np.arange(x.shape[1])[None, :].repeat(x.shape[0], 0), -key, first_nan), axis=-1)
    np.testing.assert_array_equal(got, want)


def test_sort_empty_and_errors():
    assert tl.sort(np.zeros((0,), np.float32)).shape == (0,)
    assert tl.argsort(np.zeros((3, 0), np.int32)).shape == (3, 0)
    with pytest.raises(tilejit.TilejitError, match="keys of dtype f64 are not supported"):
        tl.sort(np.zeros(4, np.float64))




def _cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


@pytest.mark.skipif(_cuda() is None, reason="needs PyTorch with a CUDA device")
def test_cuda_against_torch():
    torch = _cuda()
    x = torch.randn(3 * 2048 + 5, device="cuda")
    y = tl.cumsum(x)
    assert isinstance(y, torch.Tensor) and y.device == x.device
    torch.testing.assert_close(y, torch.cumsum(x, 0), rtol=1e-4, atol=1e-3)
    k = torch.randint(0, 5, (64, 1000), device="cuda", dtype=torch.int32)
    torch.testing.assert_close(tl.argsort(k), torch.sort(k, stable=True).indices)
    torch.testing.assert_close(tl.argsort(k, descending=True), torch.sort(k, stable=True, descending=True).indices)


@pytest.mark.skipif(_cuda() is None, reason="needs PyTorch with a CUDA device")
@pytest.mark.parametrize("shape,dtype", [((1,), "float32"), ((8193,), "float64"), ((3 * 8192 + 5,), "int64"),
                                         ((2 ** 22 + 3,), "float32"), ((7, 100003), "int32"), ((300, 8192), "float32"),
                                         ((3, 3 * 8192 + 5), "float16"), ((4, 1000), "bfloat16")])
def test_cuda_scans_against_torch(shape, dtype):
    """cumsum (the look-back where it runs, many tiles and lines in flight
    at once: packed words for values of at most 32 bits, two words for 64)
    and the multi-phase kernels on the GPU; integer values, so sums are
    exact (the f16 and bf16 walks stay below 2048 and 256) and compared
    exactly"""
    torch = _cuda()
    g = torch.Generator(device="cuda").manual_seed(sum(shape))
    x = torch.randint(-3, 4, shape, device="cuda", generator=g).to(getattr(torch, dtype))
    want = torch.cumsum(x, -1, dtype=x.dtype)
    assert torch.equal(tl.cumsum(x, axis=-1), want)
    assert torch.equal(tl.cumsum_multi_phase(x, axis=-1), want)
    assert torch.equal(tl.cummax(x, axis=-1), torch.cummax(x, -1).values)


@pytest.mark.skipif(_cuda() is None, reason="needs PyTorch with a CUDA device")
@pytest.mark.parametrize("n,dt", [(1, "float32"), (2049, "float32"), (70001, "float32"), (2 ** 20 + 3, "int32"),
                                  (5000, "int64"), (300001, "float16"), (100000, "bfloat16")])
@pytest.mark.parametrize("descending", [False, True])
def test_cuda_radix_against_torch(n, dt, descending):
    """the whole-array radix sort on the GPU: ties (stability), NaN, -0.0, infinities"""
    torch = _cuda()
    x = torch.randint(-50, 50, (n,), device="cuda").to(getattr(torch, dt))
    if x.is_floating_point() and n > 40:
        x[::97], x[5::89], x[7::101], x[9::103] = float("nan"), -0.0, float("inf"), float("-inf")
    want = torch.sort(x, stable=True, descending=descending)
    torch.testing.assert_close(tl.argsort(x, descending=descending), want.indices)
    got = tl.sort(x, descending=descending)
    bits = lambda t: t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])  # noqa: E731
    assert torch.equal(bits(got), bits(x[want.indices]))  # bit for bit: NaN payloads and -0.0 survive


RADIX_CASES = [((10000,), -1, np.float32), ((5000,), 0, np.int64), ((3, 5000), -1, np.int32),
               ((300, 7), 0, np.float32), ((2, 4100), -1, np.uint32), ((7, 3, 5), 1, np.int64),
               ((70001,), -1, np.float16), ((4500,), 0, np.uint32)]


@pytest.mark.parametrize("shape,axis,dt", RADIX_CASES)
def test_radix_sort_against_numpy(shape, axis, dt):
    """lines past one tile, 64-bit keys and inner axes take the radix sort"""
    x = rng(len(shape)).integers(-50, 50, shape).astype(dt)
    if np.dtype(dt).kind == "f":
        f = x.reshape(-1)
        f[::97], f[5::89], f[7::101], f[9::103] = np.nan, -0.0, np.inf, -np.inf
    want = np.argsort(x, axis=axis, kind="stable")
    np.testing.assert_array_equal(tl.argsort(x, axis=axis), want)
    got = tl.sort(x, axis=axis)
    np.testing.assert_array_equal(got.view(np.uint8), np.take_along_axis(x, want, axis).view(np.uint8))


def test_radix_descending_and_contiguity():
    x = rng(5).integers(0, 9, 6000).astype(np.int32)
    want = np.lexsort((np.arange(x.size), -x.astype(np.int64)))
    np.testing.assert_array_equal(tl.argsort(x, descending=True), want)
    with pytest.raises(tilejit.TilejitError, match="must be row-major contiguous"):
        tl.argsort(np.zeros((8000, 2), np.float32)[:, 0])


@pytest.mark.parametrize("n", [1, 8193, 70001])
def test_cumsum_paths_agree(n):
    """the single-pass look-back (the default) and the multi-phase kernels"""
    x = rng(n + 5).integers(-9, 10, (3, n)).astype(np.int64)
    want = np.cumsum(x, axis=1, dtype=np.int64)
    np.testing.assert_array_equal(tl.cumsum(x, axis=1), want)
    np.testing.assert_array_equal(tl.cumsum_multi_phase(x, axis=1), want)
