"""Random programs of tnp ops against NumPy: elementwise chains with
broadcasting leaves ([M, N], [1, N], [M, 1]), reductions mixed back into
rows, matmuls, where, reversed views. Where NumPy raises, tnp must raise
TilejitError while the graph is built."""
import random

import numpy as np
import pytest

import tilejit.numpy as tnp
from tilejit import TilejitError

STEPS = [
    lambda r, x, y: f"{x} {r.choice(['+', '-', '*'])} {y}",
    lambda r, x, y: f"xp.{r.choice(['exp', 'tanh', 'abs', 'negative', 'square'])}({x} * 0.3)",
    lambda r, x, y: f"xp.sqrt(xp.abs({x}))",
    lambda r, x, y: f"{x}.{r.choice(['sum', 'max', 'min', 'mean'])}(axis={r.choice([0, 1, -1])}, keepdims=True) + {x}",
    lambda r, x, y: f"xp.maximum({x}, {y} * 0.5)",
    lambda r, x, y: f"({x} @ {y}.T) @ {x} * 0.1",
    lambda r, x, y: f"xp.where({x} > {y}, {x}, {y} * 2)",
    lambda r, x, y: f"xp.sum({x} * {y}, axis={r.choice([0, 1])}, keepdims=True) * {x}",
    lambda r, x, y: f"{x}[:, ::-1] + {y}",
]


def program(seed):
    r = random.Random(seed)
    vals, lines = ["a0", "a1", "a2"], []
    for step in range(r.randint(1, 7)):
        lines.append(f"v{step} = " + r.choice(STEPS)(r, r.choice(vals), r.choice(vals)))
        vals.append(f"v{step}")
    return "\n".join(lines), vals[3:], (r.choice([1, 3, 8]), r.choice([1, 5, 16, 33]))


def run(code, outs, xp, leaves):
    env = {"xp": xp, "a0": leaves[0], "a1": leaves[1], "a2": leaves[2]}
    exec(code, env)  # noqa: S102 - the programs are made above
    return [env[o] for o in outs]


@pytest.mark.parametrize("seed", range(120))
def test_random_program(seed):
    code, outs, (m, n) = program(seed)
    rng = np.random.default_rng(seed)
    leaves = [rng.standard_normal(s).astype(np.float32) for s in ((m, n), (1, n), (m, 1))]
    try:
        want = run(code, outs, np, leaves)
    except ValueError:
        with pytest.raises(TilejitError):
            run(code, outs, tnp, [tnp.asarray(a) for a in leaves])
        return
    got = run(code, outs, tnp, [tnp.asarray(a) for a in leaves])
    tnp.eval(got)
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, (code, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-3, equal_nan=True, err_msg=code)
