"""tilejit.numpy against NumPy: every op, broadcasting, dtypes, views,
zero-size arrays, fusion counts and errors (docs/arrays.md)."""
import math

import numpy as np
import pytest

import tilejit.numpy as tnp
from tilejit import TilejitError

RNG = np.random.default_rng(7)
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "float32", "float64"]
ALL = ["bool"] + INTS + FLOATS


def data(shape, dtype, low=-3, high=3):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) < 0.5
    if dtype.kind == "u":
        return RNG.integers(0, high + 4, shape).astype(dtype)
    if dtype.kind == "i":
        return RNG.integers(low, high + 1, shape).astype(dtype)
    return RNG.uniform(low, high, shape).astype(dtype)


def tol(dtype):
    return {"float16": 2e-3, "float32": 2e-5, "bfloat16": 1e-2}.get(np.dtype(dtype).name, 1e-12)


def check(got, want, rtol=None, atol=None):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        r = rtol if rtol is not None else tol(want.dtype) * 10
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=r,
                                   atol=atol if atol is not None else r, equal_nan=True)


# ---- elementwise ----

BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "equal", "not_equal", "less",
          "less_equal", "greater", "greater_equal"]


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", BINARY)
def test_binary_every_dtype(op, dtype):
    if dtype == "bool" and op in ("subtract",):
        pytest.skip("NumPy refuses bool subtract too")
    a, b = data((3, 17), dtype), data((3, 17), dtype)
    if op == "divide" and np.dtype(dtype).kind in "biu":
        b = np.where(b == 0, 1, b).astype(dtype)
    with np.errstate(all="ignore"):
        want = getattr(np, op)(a, b)
    check(getattr(tnp, op)(tnp.asarray(a), tnp.asarray(b)), want)


@pytest.mark.parametrize("dtype", INTS + FLOATS)
@pytest.mark.parametrize("op", ["floor_divide", "remainder"])
def test_floor_division_signs(op, dtype):
    a = data((64,), dtype, -9, 9)
    b = data((64,), dtype, -4, 4)
    b = np.where(b == 0, 3, b).astype(dtype)
    with np.errstate(all="ignore"):
        check(getattr(tnp, op)(tnp.asarray(a), tnp.asarray(b)), getattr(np, op)(a, b))


@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "int64", "uint8", "uint32", "float16", "float32",
                                   "float64"])
@pytest.mark.parametrize("op", ["negative", "absolute", "sign", "square", "floor", "ceil", "trunc", "exp",
                                "log", "sqrt", "sin", "cos", "tan", "tanh", "exp2", "log2", "log10", "expm1",
                                "log1p", "isnan", "isinf", "isfinite", "logical_not", "invert"])
def test_unary(op, dtype):
    kind = np.dtype(dtype).kind
    if op in ("negative", "sign") and kind == "b":
        pytest.skip("NumPy refuses it for bool")
    if op == "invert" and kind == "f":
        pytest.skip("no invert for floats")
    if op in ("negative",) and kind == "u":
        pytest.skip("wraps in both, but NumPy warns")
    low = 0.1 if op in ("log", "sqrt", "log2", "log10", "log1p") else -2
    a = data((5, 33), dtype, low, 3)
    with np.errstate(all="ignore"):
        want = getattr(np, op)(a)
    check(getattr(tnp, op)(tnp.asarray(a)), want, rtol=3e-3 if dtype == "float16" else None)


def test_math_of_integers_is_numpys_float():
    for dtype, want in [("int8", "float16"), ("int16", "float32"), ("int32", "float64"), ("bool", "float16")]:
        assert tnp.exp(tnp.asarray(data((3,), dtype))).dtype == np.dtype(want)


def test_nan_propagation_in_maximum():
    a = np.array([1.0, np.nan, 3.0, -np.inf], np.float32)
    b = np.array([np.nan, 2.0, 1.0, np.inf], np.float32)
    check(tnp.maximum(a, tnp.asarray(b)), np.maximum(a, b))
    check(tnp.minimum(tnp.asarray(a), b), np.minimum(a, b))


def test_where_clip_logical():
    a, b = data((4, 9), "float32"), data((4, 9), "float32")
    check(tnp.where(tnp.asarray(a) > 0, a, b), np.where(a > 0, a, b))
    check(tnp.clip(tnp.asarray(a), -1, 0.5), np.clip(a, -1, 0.5))
    m, n = a > 0, b > 0
    check(tnp.logical_and(m, tnp.asarray(n)), np.logical_and(m, n))
    check(tnp.logical_or(tnp.asarray(m), n), np.logical_or(m, n))
    check(tnp.logical_xor(tnp.asarray(m), n), np.logical_xor(m, n))
    i, j = data((4, 9), "int32"), data((4, 9), "int32")
    for op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        check(getattr(tnp, op)(tnp.asarray(i), j), getattr(np, op)(i, j))


def test_power_and_operators():
    a = data((8,), "float32", 0.5, 2)
    x = tnp.asarray(a)
    check(x ** 2, a ** 2)
    check(2 ** x, 2 ** a)
    check(-x + 1 - x * 3 / 2, -a + 1 - a * 3 / 2)
    check(abs(-x), abs(-a))


# ---- promotion (NEP 50) ----

@pytest.mark.parametrize("a", ALL)
@pytest.mark.parametrize("b", ALL)
def test_promotion_matches_numpy(a, b):
    x, y = np.zeros(2, a), np.zeros(2, b)
    want = (x + y).dtype if not (a == b == "bool") else np.dtype(bool)
    assert tnp.add(tnp.asarray(x), tnp.asarray(y)).dtype == want


@pytest.mark.parametrize("dtype", ALL)
def test_python_scalars_are_weak(dtype):
    x = np.ones(3, dtype)
    for s in (2, 2.5, True):
        if dtype == "bool" and isinstance(s, bool):
            continue
        want = (x * s).dtype
        got = tnp.asarray(x) * s
        assert got.dtype == want, (dtype, s, got.dtype, want)
        check(got, x * s)


def test_weak_integer_out_of_range_raises_at_build():
    with pytest.raises(TilejitError, match="out of bounds for u8"):
        tnp.asarray(np.ones(3, np.uint8)) + 300


# ---- broadcasting ----

@pytest.mark.parametrize("sa,sb", [((3, 1), (1, 4)), ((5,), (2, 3, 5)), ((), (4, 4)), ((2, 1, 3), (4, 1)),
                                   ((1,), (7,)), ((0, 3), (1, 3)), ((2, 0), (2, 1))])
def test_broadcasting(sa, sb):
    a, b = data(sa, "float32"), data(sb, "float32")
    check(tnp.asarray(a) * tnp.asarray(b) + 1, a * b + 1)


def test_broadcast_error_names_op_and_shapes():
    with pytest.raises(TilejitError, match=r"multiply: operands could not be broadcast together with shapes "
                                           r"f32\[3, 4\] f32\[5\]"):
        tnp.asarray(np.ones((3, 4), np.float32)) * tnp.asarray(np.ones(5, np.float32))


# ---- reductions ----

@pytest.mark.parametrize("op", ["sum", "max", "min", "mean", "prod", "argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1), 2, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(op, axis, keepdims):
    if op in ("argmax", "argmin") and isinstance(axis, tuple):
        pytest.skip("one axis or all")
    a = data((3, 50, 7), "float32", 0.5, 1.5)
    want = getattr(np, op)(a, axis=axis, keepdims=keepdims)
    check(getattr(tnp, op)(tnp.asarray(a), axis=axis, keepdims=keepdims), want, rtol=1e-4)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", ["sum", "max", "min", "mean", "prod", "argmax"])
def test_reduction_dtypes(op, dtype):
    a = data((4, 6), dtype, -2, 2)
    want = getattr(np, op)(a, axis=1)
    check(getattr(tnp, op)(tnp.asarray(a), axis=1), want, rtol=1e-2 if dtype == "float16" else None)


@pytest.mark.parametrize("n", [1, 7, 1000, 4096, 8193, 20000])
def test_long_rows_loop_and_row_kernels(n):
    a = data((3, n), "float32", 0, 1)
    x = tnp.asarray(a)
    check(x.sum(axis=1), a.sum(axis=1), rtol=1e-4)
    check(x.max(axis=1), a.max(axis=1))
    check(x.argmax(axis=1), a.argmax(axis=1))
    check(tnp.softmax(x, axis=1), np.exp(a - a.max(1, keepdims=True)) / np.exp(a - a.max(1, keepdims=True)).sum(
        1, keepdims=True), rtol=1e-4, atol=1e-7)


def test_reductions_across_strided_axes():
    a = data((300, 40), "float32")
    x = tnp.asarray(a)
    check(x.sum(axis=0), a.sum(axis=0), rtol=1e-4)
    check(x.T.sum(axis=1), a.T.sum(axis=1), rtol=1e-4)
    check(x.T.max(axis=0), a.T.max(axis=0))
    check(tnp.sum(x[::3, 1::2], axis=(0, 1)), a[::3, 1::2].sum(), rtol=1e-4)


def test_empty_reductions():
    z = np.zeros((3, 0), np.float32)
    check(tnp.sum(tnp.asarray(z), axis=1), z.sum(axis=1))
    check(tnp.prod(tnp.asarray(z), axis=1), z.prod(axis=1))
    with pytest.raises(TilejitError, match="zero-size"):
        tnp.max(tnp.asarray(z), axis=1)


def test_reductions_and_products_of_constants():
    # no input binds the reduced dims or K: the kernel takes them as constants
    check(tnp.sum(tnp.zeros((0, 3), "float32"), axis=0), np.zeros((0, 3), np.float32).sum(axis=0))
    check(tnp.sum(tnp.zeros((0,), "float32")), np.zeros((0,), np.float32).sum())
    check(tnp.max(tnp.full((4, 5), 2.0, "float32"), axis=0), np.full((4, 5), 2.0, np.float32).max(axis=0))
    check(tnp.mean(tnp.ones((2, 3, 4), "float32"), axis=(0, 2)), np.ones((2, 3, 4), np.float32).mean(axis=(0, 2)))
    check(tnp.argmax(tnp.arange(6.0).reshape(2, 3) * 0, axis=0), np.argmax(np.arange(6.0).reshape(2, 3) * 0, axis=0))
    check(tnp.ones((4, 5), "float32") @ tnp.ones((5, 3), "float32"), np.ones((4, 5), np.float32) @ np.ones((5, 3), np.float32))


# ---- views ----

def test_views_of_inputs_and_of_computed_values():
    a = data((4, 6, 5), "float32")
    x = tnp.asarray(a)
    check(x.T, a.T)
    check(tnp.swapaxes(x, 0, 2) + 1, np.swapaxes(a, 0, 2) + 1)
    check(x[1:3, ::-2, None, 4], a[1:3, ::-2, None, 4])
    check(x[..., 1], a[..., 1])
    check((x * 2).reshape(24, 5), (a * 2).reshape(24, 5))
    check((x * 2).T.reshape(-1), (a * 2).T.reshape(-1))
    check(tnp.expand_dims(x, 1), np.expand_dims(a, 1))
    check(tnp.broadcast_to(x[:, :1, :], (4, 6, 5)) * x, np.broadcast_to(a[:, :1, :], (4, 6, 5)) * a)
    check(tnp.squeeze(x[:, :1]), np.squeeze(a[:, :1]))
    check((x + 1)[2], (a + 1)[2])


def test_non_contiguous_numpy_inputs():
    a = data((12, 12), "float64")
    check(tnp.asarray(a[::2, 3:]) * 2, a[::2, 3:] * 2)
    check(tnp.asarray(a.T) + tnp.asarray(a), a.T + a)
    check(tnp.exp(tnp.asarray(a[:, ::-1])).sum(axis=0), np.exp(a[:, ::-1]).sum(axis=0))


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4, 2)])
def test_zero_size(shape):
    a = data(shape, "float32")
    x = tnp.asarray(a)
    check(tnp.exp(x) + 1, np.exp(a) + 1)
    check(x.reshape(-1), a.reshape(-1))
    check(x.sum(axis=-1), a.sum(axis=-1))


def test_zero_dim():
    check(tnp.asarray(np.float32(3)) * 2, np.float32(3) * 2)
    assert float(tnp.asarray(np.arange(5.0)).sum()) == 10.0


# ---- matmul ----

@pytest.mark.parametrize("sa,sb", [((5, 7), (7, 3)), ((64, 128), (128, 96)), ((2, 5, 7), (7, 4)),
                                   ((3, 1, 4, 6), (2, 6, 5)), ((7,), (7, 3)), ((5, 7), (7,)), ((4, 0), (0, 3))])
def test_matmul(sa, sb):
    a, b = data(sa, "float32"), data(sb, "float32")
    check(tnp.asarray(a) @ tnp.asarray(b), a @ b, rtol=1e-4)


@pytest.mark.parametrize("dtype", ["float16", "float64", "int8", "int32", "int64"])
def test_matmul_dtypes(dtype):
    a, b = data((9, 20), dtype, -2, 2), data((20, 11), dtype, -2, 2)
    check(tnp.matmul(tnp.asarray(a), tnp.asarray(b)), a @ b, rtol=2e-2 if dtype == "float16" else None)


def test_matmul_of_transposed_operands():
    a, b = data((30, 20), "float32"), data((40, 30), "float32")
    check(tnp.asarray(a).T @ tnp.asarray(b).T, a.T @ b.T, rtol=1e-4)


def test_matmul_epilogue_is_one_kernel():
    x, w, b = data((32, 64), "float32"), data((64, 48), "float32"), data((48,), "float32")
    r = data((32, 48), "float32")
    before = tnp.stats()["kernels_launched"]
    y = tnp.gelu(tnp.asarray(x) @ tnp.asarray(w) + tnp.asarray(b)) * 0.5 + tnp.asarray(r)
    tnp.eval(y)
    assert tnp.stats()["kernels_launched"] - before == 1
    h = x @ w + b
    erf = np.vectorize(math.erf)
    check(y, (h * (1 + erf(h / math.sqrt(2))) / 2 * 0.5 + r).astype(np.float32), rtol=1e-4)


# ---- fusion and the cache ----

def test_elementwise_chain_into_reduction_is_one_kernel():
    a, b = data((16, 300), "float32"), data((300,), "float32")
    before = tnp.stats()["kernels_launched"]
    s = tnp.sum(tnp.exp(tnp.asarray(a) * tnp.asarray(b)) + 1, axis=1)
    tnp.eval(s)
    assert tnp.stats()["kernels_launched"] - before == 1
    check(s, (np.exp(a * b) + 1).sum(axis=1), rtol=1e-4)


def test_softmax_of_scale_and_mask_is_one_kernel():
    a, m = data((8, 500), "float32"), data((8, 500), "float32")
    before = tnp.stats()["kernels_launched"]
    y = tnp.softmax(tnp.asarray(a) * 0.125 + tnp.asarray(m), axis=-1)
    tnp.eval(y)
    assert tnp.stats()["kernels_launched"] - before == 1
    z = a * 0.125 + m
    e = np.exp(z - z.max(-1, keepdims=True))
    check(y, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_layer_norm_matmul_bias_gelu_at_most_two_kernels():
    x, w, b = data((16, 64), "float32"), data((64, 32), "float32"), data((32,), "float32")
    before = tnp.stats()["kernels_launched"]
    y = tnp.gelu(tnp.layer_norm(tnp.asarray(x)) @ tnp.asarray(w) + tnp.asarray(b))
    tnp.eval(y)
    assert tnp.stats()["kernels_launched"] - before <= 2
    xn = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    h = xn @ w + b
    check(y, (h * (1 + np.vectorize(math.erf)(h / math.sqrt(2))) / 2).astype(np.float32), rtol=1e-4, atol=1e-5)


def test_repeated_graph_compiles_nothing():
    a = data((6, 70), "float32")

    def f(x):
        return tnp.sum(tnp.tanh(x) * 3, axis=0)
    tnp.eval(f(tnp.asarray(a)))
    before = tnp.stats()
    for _ in range(3):
        y = f(tnp.asarray(a))
        tnp.eval(y)
    after = tnp.stats()
    assert after["kernels_compiled"] == before["kernels_compiled"]
    assert after["kernels_launched"] - before["kernels_launched"] == 3
    check(y, (np.tanh(a) * 3).sum(axis=0), rtol=1e-5)


def test_plan_memo_reuses_only_the_same_structure():
    """The plan memo (docs/arrays.md): the same graph again reuses its plan;
    another constant, shape or layout is planned afresh, and all are right."""
    a, b = data((5, 40), "float32"), data((5, 40), "float32")

    def reused(x, y, c):
        r = tnp.exp(x * y + c)
        before = tnp.stats()["plans_reused"]
        tnp.eval(r)
        n = tnp.stats()["plans_reused"] - before
        check(r, np.exp(np.asarray(x) * np.asarray(y) + np.float32(c)), rtol=1e-5)
        return n
    x, y = tnp.asarray(a), tnp.asarray(b)
    reused(x, y, 0.5)
    assert reused(x, y, 0.5) == 1
    assert reused(x, y, 0.25) == 0, "another constant"
    assert reused(x[:3], y[:3], 0.5) == 0, "another shape"
    assert reused(x, tnp.asarray(np.ascontiguousarray(b.T)).T, 0.5) == 0, "another layout"
    assert reused(x, x, 0.5) == 0, "one leaf read twice"


def test_shared_intermediate_is_materialized_once():
    a = data((5, 40), "float32")
    x = tnp.asarray(a)
    t = tnp.exp(x)
    u, v = t.sum(axis=0), t.max(axis=1)
    tnp.eval(u, v)
    check(u, np.exp(a).sum(axis=0), rtol=1e-5)
    check(v, np.exp(a).max(axis=1))


# ---- compositions ----

def test_compositions():
    a = data((6, 33), "float32")
    x = tnp.asarray(a)
    sm = np.exp(a - a.max(-1, keepdims=True))
    sm /= sm.sum(-1, keepdims=True)
    check(tnp.softmax(x, axis=0).sum(axis=0), np.ones(33, np.float32), rtol=1e-5)
    check(tnp.log_softmax(x), np.log(sm), rtol=1e-5, atol=1e-5)
    lse = np.log(np.exp(a).sum(-1))
    check(tnp.logsumexp(x, axis=-1), lse, rtol=1e-5)
    w, b = data((33,), "float32"), data((33,), "float32")
    ln = (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5) * w + b
    check(tnp.layer_norm(x, w, b), ln, rtol=1e-4, atol=1e-5)
    rms = a / np.sqrt((a * a).mean(-1, keepdims=True) + 1e-6) * w
    check(tnp.rms_norm(x, w), rms, rtol=1e-4, atol=1e-5)


def test_mlp_block():
    x = data((8, 32), "float32")
    w1, b1 = data((32, 64), "float32", -0.3, 0.3), data((64,), "float32")
    w2, b2 = data((64, 32), "float32", -0.3, 0.3), data((32,), "float32")
    X = tnp.asarray(x)
    y = X + tnp.gelu(tnp.layer_norm(X) @ w1 + b1) @ w2 + b2
    xn = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    h = xn @ w1 + b1
    h = h * (1 + np.vectorize(math.erf)(h / math.sqrt(2))) / 2
    check(y, (x + h.astype(np.float32) @ w2 + b2).astype(np.float32), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(2, 16, 8), (2, 3, 100, 40), (1, 37, 80), (3, 1, 200, 64)])
def test_attention_block_is_one_flash_kernel(shape):
    q, k, v = data(shape, "float32"), data(shape, "float32"), data(shape, "float32")
    s = 1 / math.sqrt(shape[-1])
    before = tnp.stats()["kernels_launched"]
    y = tnp.softmax(tnp.asarray(q) @ tnp.swapaxes(tnp.asarray(k), -1, -2) * s, axis=-1) @ tnp.asarray(v)
    tnp.eval(y)
    assert tnp.stats()["kernels_launched"] - before == 1, tnp.plan(y, stage="fuse")
    z = q @ np.swapaxes(k, -1, -2) * s
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    check(y, p @ v, rtol=1e-4, atol=1e-5)


def test_attention_with_computed_operands_and_a_shared_score():
    # weights scaled so the scores stay O(1): with logits in the hundreds, f32
    # rounding of q @ k.T alone moves the result past any fixed tolerance
    x = data((32, 16), "float32")
    wq, wk, wv = (data((16, 16), "float32", -0.5, 0.5) for _ in range(3))
    X = tnp.asarray(x)
    q, k, v = X @ wq, X @ wk, X @ wv
    y = tnp.softmax(q @ k.T * 0.25, axis=-1) @ v
    z = (x @ wq) @ (x @ wk).T * 0.25
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    check(y, p @ (x @ wv), rtol=1e-4, atol=1e-4)
    # the scores read elsewhere too: no flash kernel, still right
    sc = q @ k.T * 0.25
    y2, s2 = tnp.softmax(sc, axis=-1) @ v, sc.sum()
    tnp.eval(y2, s2)
    check(y2, p @ (x @ wv), rtol=1e-4, atol=1e-4)
    check(s2, np.float32(z.sum()), rtol=1e-3, atol=1e-3)


def test_attention_with_large_logits_within_their_rounding():
    # scores of a few hundred (to ~1000): exp of the raw scores would overflow f32 past 88, so the flash
    # kernel's running maximum is what keeps y finite. f32 sums the D products of a score in some order: it
    # is off by at most D * eps * (|q| @ |k|.T) * s, each p by that much relatively (after the max), so each
    # y by twice the row's largest such bound times max |v|; the float64 reference takes the same f32 inputs.
    # That bound ignores how the errors cancel (~400x the error seen), so y must also stay within 8x the
    # error of NumPy's own f32 softmax(q @ k.T * s) @ v, which rounds the same logits (1.3x seen).
    shape = (2, 2, 64, 64)
    q, k = data(shape, "float32", -30, 30), data(shape, "float32", -30, 30)
    v = data(shape, "float32", -1, 1)
    s = np.float32(1 / math.sqrt(shape[-1]))
    before = tnp.stats()["kernels_launched"]
    y = tnp.softmax(tnp.asarray(q) @ tnp.swapaxes(tnp.asarray(k), -1, -2) * s, axis=-1) @ tnp.asarray(v)
    tnp.eval(y)
    assert tnp.stats()["kernels_launched"] - before == 1, tnp.plan(y, stage="fuse")
    q64, k64, v64 = q.astype(np.float64), k.astype(np.float64), v.astype(np.float64)
    z = q64 @ np.swapaxes(k64, -1, -2) * float(s)
    assert 200 < np.abs(z).max() < 2000, np.abs(z).max()  # large enough to overflow exp, as intended
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dz = shape[-1] * np.finfo(np.float32).eps * (np.abs(q64) @ np.swapaxes(np.abs(k64), -1, -2)) * float(s)
    bound = 2 * dz.max(-1, keepdims=True) * np.abs(v64).max() + 1e-5
    err = np.abs(np.asarray(y).astype(np.float64) - p @ v64)
    assert np.isfinite(np.asarray(y)).all()
    assert (err <= bound).all(), (err.max(), bound.min(), float((err / bound).max()))
    z32 = q @ np.swapaxes(k, -1, -2) * s
    p32 = np.exp(z32 - z32.max(-1, keepdims=True))
    p32 /= p32.sum(-1, keepdims=True)
    numpy_err = np.abs((p32 @ v).astype(np.float64) - p @ v64).max()
    assert err.max() <= 8 * numpy_err + 1e-6, (err.max(), numpy_err)


# ---- python API ----

def test_creation_functions():
    check(tnp.zeros((2, 3)), np.zeros((2, 3)))
    check(tnp.ones((4,), dtype=tnp.int32), np.ones((4,), np.int32))
    check(tnp.full((2, 2), 7.5, dtype=np.float32), np.full((2, 2), 7.5, np.float32))
    check(tnp.arange(10), np.arange(10))
    check(tnp.arange(1.0, 2.0, 0.25), np.arange(1.0, 2.0, 0.25))
    check(tnp.arange(5, dtype=np.float32) * tnp.ones((3, 1), np.float32), np.arange(5, dtype=np.float32) *
          np.ones((3, 1), np.float32))


def test_attributes_and_conversions():
    a = data((3, 4), "float32")
    x = tnp.asarray(a)
    assert x.shape == (3, 4) and x.dtype == np.float32 and x.ndim == 2 and x.size == 12 and len(x) == 3
    assert x.T.shape == (4, 3)
    np.testing.assert_array_equal(np.asarray(x), a)
    np.testing.assert_array_equal(np.from_dlpack(x * 1), a)
    assert x.tolist() == a.tolist()
    assert "tnp.array" in repr(x)


def test_astype():
    a = data((20,), "float32", -300, 300)
    for dt in ["int8", "int32", "uint8", "float16", "float64", "bool"]:
        want = a.astype(dt) if dt not in ("int8", "uint8") else None
        got = tnp.asarray(a).astype(dt)
        assert got.dtype == np.dtype(dt)
        if want is not None:
            check(got, want)


def test_compile_traces_once_per_signature():
    calls = []

    @tnp.compile
    def f(x, y):
        calls.append(1)
        return tnp.softmax(x * y, axis=-1), x.sum()

    a, b = data((4, 10), "float32"), data((4, 10), "float32")
    for _ in range(3):
        s, t = f(a, b)
        tnp.eval(s, t)
    assert len(calls) == 1
    e = np.exp(a * b - (a * b).max(-1, keepdims=True))
    check(s, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
    check(t, np.float32(a.sum()), rtol=1e-5)
    f(data((2, 3), "float32"), data((2, 3), "float32"))
    assert len(calls) == 2


def test_compile_replays_without_reading_text(monkeypatch):
    # the trace's text is read once into a program (tj_graph_program_parse); a replay builds its nodes from
    # it, with new data of the same signature and a captured constant, and never parses text again
    w = tnp.asarray(data((10,), "float32"))

    @tnp.compile
    def f(x):
        return tnp.tanh(x * w + 1.5), x.max(axis=0)

    a = data((4, 10), "float32")
    f(tnp.asarray(a))

    def no_parse(*args):
        raise AssertionError("a replay parsed the traced text")
    monkeypatch.setattr(tnp._c(), "tj_graph_parse", no_parse)
    monkeypatch.setattr(tnp._c(), "tj_graph_program_parse", no_parse)
    for _ in range(3):
        b = data((4, 10), "float32")
        y, m = f(tnp.asarray(b))
        tnp.eval(y, m)
        check(y, np.tanh(b * np.asarray(w) + 1.5), rtol=1e-5, atol=1e-6)
        check(m, b.max(axis=0))
    assert len(f.traces) == 1


def test_graph_text_parses_back():
    x = tnp.asarray(data((4, 8), "float32"))
    y = tnp.sum(x * 2, axis=1, keepdims=True) - x.T.T
    text = tnp.graph_text(y)
    assert "sum f32[4, 1]" in text and "return" in text


def test_errors_at_build_time():
    x = tnp.asarray(np.ones((3, 4), np.float32))
    with pytest.raises(TilejitError, match="matmul"):
        x @ x
    with pytest.raises(TilejitError, match="reshape: cannot reshape"):
        x.reshape(5)
    with pytest.raises(TilejitError, match="axis 2 is out of bounds"):
        x.sum(axis=2)
    with pytest.raises(TilejitError, match="bitwise_and: not supported for f32"):
        x & x
    with pytest.raises(IndexError):
        x[5]


# ---- gathers, scatter, scans, sorts, concatenation ----

def test_take():
    a = data((5, 6, 3), "float32")
    i = np.array([[4, 0], [2, 2]], np.int64)
    x = tnp.asarray(a)
    check(tnp.take(x, i, axis=0), np.take(a, i, axis=0))
    check(tnp.take(x, np.array([5, 1, -1], np.int32), axis=1), np.take(a, [5, 1, -1], axis=1))
    check(tnp.take(x, np.array([17, 3]), axis=None), np.take(a, [17, 3]))
    check(x[np.array([3, 1])], a[[3, 1]])
    check(x[:, np.array([0, 5, 2])] * 2, a[:, [0, 5, 2]] * 2)
    check(tnp.take(x.T, np.array([1, 0]), axis=2), np.take(a.T, [1, 0], axis=2))


def test_take_along_axis_with_argsort():
    a = data((4, 9), "float32")
    x = tnp.asarray(a)
    idx = np.argsort(a, axis=1)
    check(tnp.take_along_axis(x, idx, axis=1), np.take_along_axis(a, idx, axis=1))
    check(tnp.take_along_axis(x, tnp.argsort(x, axis=0), axis=0), np.sort(a, axis=0))
    check(tnp.take_along_axis(x, np.argmax(a, axis=1)[:, None], axis=1), a.max(axis=1, keepdims=True))


@pytest.mark.parametrize("dtype", ["float32", "int32", "int64", "float64"])
def test_scatter_add(dtype):
    a = data((6, 4), dtype)
    i = np.array([0, 5, 0, 2, 5, 5])
    v = data((6, 4), dtype)
    want = a.copy()
    np.add.at(want, i, v)
    check(tnp.scatter_add(tnp.asarray(a), i, v, axis=0), want, rtol=1e-5)
    w2 = a.copy()
    j = np.array([3, 3, 1])
    v2 = data((6, 3), dtype)
    np.add.at(w2, (slice(None), j), v2)
    check(tnp.scatter_add(tnp.asarray(a), j, tnp.asarray(v2), axis=1), w2, rtol=1e-5)


@pytest.mark.parametrize("dtype", ["int8", "int32", "float32", "float64", "bool", "uint16"])
def test_cumsum(dtype):
    a = data((5, 300), dtype)
    check(tnp.cumsum(tnp.asarray(a), axis=1), np.cumsum(a, axis=1), rtol=1e-4)
    check(tnp.cumsum(tnp.asarray(a), axis=0), np.cumsum(a, axis=0), rtol=1e-4)
    check(tnp.cumsum(tnp.asarray(a)), np.cumsum(a), rtol=1e-4)


@pytest.mark.parametrize("dtype", ["float32", "int32", "int8", "uint16", "int64", "float16"])
def test_sort_argsort(dtype):
    a = data((6, 40), dtype, -50, 50)
    check(tnp.sort(tnp.asarray(a)), np.sort(a, axis=-1))
    check(tnp.sort(tnp.asarray(a), axis=0), np.sort(a, axis=0))
    check(tnp.argsort(tnp.asarray(a), axis=1), np.argsort(a, axis=1, kind="stable"))
    check(tnp.sort(tnp.asarray(a).T * 1), np.sort(a.T))


def test_concatenate_and_stack():
    a, b = data((2, 3), "float32"), data((4, 3), "int32")
    check(tnp.concatenate([tnp.asarray(a), tnp.asarray(b)]), np.concatenate([a, b]))
    check(tnp.concatenate([tnp.asarray(a).T, tnp.asarray(b).T * 2], axis=1), np.concatenate([a.T, b.T * 2], axis=1))
    check(tnp.stack([tnp.asarray(a), tnp.asarray(a) + 1], axis=1), np.stack([a, a + 1], axis=1))
    with pytest.raises(TilejitError, match="concatenate: array 1 is"):
        tnp.concatenate([tnp.asarray(a), tnp.asarray(np.ones((2, 4), np.float32))])


def test_bfloat16():
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed (NumPy has no bfloat16)")
    bf = np.dtype(ml_dtypes.bfloat16)
    a = data((4, 50), "float32").astype(bf)
    b = data((50,), "float32").astype(bf)
    x = tnp.asarray(a)
    assert x.dtype == bf
    check((x * tnp.asarray(b) + 1).astype(np.float32), (a * b + 1).astype(np.float32), rtol=2e-2)
    check(tnp.sum(x, axis=1).astype(np.float32), a.astype(np.float32).sum(axis=1), rtol=2e-2)
    assert (tnp.asarray(a) + np.ones(1, np.float16)).dtype == np.float32


def test_tune_keeps_a_winner():
    a = data((8, 200), "float32")
    before = tnp.stats()["tunings"]
    y = tnp.sum(tnp.exp(tnp.asarray(a)), axis=1)
    tnp.tune(y)
    assert tnp.stats()["tunings"] - before == 1
    check(y, np.exp(a).sum(axis=1), rtol=1e-5)


def test_six_dims_and_batch_axes():
    a = data((2, 3, 4, 5, 6, 7), "float32")
    x = tnp.asarray(a)
    p = (5, 3, 1, 0, 4, 2)
    check(tnp.transpose(x, p) + 1, np.transpose(a, p) + 1)
    check(tnp.transpose(x, p).sum(axis=(1, 4)), np.transpose(a, p).sum(axis=(1, 4)), rtol=1e-4)
    check(x.max(axis=(2, 3)), a.max(axis=(2, 3)))
    check(x.argmax(axis=3), a.argmax(axis=3))
    check((x * 2)[:, ::-1, :, ::-2], (a * 2)[:, ::-1, :, ::-2])
    e = np.exp(a - a.max(2, keepdims=True))
    check(tnp.softmax(x, axis=2), e / e.sum(2, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("n", [4, 20000])
def test_nan_in_reductions(n):
    a = data((3, n), "float32")
    a[1, n // 2] = np.nan
    a[2, 1] = -np.inf
    x = tnp.asarray(a)
    for op in ("max", "min", "argmax", "argmin", "sum"):
        check(getattr(tnp, op)(x, axis=1), getattr(np, op)(a, axis=1), rtol=1e-4)


def test_bfloat16_matmul_on_large_tiles():
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed (NumPy has no bfloat16)")
    bf = np.dtype(ml_dtypes.bfloat16)
    a, b = data((160, 64), "float32").astype(bf), data((64, 136), "float32").astype(bf)
    assert "tile=[128, 128, 32]" in tnp.plan(tnp.asarray(a) @ tnp.asarray(b), stage="tile")
    check((tnp.asarray(a) @ tnp.asarray(b)).astype(np.float32), a.astype(np.float32) @ b.astype(np.float32),
          rtol=2e-2, atol=5e-2)


def test_matmul_operand_prologues_are_fused():
    x, w = data((40, 24), "float32"), data((24, 30), "float16")
    before = tnp.stats()["kernels_launched"]
    y = tnp.relu(tnp.asarray(x) * 0.5) @ tnp.asarray(w).astype(np.float32) + 1
    tnp.eval(y)
    assert tnp.stats()["kernels_launched"] - before == 1, tnp.plan(y, stage="fuse")
    check(y, np.maximum(x * 0.5, 0) @ w.astype(np.float32) + 1, rtol=1e-4)
    # past K the prologues' padding must not count: exp(0) and 0 + 1 are 1
    a, b = data((5, 37), "float32"), data((37, 6), "float32")
    before = tnp.stats()["kernels_launched"]
    z = tnp.exp(tnp.asarray(a)) @ (tnp.asarray(b) + 1)
    tnp.eval(z)
    assert tnp.stats()["kernels_launched"] - before == 1
    check(z, np.exp(a) @ (b + 1), rtol=1e-4)


def numpy_program(xp, x, w):
    """NumPy code as written for NumPy; run with xp = np or tnp."""
    h = xp.maximum(x @ w, 0)
    h = (h - h.mean(axis=-1, keepdims=True)) / xp.sqrt(h.var(axis=-1, keepdims=True) + 1e-5)
    e = xp.exp(h - h.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    idx = xp.argmax(p, axis=1)
    top = xp.take_along_axis(p, idx[:, None], axis=1)
    return (xp.concatenate([p[:, :3], top], axis=1), xp.cumsum(idx), xp.sort(p, axis=1)[:, ::-1],
            xp.where(p > 0.1, p, 0).sum(), xp.clip(h, -1, 1).T @ xp.ones((h.shape[0],), dtype=xp.float32))


def test_a_numpy_program_runs_unchanged():
    x, w = data((12, 20), "float32"), data((20, 16), "float32")
    want = numpy_program(np, x, w)
    got = numpy_program(tnp, tnp.asarray(x), tnp.asarray(w))
    tnp.eval(got)
    for g, wv in zip(got, want):
        check(g, wv, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mshape", [(100, 100), (1, 100), (100,), (2, 1, 100, 100)])
def test_masked_attention_is_one_flash_kernel(mshape):
    q, k, v = (data((2, 3, 100, 40), "float32") for _ in range(3))
    mask = np.where(RNG.random(mshape) < 0.3, -np.inf, 0).astype(np.float32)
    mask[..., 0] = 0  # no row masked whole
    before = tnp.stats()["kernels_launched"]
    y = tnp.softmax(tnp.asarray(q) @ tnp.swapaxes(tnp.asarray(k), -1, -2) * 0.15 + mask, axis=-1) @ tnp.asarray(v)
    tnp.eval(y)
    assert tnp.stats()["kernels_launched"] - before == 1, tnp.plan(y, stage="fuse")
    z = q @ np.swapaxes(k, -1, -2) * np.float32(0.15) + mask
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    check(y, p @ v, rtol=1e-4, atol=1e-5)


# ---- a failed background compile reaches tnp (the stand-in driver: tests/unit/fake_libcuda.c) ----

_FAILED_COMPILE = """
import tilejit.numpy as tnp, numpy as np
from tilejit import TilejitError
a = tnp.asarray(np.ones((64, 64), np.float32), device="cuda")
tnp.eval(a @ a)  # an f32 matmul: its fast tier runs, the optimized kernel compiles on a thread
s = tnp.stats("cuda")
assert s["kernels_fast"] == 1 and s["compiles_failed"] == 0, s
try:
    tnp.finish_compiles("cuda")
    raise SystemExit("finish_compiles did not report the failed compile")
except TilejitError as e:
    assert "cuModuleLoadDataEx" in str(e), e
s = tnp.stats("cuda")
assert s["compiles_failed"] == 1 and s["kernels_swapped"] == 0, s
assert "cuModuleLoadDataEx" in s["last_compile_error"], s
tnp.eval(a @ a)  # the fast tier stays
print("ok", tnp.stats("cuda")["kernels_launched"])
"""


def test_a_failed_background_compile_reaches_stats_and_finish_compiles(tmp_path):
    import os
    import subprocess
    import sys
    import tilejit
    lib = os.environ.get("TILEJIT_LIB", "")
    driver = os.path.join(os.path.dirname(lib), "tests", "fake_driver")
    if not os.path.exists(os.path.join(driver, "libcuda.so.1")):
        pytest.skip("no stand-in driver beside $TILEJIT_LIB (a build tree's tests/fake_driver)")
    package = os.path.dirname(os.path.dirname(os.path.abspath(tilejit.__file__)))
    env = dict(os.environ, LD_LIBRARY_PATH=driver, TJ_FAKE_CUDA_FAIL_WORKER_LOADS="1",
               TILEJIT_CACHE_DIR=str(tmp_path), PYTHONPATH=package)
    r = subprocess.run([sys.executable, "-c", _FAILED_COMPILE], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and r.stdout.startswith("ok 2"), r.stdout + r.stderr


# ---- compositions of the graph's ops (tilejit/numpy.py) ----

@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_round_halves_to_even_with_numpy_signs(dtype):
    a = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.6, 3.4, -0.3, 0.3, -0.0, np.inf, -np.inf, np.nan], dtype)
    big = {"float16": 1025.0, "float32": 8388609.0, "float64": 2.0 ** 52 + 1}[dtype]
    a = np.concatenate([a, np.array([big, np.nextafter(np.array(0.5, dtype), 0)], dtype)])
    got = np.asarray(tnp.round(a))
    np.testing.assert_array_equal(got, np.round(a))
    assert got.dtype == a.dtype and np.array_equal(np.signbit(got), np.signbit(np.round(a)))
    d = data((40,), dtype, -100, 100)
    check(tnp.round(d, 2), np.round(d, 2))


def test_round_integers_to_tens():
    a = np.array([125, 135, -125, -135, 124, 0, 7, -5], np.int64)
    check(tnp.round(a, -1), np.round(a, -1))
    check(tnp.asarray(a).round(), np.round(a))


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_any_all_flip(axis):
    a = data((5, 6), "int32")
    check(tnp.any(a > 2, axis=axis), np.any(a > 2, axis=axis))
    check(tnp.all(a > -3, axis=axis), np.all(a > -3, axis=axis))
    check(tnp.asarray(a).any(axis=axis, keepdims=True), a.any(axis=axis, keepdims=True))
    check(tnp.flip(a, axis), np.flip(a, axis))
    z = np.zeros((0, 3), np.float32)
    check(tnp.any(z, axis=0), np.any(z, axis=0))
    check(tnp.all(z, axis=0), np.all(z, axis=0))


def test_outer():
    a, b = data((4,), "float32"), data((2, 3), "float32")
    check(tnp.outer(a, b), np.outer(a, b))


# ---- assignment (x[key] = v rebinds x; its views are made again) ----

def _set(key, value):
    def f(m, a):
        a[key] = value if not callable(value) else value(m, a)
        return a
    return f


ASSIGNMENTS = {
    "int": _set(0, 5), "slices": _set((slice(1, 3), slice(None, None, 2)), -1),
    "column": _set((slice(None), 1), lambda m, a: m.arange(4.0)),
    "mask": lambda m, a: (a.__setitem__(a > 10, 0), a)[1],
    "reversed": _set((slice(None, None, -2), slice(1, 5, 3)), lambda m, a: m.asarray([[1.0, 2.0]])),
    "overlap": lambda m, a: (a.__setitem__(slice(1, None), a[:-1]), a)[1],
    "ellipsis": _set(Ellipsis, 3), "newaxis": _set((slice(None), None, 2), 7),
    "cast": _set((1, 1), 2.75),
    "views_follow": lambda m, a: (lambda v, w, r: (a.__setitem__((1, 2), 100), v + w[:, 1] + r[:, 0])[1])(
        a[1], a.T, a.reshape(6, 4)),
    "view_of_view": lambda m, a: (lambda q: (a.__setitem__((2, 4), -5), q)[1])(a[1:3][:, 2:]),
    "before_is_kept": lambda m, a: (lambda s: (a.__setitem__(0, 0), a.sum() - s)[1])(a.sum()),
}


@pytest.mark.parametrize("name", ASSIGNMENTS)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_assignment_as_numpy(name, dtype):
    f = ASSIGNMENTS[name]
    a = np.arange(24).reshape(4, 6).astype(dtype)
    x = tnp.asarray(a)
    want = f(np, a)
    check(f(tnp, x), want)
    check(x, a)


def test_assignment_refusals_and_copies():
    x = tnp.arange(6.0)
    with pytest.raises(TilejitError, match="assignment to a view"):
        x[1:3][0] = 1
    with pytest.raises(TilejitError, match="integer array index"):
        x[np.array([1, 1])] = 1
    with pytest.raises(TilejitError, match=r"from shape \(3,\) into shape \(2,\)"):
        x[0:2] = tnp.arange(3.0)
    y, z, w = tnp.array(x), x.copy(), tnp.copy(x)
    y[0], z[1] = 9, 8
    check(x, np.arange(6.0))
    check(y, np.array([9, 1, 2, 3, 4, 5.0]))
    check(z, np.array([0, 8, 2, 3, 4, 5.0]))
    check(w, np.arange(6.0))
    with pytest.raises(TilejitError, match="assigns into an argument"):
        tnp.compile(lambda a: (a.__setitem__(0, 1.0), a)[1])(tnp.arange(3.0))


A46 = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)
COMPOSITIONS = {
    "hstack": lambda m: m.hstack([np.arange(3), np.arange(2)]), "hstack2": lambda m: m.hstack([A46, A46[:, :2]]),
    "vstack": lambda m: m.vstack([np.arange(3), np.arange(3)]), "vstack2": lambda m: m.vstack([A46, A46[:1]]),
    "split": lambda m: m.split(A46, 3, axis=1)[2], "split_at": lambda m: m.split(A46, [1, 3], axis=0)[1],
    "split_empty": lambda m: m.split(A46, [5, 2], axis=1)[1],
    "diff": lambda m: m.diff(A46), "diff2": lambda m: m.diff(A46, 2, axis=0),
    "repeat": lambda m: m.repeat(A46, 3, axis=1), "repeat_flat": lambda m: m.repeat(A46, 2),
    "tile": lambda m: m.tile(A46, (2, 3)), "tile1": lambda m: m.tile(np.arange(3), 3),
    "tile3": lambda m: m.tile(A46, (2, 1, 2)),
    "eye": lambda m: m.eye(4, 5, k=1), "eye32": lambda m: m.eye(3, dtype=np.float32),
    "tril": lambda m: m.tril(A46), "triu": lambda m: m.triu(A46, -1),
    "tril3": lambda m: m.tril(A46.reshape(2, 2, 6), 2),
    "isclose": lambda m: m.isclose(np.array([np.nan, np.inf, -np.inf, 1.0, -2.0, np.inf], np.float32),
                                   np.array([np.nan, np.inf, np.inf, 1.000001, -2.1, 3.0], np.float32)),
    "isclose_nan": lambda m: m.isclose(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]), equal_nan=True),
    "nan_to_num": lambda m: m.nan_to_num(np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)),
    "nan_to_num_given": lambda m: m.nan_to_num(np.array([np.nan, np.inf, -np.inf], np.float64), nan=5.0, posinf=9.0),
}


@pytest.mark.parametrize("name", COMPOSITIONS)
def test_compositions_as_numpy(name):
    want = COMPOSITIONS[name](np)
    got = np.asarray(COMPOSITIONS[name](tnp))
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    np.testing.assert_array_equal(got, want)


def test_allclose_and_bfloat16():
    assert tnp.allclose(A46, A46 + 1e-9) and not tnp.allclose(A46, A46 + 1)
    bf16 = tnp._bfloat16()
    x = np.array([np.nan, np.inf, -np.inf, 1.5], np.float32)
    got = np.asarray(tnp.nan_to_num(x.astype(bf16)))  # NumPy itself leaves bfloat16 as it is
    assert got.dtype == bf16
    np.testing.assert_array_equal(got.astype(np.float32), np.array([0, 3.3895314e38, -3.3895314e38, 1.5], np.float32))
