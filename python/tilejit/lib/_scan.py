"""Device-wide scans: cumsum, cummax, and scan with a combine written in
the .tj language (lib/scan.c, lib/kernels/scan.tj)."""
from ._common import call, new_like

_MULTI_PHASE = 2  # TJ_LIB_MULTI_PHASE


def cumsum(x, axis=0, *, segment=None):
    """The inclusive prefix sum of x along axis (default 0), a new array of
    x's kind and dtype (NumPy's cumsum keeps integer dtypes the same way
    for i64/u64; i32 stays i32 here).

    segment (cumsum, cummax, scan, sort, argsort and topk take it): the most elements along
    the axis that one launch indexes (tj_lib_options.segment; None, the
    default 2^31 - 2^16). Longer axes are cut into segments of this many;
    a small value runs those paths on small arrays (the tests)."""
    return call("tj_lib_cumsum", x, new_like(x), axis, segment=segment)


def cumsum_multi_phase(x, axis=0, *, segment=None):
    """cumsum through the multi-phase kernels (three launches) instead of
    the single-pass look-back: what Metal runs; for comparison."""
    return call("tj_lib_cumsum", x, new_like(x), axis, flags=_MULTI_PHASE, segment=segment)


def cummax(x, axis=0, *, segment=None):
    """The running maximum of x along axis (np.maximum.accumulate)."""
    return call("tj_lib_cummax", x, new_like(x), axis, segment=segment)


def scan(x, combine, axis=0, *, segment=None):
    """The inclusive scan of x along axis with an associative combine, a
    .tj expression over a (the earlier value) and b, e.g. "a * b" or
    "maximum(a, b)"."""
    return call("tj_lib_scan", x, new_like(x), axis, combine.encode(), segment=segment)
