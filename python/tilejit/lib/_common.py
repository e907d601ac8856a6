"""What every family of tilejit.lib shares: one C library handle
(tilejit/lib.h) per device, arrays described for C through DLPack, and
results allocated of the input's kind (NumPy, PyTorch, CuPy)."""
import ctypes
import threading

from .. import _kernel, _lib
from .._lib import TilejitError

_DL_INT, _DL_UINT, _DL_FLOAT, _DL_BFLOAT, _DL_BOOL = 0, 1, 2, 4, 6
_lock = threading.Lock()
_handles = {}  # ((device kind, ordinal), segment) -> tj_lib *, open for the process's life


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_NAMES = {(_DL_INT, 8): "i8", (_DL_INT, 16): "i16", (_DL_INT, 32): "i32", (_DL_INT, 64): "i64",
          (_DL_UINT, 8): "u8", (_DL_UINT, 16): "u16", (_DL_UINT, 32): "u32", (_DL_UINT, 64): "u64",
          (_DL_FLOAT, 16): "f16", (_DL_FLOAT, 32): "f32", (_DL_FLOAT, 64): "f64",
          (_DL_BFLOAT, 16): "bf16", (_DL_BOOL, 8): "bool"}


def handle(device, segment=None):
    """The tj_lib of a device, opened on first use; one per segment
    (tj_lib_options.segment: the most elements along an axis that one
    launch indexes; None or 0, the default)."""
    key = (device, int(segment or 0))
    with _lock:
        h = _handles.get(key)
        if h is None:
            err = _lib.Error()
            opts = _lib.LibOptions(key[1])
            h = _kernel._library().tj_lib_open_options(_kernel._jit(device), ctypes.byref(opts), ctypes.byref(err))
            if not h:
                raise TilejitError(err.text())
            _handles[key] = h
        return h


def _tensor_of(array, stream):
    """(tilejit Tensor, the capsule keeping it alive) for a DLPack array."""
    try:
        cap = array.__dlpack__() if stream is None else _kernel._export_on_stream(array, stream, type(array))
    except BufferError:  # e.g. ml_dtypes bfloat16 or read-only NumPy arrays
        ptr, cap, dtype = _kernel._export_special(array, stream)
        return _from_dltensor(_DLTensor.from_address(ptr), dtype), cap
    ptr = _lib.capsule_pointer(cap, b"dltensor")
    return _from_dltensor(_DLTensor.from_address(ptr), None), cap


def _from_dltensor(dl, dtype):
    t = _lib.Tensor()
    name = _NAMES.get((dl.dtype.code, dl.dtype.bits)) if dl.dtype.lanes == 1 else None
    if name is None and dtype is None:
        raise TilejitError(f"arrays of DLPack dtype code {dl.dtype.code}, {dl.dtype.bits} bits, "
                           f"{dl.dtype.lanes} lanes are not supported")
    if dl.ndim > _lib.MAX_RANK:
        raise TilejitError(f"arrays of rank {dl.ndim} are not supported (at most {_lib.MAX_RANK})")
    t.data = (dl.data or 0) + dl.byte_offset
    t.dtype = dtype if dtype is not None else _lib.DTYPES.index(name)
    t.rank = dl.ndim
    stride = 1
    for i in reversed(range(dl.ndim)):
        t.shape[i] = dl.shape[i]
        t.strides[i] = dl.strides[i] if dl.strides else stride
        stride *= dl.shape[i]
    return t


def new_like(x, dtype=None, shape=None):
    """An uninitialized array of x's kind and device, of x's shape (or
    `shape`) and dtype (or "int64")."""
    module = type(x).__module__.split(".")[0]
    if module not in ("torch", "cupy", "numpy"):
        raise TilejitError(f"tilejit.lib takes NumPy, PyTorch or CuPy arrays, not {type(x).__name__}")
    shape = tuple(x.shape) if shape is None else tuple(shape)
    if module == "torch":
        import torch
        return torch.empty(shape, dtype=torch.int64 if dtype else x.dtype, device=x.device)
    if module == "cupy":
        import cupy
        with cupy.cuda.Device(x.device.id):
            return cupy.empty(shape, dtype=cupy.int64 if dtype else x.dtype)
    import numpy as np
    return np.empty(shape, dtype=np.int64 if dtype else x.dtype)


def call(entry, x, out, axis, *extra, flags=0, segment=None):
    """entry(lib, x, out, axis, *extra, flags, stream, err) on x's device
    (the library of that segment: handle); returns out."""
    invoke(lambda lib, h, t, stream, err: getattr(lib, entry)(h, ctypes.byref(t[0]), ctypes.byref(t[1]), int(axis),
                                                              *extra, flags, stream, err), x, out, segment=segment)
    return out


def invoke(entry, x, *arrays, segment=None):
    """entry(lib, handle, tensors, stream, err) on x's device, tensors the
    tilejit Tensors of x and arrays (their arrays kept alive through the
    call), err by reference; raises TilejitError when it returns nonzero."""
    lib, err = _kernel._library(), _lib.Error()
    viewed = _exchange_view(lib, x, arrays, err)
    if viewed:
        device, tensors, stream = viewed
        keep = None
    else:
        device = _kernel._device_of(x)
        cuda = device[0] == _lib.DEVICE_CUDA
        stream = (_kernel._current_stream(x, device[1]) or 1) if cuda else None
        keep = [_tensor_of(a, stream) for a in (x, *arrays)]
        tensors, stream = [t for t, _ in keep], (stream if stream != 1 else None)
    rc = entry(lib, handle(device, segment), tensors, stream, ctypes.byref(err))
    del keep
    if rc:
        raise TilejitError(err.text())


def _exchange_view(lib, x, arrays, err):
    """(device, tensors, stream) of x and arrays through their type's DLPack
    exchange API (PyTorch), viewed in one C call with no capsule per array
    (a capsule costs a few us each: selective_scan takes ten arrays), or
    None where the type has none or mixes with others, or the view fails:
    then the capsules say what is wrong."""
    kind = type(x)
    api = _kernel.exchange_api(kind)
    if not api or any(type(a) is not kind for a in arrays) or len(arrays) >= 64:
        return None
    n = 1 + len(arrays)
    objects = (ctypes.c_void_p * n)(id(x), *map(id, arrays))
    tensors, dl_type, ordinal, stream = (_lib.Tensor * n)(), ctypes.c_int32(), ctypes.c_int32(), ctypes.c_void_p()
    try:
        if lib.gil.tj_tensors_from_exchange(api, objects, n, tensors, ctypes.byref(dl_type), ctypes.byref(ordinal),
                                            ctypes.byref(stream), ctypes.byref(err)):
            return None
    except (ctypes.ArgumentError, TypeError):  # a binding's mistake, not the producer's: say it
        raise
    except Exception:  # the producer raised: the capsule path reports it
        return None
    device = _kernel.device_of_dlpack(dl_type.value, ordinal.value)
    return (device, list(tensors), stream.value) if device else None
