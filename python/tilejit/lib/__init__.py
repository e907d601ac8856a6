"""tilejit.lib: device-wide algorithms written in the .tj language, on
NumPy, PyTorch and CuPy arrays (docs/library.md).

    import numpy as np, tilejit.lib as tl
    y = tl.cumsum(np.arange(10, dtype=np.float32))        # NumPy in, NumPy out
    order = tl.argsort(torch_tensor_on_gpu, descending=True)  # torch in, torch out

Inputs are DLPack arrays; results are new arrays of the input's kind, on
its device (CUDA work goes to the framework's current stream, with no
host synchronization). Errors are tilejit.TilejitError.
"""
from ._scan import cummax, cumsum, cumsum_multi_phase, scan
from ._sort import argsort, sort
from ._topk import topk
from ._selective_scan import selective_scan

__all__ = ["cumsum", "cummax", "scan", "sort", "argsort", "topk", "selective_scan"]
