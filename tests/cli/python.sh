#!/bin/sh
# The Python binding (python/tilejit) on the cpu device, with stand-in tensor
# objects (no torch needed): a float scalar passed as a Python int must reach
# the kernel as that float, and results must be right.
. "$(dirname "$0")/testlib.inc"
LIB=$(dirname "$TILEJIT")/libtilejit.so
[ -f "$LIB" ] || { echo "SKIP: $LIB is not built"; exit 77; }
if ldd "$LIB" 2>/dev/null | grep -q 'libasan\|libubsan'; then
    echo "SKIP: $LIB is a sanitizer build, which python3 cannot load without preloading its runtime"
    exit 77
fi
TILEJIT_LIB=$LIB PYTHONPATH=$SRC/python "$PYTHON" - <<'PY' || fail "python binding"
import ctypes, tilejit

class Tensor:
    """Just what the binding reads of a torch tensor."""
    def __init__(self, values):
        self.buf = (ctypes.c_float * len(values))(*values)
        self.shape, self.dtype = (len(values),), "torch.float32"
    def data_ptr(self): return ctypes.addressof(self.buf)
    def dim(self): return 1
    def stride(self, d): return 1

src = """
kernel axpy(x: f32[N], y: f32[N], a: f32)
    grid (cdiv(N, 64))
    const BLOCK = 64
{
    i = program_id(0) * BLOCK
    store(y[i:i+BLOCK], load(x[i:i+BLOCK]) * a + load(y[i:i+BLOCK]))
}
"""
x, y = Tensor([float(i) for i in range(100)]), Tensor([1.0] * 100)
jit = tilejit.Jit("cpu")
fn = jit.compile(src, "axpy", x, y, 3)
fn(x, y, 3, stream=0)
got = list(y.buf)
want = [3.0 * i + 1.0 for i in range(100)]
assert got == want, (got[:4], want[:4])
try:
    fn(x, y, stream=0)
    raise SystemExit("a missing argument was accepted")
except tilejit.TilejitError as e:
    assert "3 arguments" in str(e), e
try:
    jit.compile("kernel k(", "k")
    raise SystemExit("a malformed kernel compiled")
except tilejit.TilejitError as e:
    assert "error" in str(e), e
print("python binding ok")
PY
exit $((failures > 0))
