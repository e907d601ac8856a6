"""top-k (lib/topk.c, lib/kernels/topk.tj): the k largest along an axis,
largest first, of f32, f16, bf16 or i32 values."""
import ctypes

from .._lib import TilejitError
from ._common import invoke, new_like


def topk(x, k, axis=-1, *, segment=None):
    """(values, indices): the k largest elements of x along axis, largest
    first, and their int64 indices along it, new arrays of x's kind. NaN
    ranks above +inf, -0.0 equal to +0.0; of equal elements the lower index
    comes first (as torch.topk(sorted=True) gives in practice). k is at
    most 16384; the rows may be of any length (segment: as sort's)."""
    shape = list(x.shape)
    if not shape:
        raise TilejitError("tilejit.lib.topk: x must have at least one dim")
    if not -len(shape) <= axis < len(shape):
        raise TilejitError(f"tilejit.lib.topk: axis {axis} is out of range for an array of rank {len(shape)}")
    k = int(k)
    if not 0 <= k <= shape[axis]:
        raise TilejitError(f"tilejit.lib.topk: k = {k} is outside [0, {shape[axis]}] (the length of axis {axis})")
    shape[axis] = k
    values, indices = new_like(x, shape=shape), new_like(x, "int64", shape=shape)
    def entry(lib, h, t, stream, err):
        tx, tv, ti = (ctypes.byref(a) for a in t)
        return lib.tj_lib_topk(h, tx, k, tv, ti, int(axis), 0, stream, err)

    invoke(entry, x, values, indices, segment=segment)
    return values, indices
