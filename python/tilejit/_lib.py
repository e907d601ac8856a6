"""The ctypes layer over libtilejit (include/tilejit/jit.h, dispatch.h).

The library is looked for in $TILEJIT_LIB, then beside this package (an
installed wheel), then in the build trees of a source checkout (build/,
then the newest build-*/), so that PYTHONPATH=python works after a build.
"""
import ctypes
import glob
import os

MAX_RANK = 6
DTYPES = ["invalid", "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
          "f16", "bf16", "f32", "f64"]
FLOAT_DTYPES = {DTYPES.index(n) for n in ("f16", "bf16", "f32", "f64")}
DEVICE_CPU, DEVICE_CUDA = 0, 1
DISPATCH_OTHER_DEVICE = 2  # tj_dispatch_launch_exchange: the arrays are on another device
TUNE_STATUS = ["ok", "pruned-where", "pruned", "failed", "untimed"]


class TilejitError(RuntimeError):
    """An error from tilejit: the diagnostics (FILE:LINE:COL: error: ...,
    the source line and a caret) or the runtime's message."""


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("shape", ctypes.c_int64 * MAX_RANK), ("strides", ctypes.c_int64 * MAX_RANK)]


class Scalar(ctypes.Union):
    _fields_ = [("i", ctypes.c_int64), ("f", ctypes.c_double)]


class Arg(ctypes.Structure):
    _fields_ = [("is_tensor", ctypes.c_int), ("tensor", Tensor), ("scalar", Scalar)]


class LibOptions(ctypes.Structure):  # tj_lib_options (include/tilejit/lib.h)
    _fields_ = [("segment", ctypes.c_int64)]


class Error(ctypes.Structure):
    _fields_ = [("msg", ctypes.c_char * 512)]

    def text(self):
        return self.msg.decode(errors="replace")


class Binding(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_int64)]


class Request(ctypes.Structure):
    _fields_ = [("file", ctypes.c_char_p), ("source", ctypes.c_char_p), ("len", ctypes.c_size_t),
                ("kernel", ctypes.c_char_p), ("params", ctypes.POINTER(Binding)),
                ("nparams", ctypes.c_uint32), ("args", ctypes.POINTER(Arg)),
                ("nargs", ctypes.c_uint32), ("arch", ctypes.c_char_p), ("reason", ctypes.c_char_p)]


class Param(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("dim_names", ctypes.c_char_p * MAX_RANK), ("dim_sizes", ctypes.c_int64 * MAX_RANK)]


class TuneResult(ctypes.Structure):
    _fields_ = [("config", ctypes.POINTER(Binding)), ("nconfig", ctypes.c_uint32),
                ("status", ctypes.c_int), ("stored", ctypes.c_int), ("seconds", ctypes.c_double),
                ("nthreads", ctypes.c_uint32), ("smem_bytes", ctypes.c_uint32),
                ("regs", ctypes.c_int), ("spill_bytes", ctypes.c_int), ("note", ctypes.c_char * 200)]


class TuneReport(ctypes.Structure):
    _fields_ = [("ctx", ctypes.c_void_p), ("results", ctypes.POINTER(TuneResult)),
                ("nresults", ctypes.c_uint32), ("best", ctypes.c_int), ("timed", ctypes.c_uint32),
                ("built", ctypes.c_uint32), ("wall_seconds", ctypes.c_double), ("bucket", ctypes.c_char * 160)]


class Event(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("kernel", ctypes.c_char_p), ("signature", ctypes.c_char_p),
                ("config", ctypes.c_char_p), ("reason", ctypes.c_char_p), ("source", ctypes.c_int),
                ("ms", ctypes.c_double)]


class GraphStats(ctypes.Structure):  # tj_graph_stats (tilejit/array.h), field for field: the C side writes it whole
    _fields_ = [(n, ctypes.c_uint64) for n in ("nodes", "evals", "groups", "kernels_compiled", "kernels_launched",
                                               "cache_hits", "tunings")] + [("compile_ms", ctypes.c_double)] + [
        (n, ctypes.c_uint64) for n in ("kernels_ahead", "kernels_fast", "kernels_swapped", "plans_reused",
                                       "compiles_failed", "kernels_emitted")]


PROGRESS = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.POINTER(TuneResult))
EVENT_HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(Event))

_P, _U32, _I, _ERR = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.POINTER(Error)
_SIGNATURES = {
    "tj_jit_open": (_P, [_I, _I, _ERR]),
    "tj_jit_close": (None, [_P]),
    "tj_jit_set_event_handler": (None, [_P, EVENT_HANDLER, _P]),
    "tj_jit_compile": (_P, [_P, ctypes.POINTER(Request), _ERR]),
    "tj_fn_launch": (_I, [_P, ctypes.POINTER(Arg), _U32, _P, _ERR]),
    "tj_fn_release": (None, [_P]),
    "tj_fn_ptx": (ctypes.c_char_p, [_P]),
    "tj_fn_config": (_U32, [_P, ctypes.POINTER(ctypes.POINTER(Binding))]),
    "tj_dispatch_new": (_P, [_P, ctypes.POINTER(Request), _ERR]),
    "tj_dispatch_free": (None, [_P]),
    "tj_dispatch_params": (_U32, [_P, ctypes.POINTER(ctypes.POINTER(Param))]),
    "tj_dispatch_fn": (_P, [_P, ctypes.POINTER(Arg), _U32, _ERR]),
    "tj_dispatch_launch": (_I, [_P, ctypes.POINTER(Arg), _U32, _P, _ERR]),
    "tj_dispatch_args_from_dlpack": (_I, [_P, ctypes.POINTER(Arg), ctypes.POINTER(_P), _U32, _ERR]),
    "tj_dispatch_launch_dlpack": (_I, [_P, ctypes.POINTER(Arg), ctypes.POINTER(_P), _U32, _P, _ERR]),
    "tj_dispatch_tune": (_I, [_P, ctypes.POINTER(Arg), _U32, PROGRESS, _P, ctypes.POINTER(TuneReport), _ERR]),
    "tj_tune_report_free": (None, [ctypes.POINTER(TuneReport)]),
    # tilejit.lib (include/tilejit/lib.h): lib(jit), x, out, axis, [combine,] flags, stream, err
    "tj_lib_open": (_P, [_P, _ERR]),
    "tj_lib_open_options": (_P, [_P, ctypes.POINTER(LibOptions), _ERR]),
    "tj_lib_close": (None, [_P]),
    "tj_lib_cumsum": (_I, [_P, ctypes.POINTER(Tensor), ctypes.POINTER(Tensor), _I, _U32, _P, _ERR]),
    "tj_lib_cummax": (_I, [_P, ctypes.POINTER(Tensor), ctypes.POINTER(Tensor), _I, _U32, _P, _ERR]),
    "tj_lib_scan": (_I, [_P, ctypes.POINTER(Tensor), ctypes.POINTER(Tensor), _I, ctypes.c_char_p, _U32, _P, _ERR]),
    "tj_lib_sort": (_I, [_P, ctypes.POINTER(Tensor), ctypes.POINTER(Tensor), _I, _U32, _P, _ERR]),
    "tj_lib_argsort": (_I, [_P, ctypes.POINTER(Tensor), ctypes.POINTER(Tensor), _I, _U32, _P, _ERR]),
    # lib, x, k, values, indices, axis, flags, stream, err
    "tj_lib_topk": (_I, [_P, ctypes.POINTER(Tensor), ctypes.c_int64, ctypes.POINTER(Tensor),
                         ctypes.POINTER(Tensor), _I, _U32, _P, _ERR]),
    # lib, &tj_lib_ssm (python/tilejit/lib/_selective_scan.py), out, stream, err
    "tj_lib_selective_scan": (_I, [_P, _P, ctypes.POINTER(Tensor), _P, _ERR]),
}


def _candidates():
    here = os.path.dirname(os.path.abspath(__file__))
    if os.environ.get("TILEJIT_LIB"):
        yield os.environ["TILEJIT_LIB"]
    yield os.path.join(here, "libtilejit.so")
    root = os.path.dirname(os.path.dirname(here))
    yield os.path.join(root, "build", "libtilejit.so")
    builds = glob.glob(os.path.join(root, "build-*", "libtilejit.so"))
    yield from sorted(builds, key=os.path.getmtime, reverse=True)


def bind(lib, signatures):
    """Sets restype and argtypes of lib's functions from a table of name ->
    (restype, argtypes), once per table (for modules with C entries of
    their own: _cuda_c, _mlir)."""
    done = lib.__dict__.setdefault("_bound_tables", set())
    if id(signatures) not in done:
        for name, (restype, argtypes) in signatures.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
        done.add(id(signatures))
    return lib


def load():
    tried = []
    for path in _candidates():
        if not os.path.exists(path):
            tried.append(path)
            continue
        lib = ctypes.CDLL(path)
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
        lib.path = path
        # the same library through PyDLL, which keeps the GIL during the call:
        # for functions that call into Python producers (DLPack's exchange API)
        lib.gil = ctypes.PyDLL(path)
        lib.gil.tj_dispatch_launch_exchange.restype = _I
        lib.gil.tj_dispatch_launch_exchange.argtypes = [_P, _P, ctypes.POINTER(_P), ctypes.POINTER(Arg), _U32, _ERR]
        lib.gil.tj_tensors_from_exchange.restype = _I
        lib.gil.tj_tensors_from_exchange.argtypes = [_P, ctypes.POINTER(_P), _U32, ctypes.POINTER(Tensor),
                                                     ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_int32),
                                                     ctypes.POINTER(_P), _ERR]
        return lib
    raise TilejitError("libtilejit.so not found (pip install ., or build it with cmake and set "
                       "TILEJIT_LIB); looked at: " + ", ".join(tried))


capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
capsule_pointer.restype, capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
capsule_name = ctypes.pythonapi.PyCapsule_GetName
capsule_name.restype, capsule_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
