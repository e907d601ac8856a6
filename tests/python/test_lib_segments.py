"""tilejit.lib's segmented paths (docs/library.md, "Arrays beyond 2^31
elements") through Python: a small `segment` cuts the axis of these arrays
into several segments, as the default cuts an axis of 2^31 elements or
more; against NumPy on the cpu."""
import numpy as np
import pytest

import tilejit
import tilejit.lib as tl
from test_lib import _cuda  # PyTorch where it has a CUDA device, else None

SEG = 4096  # one radix and top-k tile; scans round it up to their 8192


def keys(n, dt, seed):
    """many equal keys (7 values), NaN of both signs, infinities, -0.0"""
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, n).astype(dt)
    if np.dtype(dt).kind == "f":
        for i, v in enumerate([np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0]):
            x[i * 997 % max(n, 1)::5003] = v
    return x


@pytest.mark.parametrize("n", [0, 1, 8193, 5 * 8192 + 7])
def test_cumsum_segments(n):
    x = np.random.default_rng(n).integers(-9, 10, (2, n)).astype(np.int64)
    np.testing.assert_array_equal(tl.cumsum(x, axis=1, segment=SEG), np.cumsum(x, axis=1))
    f = np.random.default_rng(n).integers(-9, 10, n).astype(np.float32)  # small integers: exact sums
    np.testing.assert_array_equal(tl.cumsum(f, segment=SEG), np.cumsum(f, dtype=np.float32))
    np.testing.assert_array_equal(tl.cummax(f, segment=SEG), np.maximum.accumulate(f))


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.int64])
@pytest.mark.parametrize("n", [0, 1, 4097, 3 * 4096, 20011])
def test_sort_argsort_segments(dt, n):
    x = keys(n, dt, n)
    got = tl.argsort(x, segment=SEG)
    np.testing.assert_array_equal(got, np.argsort(x, kind="stable"))
    np.testing.assert_array_equal(tl.sort(x, segment=SEG).view(np.uint8), x[got].view(np.uint8))


def test_sort_rows_longer_than_a_segment():
    x = np.stack([keys(9001, np.float32, s) for s in range(3)])
    np.testing.assert_array_equal(tl.argsort(x, segment=SEG), np.argsort(x, axis=-1, kind="stable"))
    d = tl.argsort(x, descending=True, segment=SEG)
    # descending, stable: NaN first, then largest first, equal keys in input order
    k = np.where(np.isnan(x), np.inf, x)
    want = np.lexsort((np.broadcast_to(np.arange(x.shape[1]), x.shape), -k, ~np.isnan(x)), axis=-1)
    np.testing.assert_array_equal(d, want)


@pytest.mark.parametrize("k", [1, 64, 500])
def test_topk_segments(k):
    x = keys(6 * 4096 + 99, np.float32, k)
    v, i = tl.topk(x, k, segment=SEG)
    k_nan = np.where(np.isnan(x), np.inf, x)
    want = np.lexsort((np.arange(x.size), -k_nan, ~np.isnan(x)))[:k]
    np.testing.assert_array_equal(i, want)
    np.testing.assert_array_equal(v.view(np.uint32), x[want].view(np.uint32))


def test_segment_errors():
    with pytest.raises(tilejit.TilejitError, match="segment = -5 is outside"):
        tl.cumsum(np.zeros(3, np.float32), segment=-5)
    with pytest.raises(tilejit.TilejitError, match="more than one launch sorts"):
        tl.argsort(np.zeros((3 * 4096, 2), np.float32), axis=0, segment=SEG)


@pytest.mark.skipif(_cuda() is None, reason="needs PyTorch with a CUDA device")
def test_cuda_segments_against_numpy():
    """the segmented kernels as CUDA compiles them (segments of 4096),
    checked against NumPy on the host"""
    torch = _cuda()
    x = keys(20011, np.float32, 5)
    t = torch.from_numpy(x).cuda()
    got = tl.argsort(t, segment=SEG)
    np.testing.assert_array_equal(got.cpu().numpy(), np.argsort(x, kind="stable"))
    np.testing.assert_array_equal(tl.sort(t, segment=SEG).cpu().numpy().view(np.uint32),
                                  x[np.argsort(x, kind="stable")].view(np.uint32))
    for dt in (np.float16, np.int64):
        h = keys(9001, dt, 6)
        np.testing.assert_array_equal(tl.argsort(torch.from_numpy(h).cuda(), segment=SEG).cpu().numpy(),
                                      np.argsort(h, kind="stable"))
    v, i = tl.topk(t, 64, segment=SEG)
    want = np.lexsort((np.arange(x.size), -np.where(np.isnan(x), np.inf, x), ~np.isnan(x)))[:64]
    np.testing.assert_array_equal(i.cpu().numpy(), want)
    c = np.random.default_rng(7).integers(-9, 10, (3, 5 * 8192 + 7)).astype(np.int32)
    for scan in (tl.cumsum, tl.cumsum_multi_phase):
        np.testing.assert_array_equal(scan(torch.from_numpy(c).cuda(), axis=1, segment=SEG).cpu().numpy(),
                                      np.cumsum(c, axis=1, dtype=np.int32))
