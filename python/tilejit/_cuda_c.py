"""CUDA C kernels through NVRTC (include/tilejit/nvrtc.h): CudaKernel and
cuda_kernel(). The source, headers, defines, template arguments and
options go to NVRTC as the C API takes them; the PTX and cubin are kept in
the JIT's disk cache under a key with the arch, the NVRTC library and every
option, so a later process loads the cubin without NVRTC."""
import ctypes
import os

from . import _kernel, _lib
from ._lib import TilejitError, capsule_pointer

_P, _U32, _I, _ERR = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.POINTER(_lib.Error)
_STRS = ctypes.POINTER(ctypes.c_char_p)
_FLOATS = ("f16", "bf16", "f32", "f64")
MAX_PARAMS = 64


class Header(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("text", ctypes.c_char_p)]


class Source(ctypes.Structure):
    _fields_ = [("file", ctypes.c_char_p), ("source", ctypes.c_char_p), ("len", ctypes.c_size_t),
                ("kernel", ctypes.c_char_p), ("signature", ctypes.c_char_p),
                ("headers", ctypes.POINTER(Header)), ("nheaders", _U32),
                ("defines", _STRS), ("ndefines", _U32), ("include_dirs", _STRS), ("ninclude_dirs", _U32),
                ("options", _STRS), ("noptions", _U32), ("arch", ctypes.c_char_p)]


class Param(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 64), ("dtype", _I), ("pointer", _I), ("is_const", _I)]


class Output(ctypes.Structure):
    _fields_ = [("ptx", ctypes.c_char_p), ("ptx_len", ctypes.c_size_t), ("lowered_name", ctypes.c_char_p),
                ("params", Param * MAX_PARAMS), ("nparams", _U32), ("log", ctypes.c_char_p),
                ("nvrtc_ms", ctypes.c_double)]


class BuildOptions(ctypes.Structure):
    _fields_ = [("cache", _P), ("nvrtc", _P), ("nvjitlink", _P), ("diags", _P)]


class Info(ctypes.Structure):
    _fields_ = [("from_disk", _I), ("total_ms", ctypes.c_double), ("nvrtc_ms", ctypes.c_double),
                ("link_ms", ctypes.c_double), ("load_ms", ctypes.c_double), ("arch", ctypes.c_char * 16),
                ("nvrtc_version", ctypes.c_char * 16)]


class Dims(ctypes.Structure):
    _fields_ = [("grid", _U32 * 3), ("block", _U32 * 3), ("shared_bytes", _U32), ("stream", _P)]


_SIGNATURES = {
    "tj_ctx_new": (_P, []),
    "tj_ctx_free": (None, [_P]),
    "tj_diag_render": (ctypes.c_char_p, [_P]),
    "tj_nvrtc_open": (_P, [_ERR]),
    "tj_nvrtc_close": (None, [_P]),
    "tj_nvrtc_compile": (_I, [_P, ctypes.POINTER(Source), _P, ctypes.POINTER(Output), _ERR]),
    "tj_nvrtc_output_free": (None, [ctypes.POINTER(Output)]),
    "tj_cuda_c_params": (_I, [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_char_p,
                              ctypes.POINTER(Param), _I, _ERR]),
    "tj_jit_cuda": (_P, [_P]),
    "tj_jit_disk_cache": (_P, [_P]),
    "tj_cuda_kernel_build": (_P, [_P, ctypes.POINTER(Source), ctypes.POINTER(BuildOptions), _ERR]),
    "tj_cuda_kernel_free": (None, [_P]),
    "tj_cuda_kernel_launch": (_I, [_P, ctypes.POINTER(Dims), ctypes.POINTER(_lib.Arg), _U32, _ERR]),
    "tj_cuda_kernel_launch_dlpack": (_I, [_P, ctypes.POINTER(Dims), ctypes.POINTER(_lib.Arg),
                                          ctypes.POINTER(_P), _U32, _ERR]),
    "tj_cuda_kernel_get_info": (ctypes.POINTER(Info), [_P]),
    "tj_cuda_kernel_ptx": (ctypes.c_char_p, [_P]),
    "tj_cuda_kernel_function": (_P, [_P]),
    "tj_cuda_function_set_max_dynamic_shared": (_I, [_P, _I, _ERR]),
    "tj_tensor_from_dlpack": (ctypes.c_char_p, [_P, ctypes.POINTER(_lib.Tensor), ctypes.POINTER(ctypes.c_int32),
                                                ctypes.POINTER(ctypes.c_int32)]),
}


def _library():
    return _lib.bind(_kernel._library(), _SIGNATURES)


# C type names for template arguments given as NumPy dtypes (or their names)
_C_TYPES = {"float32": "float", "float64": "double", "float16": "__half", "bfloat16": "__nv_bfloat16",
            "int8": "signed char", "int16": "short", "int32": "int", "int64": "long long",
            "uint8": "unsigned char", "uint16": "unsigned short", "uint32": "unsigned int",
            "uint64": "unsigned long long", "bool": "bool"}


def _template_arg(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value
    name = getattr(value, "name", None) or getattr(value, "__name__", None)
    if name is None and hasattr(value, "dtype"):
        name = value.dtype.name
    if name in _C_TYPES:
        return _C_TYPES[name]
    raise TilejitError(f"template argument {value!r}: expected an int, a bool, a C type name (str) "
                       f"or a NumPy dtype")


def _name_expression(name, template):
    if template is None:
        return name
    args = template if isinstance(template, (tuple, list)) else (template,)
    return f"{name}<{', '.join(_template_arg(a) for a in args)}>"


def _define(key, value):
    if value is None or value is True:
        return key
    return f"{key}={value}"


def _strings(items):
    """A char * array (kept alive by the caller) and its count."""
    encoded = [s.encode() for s in items]
    return (ctypes.c_char_p * max(1, len(encoded)))(*encoded), len(encoded)


def _dims3(value, what):
    parts = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(parts) <= 3 or not all(isinstance(p, int) and p >= 1 for p in parts):
        raise TilejitError(f"{what}: expected 1 to 3 positive ints, got {value!r}")
    return (_U32 * 3)(*(parts + (1,) * (3 - len(parts))))


def _stream_handle(stream):
    """A CUstream from an int, or a torch/CuPy stream object."""
    for attr in ("cuda_stream", "ptr", "handle"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    return int(stream)


class CudaKernel:
    """A __global__ function of a CUDA C source. Calling it launches it:
    k(*args, grid=..., block=..., shared_mem=0, stream=None), with pointer
    parameters taken from CUDA arrays (row-major contiguous, the declared
    dtype) and scalars from numbers; the stream is the arrays' framework's
    current one unless given. ptx(arch) compiles with NVRTC alone (no GPU)."""

    def __init__(self, source, name, *, template=None, headers=None, defines=None, include_dirs=None,
                 options=None, signature=None, arch=None, file="kernel.cu"):
        self.name, self.file, self.arch = _name_expression(name, template), file, arch
        self.source = source
        headers = dict(headers or {})
        if isinstance(defines, dict):
            defines = [_define(k, v) for k, v in defines.items()]
        self._keep = []
        src = self.source.encode()
        hs = (Header * max(1, len(headers)))(*[Header(k.encode(), v.encode()) for k, v in headers.items()])
        ds, nd = _strings(defines or [])
        ins, ni = _strings(include_dirs or [])
        ops, no = _strings(options or [])
        self._src = Source(file.encode(), src, len(src), self.name.encode(),
                           signature.encode() if signature else None, hs, len(headers), ds, nd, ins, ni, ops, no,
                           arch.encode() if arch else None)
        self._keep = [src, hs, ds, ins, ops]
        self._built = {}  # CUDA ordinal -> tj_cuda_kernel handle
        self._smem_allowed = {}  # CUDA ordinal -> dynamic shared memory bytes allowed so far
        self._launch = {}  # CUDA ordinal -> [kernel, args, dlpack pointers, dims, error, last launch shape]
        self.params = self._read_params(signature)
        self._first_pointer = next((i for i, p in enumerate(self.params) if p[2]), None)
        self._lib = _library()

    def _read_params(self, signature):
        """(name, dtype, pointer, const) of each parameter, from the
        declaration (or the signature): errors surface at construction."""
        lib, err = _library(), _lib.Error()
        out = (Param * MAX_PARAMS)()
        n = lib.tj_cuda_c_params(self._src.source, self._src.len, self._src.kernel, self._src.signature,
                                 out, MAX_PARAMS, ctypes.byref(err))
        if n < 0:
            raise TilejitError(err.text())
        return [(p.name.decode(), _lib.DTYPES[p.dtype] if p.dtype else "void", bool(p.pointer), bool(p.is_const))
                for p in out[:n]]

    def _with_arch(self, arch):
        src = Source.from_buffer_copy(self._src)
        if arch:
            src.arch = arch.encode()
            self._keep.append(src.arch)
        return src

    def ptx(self, arch=None):
        """The PTX NVRTC makes for `arch` (default: the kernel's arch, else
        sm_90a), with no GPU: a TilejitError carries NVRTC's diagnostics."""
        lib, err = self._lib, _lib.Error()
        nv = lib.tj_nvrtc_open(ctypes.byref(err))
        if not nv:
            raise TilejitError(err.text())
        ctx, out = lib.tj_ctx_new(), Output()
        try:
            src = self._with_arch(arch or self.arch or "sm_90a")
            if lib.tj_nvrtc_compile(nv, ctypes.byref(src), ctx, ctypes.byref(out), ctypes.byref(err)):
                diags = lib.tj_diag_render(ctx) if ctx else None
                raise TilejitError(err.text() + ("\n" + diags.decode(errors="replace") if diags else ""))
            text = out.ptx.decode()
            self.lowered_name = out.lowered_name.decode() if out.lowered_name else None
            lib.tj_nvrtc_output_free(ctypes.byref(out))
            return text
        finally:
            lib.tj_ctx_free(ctx)
            lib.tj_nvrtc_close(nv)

    def _kernel_on(self, ordinal):
        k = self._built.get(ordinal)
        if k is None:
            lib, err = self._lib, _lib.Error()
            jit = _kernel._jit((_lib.DEVICE_CUDA, ordinal))
            ctx = lib.tj_ctx_new()
            try:
                opts = BuildOptions(lib.tj_jit_disk_cache(jit), None, None, ctx)
                k = lib.tj_cuda_kernel_build(lib.tj_jit_cuda(jit), ctypes.byref(self._src), ctypes.byref(opts),
                                             ctypes.byref(err))
                if not k:
                    diags = lib.tj_diag_render(ctx) if ctx else None
                    raise TilejitError(err.text() + ("\n" + diags.decode(errors="replace") if diags else ""))
            finally:
                lib.tj_ctx_free(ctx)
            self._built[ordinal] = k
        return k

    def info(self, ordinal=0):
        """How the kernel was built on CUDA device `ordinal` (building it
        if need be): from_disk, total_ms, nvrtc_ms, link_ms, load_ms, arch."""
        i = self._lib.tj_cuda_kernel_get_info(self._kernel_on(ordinal)).contents
        return {"from_disk": bool(i.from_disk), "total_ms": i.total_ms, "nvrtc_ms": i.nvrtc_ms,
                "link_ms": i.link_ms, "load_ms": i.load_ms, "arch": i.arch.decode(),
                "nvrtc_version": i.nvrtc_version.decode()}

    def _launch_state(self, ordinal):
        """The kernel on CUDA device `ordinal` with the ctypes buffers of its
        launches (reused: a launch allocates no ctypes objects)."""
        st = self._launch.get(ordinal)
        if st is None:
            n = max(1, len(self.params))
            st = self._launch[ordinal] = [self._kernel_on(ordinal), (_lib.Arg * n)(), (_P * n)(), Dims(),
                                          _lib.Error(), None]
        return st

    def __call__(self, *args, grid, block, shared_mem=0, stream=None):
        if len(args) != len(self.params):
            names = ", ".join(p[0] or "?" for p in self.params)
            raise TilejitError(f"kernel '{self.name}' takes {len(self.params)} arguments ({names}), "
                               f"{len(args)} given")
        if self._first_pointer is None:
            raise TilejitError(f"kernel '{self.name}' has no pointer parameter to tell its device by")
        first = args[self._first_pointer]
        try:
            kind, ordinal = first.__dlpack_device__()
        except AttributeError:
            raise TilejitError(f"kernel '{self.name}', argument '{self.params[self._first_pointer][0]}': "
                               f"expected a CUDA array (a pointer parameter), got {type(first).__name__}") from None
        if kind not in (2, 13):
            raise TilejitError(f"kernel '{self.name}': CUDA C kernels run on CUDA arrays; argument "
                               f"'{self.params[self._first_pointer][0]}' is on DLPack device {kind}")
        k, cargs, ptrs, dims, err, last = self._launch_state(ordinal)
        handle = _stream_handle(stream) if stream is not None else _kernel._current_stream(first, ordinal)
        shape = (grid, block, shared_mem)
        if shape != last:  # grid, block and shared memory as the last launch: the dims as they are
            dims.grid, dims.block, dims.shared_bytes = _dims3(grid, "grid"), _dims3(block, "block"), int(shared_mem)
            self._allow_shared(k, ordinal, int(shared_mem), err)
            self._launch[ordinal][5] = shape
        dims.stream = handle or None
        keep, kind_of_first, export_stream = [], type(first), handle or 1
        try:
            for i, (value, (_, dtype, pointer, _c)) in enumerate(zip(args, self.params)):
                if pointer:
                    cap = _kernel._export_on_stream(value, export_stream, kind_of_first)
                    ptrs[i] = capsule_pointer(cap, b"dltensor")
                    keep.append(cap)
                elif dtype in _FLOATS:
                    ptrs[i] = None
                    cargs[i].is_tensor, cargs[i].scalar.f = 0, float(value)
                else:
                    ptrs[i] = None
                    cargs[i].is_tensor, cargs[i].scalar.i = 0, int(value)
        except (AttributeError, TypeError, ValueError, BufferError) as e:
            raise TilejitError(self._bad_argument(args, e)) from None
        if self._lib.tj_cuda_kernel_launch_dlpack(k, dims, cargs, ptrs, len(args), err):
            raise TilejitError(err.text())
        del keep  # the capsules lived through the launch

    def _bad_argument(self, args, e):
        for (name, _, pointer, _c), v in zip(self.params, args):
            if pointer and not hasattr(v, "__dlpack__"):
                return (f"kernel '{self.name}', argument '{name}': expected a CUDA array (a pointer parameter), "
                        f"got {type(v).__name__}")
        return f"kernel '{self.name}': {e}"

    def _allow_shared(self, k, ordinal, nbytes, err):
        """Dynamic shared memory over the default 48 KiB must be allowed
        first (cuFuncSetAttribute), once per size reached."""
        if nbytes <= max(48 * 1024, self._smem_allowed.get(ordinal, 0)):
            return
        fn = self._lib.tj_cuda_kernel_function(k)
        if self._lib.tj_cuda_function_set_max_dynamic_shared(fn, nbytes, ctypes.byref(err)):
            raise TilejitError(err.text())
        self._smem_allowed[ordinal] = nbytes

    def __del__(self):
        try:
            for k in self._built.values():
                self._lib.tj_cuda_kernel_free(k)
        except Exception:
            pass

    def __repr__(self):
        sig = ", ".join(f"{n}: {'const ' if c else ''}{d}{'*' if p else ''}" for n, d, p, c in self.params)
        return f"<tilejit.CudaKernel {self.name}({sig}) from {self.file}>"


def cuda_kernel(source, name, **options):
    """The __global__ function `name` of CUDA C source text or a .cu file.
    options: template=(np.float32, 256) (the name expression's arguments),
    headers={"cfg.h": text}, defines={"BLOCK": 256} or ["BLOCK=256"],
    include_dirs, options=["-use_fast_math"], signature="y: f32*, n: i32"
    (when the declaration cannot be read), arch="sm_90a", file=."""
    if "\n" not in source and source.endswith((".cu", ".cuh")) and os.path.exists(source):
        with open(source, encoding="utf-8") as f:
            options.setdefault("file", source)
            source = f.read()
    return CudaKernel(source, name, **options)
