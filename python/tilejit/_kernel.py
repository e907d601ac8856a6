"""Kernels launched on DLPack arrays: Kernel (dispatching per signature),
Function (one compiled configuration), and the devices they run on."""
import ctypes
import os
import threading

from . import _lib
from ._lib import TilejitError, capsule_pointer

_DLTENSOR, _DLTENSOR_VERSIONED = b"dltensor", b"dltensor_versioned"
_VERSIONED_HEADER = 32  # DLManagedTensorVersioned: version, manager_ctx, deleter, flags, then the DLTensor
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13
_BF16 = _lib.DTYPES.index("bf16")

_lock = threading.Lock()
_lib_handle = None
_jits = {}  # (device kind, ordinal) -> jit handle, open for the process's life
_events = []  # the handlers given to on_event
_stream_queries = {}  # array type -> its framework's current-stream query
_sync_free = {}  # array type -> whether its __dlpack__ takes stream=-1
_exchange_apis = {}  # array type -> the address of its DLPack exchange API, or 0


def _library():
    global _lib_handle
    if _lib_handle is None:
        _lib_handle = _lib.load()
    return _lib_handle


def _jit(device):
    with _lock:
        h = _jits.get(device)
        if h is None:
            lib, err = _library(), _lib.Error()
            h = lib.tj_jit_open(device[0], device[1], ctypes.byref(err))
            if not h:
                raise TilejitError(err.text())
            for handler in _events:
                lib.tj_jit_set_event_handler(h, handler, None)
            _jits[device] = h
        return h


def on_event(callback):
    """Calls callback(kind, kernel, signature, config, reason, ms) after
    every compile ("compile") and tuning ("tune") of every kernel, e.g. to
    log recompiles. Returns the callback."""
    def handler(_ud, e):
        e = e.contents
        callback("tune" if e.kind else "compile", e.kernel.decode(), e.signature.decode(),
                 e.config.decode(), e.reason.decode(), e.ms)
    c_handler = _lib.EVENT_HANDLER(handler)
    with _lock:
        _events[:] = [c_handler]  # one handler; kept alive here
        for h in _jits.values():
            _library().tj_jit_set_event_handler(h, c_handler, None)
    return callback


def _device_of(array):
    """(kind, ordinal) of the tilejit device an array lives on."""
    try:
        dtype, ordinal = array.__dlpack_device__()
    except AttributeError:
        raise TilejitError(f"expected an array with __dlpack__ (NumPy, PyTorch, CuPy, JAX), "
                           f"got {type(array).__name__}") from None
    device = device_of_dlpack(dtype, ordinal)
    if device is None:
        raise TilejitError(f"arrays on DLPack device type {dtype} are not supported (cpu and cuda are)")
    return device


def device_of_dlpack(dtype, ordinal):
    """(kind, ordinal) of the tilejit device for a DLPack device, or None."""
    if dtype in (_DL_CPU, _DL_CUDA_HOST):
        return (_lib.DEVICE_CPU, 0)
    if dtype in (_DL_CUDA, _DL_CUDA_MANAGED):
        return (_lib.DEVICE_CUDA, int(ordinal))
    return None


def _stream_query(kind):
    """For an array type, a function ordinal -> its framework's current CUDA
    stream handle (0: the default stream), made once per type."""
    query = _stream_queries.get(kind)
    if query is None:
        query = _stream_queries[kind] = _make_stream_query(kind)
    return query


def _make_stream_query(kind):
    module = kind.__module__.split(".")[0]
    if module == "torch":
        import torch
        # what current_stream(ordinal).cuda_stream reads, without making a Stream object (2 us)
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        return raw if raw else (lambda ordinal: torch.cuda.current_stream(ordinal).cuda_stream)
    if module == "cupy":
        import cupy
        return lambda ordinal: cupy.cuda.get_current_stream().ptr
    return lambda ordinal: 0  # the legacy default stream


def _current_stream(array, ordinal):
    """The handle of the array framework's current CUDA stream."""
    return _stream_query(type(array))(ordinal)


def _export_on_stream(array, stream, first_kind):
    """array.__dlpack__ for a launch on `stream`. An array of the type whose
    framework gave the stream is already ordered on it: DLPack's stream -1
    asks the producer for no synchronization (saves an event per tensor);
    a producer that refuses -1 gets the stream itself from then on."""
    kind = type(array)
    if kind is first_kind and _sync_free.get(kind, True):
        try:
            return array.__dlpack__(stream=-1)
        except (TypeError, ValueError, BufferError):
            _sync_free[kind] = False
    return array.__dlpack__(stream=stream)


def exchange_api(kind):
    """The address of the DLPackExchangeAPI that array type `kind` publishes
    as __dlpack_c_exchange_api__ (DLPack 1.3; PyTorch), or 0: with it a
    launch views the arrays in C, with no capsule per tensor."""
    api = _exchange_apis.get(kind)
    if api is None:
        api = _exchange_apis[kind] = _find_exchange_api(kind)
    return api


def _find_exchange_api(kind):
    if os.environ.get("TILEJIT_NO_EXCHANGE_API"):
        return 0
    cap = getattr(kind, "__dlpack_c_exchange_api__", None)
    if cap is None or isinstance(cap, int):
        return cap or 0
    try:
        return capsule_pointer(cap, _lib.capsule_name(cap)) or 0
    except (TypeError, ValueError):
        return 0


def _is_bfloat16(array):
    return getattr(getattr(array, "dtype", None), "name", "") == "bfloat16"


def _export_special(array, stream):
    """(DLTensor address, capsule, dtype override or None) for what NumPy
    cannot export through plain DLPack: ml_dtypes' bfloat16 goes as a
    uint16 view, a read-only array as a versioned capsule."""
    if _is_bfloat16(array):
        cap = array.view("uint16").__dlpack__()
        return _lib.capsule_pointer(cap, _DLTENSOR), cap, _BF16
    cap = array.__dlpack__(max_version=(1, 0))
    return _lib.capsule_pointer(cap, _DLTENSOR_VERSIONED) + _VERSIONED_HEADER, cap, None


class _Buffers:
    """The ctypes arrays of one launch, reused across launches."""
    __slots__ = ("args", "ptrs", "objects", "err")

    def __init__(self, n):
        self.args, self.ptrs, self.err = (_lib.Arg * n)(), (ctypes.c_void_p * n)(), _lib.Error()
        self.objects = (ctypes.c_void_p * n)()


class _Dispatch:
    """A tj_dispatch: the kernel on one device."""

    def __init__(self, kernel, device):
        self.kernel, self.device = kernel, device
        self.lib = _library()
        err = _lib.Error()
        req = kernel._request()
        self.h = self.lib.tj_dispatch_new(_jit(device), ctypes.byref(req), ctypes.byref(err))
        if not self.h:
            raise TilejitError(err.text())
        pp = ctypes.POINTER(_lib.Param)()
        n = self.lib.tj_dispatch_params(self.h, ctypes.byref(pp))
        self.params = [(pp[i].name.decode(), pp[i].dtype, pp[i].rank) for i in range(n)]
        self.n = n
        self.tensors = [i for i, (_, _, rank) in enumerate(self.params) if rank > 0]
        self.floats = [i for i, (_, dt, rank) in enumerate(self.params) if rank == 0 and dt in _lib.FLOAT_DTYPES]
        self.ints = [i for i, (_, dt, rank) in enumerate(self.params) if rank == 0 and dt not in _lib.FLOAT_DTYPES]
        self.pool = []
        self.cuda = device[0] == _lib.DEVICE_CUDA

    def __del__(self):
        try:
            self.lib.tj_dispatch_free(self.h)
        except Exception:
            pass

    def _stream(self, values):
        if not self.cuda:
            return None
        stream = _current_stream(values[self.tensors[0]], self.device[1])
        return stream or 1  # DLPack: 1 is the legacy default stream

    def fill(self, values, bufs, stream):
        """Scalars into bufs.args, tensors' DLTensors into bufs.ptrs.
        Returns what must stay alive, and the dtype overrides."""
        args, ptrs, keep, overrides = bufs.args, bufs.ptrs, [], None
        first_kind = type(values[self.tensors[0]]) if self.tensors else None
        try:
            for i in self.tensors:
                v = values[i]
                try:
                    cap = v.__dlpack__() if stream is None else _export_on_stream(v, stream, first_kind)
                    ptrs[i] = capsule_pointer(cap, _DLTENSOR)
                except BufferError:
                    ptrs[i], cap, dtype = _export_special(v, stream)
                    if dtype is not None:
                        overrides = (overrides or []) + [(i, dtype)]
                keep.append(cap)
            for i in self.floats:
                args[i].is_tensor, args[i].scalar.f = 0, float(values[i])
            for i in self.ints:
                args[i].is_tensor, args[i].scalar.i = 0, int(values[i])
        except (AttributeError, TypeError, ValueError, BufferError) as e:
            raise TilejitError(self.kernel._bad_argument(values, e)) from None
        return keep, overrides

    def describe(self, bufs, overrides):
        """Fills bufs.args from the DLTensors (for calls other than launch)."""
        if self.lib.tj_dispatch_args_from_dlpack(self.h, bufs.args, bufs.ptrs, self.n, bufs.err):
            raise TilejitError(bufs.err.text())
        for i, dtype in overrides or ():
            bufs.args[i].tensor.dtype = dtype

    def take(self):
        return self.pool.pop() if self.pool else _Buffers(max(1, self.n))

    def _launch_exchange(self, values, api, bufs):
        """The launch through the producer's exchange API: the tensors go
        to C as the objects themselves (alive in `values` during the call)."""
        kind, objects, args = type(values[self.tensors[0]]), bufs.objects, bufs.args
        try:
            for i in self.tensors:
                if type(values[i]) is not kind:
                    return False  # mixed producers: the capsule path
                objects[i] = id(values[i])  # CPython: the PyObject *
            for i in self.floats:
                args[i].is_tensor, args[i].scalar.f = 0, float(values[i])
            for i in self.ints:
                args[i].is_tensor, args[i].scalar.i = 0, int(values[i])
        except (TypeError, ValueError) as e:
            raise TilejitError(self.kernel._bad_argument(values, e)) from None
        rc = self.lib.gil.tj_dispatch_launch_exchange(self.h, api, objects, args, self.n, bufs.err)
        if rc == _lib.DISPATCH_OTHER_DEVICE:
            return False
        if rc:
            raise TilejitError(bufs.err.text())
        return True

    def try_exchange(self, values):
        """The launch through the exchange API when the arrays are on this
        table's device and of one producer; False (nothing done) if not."""
        api = exchange_api(type(values[self.tensors[0]]))
        if not api:
            return False
        bufs = self.pool.pop() if self.pool else _Buffers(max(1, self.n))
        try:
            return self._launch_exchange(values, api, bufs)
        finally:
            self.pool.append(bufs)

    def launch(self, values):
        bufs = self.pool.pop() if self.pool else _Buffers(max(1, self.n))
        try:
            api = exchange_api(type(values[self.tensors[0]])) if self.cuda and self.tensors else 0
            if not (api and self._launch_exchange(values, api, bufs)):
                self._launch_capsules(values, bufs)
        finally:
            self.pool.append(bufs)

    def _launch_capsules(self, values, bufs):
        """The launch through __dlpack__ capsules."""
        stream = self._stream(values) if self.cuda else None
        keep, overrides = self.fill(values, bufs, stream)
        if overrides:
            self.describe(bufs, overrides)
            rc = self.lib.tj_dispatch_launch(self.h, bufs.args, self.n, stream, bufs.err)
        else:
            rc = self.lib.tj_dispatch_launch_dlpack(self.h, bufs.args, bufs.ptrs, self.n, stream, bufs.err)
        del keep  # the capsules lived through the launch
        if rc:
            raise TilejitError(bufs.err.text())

    def call(self, values, what):
        """what(bufs) with bufs.args described from values."""
        bufs = self.take()
        try:
            keep, overrides = self.fill(values, bufs, self._stream(values))
            self.describe(bufs, overrides)
            return what(bufs)
        finally:
            self.pool.append(bufs)


class Function:
    """One compiled configuration of a kernel, for one signature: launching
    it with arguments outside what it was compiled for is a TilejitError
    naming the broken where clause or specialization."""

    def __init__(self, dispatch, handle):
        self._d, self._h = dispatch, handle

    def __del__(self):
        try:
            self._d.lib.tj_fn_release(self._h)
        except Exception:
            pass

    def __call__(self, *arrays, **scalars):
        d = self._d
        values = d.kernel._bind(arrays, scalars)
        stream = d._stream(values)
        def launch(bufs):
            if d.lib.tj_fn_launch(self._h, bufs.args, d.n, stream, bufs.err):
                raise TilejitError(bufs.err.text())
        d.call(values, launch)

    @property
    def config(self):
        """The tile parameters it was compiled with, e.g. {'BLOCK': 256, 'warps': 4}."""
        b = ctypes.POINTER(_lib.Binding)()
        n = self._d.lib.tj_fn_config(self._h, ctypes.byref(b))
        return {b[i].name.decode(): b[i].value for i in range(n)}

    @property
    def ptx(self):
        p = self._d.lib.tj_fn_ptx(self._h)
        return p.decode() if p else None


class Kernel:
    """A kernel of a .tj source. Calling it launches it on its arrays'
    device (the cpu for NumPy, cuda for PyTorch and CuPy CUDA arrays, on the
    framework's current stream), compiling (or tuning) what each new
    argument signature needs: Kernel(*arrays, **scalars)."""

    def __init__(self, source, name, file="<python>", params=None, arch=None):
        self.name, self.source, self.file = name, source, file
        self._params, self._arch = dict(params or {}), arch
        self._dispatches = {}
        self._by_dl_device = {}  # __dlpack_device__() -> its _Dispatch, for the fast path
        self._by_kind = {}  # array type with the exchange API -> the CUDA _Dispatch it went to last
        cpu = self._dispatch((_lib.DEVICE_CPU, 0))  # parses now: errors surface here
        self.params = cpu.params
        self._names = [p[0] for p in cpu.params]
        self._n = len(self._names)
        self._first_tensor = cpu.tensors[0] if cpu.tensors else None

    def _request(self):
        src = self.source.encode()
        binds = (_lib.Binding * max(1, len(self._params)))(
            *[_lib.Binding(k.encode(), int(v)) for k, v in self._params.items()])
        req = _lib.Request(self.file.encode(), src, len(src), self.name.encode(), binds, len(self._params),
                           None, 0, self._arch.encode() if self._arch else None, None)
        req._keep = (src, binds)
        return req

    def _dispatch(self, device):
        d = self._dispatches.get(device)
        if d is None:
            d = self._dispatches[device] = _Dispatch(self, device)
        return d

    def _bind(self, arrays, scalars):
        """The arguments in parameter order: positional ones first, then
        the keywords by parameter name."""
        if not scalars and len(arrays) == len(self._names):
            return arrays
        values = list(arrays) + [None] * (len(self._names) - len(arrays))
        for key, value in scalars.items():
            if key not in self._names:
                raise TilejitError(f"kernel '{self.name}' has no parameter '{key}' "
                                   f"(its parameters: {', '.join(self._names)})")
            values[self._names.index(key)] = value
        missing = [self._names[i] for i, v in enumerate(values) if v is None]
        if missing or len(values) != len(self._names):
            raise TilejitError(f"kernel '{self.name}' takes {len(self._names)} arguments "
                               f"({', '.join(self._names)}), {len(arrays) + len(scalars)} given"
                               + (f"; missing: {', '.join(missing)}" if missing else ""))
        return values

    def _bad_argument(self, values, e):
        for (name, _, rank), v in zip(self.params, values):
            if rank > 0 and not hasattr(v, "__dlpack__"):
                return (f"argument '{name}' of kernel '{self.name}' must be an array with __dlpack__ "
                        f"(NumPy, PyTorch, CuPy, JAX), got {type(v).__name__}")
            if rank == 0 and hasattr(v, "__dlpack__") and getattr(v, "ndim", 1) != 0:
                return f"argument '{name}' of kernel '{self.name}' is a scalar, got an array"
        return f"kernel '{self.name}': {e}"

    def _device_dispatch(self, values):
        if self._first_tensor is None:
            return self._dispatch((_lib.DEVICE_CPU, 0))
        first = values[self._first_tensor]
        d = self._dispatch(_device_of(first))
        self._by_dl_device[first.__dlpack_device__()] = d
        return d

    def __call__(self, *arrays, **scalars):
        values = arrays if not scalars and len(arrays) == self._n else self._bind(arrays, scalars)
        # an exchange-API type goes straight to the CUDA table it used last:
        # C checks the device (no __dlpack_device__ call) and says if it moved
        kind = type(values[self._first_tensor]) if self._first_tensor is not None else None
        d = self._by_kind.get(kind)
        if d is not None and d.try_exchange(values):
            return
        try:
            d = self._by_dl_device[values[self._first_tensor].__dlpack_device__()]
        except (KeyError, TypeError, AttributeError):
            d = self._device_dispatch(values)
        d.launch(values)
        if d.cuda and d.tensors and exchange_api(kind):
            self._by_kind[kind] = d

    def compile(self, *arrays, **scalars):
        """The Function a call with these arguments runs (compiled now if
        need be); it refuses arguments of other signatures."""
        values = self._bind(arrays, scalars)
        d = self._device_dispatch(values)
        def get(bufs):
            h = d.lib.tj_dispatch_fn(d.h, bufs.args, d.n, bufs.err)
            if not h:
                raise TilejitError(bufs.err.text())
            return Function(d, h)
        return d.call(values, get)

    def tune(self, *arrays, progress=True, **scalars):
        """Times every configuration for these arguments' signature (the cpu:
        in the interpreter, on copies; cuda: on random data, the times kept
        in the disk cache), prints the table and keeps the fastest for
        later calls. Returns the results, fastest first."""
        from ._tune import run
        values = self._bind(arrays, scalars)
        d = self._device_dispatch(values)
        return d.call(values, lambda bufs: run(d, bufs, self.name, progress))

    def __repr__(self):
        return f"<tilejit.Kernel {self.name}({', '.join(self._names)}) from {self.file}>"


def kernel(source_or_path, name, **options):
    """The kernel `name` of a .tj file (a path) or of source text.
    options: params={'BLOCK': 256} holds tile parameters fixed; arch='sm_80'."""
    text, file = source_or_path, "<python>"
    if "\n" not in source_or_path and os.path.exists(source_or_path):
        with open(source_or_path, encoding="utf-8") as f:
            text, file = f.read(), source_or_path
    return Kernel(text, name, file=file, **options)
