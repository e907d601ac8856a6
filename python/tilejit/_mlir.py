"""MLIR import (include/tilejit/mlir.h): import_mlir(text, name) returns a
callable that runs the function through the array front end (its fusion
and tiling) on NumPy arrays, and returns NumPy arrays."""
import ctypes

from . import _kernel, _lib
from ._lib import TilejitError

_P, _U32, _I, _ERR = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.POINTER(_lib.Error)
MAX_VALUES = 64
_DEVICES = {"cpu": 0, "cuda": 1, "interp": 2}  # tj_device_kind


class ValueInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 64), ("dtype", _I), ("rank", _I),
                ("shape", ctypes.c_int64 * _lib.MAX_RANK)]


GraphStats = _lib.GraphStats  # tj_graph_stats, written whole by tj_graph_get_stats


_SIGNATURES = {
    "tj_ctx_new": (_P, []),
    "tj_ctx_free": (None, [_P]),
    "tj_diag_render": (ctypes.c_char_p, [_P]),
    "tj_mlir_available": (_I, [_ERR]),
    "tj_mlir_parse": (_P, [_P, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
    "tj_mlir_module_free": (None, [_P]),
    "tj_mlir_function_count": (_U32, [_P]),
    "tj_mlir_function_name": (ctypes.c_char_p, [_P, _U32]),
    "tj_mlir_function_signature": (_I, [_P, ctypes.c_char_p, ctypes.POINTER(ValueInfo), ctypes.POINTER(_U32),
                                        ctypes.POINTER(ValueInfo), ctypes.POINTER(_U32), _U32, _ERR]),
    "tj_mlir_fn_new": (_P, [_P, ctypes.c_char_p, _I, _I, _ERR]),
    "tj_mlir_fn_free": (None, [_P]),
    "tj_mlir_fn_call": (_I, [_P, ctypes.POINTER(_lib.Tensor), _U32, ctypes.POINTER(_lib.Tensor), _U32, _ERR]),
    "tj_mlir_fn_graph": (_P, [_P]),
    "tj_graph_get_stats": (None, [_P, ctypes.POINTER(GraphStats)]),
}


def _library():
    return _lib.bind(_kernel._library(), _SIGNATURES)


def mlir_available():
    """None when MLIR import works here, else the reason it does not."""
    err = _lib.Error()
    return err.text() if _library().tj_mlir_available(ctypes.byref(err)) else None


def _numpy_dtype(np, dtype, what):
    name = _lib.DTYPES[dtype]
    numpy_names = {"bool": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8",
                   "u16": "uint16", "u32": "uint32", "u64": "uint64", "f16": "float16", "f32": "float32",
                   "f64": "float64"}
    if name not in numpy_names:
        raise TilejitError(f"{what}: {name} has no NumPy dtype")
    return np.dtype(numpy_names[name])


def _tensor(array):
    """A tj_tensor over a C-contiguous NumPy array."""
    t = _lib.Tensor()
    t.data = array.ctypes.data
    t.dtype = _lib.DTYPES.index({"bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
                                 "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
                                 "float16": "f16", "float32": "f32", "float64": "f64"}[array.dtype.name])
    t.rank = array.ndim
    stride = 1
    for d in reversed(range(array.ndim)):
        t.shape[d], t.strides[d] = array.shape[d], stride
        stride *= array.shape[d]
    return t


class MlirModule:
    """A parsed and checked MLIR module (its functions: .functions)."""

    def __init__(self, text, file="<mlir>"):
        self._lib = lib = _library()
        ctx = lib.tj_ctx_new()
        try:
            src = text.encode()
            self._h = lib.tj_mlir_parse(ctx, file.encode(), src, len(src))
            if not self._h:
                raise TilejitError(lib.tj_diag_render(ctx).decode(errors="replace").rstrip())
        finally:
            lib.tj_ctx_free(ctx)
        self.file = file
        self.functions = [lib.tj_mlir_function_name(self._h, i).decode()
                          for i in range(lib.tj_mlir_function_count(self._h))]

    def __del__(self):
        try:
            self._lib.tj_mlir_module_free(self._h)
        except Exception:
            pass

    def signature(self, name):
        """([(name, dtype, shape)] of the parameters, [...] of the results)."""
        params, results = (ValueInfo * MAX_VALUES)(), (ValueInfo * MAX_VALUES)()
        np_, nr, err = _U32(), _U32(), _lib.Error()
        if self._lib.tj_mlir_function_signature(self._h, name.encode(), params, ctypes.byref(np_), results,
                                                ctypes.byref(nr), MAX_VALUES, ctypes.byref(err)):
            raise TilejitError(err.text())
        def info(v):
            return (v.name.decode(), _lib.DTYPES[v.dtype], tuple(v.shape[:v.rank]))
        return [info(p) for p in params[:np_.value]], [info(r) for r in results[:nr.value]]


class MlirFunction:
    """A function of an MLIR module, ready to call on NumPy arrays: f(*arrays)
    returns its result (a tuple for several). The first call compiles the
    array front end's kernels; later calls with the same function reuse
    them. device: "cpu" (native code), "interp" or "cuda" (inputs copied to
    the GPU, results back)."""

    def __init__(self, module, name, device="cpu", ordinal=0):
        if device not in _DEVICES:
            raise TilejitError(f"device '{device}': expected one of {', '.join(_DEVICES)}")
        self.module, self.name, self.device = module, name, device
        self.params, self.results = module.signature(name)
        lib, err = module._lib, _lib.Error()
        self._lib = lib
        self._h = lib.tj_mlir_fn_new(module._h, name.encode(), _DEVICES[device], ordinal, ctypes.byref(err))
        if not self._h:
            raise TilejitError(err.text())

    def __del__(self):
        try:
            self._lib.tj_mlir_fn_free(self._h)
        except Exception:
            pass

    def __call__(self, *arrays):
        import numpy as np
        if len(arrays) != len(self.params):
            raise TilejitError(f"function '{self.name}' takes {len(self.params)} arguments "
                               f"({', '.join(p[0] for p in self.params)}), {len(arrays)} given")
        inputs = []
        for (pname, dtype, shape), a in zip(self.params, arrays):
            want = _numpy_dtype(np, _lib.DTYPES.index(dtype), f"argument '{pname}'")
            a = np.ascontiguousarray(a)
            if a.dtype != want or a.shape != shape:
                raise TilejitError(f"function '{self.name}', argument '{pname}': expected {want}{list(shape)}, "
                                   f"got {a.dtype}{list(a.shape)}")
            inputs.append(a)
        outputs = [np.empty(shape, _numpy_dtype(np, _lib.DTYPES.index(dtype), f"result '{rname}'"))
                   for rname, dtype, shape in self.results]
        tin = (_lib.Tensor * max(1, len(inputs)))(*[_tensor(a) for a in inputs])
        tout = (_lib.Tensor * max(1, len(outputs)))(*[_tensor(o) for o in outputs])
        err = _lib.Error()
        if self._lib.tj_mlir_fn_call(self._h, tin, len(inputs), tout, len(outputs), ctypes.byref(err)):
            raise TilejitError(err.text())
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    @property
    def stats(self):
        """The array graph's counters: groups, kernels_compiled, cache_hits, ..."""
        s = GraphStats()
        self._lib.tj_graph_get_stats(self._lib.tj_mlir_fn_graph(self._h), ctypes.byref(s))
        return {name: getattr(s, name) for name, _ in GraphStats._fields_}

    def __repr__(self):
        return f"<tilejit.MlirFunction {self.name} from {self.module.file} on {self.device}>"


def import_mlir(text, name=None, *, file="<mlir>", device="cpu"):
    """Function `name` (default: the module's first) of MLIR text in func,
    arith, math, linalg and tensor on static tensors, as a callable on NumPy
    arrays. Errors (an op tilejit does not import, MLIR's own) are
    TilejitError with FILE:LINE:COL diagnostics naming the op."""
    module = MlirModule(text, file=file)
    if name is None:
        if not module.functions:
            raise TilejitError(f"{file}: no function to import")
        name = module.functions[0]
    elif name not in module.functions:
        raise TilejitError(f"no function '{name}' in {file} (its functions: {', '.join(module.functions)})")
    return MlirFunction(module, name, device=device)
