"""tilejit.numpy: lazy NumPy-style arrays, fused into tiled kernels.

    import tilejit.numpy as tnp
    x = tnp.asarray(np.random.rand(4, 1000).astype(np.float32))
    y = tnp.exp(x - x.max(axis=1, keepdims=True))
    y = y / y.sum(axis=1, keepdims=True)     # nothing has run yet
    tnp.eval(y)                               # one kernel (a row softmax)
    np.asarray(y)                             # evaluates if needed, then reads

Arrays are nodes of a graph per device (include/tilejit/array.h); every
operation builds, shape and dtype errors raise at once (TilejitError), and
evaluation (tnp.eval, np.asarray, printing, DLPack) runs the fused kernels,
compiled once and cached by their text (docs/arrays.md).
"""
import builtins
import ctypes
import math
import threading
import weakref

import numpy as _np

from . import _lib
from ._kernel import _library
from ._lib import TilejitError

__all__ = ["ndarray", "asarray", "array", "zeros", "ones", "full", "empty", "arange", "eval", "compile", "stats",
           "finish_compiles",
           "softmax", "log_softmax", "logsumexp", "layer_norm", "rms_norm", "any", "all", "round", "around", "flip",
           "outer", "copy", "hstack", "vstack", "split", "diff", "repeat", "tile", "eye", "tril", "triu", "isclose",
           "allclose", "nan_to_num"]

_P, _U32, _I, _D, _I64 = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_double, ctypes.c_int64
_ERR = ctypes.POINTER(_lib.Error)
_I64P, _INTP, _U32P = ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_uint32)
_AXIS_FLAT = -1000
_MAX_RANK = _lib.MAX_RANK


class _Buf(ctypes.Structure):
    _fields_ = [("data", ctypes.c_char_p), ("len", ctypes.c_size_t), ("cap", ctypes.c_size_t)]


class _Info(ctypes.Structure):
    _fields_ = [("op", _I), ("dtype", _I), ("rank", _I), ("shape", ctypes.c_int64 * _MAX_RANK), ("evaluated", _I)]


_Stats = _lib.GraphStats


_SIGNATURES = {
    "tj_graph_new": (_P, [_I, _I, _ERR]),
    "tj_graph_free": (None, [_P]),
    "tj_graph_error": (ctypes.c_char_p, [_P]),
    "tj_graph_clear_error": (None, [_P]),
    "tj_aop_from_name": (_I, [ctypes.c_char_p, ctypes.c_size_t]),
    "tj_array_wrap": (_U32, [_P, ctypes.POINTER(_lib.Tensor)]),
    "tj_array_copy": (_U32, [_P, ctypes.POINTER(_lib.Tensor)]),
    "tj_array_input": (_U32, [_P, _I, _I, _I64P]),
    "tj_array_full": (_U32, [_P, _I, _I, _I64P, _D]),
    "tj_array_scalar": (_U32, [_P, _I, _D, _I]),
    "tj_array_arange": (_U32, [_P, _I, _D, _D, _I64]),
    "tj_array_unary": (_U32, [_P, _I, _U32]),
    "tj_array_binary": (_U32, [_P, _I, _U32, _U32]),
    "tj_array_ternary": (_U32, [_P, _I, _U32, _U32, _U32]),
    "tj_array_astype": (_U32, [_P, _U32, _I]),
    "tj_array_reduce": (_U32, [_P, _I, _U32, _INTP, _I, _I]),
    "tj_array_reshape": (_U32, [_P, _U32, _I, _I64P]),
    "tj_array_transpose": (_U32, [_P, _U32, _INTP]),
    "tj_array_swapaxes": (_U32, [_P, _U32, _I, _I]),
    "tj_array_expand_dims": (_U32, [_P, _U32, _I]),
    "tj_array_squeeze": (_U32, [_P, _U32, _I]),
    "tj_array_broadcast_to": (_U32, [_P, _U32, _I, _I64P]),
    "tj_array_slice": (_U32, [_P, _U32, _I64P, _I64P, _I64P]),
    "tj_array_matmul": (_U32, [_P, _U32, _U32]),
    "tj_array_take": (_U32, [_P, _U32, _U32, _I]),
    "tj_array_take_along_axis": (_U32, [_P, _U32, _U32, _I]),
    "tj_array_scatter_add": (_U32, [_P, _U32, _U32, _U32, _I]),
    "tj_array_cumsum": (_U32, [_P, _U32, _I]),
    "tj_array_sort": (_U32, [_P, _U32, _I]),
    "tj_array_argsort": (_U32, [_P, _U32, _I]),
    "tj_array_concatenate": (_U32, [_P, _U32P, _U32, _I]),
    "tj_array_softmax": (_U32, [_P, _U32, _I]),
    "tj_array_log_softmax": (_U32, [_P, _U32, _I]),
    "tj_array_logsumexp": (_U32, [_P, _U32, _INTP, _I, _I]),
    "tj_array_layer_norm": (_U32, [_P, _U32, _U32, _U32, _D]),
    "tj_array_rms_norm": (_U32, [_P, _U32, _U32, _D]),
    "tj_array_get_info": (_I, [_P, _U32, ctypes.POINTER(_Info)]),
    "tj_array_eval": (_I, [_P, _U32P, _U32, _ERR]),
    "tj_array_tune": (_I, [_P, _U32P, _U32, _ERR]),
    "tj_array_tensor": (_I, [_P, _U32, ctypes.POINTER(_lib.Tensor), _ERR]),
    "tj_array_read": (_I, [_P, _U32, _P, ctypes.c_size_t, _ERR]),
    "tj_array_retain": (None, [_P, _U32]),
    "tj_array_release": (None, [_P, _U32]),
    "tj_array_release_n": (None, [_P, _U32P, _U32]),
    "tj_graph_print": (_I, [_P, _U32P, _U32, ctypes.POINTER(_Buf), _ERR]),
    "tj_graph_inputs": (_I, [_P, _U32P, _U32, _U32P, _U32, _ERR]),
    "tj_graph_parse": (_I, [_P, ctypes.c_char_p, ctypes.c_size_t, _U32P, _U32, _U32P, _U32, _ERR]),
    "tj_graph_program_parse": (_P, [ctypes.c_char_p, ctypes.c_size_t, _ERR]),
    "tj_graph_program_free": (None, [_P]),
    "tj_graph_plan": (_I, [_P, _U32P, _U32, ctypes.c_char_p, ctypes.POINTER(_Buf), _ERR]),
    "tj_graph_get_stats": (None, [_P, ctypes.POINTER(_Stats)]),
    "tj_graph_finish_compiles": (_I, [_P, _ERR]),
    "tj_graph_compile_error": (ctypes.c_char_p, [_P]),
    "tj_buf_free": (None, [ctypes.POINTER(_Buf)]),
    "tj_tensor_from_dlpack": (ctypes.c_char_p, [_P, ctypes.POINTER(_lib.Tensor), ctypes.POINTER(ctypes.c_int32),
                                                ctypes.POINTER(ctypes.c_int32)]),
}

_lock = threading.Lock()
_state = {"lib": None, "hot": None, "default_device": "cpu"}
_graphs = {}  # device name -> _Graph


def _c():
    if _state["lib"] is None:
        lib = _library()
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
        _state["lib"] = lib
    return _state["lib"]


def _hot():
    """The calls a warm graph makes per op, without argtypes: ctypes then passes the graph as the
    c_void_p it is given and each other argument as a 32-bit C int, masked to it (only op codes and
    node handles go there, uint32 values the library returned, whose bits pass unchanged), which
    costs 0.35 us a call less than converting through argtypes (build machine: a binary op and its
    release 1.33 -> 0.68 us). Other handles of the same library, so tnp's own prototypes stay."""
    if _state["hot"] is None:
        # the ops through PyDLL, which keeps the GIL (a few us of work: giving it up and taking it
        # back cost more); the evaluations, which may compile for 100 ms, and the releases, which
        # may free device memory (cuMemFree waits for the device), give it up
        ops, rest = ctypes.PyDLL(_c().path), ctypes.CDLL(_c().path)
        for lib, name, restype in ((ops, "tj_array_unary", _U32), (ops, "tj_array_binary", _U32),
                                   (ops, "tj_graph_program_build", _I),
                                   (rest, "tj_array_release", None), (rest, "tj_array_release_n", None),
                                   (rest, "tj_array_eval", _I), (rest, "tj_array_tune", _I)):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, None
            setattr(_HotCalls, name, fn)
        _state["hot"] = _HotCalls
    return _state["hot"]


class _HotCalls:
    """_hot's functions, by their C names."""


# ---- dtypes ----

_DT_NAMES = _lib.DTYPES  # tilejit's dtype enum, by index
_NP_TO_TJ = {"bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
             "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "f16", "bfloat16": "bf16",
             "float32": "f32", "float64": "f64"}
_TJ_TO_NP = {v: k for k, v in _NP_TO_TJ.items()}


def _bfloat16():
    try:
        import ml_dtypes
        return _np.dtype(ml_dtypes.bfloat16)
    except ImportError:
        return None


def _tj_dtype(dtype):
    """tilejit's dtype number of a NumPy dtype (or a name, or a type)."""
    if dtype is builtins.bool:
        dtype = _np.bool_
    elif dtype is builtins.int:
        dtype = _np.int64
    elif dtype is builtins.float:
        dtype = _np.float64
    name = dtype if isinstance(dtype, str) and dtype in _TJ_TO_NP else None
    if name is None:
        try:
            npname = _np.dtype(dtype).name
        except TypeError:
            raise TilejitError(f"unsupported dtype {dtype!r}") from None
        name = _NP_TO_TJ.get(npname)
        if name is None:
            raise TilejitError(f"unsupported dtype {npname} (bool, integers, float16, bfloat16, float32, float64)")
    return _DT_NAMES.index(name)


def _np_dtype(tj):
    name = _TJ_TO_NP[_DT_NAMES[tj]]
    if name == "bfloat16":
        bf = _bfloat16()
        if bf is None:
            raise TilejitError("bfloat16 needs ml_dtypes for NumPy")
        return bf
    return _np.dtype(name)


bool_, int8, int16, int32, int64 = _np.bool_, _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
float16, float32, float64 = _np.float16, _np.float32, _np.float64
bfloat16 = _bfloat16()
pi, e, inf, nan, newaxis = math.pi, math.e, math.inf, math.nan, None
dtype = _np.dtype


# ---- graphs: one per device ----

class _Graph:
    def __init__(self, device):
        kind, ordinal = _parse_device(device)
        err = _lib.Error()
        self.lib = _c()
        self.handle = self.lib.tj_graph_new(kind, ordinal, ctypes.byref(err))
        if not self.handle:
            raise TilejitError(err.text())
        self.device = device
        self.kind = kind
        self.scalars = {}  # _scalar's weak 0-d arrays by (type, value bits)
        hot = _hot()
        self.hv = ctypes.c_void_p(self.handle)  # the handle as _hot's calls take it
        self.unary, self.binary = hot.tj_array_unary, hot.tj_array_binary
        self.build_program = hot.tj_graph_program_build
        self.release, self.release_n = hot.tj_array_release, hot.tj_array_release_n
        self.evaluate = {"tj_array_eval": hot.tj_array_eval, "tj_array_tune": hot.tj_array_tune}
        # Releases of op results made since the last evaluation, sent in one call (release_dead) at the
        # next evaluation, plan or release of anything else, or once _DEAD_KEPT wait: a warm gelu call
        # drops 10 and made 10 calls for them. Such a node has no buffer (nothing evaluated it), so the
        # wait holds no memory of its own, only its inputs' where nothing else holds them.
        self.dead = []
        self.epoch = 0  # evaluations (and plans) begun: an op result of the current epoch has no buffer
        # Handle arrays for the C calls, filled by slice assignment: making a ctypes array from a list
        # costs about 0.25 us an element (2.8 us for 10), assigning a slice 0.4 us for 10.
        self.scratch = [(ctypes.c_uint32 * _SCRATCH)() for _ in range(3)]  # eval's / replay's in, out; dead

    def u32(self, hs, which=0):
        """hs as a uint32 array for one C call (which: the scratch array, 0 or 1, another call must not
        be using)."""
        if len(hs) > _SCRATCH:
            return (ctypes.c_uint32 * len(hs))(*hs)
        a = self.scratch[which]
        a[:len(hs)] = hs
        return a

    def release_dead(self):
        d = self.dead
        if not d:
            return
        self.dead = []
        a, self.scratch[2] = self.scratch[2], None  # a release that a collection starts meanwhile makes its own
        if a is not None and len(d) <= _SCRATCH:
            a[:len(d)] = d
            arr = a
        else:
            arr = (ctypes.c_uint32 * len(d))(*d)
        self.release_n(self.hv, arr, len(d))
        if a is not None:
            self.scratch[2] = a

    def before_plan(self):
        """Before anything that plans or evaluates: the deferred releases go (the evaluation may then
        free what they read), and op results made from now on belong to a later epoch (an evaluation
        may give them buffers: they are released at once)."""
        self.release_dead()
        self.epoch += 1

    def check(self, a, what):
        if a:
            return a
        msg = self.lib.tj_graph_error(self.handle).decode(errors="replace")
        self.lib.tj_graph_clear_error(self.handle)
        raise TilejitError(msg or f"{what} failed")

    def __del__(self):
        if getattr(self, "handle", None) and self.lib:
            self.lib.tj_graph_free(self.handle)
            self.handle = None


def _parse_device(device):
    if device in ("cpu", None):
        return _lib.DEVICE_CPU, 0
    if device == "interp":
        return 2, 0
    if isinstance(device, str) and device.startswith("cuda"):
        return _lib.DEVICE_CUDA, int(device.split(":")[1]) if ":" in device else 0
    raise TilejitError(f"unknown device {device!r} (cpu, cuda, cuda:N, interp)")


def _graph(device=None):
    device = device or _state["default_device"]
    if device == "cuda":
        device = "cuda:0"
    with _lock:
        g = _graphs.get(device)
        if g is None:
            g = _graphs[device] = _Graph(device)
        return g


def set_default_device(device):
    """The device of arrays made from nothing or from NumPy: 'cpu' (the
    default), 'cuda', 'cuda:N' or 'interp'."""
    _parse_device(device)
    _state["default_device"] = device


# ---- the array ----

def _shape_arg(shape):
    if isinstance(shape, (int, _np.integer)):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    return len(shape), (ctypes.c_int64 * builtins.max(1, len(shape)))(*shape)


class ndarray:
    """A lazy array: a node of its device's graph."""
    # _sig: _signature's, once asked; _base: the array this one is a view of, _views: weak
    # references to this one's views with how each is made again (_viewing, _assign)
    __slots__ = ("_g", "_h", "_keep", "_ep", "_sig", "_base", "_views", "__weakref__")
    __array_priority__ = 100

    def __init__(self, graph, handle, keep=None):
        self._g = graph
        self._h = handle
        self._keep = keep
        self._ep = -1  # released at once (_unary's and _binary's results may wait: _Graph.dead)

    def __del__(self):
        g = getattr(self, "_g", None)
        if g is not None and g.handle:
            if self._ep == g.epoch:  # an op result nothing evaluated yet
                d = g.dead
                d.append(self._h)
                if len(d) >= _DEAD_KEPT:
                    g.release_dead()
            else:
                if g.dead:  # the op results that may read it go first, so its buffer goes now
                    g.release_dead()
                g.release(g.hv, self._h)

    def _info(self):
        info = _Info()
        self._g.lib.tj_array_get_info(self._g.handle, self._h, ctypes.byref(info))
        return info

    @property
    def shape(self):
        info = self._info()
        return tuple(info.shape[i] for i in range(info.rank))

    @property
    def ndim(self):
        return self._info().rank

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def dtype(self):
        return _np_dtype(self._info().dtype)

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.itemsize

    @property
    def device(self):
        return self._g.device

    @property
    def T(self):
        return transpose(self)

    @property
    def mT(self):
        return swapaxes(self, -1, -2)

    def __len__(self):
        s = self.shape
        if not s:
            raise TypeError("len() of unsized object")
        return s[0]

    def __repr__(self):
        return f"tnp.{_np.array_repr(_np.asarray(self))}"

    def __str__(self):
        return str(_np.asarray(self))

    # ---- evaluation and data ----

    def eval(self):
        eval(self)
        return self

    def _tensor(self):
        eval(self)
        t, err = _lib.Tensor(), _lib.Error()
        if self._g.lib.tj_array_tensor(self._g.handle, self._h, ctypes.byref(t), ctypes.byref(err)):
            raise TilejitError(err.text())
        return t

    def numpy(self):
        t = self._tensor()
        out = _np.empty(self.shape, dtype=self.dtype)
        err = _lib.Error()
        if self._g.lib.tj_array_read(self._g.handle, self._h, out.ctypes.data, out.nbytes, ctypes.byref(err)):
            raise TilejitError(err.text())
        del t
        return out

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a.astype(dtype) if dtype is not None else a

    @property
    def __array_interface__(self):
        if self._g.kind != _lib.DEVICE_CPU and self._g.kind != 2:
            raise AttributeError("__array_interface__: the array lives on a GPU (use np.asarray, or DLPack)")
        if self.dtype.name == "bfloat16":  # no typestr says bfloat16 ('<V2' reads as void): __array__ copies
            raise AttributeError("__array_interface__: bfloat16 has no typestr")
        t = self._tensor()
        size = self.itemsize
        shape = self.shape
        return {"shape": shape, "typestr": self.dtype.str, "version": 3,
                "data": (t.data or 0, False),
                "strides": tuple(t.strides[i] * size for i in range(len(shape)))}

    @property
    def __cuda_array_interface__(self):
        if self._g.kind != _lib.DEVICE_CUDA:
            raise AttributeError("__cuda_array_interface__: the array is on the cpu")
        t = self._tensor()
        size = self.itemsize
        shape = self.shape
        return {"shape": shape, "typestr": self.dtype.str, "version": 3, "data": (t.data or 0, False),
                "strides": tuple(t.strides[i] * size for i in range(len(shape))), "stream": None}

    def __dlpack_device__(self):
        if self._g.kind == _lib.DEVICE_CUDA:
            return (2, int(self._g.device.split(":")[1]))
        return (1, 0)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return _dlpack_export(self)

    def item(self):
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self.numpy().reshape(()).item()

    def tolist(self):
        return self.numpy().tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        return bool(self.item())

    def __index__(self):
        if not _np.issubdtype(self.dtype, _np.integer):
            raise TypeError("only integer arrays can be indices")
        return int(self.item())

    # ---- methods ----

    def astype(self, dtype, copy=True):
        g = self._g
        return ndarray(g, g.check(g.lib.tj_array_astype(g.handle, self._h, _tj_dtype(dtype)), "astype"))

    def reshape(self, *shape, order="C"):
        if order != "C":
            raise TilejitError("reshape: only order='C'")
        if len(shape) == 1 and not isinstance(shape[0], (int, _np.integer)):
            shape = shape[0]
        return reshape(self, shape)

    def transpose(self, *axes):
        if len(axes) == 1 and axes[0] is not None and not isinstance(axes[0], int):
            axes = axes[0]
        return transpose(self, axes or None)

    def swapaxes(self, a, b):
        return swapaxes(self, a, b)

    def copy(self):
        return _new_name(self)

    def flatten(self):
        return reshape(self, (-1,))

    ravel = flatten

    def squeeze(self, axis=None):
        return squeeze(self, axis)

    def sum(self, axis=None, keepdims=False, dtype=None):
        return sum(self, axis=axis, keepdims=keepdims, dtype=dtype)

    def prod(self, axis=None, keepdims=False, dtype=None):
        return prod(self, axis=axis, keepdims=keepdims, dtype=dtype)

    def max(self, axis=None, keepdims=False):
        return max(self, axis=axis, keepdims=keepdims)

    def min(self, axis=None, keepdims=False):
        return min(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False, dtype=None):
        return mean(self, axis=axis, keepdims=keepdims, dtype=dtype)

    def var(self, axis=None, keepdims=False, ddof=0):
        return var(self, axis=axis, keepdims=keepdims, ddof=ddof)

    def std(self, axis=None, keepdims=False, ddof=0):
        return std(self, axis=axis, keepdims=keepdims, ddof=ddof)

    def argmax(self, axis=None, keepdims=False):
        return argmax(self, axis=axis, keepdims=keepdims)

    def argmin(self, axis=None, keepdims=False):
        return argmin(self, axis=axis, keepdims=keepdims)

    def cumsum(self, axis=None):
        return cumsum(self, axis)

    def clip(self, a_min=None, a_max=None):
        return clip(self, a_min, a_max)

    def any(self, axis=None, keepdims=False):
        return any(self, axis=axis, keepdims=keepdims)

    def all(self, axis=None, keepdims=False):
        return all(self, axis=axis, keepdims=keepdims)

    def round(self, decimals=0):
        return round(self, decimals)

    def __getitem__(self, key):
        return _getitem(self, key)

    def __setitem__(self, key, value):
        _assign(self, key, value)

    # ---- operators ----

    def __radd__(self, o): return add(o, self)
    def __rsub__(self, o): return subtract(o, self)
    def __rmul__(self, o): return multiply(o, self)
    def __rtruediv__(self, o): return divide(o, self)
    def __rfloordiv__(self, o): return floor_divide(o, self)
    def __rmod__(self, o): return remainder(o, self)
    def __rpow__(self, o): return power(o, self)
    def __matmul__(self, o): return matmul(self, o)
    def __rmatmul__(self, o): return matmul(o, self)
    def __rand__(self, o): return bitwise_and(o, self)
    def __ror__(self, o): return bitwise_or(o, self)
    def __rxor__(self, o): return bitwise_xor(o, self)
    __hash__ = None


_new = object.__new__  # _unary and _binary make their results without __init__


# ---- making arrays ----

def _from_numpy(a, g):
    a = _np.asarray(a)
    if a.dtype == _np.dtype("float128") if hasattr(_np, "float128") else False:
        a = a.astype(_np.float64)
    t = _lib.Tensor()
    t.dtype = _tj_dtype(a.dtype)
    t.rank = a.ndim
    if a.ndim > _MAX_RANK:
        raise TilejitError(f"asarray: rank {a.ndim} (at most {_MAX_RANK})")
    for i in range(a.ndim):
        t.shape[i] = a.shape[i]
        if a.strides[i] % a.itemsize:
            a = _np.ascontiguousarray(a)
            return _from_numpy(a, g)
        t.strides[i] = a.strides[i] // a.itemsize
    t.data = a.ctypes.data if a.size else None
    return ndarray(g, g.check(g.lib.tj_array_copy(g.handle, ctypes.byref(t)), "asarray"))


def _from_dlpack(obj, device):
    cap = obj.__dlpack__()
    ptr = _lib.capsule_pointer(cap, b"dltensor")
    t, dt, di = _lib.Tensor(), ctypes.c_int32(), ctypes.c_int32()
    why = _c().tj_tensor_from_dlpack(ptr, ctypes.byref(t), ctypes.byref(dt), ctypes.byref(di))
    if why:
        raise TilejitError(f"asarray: {why.decode()}")
    dev = f"cuda:{di.value}" if dt.value in (2, 13) else "cpu"
    g = _graph(device or dev)
    if g.device != dev:
        raise TilejitError(f"asarray: the array is on {dev}, not {g.device} (copy it first)")
    return ndarray(g, g.check(g.lib.tj_array_wrap(g.handle, ctypes.byref(t)), "asarray"), keep=(obj, cap))


def asarray(a, dtype=None, device=None):
    """A tilejit array of a: a tnp array as it is, NumPy data (and lists,
    scalars) copied to the device, another framework's array (PyTorch,
    CuPy) read in place through DLPack on its own device."""
    if isinstance(a, ndarray):
        r = a
    elif hasattr(a, "__dlpack__") and not isinstance(a, _np.ndarray) and not isinstance(a, _np.generic):
        r = _from_dlpack(a, device)
    else:
        arr = _np.asarray(a)
        if arr.dtype == _np.float64 and not isinstance(a, (_np.ndarray, _np.generic)) and dtype is None:
            pass
        r = _from_numpy(arr, _graph(device))
    return r.astype(dtype) if dtype is not None and r.dtype != _np.dtype(dtype) else r


def array(a, dtype=None, device=None, copy=True):
    r = asarray(a, dtype=dtype, device=device)
    return _new_name(r) if copy and r is a else r


def _new_name(x):
    """A copy of x: a new array of x's node (nodes never change; an assignment into either
    array rebinds only that one)."""
    x._g.lib.tj_array_retain(x._g.handle, x._h)
    return ndarray(x._g, x._h)


def copy(a):
    return _new_name(asarray(a))


def full(shape, fill_value, dtype=None, device=None):
    g = _graph(device)
    if dtype is None:
        dtype = _np.asarray(fill_value).dtype
    rank, sh = _shape_arg(shape)
    return ndarray(g, g.check(g.lib.tj_array_full(g.handle, _tj_dtype(dtype), rank, sh, float(fill_value)), "full"))


def zeros(shape, dtype=float64, device=None):
    return full(shape, 0, dtype, device)


def ones(shape, dtype=float64, device=None):
    return full(shape, 1, dtype, device)


empty = zeros


def _like(a, v, dtype):
    a = asarray(a)
    return full(a.shape, v, dtype or a.dtype, a.device)


def zeros_like(a, dtype=None):
    return _like(a, 0, dtype)


def ones_like(a, dtype=None):
    return _like(a, 1, dtype)


def full_like(a, fill_value, dtype=None):
    return _like(a, fill_value, dtype)


def arange(start, stop=None, step=1, dtype=None, device=None):
    if stop is None:
        start, stop = 0, start
    n = builtins.max(0, int(math.ceil((stop - start) / step)))
    if dtype is None:
        dtype = _np.int64 if builtins.all(isinstance(v, (int, _np.integer)) for v in (start, stop, step)) else _np.float64
    g = _graph(device)
    return ndarray(g, g.check(g.lib.tj_array_arange(g.handle, _tj_dtype(dtype), float(start), float(step), n),
                              "arange"))


def linspace(start, stop, num=50, endpoint=True, dtype=None, device=None):
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else 0.0
    r = arange(0, num, 1, dtype=_np.float64, device=device) * step + start
    return r.astype(dtype) if dtype is not None else r


# ---- operands ----

_SCALARS_KEPT = 256  # a graph's cached Python scalars (a warm call's gelu reads 4 a call)
_DEAD_KEPT = 64  # deferred releases a graph keeps before it sends them (_Graph.dead)
_SCRATCH = 64  # handles a graph's scratch arrays hold (_Graph.u32)


def _scalar(g, v):
    """A Python scalar as a weak 0-d array, one per graph and value (a
    constant node is never evaluated or changed, so every expression can
    read the same one: a warm call makes and releases none); a NumPy scalar
    as a strong one."""
    if isinstance(v, _np.generic):
        return ndarray(g, g.check(g.lib.tj_array_full(g.handle, _tj_dtype(v.dtype), 0, None, float(v)), "scalar"))
    t = type(v)
    if t is float and v == v and v != 0.0:
        key = v  # a float other than NaN and the zeros: its value says its bits (and no int key is a float)
    else:
        key = (t, v.hex()) if t is float else (t, v)  # by bits: -0.0 is not 0.0, NaN is not equal to itself
    a = g.scalars.get(key)
    if a is not None:
        return a
    if isinstance(v, builtins.bool):
        dt = "bool"
    elif isinstance(v, int):
        dt = "i64"
    elif isinstance(v, float):
        dt = "f64"
    else:
        raise TilejitError(f"unsupported operand {type(v).__name__}")
    a = ndarray(g, g.check(g.lib.tj_array_scalar(g.handle, _DT_NAMES.index(dt), float(v), 1), "scalar"))
    if len(g.scalars) >= _SCALARS_KEPT:
        g.scalars.clear()
    g.scalars[key] = a
    return a


def _operands(*xs):
    """The graph of the array operands (all on one device), and each
    operand as an ndarray of it."""
    g = None
    for x in xs:
        if isinstance(x, ndarray):
            if g is not None and x._g is not g:
                raise TilejitError(f"arrays on different devices: {g.device} and {x._g.device}")
            g = x._g
    if g is None:
        for x in xs:
            if hasattr(x, "__dlpack__") and not isinstance(x, (_np.ndarray, _np.generic)):
                g = asarray(x)._g
                break
    g = g or _graph()
    out = []
    for x in xs:
        if isinstance(x, ndarray):
            out.append(x)
        elif isinstance(x, (builtins.bool, int, float, _np.generic)):
            out.append(_scalar(g, x))
        else:
            a = asarray(x, device=g.device)
            if a._g is not g:
                raise TilejitError(f"arrays on different devices: {g.device} and {a._g.device}")
            out.append(a)
    return g, out


_ops = {}


def _op(name):
    o = _ops.get(name)
    if o is None:
        b = name.encode()
        o = _ops[name] = _c().tj_aop_from_name(b, len(b))
    return o


_PY_SCALARS = (int, float, builtins.bool)


# The elementwise ops are the calls a warm graph makes most (11 for gelu(x*y+z)): each is one frame
# (the operators are these functions) and its result an ndarray made without __init__ (_lazy's fields).
# _binary's fast paths (arrays of one graph; an array and a Python scalar, either side) are its own;
# everything else goes through _operands.
def _unary(name):
    code = -1

    def f(x):
        nonlocal code
        if code < 0:
            code = _op(name)
        g, a = (x._g, x) if type(x) is ndarray else (lambda r: (r[0], r[1][0]))(_operands(x))
        h = g.unary(g.hv, code, a._h)
        if not h:
            g.check(h, name)
        r = _new(ndarray)
        r._g, r._h, r._keep, r._ep = g, h, None, g.epoch
        return r
    f.__name__ = name
    return f


def _binary(name):
    code = -1

    def f(x, y):
        nonlocal code
        if code < 0:
            code = _op(name)
        if type(x) is ndarray:
            g, a, ty = x._g, x, type(y)
            if ty is ndarray and y._g is g:
                b = y
            elif ty in _PY_SCALARS:
                b = _scalar(g, y)
            else:
                g, (a, b) = _operands(x, y)
        elif type(y) is ndarray and type(x) in _PY_SCALARS:  # 0.5 * x: the reflected operators
            g, b = y._g, y
            a = _scalar(g, x)
        else:
            g, (a, b) = _operands(x, y)
        h = g.binary(g.hv, code, a._h, b._h)
        if not h:
            g.check(h, name)
        r = _new(ndarray)
        r._g, r._h, r._keep, r._ep = g, h, None, g.epoch
        return r
    f.__name__ = name
    return f


for _n in ["negative", "positive", "absolute", "abs", "sign", "square", "reciprocal", "exp", "exp2", "expm1", "log",
           "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sigmoid", "erf", "gelu", "relu",
           "floor", "ceil", "trunc", "logical_not", "invert", "isnan", "isinf", "isfinite"]:
    globals()[_n] = _unary("abs" if _n == "absolute" else _n)
for _n in ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "power", "maximum", "minimum",
           "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
           "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor"]:
    globals()[_n] = _binary(_n)
true_divide, mod, bitwise_not, bitwise_invert, pow = divide, remainder, invert, invert, power  # noqa: A001
for _n, _f in [("add", add), ("sub", subtract), ("mul", multiply), ("truediv", divide), ("floordiv", floor_divide),
               ("mod", remainder), ("pow", power), ("and", bitwise_and), ("or", bitwise_or), ("xor", bitwise_xor),
               ("eq", equal), ("ne", not_equal), ("lt", less), ("le", less_equal), ("gt", greater),
               ("ge", greater_equal), ("neg", negative), ("pos", positive), ("abs", absolute), ("invert", invert)]:
    setattr(ndarray, f"__{_n}__", _f)  # x * y calls multiply(x, y) itself


def where(condition, x, y):
    g, (c, a, b) = _operands(condition, x, y)
    return ndarray(g, g.check(g.lib.tj_array_ternary(g.handle, _op("where"), c._h, a._h, b._h), "where"))


def clip(a, a_min=None, a_max=None):
    x = asarray(a) if not isinstance(a, ndarray) else a
    if a_min is None and a_max is None:
        raise TilejitError("clip: one of a_min and a_max must be given")
    if a_min is None:
        return minimum(x, a_max)
    if a_max is None:
        return maximum(x, a_min)
    g, (v, lo, hi) = _operands(x, a_min, a_max)
    return ndarray(g, g.check(g.lib.tj_array_ternary(g.handle, _op("clip"), v._h, lo._h, hi._h), "clip"))


def astype(x, dtype):
    return asarray(x).astype(dtype)


# ---- reductions ----

def _axes(axis, ndim):
    if axis is None:
        return None, 0
    if isinstance(axis, (int, _np.integer)):
        axis = (int(axis),)
    axis = tuple(int(a) for a in axis)
    return (ctypes.c_int * builtins.max(1, len(axis)))(*axis), len(axis)


def _reduction(name):
    def f(a, axis=None, keepdims=False, dtype=None, out=None):
        if out is not None:
            raise TilejitError(f"{name}: out= is not supported (arrays are immutable)")
        g, (x,) = _operands(a)
        if dtype is not None:
            x = x.astype(dtype)
        arr, n = _axes(axis, x.ndim)
        if name in ("argmax", "argmin") and n > 1:
            raise TilejitError(f"{name}: axis must be an int or None")
        r = g.check(g.lib.tj_array_reduce(g.handle, _op(name), x._h, arr, n, int(bool(keepdims))), name)
        return ndarray(g, r)
    f.__name__ = name
    return f


sum, prod, max, min, mean, argmax, argmin = (_reduction(n) for n in  # noqa: A001
                                             ("sum", "prod", "max", "min", "mean", "argmax", "argmin"))
amax, amin = max, min


def var(a, axis=None, keepdims=False, ddof=0):
    x = asarray(a)
    m = mean(x, axis=axis, keepdims=True)
    d = x - m
    n = x.size if axis is None else math.prod(x.shape[i] for i in _norm_axes(axis, x.ndim))
    return sum(d * d, axis=axis, keepdims=keepdims) / builtins.max(n - ddof, 0)


def std(a, axis=None, keepdims=False, ddof=0):
    return sqrt(var(a, axis=axis, keepdims=keepdims, ddof=ddof))


def any(a, axis=None, keepdims=False):  # noqa: A001
    """Whether any element is nonzero: a count of them (0 for an empty axis, as NumPy's False)."""
    x = asarray(a)
    return sum(x.astype(bool_), axis=axis, keepdims=keepdims) > 0


def all(a, axis=None, keepdims=False):  # noqa: A001
    x = asarray(a)
    return sum(logical_not(x.astype(bool_)), axis=axis, keepdims=keepdims) == 0


def round(a, decimals=0):  # noqa: A001
    """Halves to even, as NumPy: floor plus the exact fraction x - floor(x) (no x + 0.5, which
    rounds up 0.49999997 in f32 and odd integers past 2^23); decimals scale by 10^d, as NumPy does."""
    x = asarray(a)
    if x.dtype.kind in "biu":
        if decimals >= 0:
            return x
        q = 10 ** -decimals  # integers to a multiple of q, halves to an even multiple, exactly
        r = floor_divide(x, q)
        twice = (x - r * q) * 2
        return ((r + logical_or(twice > q, logical_and(twice == q, remainder(r, 2) != 0)).astype(x.dtype)) * q)
    scaled = x * (10.0 ** decimals) if decimals else x
    r = floor(scaled)
    d = scaled - r
    up = logical_or(d > 0.5, logical_and(d == 0.5, remainder(r, 2) != 0))
    r = where(up, r + 1, r)
    r = where(r == 0, scaled * 0, r)  # -0.5 and -0.3 round to -0.0, as rint does
    return (r / (10.0 ** decimals) if decimals else r).astype(x.dtype)


around = round


def flip(m, axis=None):
    x = asarray(m)
    axes = set(range(x.ndim)) if axis is None else set(_norm_axes(axis, x.ndim))
    return x[tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(x.ndim))]


def outer(a, b):
    return multiply(ravel(asarray(a))[:, None], ravel(asarray(b))[None, :])


def _norm_axes(axis, ndim):
    axis = (axis,) if isinstance(axis, int) else axis
    return tuple(a % ndim for a in axis)


# ---- views ----

def reshape(a, shape, order="C"):
    g, (x,) = _operands(a)
    rank, sh = _shape_arg(shape)
    return ndarray(g, g.check(g.lib.tj_array_reshape(g.handle, x._h, rank, sh), "reshape"))


def transpose(a, axes=None):
    g, (x,) = _operands(a)
    perm = None if axes is None else (ctypes.c_int * builtins.max(1, len(axes)))(*[int(v) for v in axes])
    if axes is not None and len(axes) != x.ndim:
        raise TilejitError(f"transpose: axes don't match array (rank {x.ndim}, {len(axes)} axes)")
    return ndarray(g, g.check(g.lib.tj_array_transpose(g.handle, x._h, perm), "transpose"))


def permute_dims(a, axes):
    return transpose(a, axes)


def swapaxes(a, axis1, axis2):
    g, (x,) = _operands(a)
    return ndarray(g, g.check(g.lib.tj_array_swapaxes(g.handle, x._h, axis1, axis2), "swapaxes"))


def moveaxis(a, source, destination):
    x = asarray(a)
    order = [i for i in range(x.ndim) if i != source % x.ndim]
    order.insert(destination % x.ndim, source % x.ndim)
    return transpose(x, order)


def expand_dims(a, axis):
    g, (x,) = _operands(a)
    return ndarray(g, g.check(g.lib.tj_array_expand_dims(g.handle, x._h, axis), "expand_dims"))


def squeeze(a, axis=None):
    g, (x,) = _operands(a)
    if isinstance(axis, tuple):
        for ax in sorted((v % x.ndim for v in axis), reverse=True):
            x = squeeze(x, ax)
        return x
    return ndarray(g, g.check(g.lib.tj_array_squeeze(g.handle, x._h, -100 if axis is None else axis), "squeeze"))


def broadcast_to(a, shape):
    g, (x,) = _operands(a)
    rank, sh = _shape_arg(shape)
    return ndarray(g, g.check(g.lib.tj_array_broadcast_to(g.handle, x._h, rank, sh), "broadcast_to"))


def ravel(a):
    return reshape(a, (-1,))


def _basic_key(x, key):
    """A basic index as a slice per axis (start, stop, step; an int i as i:i+1), which axes
    an int takes, and the result's shape (None's axes of 1 in it)."""
    nreal = builtins.sum(1 for k in key if k is not None and k is not Ellipsis)
    if nreal > x.ndim:
        raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional, but {nreal} were indexed")
    if builtins.sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    expanded = []
    for k in key:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (x.ndim - nreal))
        else:
            expanded.append(k)
    if Ellipsis not in key:
        expanded.extend([slice(None)] * (x.ndim - nreal))
    shape = x.shape
    start, stop, step, ints, out_shape = [], [], [], [], []
    axis = 0
    for k in expanded:
        if k is None:
            out_shape.append(1)
            continue
        d = shape[axis]
        if isinstance(k, slice):
            b, e, s = k.indices(d)
            start.append(b), stop.append(e), step.append(s)
            out_shape.append(len(range(b, e, s)))
        else:
            i = int(k)
            if i < -d or i >= d:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {d}")
            i %= d
            start.append(i), stop.append(i + 1), step.append(1)
            ints.append(axis)
        axis += 1
    return start, stop, step, ints, tuple(out_shape)


def _slice(x, start, stop, step):
    g, n = x._g, builtins.max(1, len(start))
    return ndarray(g, g.check(g.lib.tj_array_slice(g.handle, x._h, (ctypes.c_int64 * n)(*start),
                                                   (ctypes.c_int64 * n)(*stop), (ctypes.c_int64 * n)(*step)),
                              "slice"))


def _getitem(x, key):
    if not isinstance(key, tuple):
        key = (key,)
    if builtins.any(isinstance(k, (ndarray, list, _np.ndarray)) for k in key):
        return _advanced(x, key)
    start, stop, step, _, out_shape = _basic_key(x, key)
    v = _slice(x, start, stop, step)
    return v if out_shape == v.shape else reshape(v, out_shape)


def _advanced(x, key):
    """x[idx] and x[:, idx] with one integer array: take along that axis."""
    arrays = [i for i, k in enumerate(key) if isinstance(k, (ndarray, list, _np.ndarray))]
    rest = [k for i, k in enumerate(key) if i not in arrays]
    if len(arrays) != 1 or not builtins.all(isinstance(k, slice) and k == slice(None) for k in rest[:arrays[0]]):
        raise TilejitError("indexing: one integer array index (after full slices) is supported")
    idx = asarray(key[arrays[0]], device=x.device)
    if idx.dtype == _np.bool_:
        raise TilejitError("indexing with a boolean mask gives a data-dependent shape: use tnp.where")
    r = take(x, idx, axis=arrays[0])
    tail = key[arrays[0] + 1:]
    return r[(slice(None),) * (arrays[0] + idx.ndim) + tuple(tail)] if tail else r


# ---- assignment: x[key] = value rebinds x to a new node ----
#
# The graph's arrays are immutable, so x[key] = value makes x the node where(in key, value, x).
# NumPy's views see the change: every view made of x (slices, reshape, transpose, ...) is made
# again from x's new node, and theirs in turn. An assignment to a view itself would have to reach
# its base, and is refused. Memory shared with NumPy or DLPack (tnp.asarray of a tensor, or
# np.asarray of an evaluated cpu array) is never written: those keep the old values.

def _viewing(f):
    """f (array, ...) -> a view of the array, registered so that _assign can make it again."""
    def view(a, *args, **kw):
        r = f(a, *args, **kw)
        if type(a) is ndarray and type(r) is ndarray and r is not a:
            r._base = a
            views = getattr(a, "_views", None)
            if views is None:
                views = a._views = []
            if len(views) % 64 == 63:  # views taken in a loop: drop the dead ones
                views[:] = [(w, m) for w, m in views if w() is not None]
            views.append((weakref.ref(r), lambda b: f(b, *args, **kw)))
        return r
    view.__name__, view.__doc__ = f.__name__, f.__doc__
    return view


def _rebind(x, new):
    """x takes new's node (new, dropped, releases x's old one); x's views are made again."""
    x._h, new._h = new._h, x._h
    x._keep, new._keep = new._keep, x._keep
    x._ep, new._ep = new._ep, x._ep
    if getattr(x, "_sig", None) is not None:
        x._sig = None
    for ref, remake in getattr(x, "_views", None) or ():
        v = ref()
        if v is not None:
            _rebind(v, remake(x))
    x._views = [(r, m) for r, m in getattr(x, "_views", None) or () if r() is not None]


def _axis_positions(g, d, b, e, s):
    """Along an axis of d: which positions the slice b:e:s takes, and each one's index in it."""
    i = arange(0, d, device=g.device)
    k = floor_divide(i - b, s)
    taken = logical_and(logical_and(k >= 0, k < len(range(b, e, s))), remainder(i - b, s) == 0)
    return taken, clip(k, 0, builtins.max(len(range(b, e, s)) - 1, 0))


def _assign(x, key, value):
    if getattr(x, "_base", None) is not None:
        raise TilejitError("assignment to a view (a slice, reshape or transpose of another array) would not "
                           "reach the array it views: assign to that array")
    if not isinstance(key, tuple):
        key = (key,)
    g, dt = x._g, x.dtype
    masks = [k for k in key if isinstance(k, (ndarray, _np.ndarray)) and _np.dtype(k.dtype) == _np.bool_]
    if masks:
        v = asarray(value, device=x.device)
        if len(key) != 1 or v.ndim != 0:
            raise TilejitError("x[mask] = v: only one boolean mask of x's shape and a scalar v "
                               "(an array v gives a data-dependent placement: use tnp.where)")
        _rebind(x, where(key[0], v.astype(dt), x))
        return
    if builtins.any(isinstance(k, (ndarray, list, _np.ndarray)) for k in key):
        raise TilejitError("x[idx] = v with an integer array index is not supported (repeated indices: "
                           "use tnp.scatter_add, or tnp.where with a mask)")
    start, stop, step, ints, out_shape = _basic_key(x, key)
    v = asarray(value, device=x.device).astype(dt)
    region = tuple(len(range(b, e, s)) for b, e, s in zip(start, stop, step))
    try:  # v as the region's values, ints' axes kept as 1
        v = broadcast_to(reshape(broadcast_to(v, out_shape), region), region)
    except TilejitError:
        raise TilejitError(f"could not broadcast input array from shape {asarray(value).shape} into shape "
                           f"{out_shape}") from None
    mask = None
    for axis, (b, e, s) in enumerate(zip(start, stop, step)):
        taken, k = _axis_positions(g, x.shape[axis], b, e, s)
        shape = [1] * x.ndim
        shape[axis] = x.shape[axis]
        taken = reshape(taken, shape)
        mask = taken if mask is None else logical_and(mask, taken)
        v = take(v, k, axis=axis)
    _rebind(x, where(mask, v, x) if mask is not None else broadcast_to(v, x.shape))


# ---- the rest ----

def matmul(a, b):
    g, (x, y) = _operands(a, b)
    return ndarray(g, g.check(g.lib.tj_array_matmul(g.handle, x._h, y._h), "matmul"))


def dot(a, b):
    x, y = asarray(a), asarray(b)
    if x.ndim == 0 or y.ndim == 0:
        return multiply(x, y)
    if x.ndim <= 2 and y.ndim <= 2:
        return matmul(x, y)
    raise TilejitError("dot: operands of rank > 2 (use matmul)")


def take(a, indices, axis=None):
    g, (x, i) = _operands(a, indices)
    return ndarray(g, g.check(g.lib.tj_array_take(g.handle, x._h, i._h, _AXIS_FLAT if axis is None else axis),
                              "take"))


def take_along_axis(a, indices, axis):
    g, (x, i) = _operands(a, indices)
    return ndarray(g, g.check(g.lib.tj_array_take_along_axis(g.handle, x._h, i._h, axis), "take_along_axis"))


def scatter_add(a, indices, values, axis=0):
    """A copy of a with values added at indices along axis (np.add.at)."""
    g, (x, i, v) = _operands(a, indices, values)
    return ndarray(g, g.check(g.lib.tj_array_scatter_add(g.handle, x._h, i._h, v._h, axis), "scatter_add"))


def cumsum(a, axis=None):
    g, (x,) = _operands(a)
    return ndarray(g, g.check(g.lib.tj_array_cumsum(g.handle, x._h, _AXIS_FLAT if axis is None else axis), "cumsum"))


def sort(a, axis=-1):
    g, (x,) = _operands(a)
    return ndarray(g, g.check(g.lib.tj_array_sort(g.handle, x._h, _AXIS_FLAT if axis is None else axis), "sort"))


def argsort(a, axis=-1):
    g, (x,) = _operands(a)
    return ndarray(g, g.check(g.lib.tj_array_argsort(g.handle, x._h, _AXIS_FLAT if axis is None else axis),
                              "argsort"))


def concatenate(arrays, axis=0):
    g, xs = _operands(*arrays)
    if axis is None:
        xs, axis = [ravel(x) for x in xs], 0
    hs = (ctypes.c_uint32 * builtins.max(1, len(xs)))(*[x._h for x in xs])
    return ndarray(g, g.check(g.lib.tj_array_concatenate(g.handle, hs, len(xs), axis), "concatenate"))


def stack(arrays, axis=0):
    return concatenate([expand_dims(asarray(a), axis) for a in arrays], axis=axis)


def hstack(arrays):
    xs = [asarray(a) for a in arrays]
    return concatenate(xs, axis=0 if builtins.all(x.ndim == 1 for x in xs) else 1)


def vstack(arrays):
    return concatenate([reshape(x, (1, -1)) if x.ndim == 1 else x for x in (asarray(a) for a in arrays)], axis=0)


def split(a, indices_or_sections, axis=0):
    x = asarray(a)
    d = x.shape[axis]
    if isinstance(indices_or_sections, (int, _np.integer)):
        n = int(indices_or_sections)
        if n <= 0 or d % n:
            raise TilejitError(f"split: array split does not result in an equal division ({d} into {n})")
        cuts = [d // n * i for i in range(1, n)]
    else:
        cuts = [int(c) for c in indices_or_sections]
    bounds = [0] + cuts + [d]
    index = [slice(None)] * x.ndim
    return [x[tuple(index[:axis % x.ndim] + [slice(b, builtins.max(b, e))])] for b, e in zip(bounds, bounds[1:])]


def diff(a, n=1, axis=-1):
    x = asarray(a)
    head = [slice(None)] * (axis % x.ndim)
    for _ in range(n):
        x = x[tuple(head + [slice(1, None)])] - x[tuple(head + [slice(None, -1)])]
    return x


def repeat(a, repeats, axis=None):
    """Each element repeats times along axis (an int repeats): a take of arange // repeats."""
    x = asarray(a)
    if axis is None:
        x, axis = ravel(x), 0
    if not isinstance(repeats, (int, _np.integer)):
        raise TilejitError("repeat: repeats must be an int (per-element counts give a data-dependent shape)")
    n = x.shape[axis] * int(repeats)
    return take(x, floor_divide(arange(n, device=x.device), builtins.max(int(repeats), 1)), axis=axis)


def tile(a, reps):
    x = asarray(a)
    reps = (int(reps),) if isinstance(reps, (int, _np.integer)) else tuple(int(r) for r in reps)
    if len(reps) > x.ndim:
        x = reshape(x, (1,) * (len(reps) - x.ndim) + x.shape)
    reps = (1,) * (x.ndim - len(reps)) + reps
    for axis, r in enumerate(reps):
        if r != 1:
            d = x.shape[axis]
            x = take(x, remainder(arange(d * r, device=x.device), builtins.max(d, 1)), axis=axis)
    return x


def eye(N, M=None, k=0, dtype=float64, device=None):  # noqa: N803 (NumPy's names)
    i = arange(N, device=device)[:, None]
    j = arange(N if M is None else M, device=device)[None, :]
    return (j - i == k).astype(dtype)


def _triangle(m, k, lower):
    x = asarray(m)
    i = arange(x.shape[-2], device=x.device)[:, None]
    j = arange(x.shape[-1], device=x.device)[None, :]
    keep = (j - i <= k) if lower else (j - i >= k)
    return where(keep, x, zeros((), dtype=x.dtype, device=x.device))


def tril(m, k=0):
    return _triangle(m, k, True)


def triu(m, k=0):
    return _triangle(m, k, False)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    g, (x, y) = _operands(a, b)
    close = absolute(x - y) <= atol + rtol * absolute(y)
    same = where(logical_and(isfinite(x), isfinite(y)), close, x == y)  # infinities close only to themselves
    return logical_or(same, logical_and(isnan(x), isnan(y))) if equal_nan else same


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return builtins.bool(all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    a = asarray(x)
    if a.dtype.kind not in "fc" and a.dtype.name != "bfloat16":
        return a
    fi = _np.finfo(a.dtype) if a.dtype.name != "bfloat16" else __import__("ml_dtypes").finfo(a.dtype)
    big = fi.max if posinf is None else posinf
    small = fi.min if neginf is None else neginf
    a = where(isnan(a), nan, a)
    return where(a == _np.inf, big, where(a == -_np.inf, small, a)).astype(asarray(x).dtype)


def softmax(x, axis=-1):
    g, (a,) = _operands(x)
    return ndarray(g, g.check(g.lib.tj_array_softmax(g.handle, a._h, axis), "softmax"))


def log_softmax(x, axis=-1):
    g, (a,) = _operands(x)
    return ndarray(g, g.check(g.lib.tj_array_log_softmax(g.handle, a._h, axis), "log_softmax"))


def logsumexp(x, axis=None, keepdims=False):
    g, (a,) = _operands(x)
    arr, n = _axes(axis, a.ndim)
    return ndarray(g, g.check(g.lib.tj_array_logsumexp(g.handle, a._h, arr, n, int(bool(keepdims))), "logsumexp"))


def layer_norm(x, weight=None, bias=None, eps=1e-5):
    """Over the last axis: (x - mean) / sqrt(var + eps) * weight + bias."""
    g, ops = _operands(*[v for v in (x, weight, bias) if v is not None])
    w = ops[1]._h if weight is not None else 0
    b = ops[-1]._h if bias is not None else 0
    return ndarray(g, g.check(g.lib.tj_array_layer_norm(g.handle, ops[0]._h, w, b, eps), "layer_norm"))


def rms_norm(x, weight=None, eps=1e-6):
    """Over the last axis: x / sqrt(mean(x**2) + eps) * weight."""
    g, ops = _operands(*[v for v in (x, weight) if v is not None])
    w = ops[1]._h if weight is not None else 0
    return ndarray(g, g.check(g.lib.tj_array_rms_norm(g.handle, ops[0]._h, w, eps), "rms_norm"))


# ---- evaluation ----

def _flatten(xs):
    for x in xs:
        if isinstance(x, (list, tuple)):
            yield from _flatten(x)
        elif isinstance(x, dict):
            yield from _flatten(list(x.values()))
        elif isinstance(x, ndarray):
            yield x


def _evaluate(arrays, entry):
    if len(arrays) == 1 and type(arrays[0]) is ndarray:  # tnp.eval(y), x.numpy(): no flattening
        a = arrays[0]
        by_graph = {0: (a._g, [a._h])}
    else:
        by_graph = {}
        for a in _flatten(arrays):
            by_graph.setdefault(id(a._g), (a._g, []))[1].append(a._h)
    for g, hs in by_graph.values():
        g.before_plan()
        err = _lib.Error()
        if g.evaluate[entry](g.hv, g.u32(hs), len(hs), ctypes.byref(err)):
            raise TilejitError(err.text())


def eval(*arrays):  # noqa: A001
    """Evaluates the arrays (lists, tuples and dicts of them too) together:
    what they share is computed once. Returns nothing."""
    _evaluate(arrays, "tj_array_eval")


def tune(*arrays):
    """tnp.eval that first times every tile configuration of each fused
    kernel for these shapes and keeps the fastest: later evaluations of the
    same kernels and shapes run it (on CUDA the winners are stored in the
    disk cache, for later processes too)."""
    _evaluate(arrays, "tj_array_tune")


def stats(device=None):
    """Counters of a device's graph: kernels_compiled, kernels_launched,
    cache_hits (groups whose kernel was cached), tunings, groups, evals,
    nodes, compile_ms, kernels_ahead (compiled ahead on worker threads),
    kernels_fast (new kernels launched first as their fast tier, on CUDA),
    kernels_swapped (their optimized kernels, compiled in the background
    and taken since), compiles_failed (those background compiles that
    failed: the fast tier stays) with last_compile_error (the message of
    the last, "" when none), plans_reused (evaluations whose plan, tiles and
    kernels came from the plan memo: a repeated graph's), kernels_emitted
    (kernel texts written, which the memo skips)."""
    g = _graph(device)
    s = _Stats()
    g.lib.tj_graph_get_stats(g.handle, ctypes.byref(s))
    out = {name: getattr(s, name) for name, _ in _Stats._fields_}
    out["last_compile_error"] = g.lib.tj_graph_compile_error(g.handle).decode(errors="replace")
    return out


def finish_compiles(device=None):
    """Waits for the optimized kernels still compiling in the background
    (the fast tier's, docs/arrays.md), so the next evaluations run them;
    raises TilejitError when one of them failed to compile (the
    evaluations keep its fast tier, which gives the same bits)."""
    g = _graph(device)
    err = _lib.Error()
    if g.lib.tj_graph_finish_compiles(g.handle, ctypes.byref(err)):
        raise TilejitError(err.text())


def _text(g, hs, fn, *extra):
    g.before_plan()
    buf, err = _Buf(), _lib.Error()
    arr = g.u32(hs)
    bad = fn(g.handle, arr, len(hs), *extra, ctypes.byref(buf), ctypes.byref(err))
    text = buf.data.decode() if buf.data else ""
    g.lib.tj_buf_free(ctypes.byref(buf))
    if bad:
        raise TilejitError(err.text())
    return text


def graph_text(*arrays):
    """The graph the arrays need, as text (the format tj_graph_parse reads)."""
    xs = list(_flatten(arrays))
    g = xs[0]._g
    return _text(g, [x._h for x in xs], g.lib.tj_graph_print)


def plan(*arrays, stage="emit"):
    """What evaluating the arrays would run, as text: stage 'fuse' (the
    groups), 'tile' (with tile sizes) or 'emit' (each kernel's source)."""
    xs = list(_flatten(arrays))
    g = xs[0]._g
    return _text(g, [x._h for x in xs], g.lib.tj_graph_plan, stage.encode())


# ---- DLPack export ----

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _DLManaged(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManaged))
_DLManaged._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]
_exports = {}  # address of a DLManagedTensor -> what keeps it alive


@_DELETER
def _dl_deleter(p):
    _exports.pop(ctypes.addressof(p.contents), None)


_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)  # the capsule, dying: no py_object
_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype, _PyCapsule_New.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p,
                                                                      _CAPSULE_DESTRUCTOR]
_PyCapsule_IsValid = ctypes.pythonapi.PyCapsule_IsValid
_PyCapsule_IsValid.restype, _PyCapsule_IsValid.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]
_PyCapsule_Pointer = ctypes.PyDLL(None).PyCapsule_GetPointer
_PyCapsule_Pointer.restype, _PyCapsule_Pointer.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p]


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(cap):
    if _PyCapsule_IsValid(cap, b"dltensor"):  # never consumed (renamed when it is): free it here
        _exports.pop(_PyCapsule_Pointer(cap, b"dltensor"), None)


def _dlpack_export(a):
    t = a._tensor()
    name = _DT_NAMES[t.dtype]
    code = 1 if name[0] == "u" else 0 if name[0] == "i" else 6 if name == "bool" else 4 if name == "bf16" else 2
    bits = 8 if name == "bool" else int(name[1:]) if name[0] in "iuf" else 16
    m = _DLManaged()
    rank = t.rank
    shape = (ctypes.c_int64 * builtins.max(1, rank))(*[t.shape[i] for i in range(rank)])
    strides = (ctypes.c_int64 * builtins.max(1, rank))(*[t.strides[i] for i in range(rank)])
    dev = a.__dlpack_device__()
    m.dl_tensor = _DLTensor(t.data, _DLDevice(dev[0], dev[1]), rank, _DLDataType(code, bits, 1), shape, strides, 0)
    m.manager_ctx = None
    m.deleter = _dl_deleter
    addr = ctypes.addressof(m)
    _exports[addr] = (m, shape, strides, a)
    return _PyCapsule_New(addr, b"dltensor", _capsule_destructor)


def from_dlpack(x, device=None):
    return asarray(x, device=device)


# ---- tracing ----

class _Traced:
    """One signature of a compiled function: its graph text, read once into
    a program (tj_graph_program_parse: a replay builds its nodes without
    reading text), and the arrays (constants it captured) its `input` lines
    read after the arguments."""

    def __init__(self, text, captured, nargs, structure, nout):
        self.text, self.captured, self.nargs, self.structure, self.nout = text, captured, nargs, structure, nout
        b, err, lib = text.encode(), _lib.Error(), _c()
        self._free = lib.tj_graph_program_free
        p = lib.tj_graph_program_parse(b, len(b), ctypes.byref(err))
        if not p:
            raise TilejitError(err.text() or "compile: the traced graph did not read back")
        self.program = ctypes.c_void_p(p)  # as _hot's calls take a pointer

    def __del__(self):
        p = getattr(self, "program", None)
        if p is not None:
            self._free(p)


def _signature(xs):
    """What a trace depends on, per array: its graph (one a device), dtype
    and shape, read with one call each (the shape, dtype and device
    properties make one each: 26 us for three arrays) and kept on the array
    (a node's dtype and shape never change), so an array passed again costs
    no call (3.7 -> 0.2 us for three)."""
    key = []
    for x in xs:
        k = getattr(x, "_sig", None)
        if k is None:
            info = x._info()
            k = x._sig = (id(x._g), info.dtype, tuple(info.shape[:info.rank]))
        key.append(k)
    return tuple(key)


def compile(fn):  # noqa: A001
    """fn(*arrays) traced once per input signature (device, shapes,
    dtypes): later calls rebuild its graph from the stored text in C,
    without running fn, and return lazy arrays like fn would."""
    traces = {}

    def wrapper(*args):
        xs = [a if isinstance(a, ndarray) else asarray(a) for a in args]
        key = _signature(xs)
        tr = traces.get(key)
        if tr is None:
            tr = traces[key] = _trace(fn, xs)
        return _replay(tr, xs)

    wrapper.__wrapped__ = fn
    wrapper.traces = traces
    return wrapper


def _trace(fn, xs):
    g = xs[0]._g if xs else _graph()
    ph = []
    for x in xs:
        info = x._info()
        sh = (ctypes.c_int64 * builtins.max(1, info.rank))(*x.shape)
        ph.append(ndarray(g, g.check(g.lib.tj_array_input(g.handle, info.dtype, info.rank, sh), "trace")))
    handles = [p._h for p in ph]
    out = fn(*ph)
    if [p._h for p in ph] != handles:  # on a replay the caller's arrays would not change
        raise TilejitError("tnp.compile: the function assigns into an argument (x[...] = v); assign into a "
                           "copy (x = tnp.array(x)) or build the result with tnp.where")
    single = isinstance(out, ndarray)
    outs = [out] if single else list(out)
    hs = [o._h for o in outs]
    text = graph_text(*outs)
    arr = (ctypes.c_uint32 * builtins.max(1, len(hs)))(*hs)
    n = g.lib.tj_graph_inputs(g.handle, arr, len(hs), None, 0, ctypes.byref(_lib.Error()))
    ins = (ctypes.c_uint32 * builtins.max(1, n))()
    g.lib.tj_graph_inputs(g.handle, arr, len(hs), ins, n, ctypes.byref(_lib.Error()))
    by_handle = {p._h: i for i, p in enumerate(ph)}
    captured = []
    for h in ins[:n]:
        if h in by_handle:
            captured.append(("arg", by_handle[h]))
        else:  # a constant the function made or closed over: kept with the trace
            g.lib.tj_array_retain(g.handle, h)
            captured.append(("const", ndarray(g, h)))
    return _Traced(text, captured, len(xs), single, len(outs))


def _replay(tr, xs):
    g = xs[0]._g if xs else _graph()
    ins = [xs[v]._h if kind == "arg" else v._h for kind, v in tr.captured]
    arr = g.u32(ins)
    outs = g.u32([0] * tr.nout, 1)
    err = _lib.Error()
    n = g.build_program(g.hv, tr.program, arr, len(ins), outs, tr.nout, ctypes.byref(err))
    if n != tr.nout:
        raise TilejitError(err.text() or "compile: the traced graph did not rebuild")
    res = [ndarray(g, outs[i]) for i in range(tr.nout)]
    return res[0] if tr.structure else tuple(res)


# the views (what NumPy returns as views of their argument), registered for assignment
reshape, transpose, swapaxes, expand_dims, squeeze, broadcast_to, _slice = (
    _viewing(f) for f in (reshape, transpose, swapaxes, expand_dims, squeeze, broadcast_to, _slice))
