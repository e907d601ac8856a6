"""tilejit.nccl: without NCCL (or a GPU) a clear TilejitError; on CUDA
devices with torch, every collective over every GPU of the host, one
process driving all, compared with what torch computes (on one GPU each is
a copy: the library, the communicators and the streams still work)."""
import os

import pytest

import tilejit
import tilejit.nccl as nccl


def _nccl_or_reason():
    try:
        return nccl.version(), None
    except tilejit.TilejitError as e:
        return None, str(e)


def test_a_missing_library_says_what_to_install(monkeypatch):
    if nccl._state["nccl"] is not None:
        pytest.skip("NCCL was opened already in this process")
    monkeypatch.setenv("TILEJIT_NCCL", "/nonexistent/libnccl.so.2")
    with pytest.raises(tilejit.TilejitError, match="no NCCL: cannot load /nonexistent/libnccl.so.2"):
        nccl.unique_id()


def test_bad_ids_and_ops_are_refused():
    version, why = _nccl_or_reason()
    if version is None:
        pytest.skip(why)
    assert len(nccl.unique_id()) == 128  # needs no GPU
    with pytest.raises(tilejit.TilejitError, match="the 128 bytes"):
        nccl.Communicator.rank_of(1, b"short", 0, 0)
    with pytest.raises(tilejit.TilejitError, match="no op 'mean'"):
        nccl._op("mean")


try:
    import torch
except ImportError:
    torch = None


@pytest.fixture(scope="module")
def comms():
    if torch is None:
        pytest.skip("torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device for torch")
    version, why = _nccl_or_reason()
    if version is None:
        pytest.skip(why)
    return nccl.Communicator.all()


def _per_rank(comms, make):
    return [make(c.rank).to(f"cuda:{c.device}") for c in comms]


def test_all_reduce_sum_and_max(comms):
    n = 1 << 20
    for op, combine in (("sum", sum), ("max", lambda xs: torch.stack(xs).amax(0))):
        xs = _per_rank(comms, lambda r: torch.arange(n, dtype=torch.float32) + r)
        want = combine([x.cpu() for x in xs])
        with nccl.group():
            for c, x in zip(comms, xs):
                c.all_reduce(x, op=op)
        for x in xs:
            assert torch.equal(x.cpu(), want), op


def test_all_gather_reduce_scatter_broadcast(comms):
    k = len(comms)
    xs = _per_rank(comms, lambda r: torch.full((4 * k,), float(r + 1), dtype=torch.bfloat16))
    gathered = [torch.empty(4 * k * k, dtype=torch.bfloat16, device=x.device) for x in xs]
    with nccl.group():
        for c, x, g in zip(comms, xs, gathered):
            c.all_gather(x, g)
    want = torch.cat([x.cpu() for x in xs])
    assert all(torch.equal(g.cpu(), want) for g in gathered)
    parts = [torch.empty(4, dtype=torch.bfloat16, device=x.device) for x in xs]
    with nccl.group():
        for c, x, p in zip(comms, xs, parts):
            c.reduce_scatter(x, p)
    total = float(sum(range(1, k + 1)))
    assert all(torch.equal(p.cpu(), torch.full((4,), total, dtype=torch.bfloat16)) for p in parts)
    with nccl.group():
        for c, x in zip(comms, xs):
            c.broadcast(x, root=0)
    assert all(torch.equal(x.cpu(), xs[0].cpu()) for x in xs)


def test_arrays_on_another_device_or_the_cpu_are_refused(comms):
    c = comms[0]
    with pytest.raises(tilejit.TilejitError, match="the input is on the cpu"):
        c.all_reduce(torch.ones(4))
    x = torch.ones(4, device=f"cuda:{c.device}")
    wrong = 4 * len(comms) + 1  # one element too many for every count of ranks, 1 included
    with pytest.raises(tilejit.TilejitError, match=f"all_gather: recv has {wrong} elements"):
        c.all_gather(x, torch.empty(wrong, device=x.device))


def test_strided_views_are_refused(comms):
    c = comms[0]
    x = torch.ones(8, device=f"cuda:{c.device}")[::2]
    with pytest.raises(tilejit.TilejitError, match="not row-major contiguous"):
        c.all_reduce(x)
