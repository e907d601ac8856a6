"""The Python package on the cpu device (the reference interpreter):
NumPy arrays through DLPack, dispatch per signature, the fixed function's
contract, dtypes, strided views, errors, tuning. Cases needing torch or a
GPU skip with the reason."""
import os

import numpy as np
import pytest

import tilejit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOFTMAX = os.path.join(ROOT, "examples", "softmax.tj")

COPY = """
kernel copy(x: {dt}[N], y: {dt}[N])
    grid (cdiv(N, BLOCK))
    const BLOCK = 64
{{
    i = program_id(0) * BLOCK
    store(y[i:i+BLOCK], load(x[i:i+BLOCK]))
}}
"""

AXPY = """
kernel axpy(x: f32[N], y: f32[N], a: f32, n: i32)
    grid (cdiv(N, 64))
    const BLOCK = 64
{
    i = program_id(0) * BLOCK
    store(y[i:i+BLOCK], load(x[i:i+BLOCK]) * a + load(y[i:i+BLOCK]) + n)
}
"""

ADD_BF16 = """
kernel add(x: bf16[N], y: bf16[N], out: bf16[N])
    grid (cdiv(N, 64))
    const BLOCK = 64
{
    i = program_id(0) * BLOCK
    store(out[i:i+BLOCK], load(x[i:i+BLOCK]) + load(y[i:i+BLOCK]))
}
"""


def softmax_ref(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.fixture(scope="module")
def softmax():
    return tilejit.kernel(SOFTMAX, "softmax")


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_softmax_at_many_shapes_through_one_kernel(softmax):
    for n in [1, 2, 17, 200, 256, 257, 1000, 4097, 8192]:
        x = rand(3, n, seed=n)
        y = np.full_like(x, np.nan)
        softmax(x, y)
        np.testing.assert_allclose(y, softmax_ref(x), atol=1e-6, err_msg=f"N={n}")


def test_the_fixed_function_for_n_200_refuses_n_1000(softmax):
    x = rand(4, 200)
    fn = softmax.compile(x, np.empty_like(x))
    assert fn.config["BLOCK"] == 256
    y = np.empty_like(x)
    fn(x, y)
    np.testing.assert_allclose(y, softmax_ref(x), atol=1e-6)
    big = rand(4, 1000)
    with pytest.raises(tilejit.TilejitError, match=r"where clause 'BLOCK >= N'.*BLOCK=256, N=1000"):
        fn(big, np.empty_like(big))


def test_strided_views(softmax):
    base = rand(6, 400)
    for x in (base[::2, ::2], base[:, 100:300], base.T[:200, :3].T, base[:, ::-1][:, :50]):
        y = np.empty(x.shape, np.float32)
        softmax(x, y)
        np.testing.assert_allclose(y, softmax_ref(x), atol=1e-6)
    out = np.zeros((3, 400), np.float32)[:, ::2]  # a strided output
    softmax(base[:3, :200], out)
    np.testing.assert_allclose(out, softmax_ref(base[:3, :200]), atol=1e-6)


def test_a_read_only_array_is_an_input(softmax):
    x = rand(2, 64)
    x.flags.writeable = False
    y = np.empty_like(x)
    softmax(x, y)
    np.testing.assert_allclose(y, softmax_ref(x), atol=1e-6)


@pytest.mark.parametrize("dt,np_dtype", [
    ("bool", np.bool_), ("i8", np.int8), ("i16", np.int16), ("i32", np.int32), ("i64", np.int64),
    ("u8", np.uint8), ("u16", np.uint16), ("u32", np.uint32), ("u64", np.uint64),
    ("f16", np.float16), ("f32", np.float32), ("f64", np.float64)])
def test_every_dtype(dt, np_dtype):
    k = tilejit.kernel(COPY.format(dt=dt), "copy")
    x = (np.arange(100) % 7 * 3).astype(np_dtype)
    y = np.zeros_like(x)
    k(x, y)
    np.testing.assert_array_equal(y, x)


def test_bf16_through_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")
    k = tilejit.kernel(ADD_BF16, "add")
    x = np.linspace(-4, 4, 130).astype(ml_dtypes.bfloat16)
    y = np.full(130, 0.5).astype(ml_dtypes.bfloat16)
    out = np.zeros(130, ml_dtypes.bfloat16)
    k(x, y, out)
    want = (x.astype(np.float32) + y.astype(np.float32)).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(out.astype(np.float32), want.astype(np.float32))


def test_scalars_by_position_and_keyword():
    k = tilejit.kernel(AXPY, "axpy")
    x, y = np.arange(100, dtype=np.float32), np.ones(100, np.float32)
    k(x, y, 3, 1)  # an int for the f32 scalar reaches the kernel as 3.0
    np.testing.assert_array_equal(y, 3 * x + 2)
    k(x, y, n=0, a=0.5)
    np.testing.assert_array_equal(y, 3.5 * x + 2)


def test_errors_carry_the_diagnostics(tmp_path):
    bad = tmp_path / "bad.tj"
    bad.write_text("kernel k(x: f32[N])\n    grid (1)\n{\n    store(x[0:4], nope)\n}\n")
    with pytest.raises(tilejit.TilejitError) as e:
        tilejit.kernel(str(bad), "k")(np.zeros(4, np.float32))
    text = str(e.value)
    assert f"{bad}:4:" in text and "error" in text and "^" in text, text
    with pytest.raises(tilejit.TilejitError, match="no kernel named 'nope'"):
        tilejit.kernel(SOFTMAX, "nope")


def test_wrong_arguments(softmax):
    x = rand(2, 8)
    with pytest.raises(tilejit.TilejitError, match="'Y'"):
        softmax(x, np.zeros((2, 8), np.float64))
    with pytest.raises(tilejit.TilejitError, match=r"argument 'Y' .* got list"):
        softmax(x, [[0.0] * 8] * 2)
    with pytest.raises(tilejit.TilejitError, match="takes 2 arguments"):
        softmax(x)
    with pytest.raises(tilejit.TilejitError, match="no parameter 'Z'"):
        softmax(x, Z=x)
    with pytest.raises(tilejit.TilejitError, match="dtype"):
        softmax(x.astype(np.complex64), x.astype(np.complex64))


def test_tune_times_and_prints_the_table(softmax, capsys):
    x = rand(2, 3000)
    results = softmax.tune(x, np.empty_like(x))
    out = capsys.readouterr()
    assert "BLOCK=4096" in out.out and "pruned-where" in out.out, out.out
    assert "18/18" in out.err or "tuning softmax" in out.err, out.err
    timed = [r for r in results if r["status"] == "ok"]
    assert len(timed) == 6 and timed[0]["us"] <= timed[-1]["us"]
    assert softmax.compile(x, np.empty_like(x)).config == timed[0]["config"]


def test_events_report_compiles():
    seen = []
    tilejit.on_event(lambda *e: seen.append(e))
    try:
        k = tilejit.kernel(COPY.format(dt="f32"), "copy")
        x = np.ones(10, np.float32)
        k(x, np.empty_like(x))
        k(x, np.empty_like(x))
    finally:
        tilejit.on_event(lambda *e: None)
    compiles = [e for e in seen if e[0] == "compile" and e[1] == "copy"]
    assert len(compiles) == 1, seen
    kind, kernel, signature, config, reason, ms = compiles[0]
    assert "x: f32[10]" in signature and "new signature" in reason and ms >= 0


def test_the_first_bindings_jit_class():
    x, y = np.arange(100, dtype=np.float32), np.ones(100, np.float32)
    fn = tilejit.Jit("cpu").compile(AXPY, "axpy", x, y, 3, 0)
    fn(x, y, 3, 0)
    np.testing.assert_array_equal(y, 3 * x + 1)


def test_torch_tensors_through_dlpack(softmax):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    x = torch.randn(3, 300)
    y = torch.empty_like(x)
    softmax(x, y)
    assert torch.allclose(y, torch.softmax(x, dim=1), atol=1e-6)
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device for torch")
    xc, yc = x.cuda(), torch.empty_like(x).cuda()
    softmax(xc, yc)
    torch.cuda.synchronize()
    assert torch.allclose(yc.cpu(), torch.softmax(x, dim=1), atol=1e-5)
