"""tilejit from Python: tiled kernels on NumPy, PyTorch, CuPy and JAX arrays.

    import numpy as np, tilejit
    softmax = tilejit.kernel("examples/softmax.tj", "softmax")
    x = np.random.rand(4, 1000).astype(np.float32)
    y = np.empty_like(x)
    softmax(x, y)                 # the cpu (reference interpreter) for NumPy
    softmax(xt, yt)               # cuda for torch/CuPy CUDA tensors, current stream

Arrays are read through DLPack; each new argument signature (dtypes,
shape buckets, layout facts) gets the configuration it needs, compiled
once (docs/python.md). Errors are TilejitError with the diagnostics.
"""
from ._cuda_c import CudaKernel, cuda_kernel
from ._kernel import Function, Kernel, kernel, on_event
from ._mlir import MlirFunction, MlirModule, import_mlir, mlir_available
from ._lib import TilejitError

__all__ = ["kernel", "Kernel", "Function", "TilejitError", "on_event", "Jit", "cuda_kernel", "CudaKernel",
           "import_mlir", "MlirFunction", "MlirModule", "mlir_available"]
__version__ = "0.1.0"


class Jit:
    """The first binding's interface, kept for bench/gpu/bench.py:
    Jit(device).compile(source, kernel, *example_args, params=..., file=...)
    returns the Function for the example arguments' signature."""

    def __init__(self, device="cuda", ordinal=0):
        self.device = device

    def compile(self, source, kernel_name, *example_args, params=None, file="<python>", arch=None):
        return Kernel(source, kernel_name, file=file, params=params, arch=arch).compile(*example_args)
