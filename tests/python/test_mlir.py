"""tilejit.import_mlir against NumPy: the inputs mlir-opt-22 pipelines made
(tests/lit/mlir/inputs/, from src/ by gen.sh) and their hand-written
sources (named linalg ops), each function compared with the same
computation in NumPy; errors at the op's FILE:LINE:COL. Skips, saying why,
where tilejit was built without MLIR 22."""
import os

import numpy as np
import pytest

import tilejit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INPUTS = os.path.join(ROOT, "tests", "lit", "mlir", "inputs")

why = tilejit.mlir_available()
if why:
    pytest.skip(why, allow_module_level=True)

rng = np.random.default_rng(0)


def rand(*shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


def load(name, func, generated=True):
    path = os.path.join(INPUTS, name) if generated else os.path.join(INPUTS, "src", name)
    with open(path) as f:
        return tilejit.import_mlir(f.read(), func, file=os.path.basename(path))


BOTH = pytest.mark.parametrize("generated", [True, False], ids=["mlir-opt", "source"])


@BOTH
def test_gelu_tanh(generated):
    f = load("elementwise.mlir", "gelu_tanh", generated)
    x = rand(64, 256) * 3
    want = 0.5 * x * (1 + np.tanh(0.79788456 * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(f(x), want, rtol=1e-5, atol=1e-6)


@BOTH
def test_select_exp_and_a_bool_result(generated):
    f = load("elementwise.mlir", "select_exp", generated)
    a, b = rand(32, 32), rand(32, 32)
    a[0, 0] = np.nan  # ogt is ordered: false on NaN, so b is selected
    d, gt = f(a, b)
    assert gt.dtype == np.bool_ and not gt[0, 0]
    np.testing.assert_array_equal(gt[1:], (a > b)[1:])
    np.testing.assert_allclose(d, np.exp(np.where(a > b, a, b)) - b, rtol=1e-6, atol=1e-6)


@BOTH
def test_mlp_matmul_bias_relu(generated):
    f = load("mlp.mlir", "mlp", generated)
    x, w, b = rand(16, 64), rand(64, 32), rand(32)
    np.testing.assert_allclose(f(x, w, b), np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-5)


@BOTH
def test_softmax(generated):
    f = load("softmax.mlir", "softmax", generated)
    x = rand(8, 100) * 5
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(f(x), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


@BOTH
def test_batch_matmul_transpose_and_outer_reduction(generated):
    f = load("batch_matmul.mlir", "scores", generated)
    q, k = rand(4, 16, 32), rand(4, 24, 32)
    sc, cs = f(q, k)
    want = q @ k.transpose(0, 2, 1) * 0.125
    np.testing.assert_allclose(sc, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(cs, want.sum(axis=0), rtol=1e-5, atol=1e-5)


@BOTH
def test_slices_reshapes_and_a_transposing_generic(generated):
    f = load("slices.mlir", "slices", generated)
    x = rand(8, 16)
    s, out = f(x)
    np.testing.assert_allclose(s, x[1:9:2, 0:16:2] + np.arange(1, 9, dtype=np.float32), rtol=1e-6)
    np.testing.assert_allclose(out, x.reshape(16, 8) + x.T, rtol=1e-6)


def test_insert_slice():
    f = load("slices.mlir", "insert")
    x, y, r = rand(8, 16), rand(4, 6), rand(16)
    got = f(x, y, r)
    want = x.copy()
    want[2:6, 5:11] = y
    want[7] = r
    np.testing.assert_array_equal(got, want)


def test_repeated_calls_compile_nothing_new():
    f = load("softmax.mlir", "softmax")
    x = rand(8, 100)
    f(x)
    compiled = f.stats["kernels_compiled"]
    for _ in range(3):
        f(rand(8, 100))
    assert f.stats["kernels_compiled"] == compiled
    assert f.stats["evals"] == 4


def test_integer_and_unsigned_semantics():
    f = tilejit.import_mlir("""
func.func @ints(%a: tensor<6xi32>, %b: tensor<6xi32>) -> (tensor<6xi32>, tensor<6xi1>, tensor<6xf32>, tensor<i32>) {
  %mx = arith.maxui %a, %b : tensor<6xi32>
  %lt = arith.cmpi ult, %a, %b : tensor<6xi32>
  %f = arith.uitofp %a : tensor<6xi32> to tensor<6xf32>
  %z = arith.constant dense<0> : tensor<i32>
  %s = linalg.reduce ins(%a : tensor<6xi32>) outs(%z : tensor<i32>) dimensions = [0]
    (%x: i32, %acc: i32) {
      %t = arith.addi %x, %acc : i32
      linalg.yield %t : i32
    }
  return %mx, %lt, %f, %s : tensor<6xi32>, tensor<6xi1>, tensor<6xf32>, tensor<i32>
}""", "ints")
    a = np.array([-1, 2, -3, 4, 2147483647, 0], np.int32)
    b = np.array([1, -2, 3, 4, 1, 0], np.int32)
    mx, lt, fl, s = f(a, b)
    ua, ub = a.view(np.uint32), b.view(np.uint32)
    np.testing.assert_array_equal(mx, np.maximum(ua, ub).view(np.int32))
    np.testing.assert_array_equal(lt, ua < ub)
    np.testing.assert_array_equal(fl, ua.astype(np.float32))
    assert s.dtype == np.int32 and s == a.astype(np.int64).sum().astype(np.int32)  # wraps, as addi does


def test_nan_ignoring_max_and_unordered_compare():
    f = tilejit.import_mlir("""
func.func @nan(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>, tensor<4xi1>) {
  %m = arith.maxnumf %a, %b : tensor<4xf32>
  %u = arith.cmpf ult, %a, %b : tensor<4xf32>
  %o = arith.cmpf one, %a, %b : tensor<4xf32>
  return %m, %u, %o : tensor<4xf32>, tensor<4xi1>, tensor<4xi1>
}""")
    a = np.array([np.nan, 1, np.nan, 2], np.float32)
    b = np.array([3, np.nan, np.nan, 2], np.float32)
    m, u, o = f(a, b)
    np.testing.assert_array_equal(m, np.fmax(a, b))
    np.testing.assert_array_equal(u, ~(a >= b))
    np.testing.assert_array_equal(o, (a != b) & ~np.isnan(a) & ~np.isnan(b))


def test_unsupported_ops_are_errors_at_their_locations():
    text = """func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = math.atan %a : tensor<4xf32>
  %1 = "stablehlo.sine"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
"""
    with pytest.raises(tilejit.TilejitError) as e:
        tilejit.import_mlir(text, file="model.mlir")
    msg = str(e.value)
    assert "model.mlir:2:8: error: 'math.atan': op not imported by tilejit" in msg
    assert "model.mlir:3:8: error: 'stablehlo.sine': op not imported by tilejit" in msg


def test_mlir_parse_errors_and_bad_arguments():
    with pytest.raises(tilejit.TilejitError, match=r"bad.mlir:1:\d+: error: "):
        tilejit.import_mlir("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> { return %b : tensor<4xf32> }",
                            file="bad.mlir")
    f = load("softmax.mlir", "softmax")
    with pytest.raises(tilejit.TilejitError, match=r"expected float32\[8, 100\], got float64\[8, 100\]"):
        f(np.zeros((8, 100)))
    with pytest.raises(tilejit.TilejitError, match="no function 'nope'"):
        load("softmax.mlir", "nope")


def test_matvec_vecmat_dot():
    f = tilejit.import_mlir("""
func.func @vec(%a: tensor<8x5xf32>, %x: tensor<5xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<5xf32>, tensor<f32>) {
  %z = arith.constant 0.0 : f32
  %e8 = tensor.empty() : tensor<8xf32>
  %i8 = linalg.fill ins(%z : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
  %mv = linalg.matvec ins(%a, %x : tensor<8x5xf32>, tensor<5xf32>) outs(%i8 : tensor<8xf32>) -> tensor<8xf32>
  %vm = linalg.vecmat ins(%y, %a : tensor<8xf32>, tensor<8x5xf32>) outs(%x : tensor<5xf32>) -> tensor<5xf32>
  %e0 = tensor.empty() : tensor<f32>
  %i0 = linalg.fill ins(%z : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %d = linalg.dot ins(%mv, %y : tensor<8xf32>, tensor<8xf32>) outs(%i0 : tensor<f32>) -> tensor<f32>
  return %mv, %vm, %d : tensor<8xf32>, tensor<5xf32>, tensor<f32>
}""")
    a, x, y = rand(8, 5), rand(5), rand(8)
    mv, vm, d = f(a, x, y)
    np.testing.assert_allclose(mv, a @ x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(vm, x + y @ a, rtol=1e-5, atol=1e-6)  # the init is accumulated into
    np.testing.assert_allclose(d, (a @ x) @ y, rtol=1e-5, atol=1e-6)


def test_tosa_front_end_output():
    f = load("tosa_mlp.mlir", "tosa_mlp")  # what tosa-to-linalg makes of a TOSA program
    x, w, b = rand(1, 16, 64), rand(1, 64, 32), rand(1, 1, 32)
    r, s = f(x, w, b)
    want = np.clip(x @ w + b, 0, np.finfo(np.float32).max)
    np.testing.assert_allclose(r, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s, np.exp(want).sum(axis=2, keepdims=True), rtol=1e-5)
