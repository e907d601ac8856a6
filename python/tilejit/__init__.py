"""tilejit from Python: compile a .tj kernel once, launch it on torch tensors.

    import torch, tilejit
    jit = tilejit.Jit("cuda")
    fn = jit.compile(open("examples/softmax.tj").read(), "softmax", x, y)
    fn(x, y)                      # on torch's current stream

A thin ctypes layer over include/tilejit/jit.h; the library is found in
$TILEJIT_LIB, or build/ beside this package.
"""
import ctypes
import os

MAX_RANK = 6
_DTYPES = ["invalid", "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
           "f16", "bf16", "f32", "f64"]
_TORCH_NAMES = {"bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32",
                "int64": "i64", "uint8": "u8", "float16": "f16", "bfloat16": "bf16",
                "float32": "f32", "float64": "f64"}


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("shape", ctypes.c_int64 * MAX_RANK), ("strides", ctypes.c_int64 * MAX_RANK)]


class _Scalar(ctypes.Union):
    _fields_ = [("i", ctypes.c_int64), ("f", ctypes.c_double)]


class _Arg(ctypes.Structure):
    _fields_ = [("is_tensor", ctypes.c_int), ("tensor", _Tensor), ("scalar", _Scalar)]


class _Error(ctypes.Structure):
    _fields_ = [("msg", ctypes.c_char * 512)]


class _Binding(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_int64)]


class _Request(ctypes.Structure):
    _fields_ = [("file", ctypes.c_char_p), ("source", ctypes.c_char_p), ("len", ctypes.c_size_t),
                ("kernel", ctypes.c_char_p), ("params", ctypes.POINTER(_Binding)),
                ("nparams", ctypes.c_uint32), ("args", ctypes.POINTER(_Arg)),
                ("nargs", ctypes.c_uint32), ("arch", ctypes.c_char_p)]


class TilejitError(RuntimeError):
    pass


def _load():
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.environ.get("TILEJIT_LIB") or os.path.join(here, "..", "..", "build", "libtilejit.so")
    lib = ctypes.CDLL(path)
    lib.tj_jit_open.restype = ctypes.c_void_p
    lib.tj_jit_open.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Error)]
    lib.tj_jit_close.argtypes = [ctypes.c_void_p]
    lib.tj_jit_compile.restype = ctypes.c_void_p
    lib.tj_jit_compile.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Request), ctypes.POINTER(_Error)]
    lib.tj_fn_launch.restype = ctypes.c_int
    lib.tj_fn_launch.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Arg), ctypes.c_uint32,
                                 ctypes.c_void_p, ctypes.POINTER(_Error)]
    lib.tj_fn_ptx.restype = ctypes.c_char_p
    lib.tj_fn_ptx.argtypes = [ctypes.c_void_p]
    lib.tj_source_params.restype = ctypes.c_int
    lib.tj_source_params.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                     ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int),
                                     ctypes.c_int, ctypes.POINTER(_Error)]
    return lib


_FLOAT_DTYPES = {_DTYPES.index(n) for n in ("f16", "bf16", "f32", "f64")}


def _arg(value, dtype):
    """One argument; `dtype` is the parameter's (tilejit's dtype index), which
    decides how a scalar is stored."""
    a = _Arg()
    if hasattr(value, "data_ptr"):  # a torch tensor (or anything alike)
        a.is_tensor = 1
        a.tensor.data = value.data_ptr()
        a.tensor.dtype = _DTYPES.index(_TORCH_NAMES[str(value.dtype).replace("torch.", "")])
        a.tensor.rank = value.dim()
        for d in range(value.dim()):
            a.tensor.shape[d] = value.shape[d]
            a.tensor.strides[d] = value.stride(d)
    elif dtype in _FLOAT_DTYPES:
        a.scalar.f = float(value)
    else:
        a.scalar.i = int(value)
    return a


def _args(values, dtypes):
    if len(values) != len(dtypes):
        raise TilejitError(f"the kernel takes {len(dtypes)} arguments, {len(values)} given")
    arr = (_Arg * len(values))()
    for i, v in enumerate(values):
        arr[i] = _arg(v, dtypes[i])
    return arr


class Kernel:
    def __init__(self, jit, handle, dtypes):
        self._jit, self._h, self._dtypes = jit, handle, dtypes

    @property
    def ptx(self):
        p = self._jit._lib.tj_fn_ptx(self._h)
        return p.decode() if p else None

    def __call__(self, *values, stream=None):
        if stream is None:
            import torch
            stream = torch.cuda.current_stream().cuda_stream
        err = _Error()
        args = _args(values, self._dtypes)
        if self._jit._lib.tj_fn_launch(self._h, args, len(values), stream, ctypes.byref(err)):
            raise TilejitError(err.msg.decode(errors="replace"))


class Jit:
    def __init__(self, device="cuda", ordinal=0):
        self._lib = _load()
        err = _Error()
        self._h = self._lib.tj_jit_open(1 if device == "cuda" else 0, ordinal, ctypes.byref(err))
        if not self._h:
            raise TilejitError(err.msg.decode(errors="replace"))

    def compile(self, source, kernel, *example_args, params=None, file="<python>", arch=None):
        src = source.encode()
        binds = (_Binding * max(1, len(params or {})))()
        for i, (k, v) in enumerate((params or {}).items()):
            binds[i] = _Binding(k.encode(), v)
        dtypes = self._param_dtypes(src, kernel)
        args = _args(example_args, dtypes)
        req = _Request(file.encode(), src, len(src), kernel.encode(), binds, len(params or {}),
                       args, len(example_args), arch.encode() if arch else None)
        err = _Error()
        h = self._lib.tj_jit_compile(self._h, ctypes.byref(req), ctypes.byref(err))
        if not h:
            raise TilejitError(err.msg.decode(errors="replace"))
        return Kernel(self, h, dtypes)

    def _param_dtypes(self, src, kernel):
        cap = 256
        dtypes, ranks, err = (ctypes.c_int * cap)(), (ctypes.c_int * cap)(), _Error()
        n = self._lib.tj_source_params(src, len(src), kernel.encode(), dtypes, ranks, cap, ctypes.byref(err))
        if n < 0:
            raise TilejitError(err.msg.decode(errors="replace"))
        return [dtypes[i] for i in range(min(n, cap))]

    def close(self):
        if self._h:
            self._lib.tj_jit_close(self._h)
            self._h = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
