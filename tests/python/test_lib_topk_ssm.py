"""tilejit.lib.topk and selective_scan on the cpu (native code where LLVM is
built in, else the interpreter) against NumPy: topk against a stable
argsort (NaN largest, -0.0 equal to 0.0, ties by lower index),
selective_scan against selective_scan_fn's recurrence in float64."""
import numpy as np
import pytest

import tilejit
import tilejit.lib as tl


def topk_ref(x, k, axis):
    """indices of the k largest along axis: NaN first, then by value, ties by index"""
    x = np.moveaxis(x.astype(np.float64), axis, -1)
    isnan = np.isnan(x)
    order = np.lexsort((np.broadcast_to(np.arange(x.shape[-1]), x.shape), -np.where(isnan, 0, x), ~isnan), axis=-1)
    return np.moveaxis(order[..., :k], -1, axis)


def special(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype == np.int32:
        x = rng.integers(-4, 5, shape).astype(np.int32)
        x.flat[::17] = np.iinfo(np.int32).min
        x.flat[5::19] = np.iinfo(np.int32).max
        return x
    x = (rng.integers(-20, 21, shape) / 4).astype(np.float32)
    x.flat[3::7] = np.nan
    x.flat[5::11] = np.inf
    x.flat[6::13] = -np.inf
    x.flat[2::9] = -0.0
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
@pytest.mark.parametrize("shape,k,axis", [((5, 1000), 64, -1), ((3, 37), 5, 1), ((1,), 1, 0), ((4, 64), 64, -1),
                                          ((301, 7), 10, 0), ((2, 129, 3), 17, 1), ((6, 2049), 100, -1), ((2, 40000), 50, -1),
                                          ((20001, 2), 3, 0),
                                          ((3, 8), 0, -1), ((0, 10), 3, -1)])
def test_topk(dtype, shape, k, axis):
    x = special(shape, dtype, sum(shape) + k)
    v, i = tl.topk(x, k, axis=axis)
    want = topk_ref(x, k, axis)
    assert type(v) is np.ndarray and v.dtype == x.dtype and i.dtype == np.int64 and v.shape == want.shape
    np.testing.assert_array_equal(i, want)
    bits = {2: np.uint16, 4: np.uint32}[x.itemsize]
    np.testing.assert_array_equal(v.view(bits), np.ascontiguousarray(np.take_along_axis(x, want, axis)).view(bits))


def test_topk_errors():
    x = np.zeros((4, 10), np.float32)
    with pytest.raises(tilejit.TilejitError, match="k = 11 is outside"):
        tl.topk(x, 11)
    with pytest.raises(tilejit.TilejitError, match="axis 2 is out of range"):
        tl.topk(x, 1, axis=2)
    with pytest.raises(tilejit.TilejitError, match="dtype u8 are not supported"):
        tl.topk(np.zeros(8, np.uint8), 2)
    with pytest.raises(tilejit.TilejitError, match="k = 16385 is more than the 16384"):
        tl.topk(np.zeros(20000, np.float32), 16385)


def ssm_ref(u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False):
    u, delta, A, B, C = (np.asarray(a, np.float64) for a in (u, delta, A, B, C))
    if delta_bias is not None:
        delta = delta + np.asarray(delta_bias, np.float64)[:, None]
    if delta_softplus:
        delta = np.where(delta <= 20, np.log1p(np.exp(delta)), delta)
    h = np.zeros((u.shape[0], u.shape[1], A.shape[1]))
    out = np.empty(u.shape)
    for t in range(u.shape[2]):
        h = np.exp(delta[:, :, t, None] * A) * h + (delta[:, :, t] * u[:, :, t])[:, :, None] * B[:, None, :, t]
        out[:, :, t] = np.einsum("bdn,bn->bd", h, C[:, :, t])
    if D is not None:
        out += u * np.asarray(D, np.float64)[:, None]
    if z is not None:
        z = np.asarray(z, np.float64)
        out *= z / (1 + np.exp(-z))
    return out


def ssm_inputs(nb, dm, length, ns, seed=0):
    rng = np.random.default_rng(seed)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    return dict(u=f(nb, dm, length), delta=(rng.random((nb, dm, length)) * 1.5 - 1).astype(np.float32),
                A=-np.exp(f(dm, ns) * 0.5), B=f(nb, ns, length), C=f(nb, ns, length), D=f(dm), z=f(nb, dm, length),
                delta_bias=f(dm) * 0.1)


# the two phases (CUDA's default for f32), the one pass (the cpu's) in chunks of up
# to 2048 steps and of 128 (1 warp, 4 steps a thread: several chunks at
# these L), and the one pass with a warp a channel (ss_chunked_rows: the
# library's W and TT, and 2 warps of 2 steps a thread: several chunks, and
# a last program with channels past DM)
SSM_PATHS = ["segments", "chunked", "chunked,1,4", "rows", "rows,2,2"]


@pytest.mark.parametrize("nb,dm,length,ns", [(2, 5, 300, 16), (1, 33, 77, 3), (1, 1, 1, 1), (1, 7, 1029, 16),
                                             (2, 3, 64, 64), (1, 0, 5, 16), (1, 4, 0, 16)])
@pytest.mark.parametrize("optional", ["all", "none", "z only"])
@pytest.mark.parametrize("path", SSM_PATHS)
def test_selective_scan(nb, dm, length, ns, optional, path, monkeypatch):
    monkeypatch.setenv("TILEJIT_LIB_SSM", path)
    x = ssm_inputs(nb, dm, length, ns, seed=dm + length)
    kw = dict(delta_softplus=True) if optional == "all" else {}
    if optional == "all":
        kw.update(D=x["D"], z=x["z"], delta_bias=x["delta_bias"])
    elif optional == "z only":
        kw.update(z=x["z"])
    delta = x["delta"] if optional == "all" else np.abs(x["delta"]) * 0.3
    out = tl.selective_scan(x["u"], delta, x["A"], x["B"], x["C"], **kw)
    want = ssm_ref(x["u"], delta, x["A"], x["B"], x["C"], **kw)
    assert type(out) is np.ndarray and out.dtype == np.float32 and out.shape == want.shape
    assert np.linalg.norm(out - want) <= 1e-5 * np.linalg.norm(want) + 1e-30


def test_selective_scan_errors(monkeypatch):
    x = ssm_inputs(1, 4, 8, 16)
    monkeypatch.setenv("TILEJIT_LIB_SSM", "chunked,3,4")
    with pytest.raises(tilejit.TilejitError, match="expected segments, chunked, chunked,W,TT, rows or rows,W,TT"):
        tl.selective_scan(x["u"], x["delta"], x["A"], x["B"], x["C"])
    monkeypatch.delenv("TILEJIT_LIB_SSM")
    with pytest.raises(tilejit.TilejitError, match=r"D must be \[dim\], got \[5\]"):
        tl.selective_scan(x["u"], x["delta"], x["A"], x["B"], x["C"], D=np.zeros(5, np.float32))
    with pytest.raises(tilejit.TilejitError, match="A is f64, expected f32"):
        tl.selective_scan(x["u"], x["delta"], x["A"].astype(np.float64), x["B"], x["C"])


def test_topk_strided_views():
    x = special((40, 600), np.float32, 7)
    for view, axis in ((x[:, ::3], -1), (x.T, 0), (x.T, 1), (x[::2, 5:505], 1)):
        v, i = tl.topk(view, 9, axis=axis)
        want = topk_ref(view, 9, axis)
        np.testing.assert_array_equal(i, want)
        np.testing.assert_array_equal(v, np.take_along_axis(view, want, axis))


@pytest.mark.parametrize("path", SSM_PATHS)
def test_selective_scan_strided_views(path, monkeypatch):
    monkeypatch.setenv("TILEJIT_LIB_SSM", path)
    x = ssm_inputs(2, 12, 200, 16, seed=3)
    wide = ssm_inputs(2, 12, 400, 16, seed=4)
    u = wide["u"][:, :, ::2]                      # a step of 2 along L
    delta = np.ascontiguousarray(x["delta"].transpose(0, 2, 1)).transpose(0, 2, 1)  # L-major memory
    B = wide["B"][:, :, 100:300]                  # an offset view
    out = tl.selective_scan(u, delta, x["A"], B, x["C"], x["D"], x["z"], x["delta_bias"], True)
    want = ssm_ref(u, delta, x["A"], B, x["C"], x["D"], x["z"], x["delta_bias"], True)
    assert np.linalg.norm(out - want) <= 1e-5 * np.linalg.norm(want)
