"""All-reduce bus bandwidth over every GPU of the host: tilejit.nccl beside
torch.cuda.nccl (PyTorch's own binding of the same NCCL, one process driving
every GPU, as here), in the same run. Needs 2 or more GPUs; says so and
exits 0 on fewer.

    TILEJIT_LIB=build-gpu/libtilejit.so PYTHONPATH=python python3 bench/gpu/nccl_bench.py [--mib 1024]

Bus bandwidth = 2 (n - 1) / n x bytes / time (NCCL's convention for
all-reduce), the median of 20 timed rounds after 5 warm-ups, each round
timed from events recorded on every device's current stream."""
import argparse
import statistics

import torch

import tilejit.nccl as nccl


def timed(rounds, step, devices):
    times = []
    for _ in range(rounds):
        starts = [torch.cuda.Event(enable_timing=True) for _ in devices]
        ends = [torch.cuda.Event(enable_timing=True) for _ in devices]
        for d, e in zip(devices, starts):
            e.record(torch.cuda.current_stream(d))
        step()
        for d, e in zip(devices, ends):
            e.record(torch.cuda.current_stream(d))
        for d in devices:
            torch.cuda.synchronize(d)
        times.append(max(s.elapsed_time(e) for s, e in zip(starts, ends)) / 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=1024)
    a = ap.parse_args()
    n = torch.cuda.device_count()
    if n < 2:
        print(f"nccl_bench: {n} GPU(s); the all-reduce bandwidth needs 2 or more")
        return
    devices = list(range(n))
    count = a.mib * (1 << 20) // 4
    xs = [torch.ones(count, device=f"cuda:{d}") for d in devices]
    comms = nccl.Communicator.all(devices)

    def ours():
        with nccl.group():
            for c, x in zip(comms, xs):
                c.all_reduce(x)

    def theirs():
        torch.cuda.nccl.all_reduce(xs)

    bus = 2 * (n - 1) / n * count * 4
    for name, step in (("tilejit.nccl", ours), ("torch.cuda.nccl", theirs)):
        timed(5, step, devices)
        t = timed(20, step, devices)
        print(f"all_reduce f32 {a.mib} MiB over {n} GPUs: {name:16s} {t * 1e3:8.3f} ms  bus {bus / t / 1e9:7.1f} GB/s")


if __name__ == "__main__":
    main()
