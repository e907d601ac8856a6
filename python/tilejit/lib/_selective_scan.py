"""Mamba's selective scan (lib/selective_scan.c, lib/kernels/selective_scan.tj)
with the shapes and semantics of mamba_ssm's selective_scan_fn."""
import ctypes

from ._common import invoke, new_like


class _Ssm(ctypes.Structure):  # tj_lib_ssm (include/tilejit/lib.h)
    _fields_ = [(name, ctypes.c_void_p) for name in ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")] + \
               [("delta_softplus", ctypes.c_int)]


def selective_scan(u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False):
    """out[b, d, t] of selective_scan_fn: the state h[b, d, n] (f32, zero
    at the start) runs h = exp(dt * A[d, n]) * h + dt * B[b, n, t] * u[b, d, t]
    with dt = delta[b, d, t] (+ delta_bias[d], then softplus if
    delta_softplus), and out = (sum_n C[b, n, t] * h + D[d] * u) * silu(z).
    u, delta, z: (batch, dim, L); A: (dim, dstate); B, C: (batch, dstate, L);
    D, delta_bias: (dim,). u, delta, B, C, z are f32 or bf16 (one dtype, the
    output's); A, D, delta_bias f32. A new array of u's kind."""
    out = new_like(u)
    given = [a for a in (D, z, delta_bias) if a is not None]

    def entry(lib, h, t, stream, err):
        ptr = [ctypes.addressof(p) for p in t]
        opt = iter(ptr[6:])
        s = _Ssm(*ptr[:5], *(next(opt) if a is not None else None for a in (D, z, delta_bias)),
                 int(bool(delta_softplus)))
        return lib.tj_lib_selective_scan(h, ctypes.addressof(s), ctypes.byref(t[5]), stream, err)

    invoke(entry, u, delta, A, B, C, out, *given)
    return out
