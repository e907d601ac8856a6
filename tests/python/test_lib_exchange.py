"""tilejit.lib's arrays viewed through a type's DLPack exchange API (what
PyTorch publishes as __dlpack_c_exchange_api__): no capsule per array. A
stand-in producer here wraps NumPy arrays and publishes the API from
ctypes, so the path runs without PyTorch or a GPU."""
import ctypes

import numpy as np
import pytest

from tilejit import _kernel
from tilejit.lib import _common

_VIEW = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)
_STREAM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p))


class _Api(ctypes.Structure):  # dlpack.h 1.3's DLPackExchangeAPI
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("prev", ctypes.c_void_p),
                ("allocator", ctypes.c_void_p), ("from_py", ctypes.c_void_p), ("to_py", ctypes.c_void_p),
                ("view", _VIEW), ("stream", _STREAM)]


def producer(major=1, fail=False):
    """An array type over NumPy arrays with an exchange API of that version;
    its `views` counts the arrays the API described."""
    counts = {"views": 0}

    def view(obj, out):
        if fail:
            return 1
        counts["views"] += 1
        dl = _common._DLTensor.from_address(out)
        a = obj.a
        obj.keep = ((ctypes.c_int64 * a.ndim)(*a.shape), (ctypes.c_int64 * a.ndim)(*(s // a.itemsize for s in a.strides)))
        dl.data, dl.device.device_type, dl.device.device_id, dl.ndim = a.ctypes.data, 1, 0, a.ndim
        dl.dtype.code, dl.dtype.bits, dl.dtype.lanes = {"i": 0, "f": 2}[a.dtype.kind], a.itemsize * 8, 1
        dl.shape, dl.strides, dl.byte_offset = obj.keep[0], obj.keep[1], 0
        return 0

    def stream(device_type, device_id, out):
        out[0] = None
        return 0

    api = _Api(major, 3, None, None, None, None, _VIEW(view), _STREAM(stream))

    class Array:
        __dlpack_c_exchange_api__ = ctypes.addressof(api)

        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    Array.api, Array.counts = api, counts  # alive as long as the type
    return Array


@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_a_library_call_views_its_arrays_through_the_exchange_api(dtype):
    Array = producer()
    x = np.arange(-500, 2500, 3).astype(dtype)[::2]  # a strided view
    y = np.zeros_like(x)
    _common.call("tj_lib_cumsum", Array(x), Array(y), 0)
    assert Array.counts["views"] == 2
    np.testing.assert_array_equal(y, np.cumsum(x, dtype=dtype))


@pytest.mark.parametrize("kw", [{"major": 2}, {"fail": True}])
def test_an_unusable_exchange_api_falls_back_to_capsules(kw):
    Array = producer(**kw)
    x = np.arange(100, dtype=np.int32)
    y = np.zeros_like(x)
    _common.call("tj_lib_cumsum", Array(x), Array(y), 0)
    assert Array.counts["views"] == 0
    np.testing.assert_array_equal(y, np.cumsum(x, dtype=np.int32))


def test_mixed_array_types_take_the_capsules():
    Array = producer()
    x = np.arange(100, dtype=np.int32)
    y = np.zeros_like(x)
    _common.call("tj_lib_cumsum", Array(x), y, 0)
    assert Array.counts["views"] == 0
    np.testing.assert_array_equal(y, np.cumsum(x, dtype=np.int32))
    assert _kernel.exchange_api(Array) == ctypes.addressof(Array.api)
