"""Collectives over the GPUs of a host through NCCL (include/tilejit/nccl.h,
docs/runtime.md "Several GPUs"), on DLPack arrays (PyTorch, CuPy) and the
framework's current stream of each array's device.

    import torch, tilejit.nccl as nccl
    comms = nccl.Communicator.all()               # one per GPU, this process drives them
    xs = [torch.ones(1 << 20, device=f"cuda:{c.device}") for c in comms]
    with nccl.group():
        for c, x in zip(comms, xs):
            c.all_reduce(x)                        # in place: every x is now len(comms)

One process per GPU: rank 0 calls nccl.unique_id() and sends the bytes to
the others (any channel), each makes Communicator.rank_of(nranks, id, rank,
device). NCCL is libnccl.so.2 or the file $TILEJIT_NCCL names (PyTorch's
copy in site-packages serves); without it these raise TilejitError saying
what to install.
"""
import contextlib
import ctypes
import threading

from . import _kernel, _lib
from ._lib import TilejitError, capsule_pointer

__all__ = ["Communicator", "group", "unique_id", "version"]

_P, _I, _ERR = ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(_lib.Error)
_T = ctypes.POINTER(_lib.Tensor)
_OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}


class _Id(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_char * 128)]


_SIGNATURES = {
    "tj_nccl_open": (_P, [_ERR]),
    "tj_nccl_version": (_I, [_P]),
    "tj_nccl_unique_id": (_I, [_P, ctypes.POINTER(_Id), _ERR]),
    "tj_nccl_comm_init_rank": (_P, [_P, _P, _I, ctypes.POINTER(_Id), _I, _ERR]),
    "tj_nccl_comm_init_all": (_I, [_P, ctypes.POINTER(_P), _I, ctypes.POINTER(_P), _ERR]),
    "tj_nccl_comm_free": (None, [_P]),
    "tj_nccl_all_reduce": (_I, [_P, _T, _T, _I, _P, _ERR]),
    "tj_nccl_broadcast": (_I, [_P, _T, _T, _I, _P, _ERR]),
    "tj_nccl_all_gather": (_I, [_P, _T, _T, _P, _ERR]),
    "tj_nccl_reduce_scatter": (_I, [_P, _T, _T, _I, _P, _ERR]),
    "tj_nccl_group_start": (_I, [_P, _ERR]),
    "tj_nccl_group_end": (_I, [_P, _ERR]),
    "tj_jit_cuda": (_P, [_P]),
    "tj_tensor_from_dlpack": (ctypes.c_char_p, [_P, _T, ctypes.POINTER(ctypes.c_int32),
                                                ctypes.POINTER(ctypes.c_int32)]),
}

_state = {"lib": None, "nccl": None}
_lock = threading.Lock()


def _nccl():
    """The library with these signatures bound, and NCCL opened once per process."""
    with _lock:
        if _state["nccl"] is None:
            lib = _kernel._library()
            for name, (restype, argtypes) in _SIGNATURES.items():
                fn = getattr(lib, name)
                fn.restype, fn.argtypes = restype, argtypes
            err = _lib.Error()
            handle = lib.tj_nccl_open(ctypes.byref(err))
            if not handle:
                raise TilejitError(err.text())
            _state["lib"], _state["nccl"] = lib, handle
        return _state["lib"], _state["nccl"]


def _check(rc, err):
    if rc:
        raise TilejitError(err.text())


def version():
    """NCCL's version number (e.g. 22703 for 2.27.3)."""
    lib, n = _nccl()
    return lib.tj_nccl_version(n)


def unique_id():
    """The bytes rank 0 hands to every rank of a new communicator."""
    lib, n = _nccl()
    uid, err = _Id(), _lib.Error()
    _check(lib.tj_nccl_unique_id(n, ctypes.byref(uid), ctypes.byref(err)), err)
    return ctypes.string_at(ctypes.byref(uid), 128)  # uid.bytes would stop at a NUL


@contextlib.contextmanager
def group():
    """Collectives issued inside (one per device, from this thread) run as one."""
    lib, n = _nccl()
    err = _lib.Error()
    _check(lib.tj_nccl_group_start(n, ctypes.byref(err)), err)
    try:
        yield
    finally:
        _check(lib.tj_nccl_group_end(n, ctypes.byref(err)), err)


def _cuda_of(ordinal):
    lib, _ = _nccl()
    return lib.tj_jit_cuda(_kernel._jit((_lib.DEVICE_CUDA, ordinal)))


def _device_count():
    import torch  # noqa: the frameworks that hold CUDA arrays know their devices
    return torch.cuda.device_count()


class Communicator:
    """One rank of a communicator, on one GPU."""

    def __init__(self, handle, device, rank, size):
        self._handle, self.device, self.rank, self.size = handle, device, rank, size

    @classmethod
    def all(cls, devices=None):
        """One communicator per GPU of `devices` (default: every GPU), rank i
        on devices[i], driven by this process."""
        devices = list(range(_device_count())) if devices is None else [int(d) for d in devices]
        if not devices:
            raise TilejitError("nccl: no GPU to make communicators for")
        lib, n = _nccl()
        cus = (_P * len(devices))(*[_cuda_of(d) for d in devices])
        comms, err = (_P * len(devices))(), _lib.Error()
        _check(lib.tj_nccl_comm_init_all(n, cus, len(devices), comms, ctypes.byref(err)), err)
        return [cls(comms[i], d, i, len(devices)) for i, d in enumerate(devices)]

    @classmethod
    def rank_of(cls, nranks, uid, rank, device):
        """Rank `rank` of `nranks` (one process per GPU), from unique_id()'s bytes."""
        lib, n = _nccl()
        if not isinstance(uid, (bytes, bytearray)) or len(uid) != 128:
            raise TilejitError("nccl: the id must be the 128 bytes unique_id() returned")
        ident, err = _Id(), _lib.Error()
        ctypes.memmove(ctypes.byref(ident), bytes(uid), 128)
        h = lib.tj_nccl_comm_init_rank(n, _cuda_of(int(device)), int(nranks), ctypes.byref(ident), int(rank),
                                       ctypes.byref(err))
        if not h:
            raise TilejitError(err.text())
        return cls(h, int(device), int(rank), int(nranks))

    def __del__(self):
        if getattr(self, "_handle", None) and _state["lib"] is not None:
            _state["lib"].tj_nccl_comm_free(self._handle)
            self._handle = None

    def __repr__(self):
        return f"Communicator(rank {self.rank} of {self.size}, cuda:{self.device})"

    def _tensor(self, array, what, stream):
        kind, ordinal = _kernel._device_of(array)
        if kind != _lib.DEVICE_CUDA or ordinal != self.device:
            where = f"cuda:{ordinal}" if kind == _lib.DEVICE_CUDA else "the cpu"
            raise TilejitError(f"nccl: {what} is on {where}, the communicator of rank {self.rank} on cuda:{self.device}")
        cap = _kernel._export_on_stream(array, stream or 1, type(array))
        t, dtype, dev = _lib.Tensor(), ctypes.c_int32(), ctypes.c_int32()
        bad = _state["lib"].tj_tensor_from_dlpack(capsule_pointer(cap, b"dltensor"), ctypes.byref(t),
                                                  ctypes.byref(dtype), ctypes.byref(dev))
        if bad:
            raise TilejitError(f"nccl: {what}: unsupported {bad.decode()}")
        return t, cap

    def _run(self, name, x, out, stream, *extra):
        lib, _ = _nccl()
        stream = stream if stream is not None else _kernel._current_stream(x, self.device)
        send, keep_s = self._tensor(x, "the input", stream)
        recv, keep_r = self._tensor(out, "the output", stream)
        err = _lib.Error()
        fn = getattr(lib, "tj_nccl_" + name)
        _check(fn(self._handle, ctypes.byref(send), ctypes.byref(recv), *extra, stream or None,
                  ctypes.byref(err)), err)
        del keep_s, keep_r
        return out

    def all_reduce(self, x, out=None, op="sum", stream=None):
        """out (default: x, in place) = op over the ranks of x."""
        return self._run("all_reduce", x, x if out is None else out, stream, _op(op))

    def broadcast(self, x, out=None, root=0, stream=None):
        """out (default: x) = root's x."""
        return self._run("broadcast", x, x if out is None else out, stream, int(root))

    def all_gather(self, x, out, stream=None):
        """out (size ranks x x.size) = every rank's x, in rank order."""
        return self._run("all_gather", x, out, stream)

    def reduce_scatter(self, x, out, op="sum", stream=None):
        """out (x.size / ranks) = this rank's part of op over the ranks of x."""
        return self._run("reduce_scatter", x, out, stream, _op(op))


def _op(op):
    if op not in _OPS:
        raise TilejitError(f"nccl: no op {op!r} ({', '.join(_OPS)})")
    return _OPS[op]
