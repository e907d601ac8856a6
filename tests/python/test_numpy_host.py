"""tilejit.numpy's host work on a warm call (docs/arrays.md, "Python"): dropped op results are
released in one call at the next evaluation, without changing what runs or what memory is kept."""
import ctypes

import numpy as np
import pytest

import tilejit.numpy as tnp
from tilejit import TilejitError


def alive(g, h):
    info = tnp._Info()
    return g.lib.tj_array_get_info(g.handle, h, ctypes.byref(info)) == 0


def arrays(n=64):
    rng = np.random.default_rng(3)
    return [tnp.asarray(rng.standard_normal(n).astype(np.float32)) for _ in range(3)]


def test_dropped_op_results_wait_for_the_next_evaluation():
    x, y, z = arrays()
    g = x._g
    g.before_plan()  # nothing left from earlier tests
    t = x * y
    h = t._h
    del t
    assert g.dead == [h] and alive(g, h), "the release waits"
    r = tnp.exp(x) + z
    tnp.eval(r)
    assert g.dead == [] and not alive(g, h), "the evaluation sent it"
    np.testing.assert_allclose(np.asarray(r), np.exp(np.asarray(x)) + np.asarray(z), rtol=1e-5, atol=1e-6)


def test_results_made_before_an_evaluation_are_released_at_once():
    x, y, _ = arrays()
    g = x._g
    t = x * y
    tnp.eval(x + 1)  # another evaluation: t may have been given a buffer since
    h = t._h
    del t
    assert h not in g.dead and not alive(g, h)


def test_at_most_64_releases_wait():
    x, _, _ = arrays()
    g = x._g
    g.before_plan()
    hs = []
    for _ in range(200):
        t = tnp.exp(x)
        hs.append(t._h)
        del t
        assert len(g.dead) < 64
    assert len(set(hs)) <= 64 + 2, "without an evaluation the batches went and their slots were reused"


def test_releasing_an_evaluated_array_sends_the_waiting_ones_first():
    """A dropped op result keeps its inputs alive until it is released: when the last holder of
    an evaluated array lets go, the waiting releases go first, so its buffer goes at once."""
    x, y, _ = arrays()
    g = x._g
    big = x + y
    tnp.eval(big)  # has a buffer
    hb = big._h
    t = big * 2  # reads it, never evaluated
    del t
    assert g.dead
    del big
    assert g.dead == [] and not alive(g, hb)


def test_a_warm_loop_keeps_the_arena_small_and_the_results_right():
    x, y, z = arrays(1000)
    want = 0.5 * (np.asarray(x) * np.asarray(y) + np.asarray(z))
    top = 0
    for _ in range(300):
        r = (x * y + z) * 0.5
        tnp.eval(r)
        top = max(top, r._h)
        np.testing.assert_allclose(np.asarray(r), want, rtol=1e-6)
        del r
    assert top < x._h + 64, f"node slots are reused: the highest handle was {top}"


def test_operators_raise_at_build_with_the_op_and_shapes():
    x = tnp.asarray(np.ones((3, 4), np.float32))
    y = tnp.asarray(np.ones(5, np.float32))
    with pytest.raises(TilejitError, match="multiply: operands could not be broadcast"):
        x * y
    with pytest.raises(TilejitError, match="add"):
        x + y
    assert (x * 2).shape == (3, 4) and (-x).shape == (3, 4) and abs(x).shape == (3, 4)
    np.testing.assert_array_equal(np.asarray(2.0 - x), np.full((3, 4), 1.0, np.float32))


def test_eval_of_many_arrays_past_the_scratch_arrays():
    x, _, _ = arrays()
    rs = [x * float(i) for i in range(100)]  # 100 handles: more than a graph's scratch array holds
    tnp.eval(*rs)
    for i in (0, 57, 99):
        np.testing.assert_allclose(np.asarray(rs[i]), np.asarray(x) * i, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_a_negative_zero_scalar_keeps_its_sign(dtype):
    """-0.0 is its own cached scalar (by bits) and its own literal in the kernel text ("-0" would
    be the integer 0, which made x * -0.0 give +0 for x > 0)."""
    a = np.array([1.0, -2.0, 0.0, 3.5], dtype)
    x = tnp.asarray(a)
    for got, want in ((x * -0.0, a * -0.0), (-0.0 * x, -0.0 * a), (x * 0.0, a * 0.0)):
        g = np.asarray(got)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(want))
        np.testing.assert_array_equal(g, want)
