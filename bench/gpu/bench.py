#!/usr/bin/env python3
"""Kernels on the GPU: tilejit side by side with PyTorch and Triton, in one
process, on the same data.

    python3 bench/gpu/bench.py [--quick] [--json OUT.json] [--only matmul]

Each row: the median time of triton.testing.do_bench (warm-up, then repeated
launches; data far larger than the 60 MB L2). Memory-bound rows are turned into
TB/s from the bytes the kernel must move (each input read once, each output
written once); the copy row (torch copy_, 2 GiB) is the roofline the targets
are stated against. Matrix rows (matmul, attention) are in TFLOP/s. Every
tilejit result is checked against PyTorch before it is timed.
"""
import argparse
import datetime
import json
import os
import sys

import torch
import triton
import triton.language as tl

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
import tilejit  # noqa: E402

KERNELS = os.path.join(ROOT, "bench", "gpu", "kernels.tj.in")


def do_bench(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")


# ---- Triton peers --------------------------------------------------------

@triton.jit
def _triton_softmax(X, Y, stride, N, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + r * stride + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(Y + r * stride + cols, (e / tl.sum(e, axis=0)).to(Y.dtype.element_ty), mask=cols < N)


def triton_softmax(x, y):
    block = triton.next_power_of_2(x.shape[1])
    warps = 4 if block <= 2048 else 8 if block <= 8192 else 16
    _triton_softmax[(x.shape[0],)](x, y, x.stride(0), x.shape[1], BLOCK=block, num_warps=warps)


# ---- workloads -----------------------------------------------------------

def warps_for(block):
    return 4 if block <= 2048 else 8 if block <= 8192 else 16


class Row:
    def __init__(self, name, shape, dtype, nbytes):
        self.name, self.shape, self.dtype, self.nbytes = name, shape, dtype, nbytes
        self.times = {}
        self.error = None

    def tbps(self, who):
        t = self.times.get(who)
        return self.nbytes / (t * 1e-3) / 1e12 if t else None


def check(name, got, want, atol, rtol):
    if not torch.allclose(got.float(), want.float(), atol=atol, rtol=rtol):
        err = (got.float() - want.float()).abs().max().item()
        raise AssertionError(f"{name}: result differs from PyTorch (max abs error {err:.3g})")


def run_row(row, tj_call, torch_call, triton_call, verify):
    try:
        tj_call()
        torch.cuda.synchronize()
        verify()
        row.times["tilejit"] = do_bench(tj_call)
    except Exception as e:  # the row says what failed; the others still run
        row.error = str(e).splitlines()[0][:200]
    row.times["torch"] = do_bench(torch_call)
    if triton_call:
        row.times["triton"] = do_bench(triton_call)
    return row


def source():
    with open(KERNELS) as f:
        return f.read()


def compile_tj(jit, kernel, dtype, args, params):
    src = source().replace("{T}", {torch.float32: "f32", torch.bfloat16: "bf16"}[dtype])
    return jit.compile(src, kernel, *args, params=params, file="bench/gpu/kernels.tj")


def fastest(configs, attempt):
    """Runs attempt(params) (compile, check, time: returns ms or raises) for each
    configuration, as the autotuner would; returns ((ms, params) of the fastest or
    None, the last error or None)."""
    best, error = None, None
    for params in configs:
        try:
            t = attempt(params)
        except Exception as e:  # the row says what failed; the others still run
            error = f"{params}: " + str(e).splitlines()[0][:200]
            continue
        if best is None or t < best[0]:
            best = (t, params)
    return best, error


def rowwise(jit, name, kernel, m, n, dtype, extra_in, torch_fn, triton_fn=None):
    """One program per row. tilejit is timed with 4, 8 and 16 warps (the
    `warps` of the kernel's tune list; the autotuner does the same search) and
    the best is reported, with its warps in the shape column."""
    x = torch.randn(m, n, device="cuda", dtype=dtype)
    y = torch.empty_like(x)
    ins = [make(n) for make in extra_in]
    block = triton.next_power_of_2(n)
    args = [x, *ins, y] + ([1e-5] if kernel in ("layernorm", "rmsnorm") else [])
    row = Row(name, f"{m}x{n}", str(dtype).replace("torch.", ""),
              2 * x.numel() * x.element_size() + sum(t.numel() * t.element_size() for t in ins))
    tol = (2e-2, 2e-2) if dtype == torch.bfloat16 else (1e-5, 1e-4)

    def attempt(params):
        fn = compile_tj(jit, kernel, dtype, args, dict(params, BLOCK=block))
        fn(*args)
        torch.cuda.synchronize()
        check(name, y, torch_fn(x, *ins), *tol)
        return do_bench(lambda: fn(*args))

    best, row.error = fastest([dict(warps=w) for w in (4, 8, 16)], attempt)
    if best:
        row.times["tilejit"] = best[0]
        row.shape += f" w{best[1]['warps']}"
        row.error = None
    row.times["torch"] = do_bench(lambda: torch_fn(x, *ins))
    if triton_fn:
        row.times["triton"] = do_bench(lambda: triton_fn(x, y))
    return row


def skip_row(row, torch_call):
    row.times["torch"] = do_bench(torch_call)
    return row


REDUCTION_CONFIGS = [dict(BM=bm, BN=bn) for bm in (4, 8) for bn in (1024, 2048)]
COLSUM_CONFIGS = [dict(BM=bm, BN=bn) for bm in (32, 64) for bn in (128, 256)]


def reductions(jit, m, n, dtype):
    """Row and column sums; each of the kernels' tune configurations is
    checked and timed (what the autotuner does), the fastest reported."""
    rows = []
    x = torch.randn(m, n, device="cuda", dtype=dtype)
    for name, kernel, out_len, ref, configs in (
            ("row sum", "rowsum", m, lambda: x.float().sum(1), REDUCTION_CONFIGS),
            ("column sum", "colsum", n, lambda: x.float().sum(0), COLSUM_CONFIGS)):
        s = torch.empty(out_len, device="cuda", dtype=torch.float32)
        row = Row(name, f"{m}x{n}", str(dtype).replace("torch.", ""), x.numel() * x.element_size() + s.numel() * 4)

        def attempt(params):
            fn = compile_tj(jit, kernel, dtype, [x, s], params)
            # colsum adds partial sums atomically into S, which must start at zero
            call = (lambda: fn(x, s)) if kernel == "rowsum" else (lambda: (s.zero_(), fn(x, s)))
            call()
            torch.cuda.synchronize()
            check(name, s, ref(), 1e-2, 1e-3)
            return do_bench(call)

        best, row.error = fastest(configs, attempt)
        if best:
            row.times["tilejit"] = best[0]
            row.shape += " " + ",".join(f"{k}{v}" for k, v in best[1].items())
            row.error = None
        rows.append(skip_row(row, lambda: x.sum(1 if kernel == "rowsum" else 0)))
    return rows


def elementwise(jit, n):
    rows = []
    x, y, z = (torch.randn(n, device="cuda") for _ in range(3))
    out = torch.empty_like(x)
    gelu = torch.nn.functional.gelu
    for name, kernel, args, ref, nin in (("vector add", "add", [x, y, out], lambda: x + y, 2),
                                         ("gelu(x*y+z)", "gelu", [x, y, z, out], lambda: gelu(x * y + z), 3)):
        row = Row(name, f"{n}", "float32", (nin + 1) * n * 4)
        try:
            fn = compile_tj(jit, kernel, torch.float32, args, {})
        except Exception as e:
            row.error = str(e).splitlines()[0][:200]
            rows.append(skip_row(row, ref))
            continue
        rows.append(run_row(row, lambda: fn(*args), ref, None, lambda: check(name, out, ref(), 1e-5, 1e-5)))
    return rows


def gather(jit, v, d, n):
    table = torch.randn(v, d, device="cuda")
    idx = torch.randint(0, v, (n,), device="cuda", dtype=torch.int32)
    out = torch.empty(n, d, device="cuda")
    row = Row("gather rows", f"{n}x{d} from {v}", "float32", 2 * n * d * 4 + n * 4)
    try:
        fn = compile_tj(jit, "embed", torch.float32, [table, idx, out], {})
    except Exception as e:
        row.error = str(e).splitlines()[0][:200]
        return skip_row(row, lambda: table[idx])
    return run_row(row, lambda: fn(table, idx, out), lambda: table[idx], None,
                   lambda: check("gather", out, table[idx.long()], 0, 0))


def sort_rows(jit, m, n):
    x = torch.randn(m, n, device="cuda")
    y = torch.empty_like(x)
    row = Row("sort rows", f"{m}x{n}", "float32", 2 * x.numel() * 4)
    try:
        fn = compile_tj(jit, "sort_rows", torch.float32, [x, y], {"BLOCK": triton.next_power_of_2(n)})
    except Exception as e:
        row.error = str(e).splitlines()[0][:200]
        return skip_row(row, lambda: torch.sort(x, dim=1))
    return run_row(row, lambda: fn(x, y), lambda: torch.sort(x, dim=1), None,
                   lambda: check("sort", y, torch.sort(x, dim=1).values, 0, 0))


# ---- tilejit.lib: device-wide algorithms (docs/library.md) ---------------------

def lib_rows(quick=False):
    return lib_scan_rows(quick) + lib_sort_rows(quick)


def lib_scan_rows(quick=False):
    import tilejit.lib as tlib
    rows = []
    n = 2 ** 24 if quick else 2 ** 28
    x = torch.randint(-2, 3, (n,), device="cuda").float()  # integer-valued: sums exact in f32
    # the single-pass look-back (on CUDA only when asked, until it is faster: lib/scan.c), then
    # the multi-phase kernels (CUDA's default for now)
    os.environ["TILEJIT_LIB_LOOKBACK"] = "1"
    row = Row("lib cumsum look-back", f"2^{n.bit_length() - 1}", "float32", 2 * n * 4)
    rows.append(run_row(row, lambda: tlib.cumsum(x), lambda: torch.cumsum(x, 0), None,
                        lambda: check("cumsum", tlib.cumsum(x), torch.cumsum(x, 0), 0, 0)))
    del os.environ["TILEJIT_LIB_LOOKBACK"]
    row = Row("lib cumsum multi-phase", f"2^{n.bit_length() - 1}", "float32", 2 * n * 4)
    rows.append(run_row(row, lambda: tlib.cumsum_multi_phase(x), lambda: torch.cumsum(x, 0), None,
                        lambda: check("cumsum", tlib.cumsum_multi_phase(x), torch.cumsum(x, 0), 0, 0)))
    return rows


def lib_sort_rows(quick=False):
    import tilejit.lib as tlib
    rows = []
    cases = [("lib sort", (2 ** 24,), torch.float32, None), ("lib argsort", (2 ** 24,), torch.float32, None),
             ("lib sort single pass", (2 ** 24,), torch.float32, None),
             ("lib sort", (2 ** 24 if quick else 2 ** 28,), torch.int32, "u32 keys (peer: torch i32)"),
             ("lib sort rows", (16384, 1024), torch.float32, None)]
    for name, shape, dtype, note in cases:
        # the single pass (Onesweep) beside the default (on CUDA three kernels a pass); lib/sort.c reads it each call
        if name.endswith("single pass"):
            os.environ["TILEJIT_LIB_SORT_MULTI_PHASE"] = "0"
        else:
            os.environ.pop("TILEJIT_LIB_SORT_MULTI_PHASE", None)
        x = torch.randn(shape, device="cuda") if dtype.is_floating_point else \
            torch.randint(0, 2 ** 31 - 1, shape, device="cuda", dtype=dtype)
        keys = x.view(torch.uint32) if note else x  # the u32 case: tilejit sorts the bits as u32
        row = Row(name, "x".join(map(str, shape)), "uint32" if note else "float32", 2 * x.numel() * 4)
        if name == "lib argsort":
            run = lambda: tlib.argsort(keys)  # noqa: E731
            verify = lambda: check("argsort", tlib.argsort(keys), torch.sort(x, stable=True).indices, 0, 0)  # noqa: E731
        else:
            run = lambda: tlib.sort(keys)  # noqa: E731
            verify = lambda: check("sort", tlib.sort(keys).view(x.dtype), torch.sort(x).values, 0, 0)  # noqa: E731
        rows.append(run_row(row, run, lambda: torch.sort(x, stable=True), None, verify))
        t = row.times.get("tilejit")
        print(f"# {name} {row.shape}: tilejit {x.numel() / (t * 1e-3) / 1e9 if t else float('nan'):.2f} G keys/s, "
              f"torch.sort {x.numel() / (row.times['torch'] * 1e-3) / 1e9:.2f} G keys/s" + (f" ({note})" if note else ""))
    return rows



def graph_ms(call):
    """The median time of call replayed from a CUDA graph (the GPU's time
    without the host's per-call cost), None where capture fails; the call
    runs first on the capture stream so that the library's scratch for that
    stream exists before the capture."""
    stream = torch.cuda.Stream()
    try:
        with torch.cuda.stream(stream):
            call()
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=stream):
            call()
        torch.cuda.synchronize()
        return do_bench(g.replay)
    except Exception as e:  # noqa: BLE001 (the row still has the eager time)
        print(f"# graph capture failed: {str(e).splitlines()[0][:200]}")
        return None


def graph_note(row):
    t, g = row.times.get("tilejit"), row.times.get("tilejit graph")
    if t and g:
        print(f"# {row.name} {row.shape} {row.dtype}: {t * 1e3:.1f} us a call, {g * 1e3:.1f} us replayed from a "
              f"CUDA graph ({row.nbytes / (g * 1e-3) / 1e12:.2f} TB/s)")


def lib_topk_rows(quick=False):
    """tilejit.lib.topk beside torch.topk: k = 64 of rows of 1024 (the issue's
    target), bytes = the input read once plus the values and indices written."""
    import tilejit.lib as tlib
    rows = []
    for dtype in (torch.float32,) if quick else (torch.float32, torch.bfloat16):
        m, n, k = 65536, 1024, 64
        x = torch.randn(m, n, device="cuda").to(dtype)
        es = x.element_size()
        row = Row("lib topk k64", f"{m}x{n}", str(dtype).replace("torch.", ""), m * n * es + m * k * (es + 8))

        def verify():
            v, i = tlib.topk(x, k)
            tv, _ = torch.topk(x, k)
            check("topk values", v, tv, 0, 0)
            check("topk indices", torch.gather(x, 1, i), tv, 0, 0)

        rows.append(run_row(row, lambda: tlib.topk(x, k), lambda: torch.topk(x, k), None, verify))
        if not row.error:
            row.times["tilejit graph"] = graph_ms(lambda: tlib.topk(x, k))
            graph_note(row)
    return rows


def ssm_inputs(nb, dm, length, ns, dtype):
    g = torch.Generator(device="cuda").manual_seed(dm + length)
    r = lambda *s: torch.randn(*s, device="cuda", generator=g)  # noqa: E731
    return dict(u=r(nb, dm, length).to(dtype), delta=(r(nb, dm, length) * 0.5 - 1).to(dtype),
                A=-torch.exp(r(dm, ns) * 0.5), B=r(nb, ns, length).to(dtype), C=r(nb, ns, length).to(dtype),
                D=r(dm), z=r(nb, dm, length).to(dtype), delta_bias=r(dm) * 0.1)


def ssm_torch_loop(u, delta, A, B, C, D, z, delta_bias):
    """selective_scan_fn's math as a PyTorch loop over the steps (the naive
    reference: several small kernels per step), f32 state"""
    delta = torch.nn.functional.softplus(delta.float() + delta_bias[:, None])
    u, B, C = u.float(), B.float(), C.float()
    h = torch.zeros(u.shape[0], u.shape[1], A.shape[1], device="cuda")
    ys = []
    for t in range(u.shape[2]):
        h = torch.exp(delta[:, :, t, None] * A) * h + (delta[:, :, t] * u[:, :, t])[:, :, None] * B[:, None, :, t]
        ys.append(torch.einsum("bdn,bn->bd", h, C[:, :, t]))
    return (torch.stack(ys, -1) + u * D[:, None]) * torch.nn.functional.silu(z.float())


def mamba_peer():
    """mamba_ssm's own forward kernel (bench/gpu/peers/mamba_ssm, built by its
    build.sh) as a function of the inputs, or None with the reason printed"""
    import ctypes
    path = os.environ.get("TJ_MAMBA_PEER") or os.path.join(ROOT, "bench/gpu/peers/mamba_ssm/build/libmamba_ssm_peer.so")
    if not os.path.exists(path):
        print(f"# mamba_ssm peer: {path} not built (sh bench/gpu/peers/mamba_ssm/build.sh); its column stays empty")
        return None
    fwd = ctypes.CDLL(path).mamba_ssm_fwd
    fwd.restype = ctypes.c_int
    ptr = lambda t: ctypes.c_void_p(t.data_ptr() if t is not None else 0)  # noqa: E731

    def prepare(u, delta, A, B, C, D, z, delta_bias):
        nb, dm, length = u.shape
        out, out_z = torch.empty_like(u), torch.empty_like(u)
        x = torch.empty(nb, dm, (length + 2047) // 2048, A.shape[1] * 2, device="cuda")
        dtype = {torch.float32: 0, torch.bfloat16: 1}[u.dtype]
        args = [ctypes.c_int(v) for v in (dtype, nb, dm, length, A.shape[1])]
        args += [ptr(t) for t in (u, delta, A, B, C, D, z, delta_bias)] + [ctypes.c_int(1)]
        args += [ptr(out), ptr(out_z), ptr(x), ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)]

        def call():
            rc = fwd(*args)
            if rc:
                raise RuntimeError(f"mamba_ssm_fwd failed: CUDA error {rc}")
            return out_z
        return call
    return prepare


def lib_ssm_rows(quick=False, shapes=None):
    """tilejit.lib.selective_scan (D, z, delta_bias, softplus: Mamba's use)
    at batch 1, dstate 16; the roofline is the bytes of u, delta, z, out, B,
    C, A and D once (tj/copy in the table). Checked against the torch loop (on
    the first 64 channels at L 8192); the loop is timed at L 1024 (the
    torch column; at L 8192 it would take seconds a call)."""
    import tilejit.lib as tlib
    rows = []
    mamba = mamba_peer()
    shapes = shapes or ([(2048, 1024)] if quick else [(2048, 1024), (4096, 1024), (2048, 8192), (4096, 8192)])
    for dtype in (torch.float32, torch.bfloat16):
        for dm, length in shapes:
            x = ssm_inputs(1, dm, length, 16, dtype)
            es = x["u"].element_size()
            row = Row("lib ssm", f"D{dm} L{length} N16", str(dtype).replace("torch.", ""),
                      4 * dm * length * es + 2 * 16 * length * es + dm * 16 * 4 + dm * 4)
            call = lambda: tlib.selective_scan(**x, delta_softplus=True)  # noqa: E731
            cut = {k: (v[:, :64] if k in ("u", "delta", "z") else v[:64] if k in ("A", "D", "delta_bias") else v)
                   for k, v in x.items()} if length > 1024 else x
            tol = 1e-4 if dtype == torch.float32 else 2e-2

            def verify():
                got = tlib.selective_scan(**cut, delta_softplus=True).float()
                want = ssm_torch_loop(**cut)
                err = ((got - want).norm() / want.norm()).item()
                if not err <= tol:
                    raise AssertionError(f"selective_scan: relative error {err:.3g} against the torch loop")

            try:
                call()
                torch.cuda.synchronize()
                verify()
                row.times["tilejit"] = do_bench(call)
                row.times["tilejit graph"] = graph_ms(call)
                graph_note(row)
            except Exception as e:  # the row says what failed; the others still run
                row.error = str(e).splitlines()[0][:200]
            if mamba:
                mamba_ssm_row(row, mamba(**x), call, tol)
            if length == 1024:
                loop = lambda: ssm_torch_loop(**x)  # noqa: E731
                loop()
                row.times["torch"] = triton.testing.do_bench(loop, warmup=1, rep=1, return_mode="median")
            rows.append(row)
    return rows

def mamba_ssm_row(row, peer, call, tol):
    """times mamba_ssm's kernel on the row's inputs after checking that it and
    tilejit agree; prints the ratio (the issue's target: 1.0x mamba_ssm)"""
    try:
        want, got = peer().float(), call().float()
        err = ((got - want).norm() / want.norm()).item()
        if not err <= tol:
            raise AssertionError(f"tilejit and mamba_ssm differ: relative error {err:.3g}")
        row.times["mamba_ssm"] = do_bench(peer)
        t = row.times.get("tilejit")
        print(f"# {row.name} {row.shape} {row.dtype}: mamba_ssm {row.times['mamba_ssm'] * 1e3:.1f} us, tilejit "
              + (f"{t * 1e3:.1f} us, tj/mamba_ssm {row.times['mamba_ssm'] / t:.2f}x" if t else "failed")
              + f" (relative difference {err:.2g})")
    except Exception as e:
        print(f"# {row.name} {row.shape} {row.dtype}: mamba_ssm peer failed: {str(e).splitlines()[0][:200]}")


# ---- matrix products (TFLOP/s) ----------------------------------------------

def example(name):
    with open(os.path.join(ROOT, "examples", name)) as f:
        return f.read()


def best_config(jit, src, kernel, args, configs, call_args, verify, file=None):
    """Compiles, verifies and times every config; prints each time."""
    def attempt(params):
        fn = jit.compile(src, kernel, *args, params=params, file=file or f"examples/{kernel}.tj")
        fn(*call_args)
        torch.cuda.synchronize()
        verify()
        t = do_bench(lambda: fn(*call_args))
        print(f"  {kernel} {params}: {t:.3f} ms", flush=True)
        return t

    return fastest(configs, attempt)


def close_enough(name, got, want, rel):
    err = (got.float() - want.float()).abs().max().item() / want.float().abs().max().item()
    if not err <= rel:
        raise AssertionError(f"{name}: max error {err:.3g} of the largest |value| (allowed {rel})")


def flop_row(name, shape, flops, best, error, peer_ms, peer):
    row = Row(name, shape, "bfloat16", 0)
    row.flops, row.peer = flops, peer
    if best:
        row.times["tilejit"] = best[0]
        p = best[1]
        row.shape += " " + ",".join(f"{k}{v}" for k, v in p.items())
    row.error = None if best else error
    row.times["torch"] = peer_ms
    return row


# stages > 1 puts the operands in copy rings (cp.async, lower/ring.c):
# deeper rings and BK = 64 cost shared memory, not registers. On sm_90a, dot
# runs on wgmma when BM is a multiple of 64 per warpgroup (warps / 4) and
# the accumulators fit (lower/wgmma.c); the others take mma.sync.
MATMUL_CONFIGS = [dict(BM=bm, BN=bn, BK=bk, warps=w, stages=s)
                  for bm, bn, bk, w, s in ((128, 128, 32, 4, 3), (128, 128, 32, 4, 4), (128, 128, 64, 4, 3),
                                           (128, 128, 32, 8, 3), (128, 128, 64, 8, 3), (128, 128, 64, 8, 4),
                                           (128, 256, 32, 8, 3), (128, 256, 64, 8, 3), (256, 128, 32, 8, 3),
                                           (256, 128, 64, 8, 3), (128, 128, 32, 8, 2), (64, 128, 32, 4, 4),
                                           (128, 256, 64, 8, 4), (256, 128, 64, 8, 4), (64, 256, 64, 4, 4),
                                           (256, 128, 64, 16, 3))]
# the fastest wgmma configurations of the sweep (bench/RESULTS.md), for the
# rows that need not sweep everything again
WGMMA_CONFIGS = [dict(BM=bm, BN=bn, BK=bk, warps=w, stages=s)
                 for bm, bn, bk, w, s in ((128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (256, 128, 64, 8, 3),
                                          (256, 128, 64, 8, 4), (128, 128, 64, 8, 3), (128, 128, 64, 8, 6),
                                          (128, 128, 64, 4, 3), (256, 128, 64, 16, 3))]
# the four best of those again with a producer warp (docs/simt.md, "A
# producer warp": warp P issues the TMA copies, 32 (warps + 1) threads),
# for the large rows too
PRODUCER_CONFIGS = [dict(c, producer=1) for c in WGMMA_CONFIGS[:4]]
WGMMA_CONFIGS += PRODUCER_CONFIGS
MATMUL_CONFIGS += PRODUCER_CONFIGS
# skinny products (M = 64 .. 512): few row blocks, so narrow tiles and deep
# rings (stages up to 8: the product is bound by B's bytes in flight), and
# M = 512's one wave of the large tiles
SKINNY_CONFIGS = [dict(BM=bm, BN=bn, BK=bk, warps=w, stages=s)
                  for bm, bn, bk, w, s in ((64, 64, 64, 4, 4), (64, 64, 64, 4, 8), (64, 128, 64, 4, 4),
                                           (64, 128, 64, 4, 6), (64, 128, 64, 4, 8), (64, 256, 64, 4, 4),
                                           (128, 64, 64, 8, 4), (128, 64, 64, 8, 8), (128, 128, 64, 8, 3),
                                           (128, 128, 64, 8, 6), (128, 256, 64, 8, 4))]
# split-K (examples/matmul.tj: matmul_splitk writes S parts, matmul_splitk_sum
# adds them in order): wide tiles over a K cut in S runs, so that the few
# output tiles of the skinny rows (and 2048^3) still make 128-256 programs,
# each reading a run of A and B (bench/NOTES.md "Split-K for the skinny rows")
SPLITK_CONFIGS = [dict(BM=bm, BN=bn, BK=64, warps=w, stages=st, S=s)
                  for bm, bn, w, st, s in ((64, 256, 4, 4, 4), (64, 256, 4, 5, 4), (64, 128, 4, 6, 2), (64, 128, 4, 4, 4),
                                           (128, 256, 8, 4, 4), (128, 256, 8, 4, 2), (128, 128, 8, 3, 2),
                                           (128, 128, 8, 3, 4))]
# the sum streams S f32 parts and writes C: small tiles, many programs
SPLITK_SUM_CONFIGS = [dict(BM=8, BN=256, warps=4), dict(BM=16, BN=512, warps=8)]
TORCH_DTYPE = {"bf16": torch.bfloat16, "f16": torch.float16}


def splitk_attempt(jit, src, a, b, c, ref):
    """attempt(params) for fastest() on the split-K pair: params carries S
    (W's parts); the sum kernel is the fastest of SPLITK_SUM_CONFIGS for that
    S, each checked against torch's sum of random parts before it is timed.
    Each configuration's C, from a NaN-filled W and C (so that nothing
    the plain matmul left in C passes for the pair's), is checked against
    torch, and a second call from NaN again must give the same bits, before
    the pair is timed."""
    (m, k), n = a.shape, b.shape[1]
    sums = {}

    def checked_sum(w, params):
        f = jit.compile(src, "matmul_splitk_sum", w, c, params=params, file="examples/matmul.tj")
        parts = torch.randn_like(w)
        c.fill_(float("nan"))
        f(parts, c)
        torch.cuda.synchronize()
        close_enough(f"matmul_splitk_sum {params}", c, parts.sum(0), 1e-2)
        return do_bench(lambda: f(w, c)), f

    def sum_kernel(w):
        s = w.shape[0]
        if s not in sums:
            sums[s] = min((checked_sum(w, p) for p in SPLITK_SUM_CONFIGS), key=lambda tf: tf[0])
            print(f"  matmul_splitk_sum S={s}: {sums[s][0]:.4f} ms", flush=True)
        return sums[s][1]

    def attempt(params):
        try:
            return timed(dict(params))
        except Exception as e:  # said here: fastest() keeps only the last error
            print(f"  matmul_splitk {params}: FAILED: {str(e).splitlines()[0][:200]}", flush=True)
            raise

    def timed(params):
        w = torch.full((params.pop("S"), m, n), float("nan"), device="cuda")
        parts = jit.compile(src, "matmul_splitk", a, b, w, params=params, file="examples/matmul.tj")
        total = sum_kernel(w)
        call = lambda: (parts(a, b, w), total(w, c))  # noqa: E731
        c.fill_(float("nan"))
        call()
        torch.cuda.synchronize()
        close_enough("matmul_splitk", c, ref, 2e-2)
        first = c.clone()
        w.fill_(float("nan"))
        c.fill_(float("nan"))
        call()
        torch.cuda.synchronize()
        if not torch.equal(first, c):
            raise AssertionError("matmul_splitk: two calls gave different bits")
        t = do_bench(call)
        print(f"  matmul_splitk S={w.shape[0]} {params}: {t:.3f} ms (the parts alone "
              f"{do_bench(lambda: parts(a, b, w)):.3f})", flush=True)
        return t

    return attempt


def splitk_last(jit, src, dtype, a, b, c, ref, params):
    """matmul_splitk_last (bench/gpu/kernels.tj.in: split-K with the sum in
    the last arriver, one launch) at params (with S): checked against torch,
    for the same bits as the pair's (examples/matmul.tj) at params, for the
    same bits again on a second call from NaN-filled W and C, and for its
    flags and counts left zero; returns its time (ms)."""
    params = dict(params)
    (m, k), n, s = a.shape, b.shape[1], params.pop("S")
    tiles = -(-m // params["BM"]) * -(-n // params["BN"])
    w = torch.full((s, m, n), float("nan"), device="cuda")
    f = torch.zeros(tiles, s, device="cuda", dtype=torch.int32)
    t = torch.zeros(tiles, device="cuda", dtype=torch.int32)
    last = jit.compile(source().replace("{T}", "f32").replace("bf16", dtype), "matmul_splitk_last", a, b, c, w, f, t,
                       params=params, file="bench/gpu/kernels.tj")
    parts = jit.compile(src, "matmul_splitk", a, b, w, params=params, file="examples/matmul.tj")
    total = jit.compile(src, "matmul_splitk_sum", w, c, params=SPLITK_SUM_CONFIGS[0], file="examples/matmul.tj")
    parts(a, b, w)
    total(w, c)
    torch.cuda.synchronize()
    pair = c.clone()
    for call in range(2):
        w.fill_(float("nan"))
        c.fill_(float("nan"))
        last(a, b, c, w, f, t)
        torch.cuda.synchronize()
        close_enough("matmul_splitk_last", c, ref, 2e-2)
        if not torch.equal(pair, c):
            raise AssertionError(f"matmul_splitk_last: call {call} differs from the pair's bits")
        if int((f != 0).sum().item()) or int((t != 0).sum().item()):
            raise AssertionError(f"matmul_splitk_last: call {call} left flags or counts nonzero")
    ms = do_bench(lambda: last(a, b, c, w, f, t))
    print(f"  matmul_splitk_last S={s} {params}: {ms:.3f} ms", flush=True)
    return ms


def matmul(jit, m, n=None, k=None, dtype="bf16", configs=MATMUL_CONFIGS, splitk=None, last=None):
    """The fastest of `configs` of matmul, with splitk of the split-K pair's
    configurations, and with last of the last arriver's kernel at those
    configurations (the row says which: splitK in its parameters, last1 for
    the last arriver's)."""
    n, k = n or m, k or m
    dt = TORCH_DTYPE[dtype]
    a = torch.randn(m, k, device="cuda", dtype=dt)
    b = torch.randn(k, n, device="cuda", dtype=dt)
    c = torch.empty(m, n, device="cuda", dtype=dt)
    ref = a @ b
    src = example("matmul.tj").replace("bf16", dtype)
    best, error = best_config(jit, src, "matmul", [a, b, c], configs, [a, b, c],
                              lambda: close_enough("matmul", c, ref, 2e-2))
    shape = f"{m}^3" if m == n == k else f"{m}x{n}x{k}"
    if splitk:
        split, split_error = fastest(splitk, splitk_attempt(jit, src, a, b, c, ref))
        print(f"# matmul {shape} {dtype}: plain " + (f"{best[0]:.3f} ms {best[1]}" if best else f"failed ({error})")
              + ", split-K " + (f"{split[0]:.3f} ms {split[1]}" if split else f"failed ({split_error})"), flush=True)
        in_kernel, last_error = fastest(last or [], lambda p: splitk_last(jit, src, dtype, a, b, c, ref, p))
        if last_error:
            print(f"  matmul_splitk_last: FAILED: {last_error}", flush=True)
        if in_kernel:
            print(f"# matmul {shape} {dtype}: split-K's sum in the last arriver {in_kernel[0]:.3f} ms "
                  f"{in_kernel[1]}", flush=True)
        for found, tag in ((split, {}), (in_kernel, {"last": 1})):
            if found and (not best or found[0] < best[0]):
                p = dict(found[1])
                p["splitK"] = p.pop("S")
                best = (found[0], {**p, **tag})
        error = error or split_error or last_error
    row = flop_row("matmul", shape, 2 * m * n * k, best, error, do_bench(lambda: a @ b), "cuBLAS")
    row.dtype = {"bf16": "bfloat16", "f16": "float16"}[dtype]
    return row


def matmul_bias_gelu(jit, n, dtype="bf16", configs=None):
    """gelu(A B + bias) fused into the product's epilogue (examples/matmul.tj),
    beside cuBLAS's addmm followed by torch's gelu (two kernels); over
    `configs` (None: WGMMA_CONFIGS)."""
    dt = TORCH_DTYPE[dtype]
    a = torch.randn(n, n, device="cuda", dtype=dt)
    b = torch.randn(n, n, device="cuda", dtype=dt)
    bias = torch.randn(n, device="cuda", dtype=dt)
    c = torch.empty(n, n, device="cuda", dtype=dt)
    gelu = torch.nn.functional.gelu
    ref = gelu(torch.addmm(bias.float(), a.float(), b.float())).to(dt)
    src = example("matmul.tj").replace("bf16", dtype)
    best, error = best_config(jit, src, "matmul_bias_gelu", [a, b, bias, c], configs or WGMMA_CONFIGS, [a, b, bias, c],
                              lambda: close_enough("matmul_bias_gelu", c, ref, 2e-2))
    row = flop_row("matmul+bias+gelu", f"{n}^3", 2 * n ** 3, best, error,
                   do_bench(lambda: gelu(torch.addmm(bias, a, b))), "cuBLAS+gelu")
    row.dtype = {"bf16": "bfloat16", "f16": "float16"}[dtype]
    return row


# f32 IEEE products run on FMAs in register blocks (lower/dot.c): tiles of
# 64-128 with 4-8 warps, 32-64 outputs a thread
FMA_CONFIGS = [dict(BM=bm, BN=bn, BK=bk, warps=w, stages=s)
               for bm, bn, bk, w, s in ((64, 64, 32, 4, 2), (128, 64, 16, 4, 2), (64, 128, 16, 4, 2),
                                        (128, 128, 16, 8, 2), (128, 128, 32, 8, 3), (128, 64, 32, 8, 2))]


def matmul_f32_ieee(jit, n):
    """f32 A B with precision = "ieee" (no TF32) against cuBLAS SGEMM with TF32 off."""
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    c = torch.empty(n, n, device="cuda")
    allowed = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        ref = a @ b
        src = example("matmul.tj").replace("bf16", "f32").replace(", acc)", ', acc, precision = "ieee")')
        best, error = best_config(jit, src, "matmul", [a, b, c], FMA_CONFIGS, [a, b, c],
                                  lambda: close_enough("matmul", c, ref, 1e-4))
        row = flop_row("matmul ieee", f"{n}^3", 2 * n ** 3, best, error, do_bench(lambda: a @ b), "cuBLAS SGEMM")
    finally:
        torch.backends.cuda.matmul.allow_tf32 = allowed
    row.dtype = "float32"
    return row


def matmuls(jit):
    rows = [matmul(jit, 4096), matmul(jit, 8192), matmul(jit, 2048, configs=WGMMA_CONFIGS, splitk=SPLITK_CONFIGS)]
    rows += [matmul(jit, 4096, dtype="f16", configs=WGMMA_CONFIGS)]
    rows += [matmul_bias_gelu(jit, 4096), matmul_bias_gelu(jit, 4096, "f16"), matmul_f32_ieee(jit, 4096)]
    return rows + skinny_matmuls(jit)


def skinny_matmuls(jit):
    """M = 64 .. 512 against N = K = 8192, plain and split-K; M = 64 and 128
    (bound by B's DRAM rate, where the pair's second launch is the rest of
    the gap) also with the sum in the last arriver at S = 4."""
    last = [c for c in SPLITK_CONFIGS if c["S"] == 4]
    return [matmul(jit, m, 8192, 8192, configs=SKINNY_CONFIGS, splitk=SPLITK_CONFIGS, last=last if m <= 128 else None)
            for m in (64, 128, 256, 512)]


def attention(jit, batch, heads, seq, dim, causal=False, kv_heads=None, fastmath_only=False):
    kv_heads = kv_heads or heads
    q = torch.randn(batch, heads, seq, dim, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(batch, kv_heads, seq, dim, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    o = torch.empty_like(q)
    scale = dim ** -0.5
    sdpa = torch.nn.functional.scaled_dot_product_attention
    gqa = dict(enable_gqa=True) if kv_heads != heads else {}
    ref = sdpa(q, k, v, is_causal=causal, **gqa)
    configs = [dict(BM=bm, BN=bn, warps=w, stages=s)
               for bm, bn, w, s in ((64, 64, 4, 2), (64, 64, 4, 3), (128, 64, 8, 1), (128, 64, 8, 2),
                                    (128, 64, 8, 3), (128, 32, 8, 3), (128, 128, 8, 2), (64, 128, 4, 2))]
    kernel = "attention_causal" if causal else "attention_gqa" if gqa else "attention"
    plain = example(kernel + ".tj")
    tune = next(line for line in plain.splitlines() if line.lstrip().startswith("tune "))
    fast = plain.replace(tune, tune + "\n    const fastmath = 1")  # exp by ex2.approx, as cuDNN does
    flops = 4 * batch * heads * seq * seq * dim // (2 if causal else 1)  # causal: the products it must do
    shape = f"B{batch} H{heads}" + (f" G{kv_heads}" if gqa else "") + f" S{seq} D{dim}"
    rows = []
    for name, src in ([] if fastmath_only else [(kernel, plain)]) + [(kernel + " fastmath", fast)]:
        best, error = best_config(jit, src, kernel, [q, k, v, o, scale], configs, [q, k, v, o, scale],
                                  lambda: close_enough(kernel, o, ref, 2e-2))
        rows.append(flop_row(name.replace("_", " "), shape, flops, best, error,
                             do_bench(lambda: sdpa(q, k, v, is_causal=causal, **gqa)), "SDPA"))
    return rows


def attention_variant(jit, kernel, name, batch, heads, seq, dim):
    """A fastmath attention kernel of bench/gpu/kernels.tj.in against SDPA:
    attention_rows takes [B * H * S, D] views (rank 2: its K and V rings land
    by TMA on sm_90a) and S; attention_pipelined the [B, H, S, D] tensors (the
    next scores computed before the softmax)."""
    q, k, v = (torch.randn(batch, heads, seq, dim, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    o = torch.empty_like(q)
    scale = dim ** -0.5
    sdpa = torch.nn.functional.scaled_dot_product_attention
    ref = sdpa(q, k, v)
    packed = kernel == "attention_rows"
    args = [t.view(-1, dim) for t in (q, k, v, o)] + [scale, seq] if packed else [q, k, v, o, scale]
    configs = [dict(BM=bm, BN=bn, warps=w, stages=s)
               for bm, bn, w, s in ((64, 64, 4, 2), (64, 128, 4, 2), (128, 64, 8, 2), (128, 64, 8, 3),
                                    (128, 32, 8, 3), (128, 128, 8, 2))]
    best, error = best_config(jit, source().replace("{T}", "bf16"), kernel, args, configs, args,
                              lambda: close_enough(kernel, o, ref, 2e-2), file="bench/gpu/kernels.tj")
    return [flop_row(name, f"B{batch} H{heads} S{seq} D{dim}", 4 * batch * heads * seq * seq * dim, best, error,
                     do_bench(lambda: sdpa(q, k, v)), "SDPA")]


def attention_rows(jit):
    rows = attention(jit, 4, 32, 4096, 128) + attention(jit, 4, 32, 4096, 128, causal=True)
    rows += attention_variant(jit, "attention_rows", "attention rows fastmath (TMA)", 4, 32, 4096, 128)
    rows += attention_variant(jit, "attention_pipelined", "attention pipelined fastmath", 4, 32, 4096, 128)
    rows += attention(jit, 4, 32, 4096, 128, kv_heads=8, fastmath_only=True)  # grouped-query heads
    return rows + attention(jit, 4, 32, 4096, 64, fastmath_only=True)


def copy_row():
    a = torch.empty(2 ** 29, device="cuda")
    b = torch.empty_like(a)
    row = Row("copy (roofline)", "2 GiB", "float32", 2 * a.numel() * 4)
    row.times["torch"] = do_bench(lambda: b.copy_(a))
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true", help="one shape per workload")
    ap.add_argument("--only", choices=["matmul", "attention", "memory", "lib", "scan", "ssm", "arrays"],
                    help="only the matrix (matmul and attention), the attention, the memory-bound, the "
                         "library's (scan, ssm: its cumsum or selective_scan rows) or the array front end's rows")
    args = ap.parse_args()
    if args.only == "arrays":
        return array_rows(args)
    torch.manual_seed(0)
    jit = tilejit.Jit("cuda")
    rows = [copy_row()]
    if args.only in ("scan", "ssm"):
        return report(rows + (lib_scan_rows if args.only == "scan" else lib_ssm_rows)(args.quick), args.json)
    if args.only == "lib":
        return report(rows + lib_rows(args.quick) + lib_topk_rows(args.quick) + lib_ssm_rows(args.quick), args.json)
    if args.only == "attention":
        return report(rows + attention_rows(jit), args.json)
    if args.only != "memory":
        rows += matmuls(jit) + attention_rows(jit)
    if args.only == "matmul":
        return report(rows, args.json)
    shapes = [(8192, 8192), (65536, 1024), (4096, 32768)]
    if args.quick:
        shapes = shapes[:1]
    norm = lambda n: torch.ones(n, device="cuda")  # noqa: E731
    for dtype in (torch.float32, torch.bfloat16):
        for m, n in shapes:
            rows.append(rowwise(jit, "softmax", "softmax", m, n, dtype, [], lambda x: torch.softmax(x, -1), triton_softmax))
            rows.append(rowwise(jit, "layernorm", "layernorm", m, n, dtype, [norm, norm],
                                lambda x, w, b: torch.nn.functional.layer_norm(x, (x.shape[1],), w.to(x.dtype), b.to(x.dtype), 1e-5)))
            rows.append(rowwise(jit, "rmsnorm", "rmsnorm", m, n, dtype, [norm],
                                lambda x, w: torch.nn.functional.rms_norm(x, (x.shape[1],), w.to(x.dtype), 1e-5)))
            rows += reductions(jit, m, n, dtype)
    rows += elementwise(jit, 2 ** 26)
    rows.append(gather(jit, 2 ** 16, 256, 2 ** 20))
    rows.append(sort_rows(jit, 16384, 1024))
    rows += lib_rows(args.quick) + lib_topk_rows(args.quick) + lib_ssm_rows(args.quick)
    report(rows, args.json)
    array_rows(args)


def array_rows(args):
    """tilejit.numpy on whole expressions (bench/arrays_bench.py) beside
    torch eager and torch.compile: kernels, cold and warm times; its JSON
    goes beside --json as *.arrays.json."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import arrays_bench
    rows = arrays_bench.run_cuda(args.quick, 20)
    arrays_bench.report(rows, "cuda")
    if args.json:
        with open(os.path.splitext(args.json)[0] + ".arrays.json", "w") as f:
            json.dump({"device": "cuda", "rows": rows}, f, indent=1)


def report(rows, json_path):
    copy = rows[0].tbps("torch")
    print(f"{'workload':<16}{'shape':<22}{'dtype':<10}{'tilejit':>9}{'torch':>9}{'triton':>9}"
          f"{'tj/copy':>9}{'tj/torch':>9}{'tj/triton':>10}  (TB/s; ratios of bandwidth)")
    out = []
    for r in rows:
        if hasattr(r, "flops"):
            out.append(report_flops(r))
            continue
        tj, to, tr = r.tbps("tilejit"), r.tbps("torch"), r.tbps("triton")
        f = lambda v: f"{v:9.2f}" if v else f"{'-':>9}"  # noqa: E731
        ratio = lambda a, b: f"{a / b:9.2f}" if a and b else f"{'-':>9}"  # noqa: E731
        print(f"{r.name:<16}{r.shape:<22}{r.dtype:<10}{f(tj)}{f(to)}{f(tr)}{ratio(tj, copy)}{ratio(tj, to)}"
              f"{ratio(tj, tr):>10}" + (f"  FAILED: {r.error}" if r.error else ""))
        out.append({"workload": r.name, "shape": r.shape, "dtype": r.dtype, "bytes": r.nbytes,
                    "ms": r.times, "tbps": {k: r.tbps(k) for k in r.times}, "error": r.error})
    meta = {"date": datetime.date.today().isoformat(), "gpu": torch.cuda.get_device_name(),
            "torch": torch.__version__, "triton": triton.__version__, "rows": out}
    if json_path:
        with open(json_path, "w") as f:
            json.dump(meta, f, indent=1)


def report_flops(r):
    tf = {k: r.flops / (t * 1e-3) / 1e12 for k, t in r.times.items() if t}
    tj, peer = tf.get("tilejit"), tf.get("torch")
    cell = lambda v: f"{v:9.1f}" if v else f"{'-':>9}"  # noqa: E731
    # shape, then a space: the split-K rows' parameters run past 40 columns
    print(f"{r.name:<16}{r.shape:<40} {r.dtype:<10}{cell(tj)} TFLOP/s  {r.peer} {cell(peer)}"
          + (f"  tj/{r.peer} {tj / peer:.2f}" if tj and peer else "") + (f"  FAILED: {r.error}" if r.error else ""))
    return {"workload": r.name, "shape": r.shape, "dtype": r.dtype, "flops": r.flops, "peer": r.peer,
            "ms": r.times, "tflops": tf, "error": r.error}


if __name__ == "__main__":
    main()
