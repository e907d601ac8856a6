"""bench/python_cuda_kernel.py (run with PYTHONPATH=python TILEJIT_LIB=build/libtilejit.so python3 on a GPU machine):
tilejit.cuda_kernel from Python on torch tensors: launch cost per call
(1024 elements: the host path dominates) against torch's own add_, and a
fresh process's build from the disk cache."""
import subprocess, sys, time
import torch, tilejit
src = ('extern "C" __global__ void axpy(float *y, const float *x, float a, int n)'
       '{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += a * x[i]; }')
k = tilejit.cuda_kernel(src, "axpy", file="axpy.cu")
def per_call(fn, reps=2000, rounds=7):
    for _ in range(200): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps): fn()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t0) / reps * 1e6)
    ts.sort()
    return ts[len(ts) // 2]
for n in (1024, 1 << 24):
    x = torch.randn(n, device="cuda"); y = torch.zeros(n, device="cuda")
    g = (n + 255) // 256
    t_k = per_call(lambda: k(y, x, 1.0, n, grid=g, block=256))
    t_t = per_call(lambda: y.add_(x, alpha=1.0))
    y.zero_(); k(y, x, 2.0, n, grid=g, block=256); torch.cuda.synchronize()
    torch.testing.assert_close(y, 2 * x)
    print(f"n={n}: tilejit.cuda_kernel {t_k:.2f} us per launch, torch add_ {t_t:.2f} us (median of 7 x 2000)")
print("first build in this process:", k.info())
code = ("import tilejit, torch; k = tilejit.cuda_kernel(%r, 'axpy', file='axpy.cu'); i = k.info(); "
        "print('fresh process:', i)" % src)
print(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip())
