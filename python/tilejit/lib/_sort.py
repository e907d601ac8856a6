"""Stable sorts (lib/sort.c, lib/kernels/sort.tj): keys f32, f16, bf16,
i32, u32, i64 in NumPy's order (NaN last; -0.0 equal to 0.0)."""
from ._common import call, new_like

_DESCENDING = 1  # TJ_LIB_DESCENDING


def sort(x, axis=-1, descending=False, *, segment=None):
    """x sorted along axis, stably (descending: largest first, NaN first,
    equal keys still in input order), a new array of x's kind.

    segment (cumsum, cummax, scan, sort, argsort and topk take it): the most elements along
    the axis that one launch indexes (tj_lib_options.segment; None, the
    default 2^31 - 2^16). Longer axes are cut into segments of this many;
    a small value runs those paths on small arrays (the tests)."""
    return call("tj_lib_sort", x, new_like(x), axis, flags=_DESCENDING if descending else 0, segment=segment)


def argsort(x, axis=-1, descending=False, *, segment=None):
    """The int64 indices along axis that sort x stably (as
    np.argsort(x, kind="stable"); descending as torch.sort(stable=True,
    descending=True))."""
    return call("tj_lib_argsort", x, new_like(x, "int64"), axis, flags=_DESCENDING if descending else 0,
                segment=segment)
