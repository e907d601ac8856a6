"""Kernel.tune: the tuner's progress (tqdm when installed, a plain line
otherwise) and its table."""
import ctypes
import sys

from . import _lib
from ._lib import TilejitError


class _Progress:
    def __init__(self, name, enabled):
        self.name, self.enabled, self.bar = name, enabled, None

    def update(self, done, total):
        if not self.enabled:
            return
        if self.bar is None:
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, desc=f"tuning {self.name}", unit="config")
            except ImportError:
                self.bar = False
        if self.bar:
            self.bar.update(done - self.bar.n)
        else:
            end = "\n" if done == total else ""
            print(f"\rtuning {self.name}: {done}/{total} configurations", end=end, file=sys.stderr, flush=True)

    def close(self):
        if self.bar:
            self.bar.close()


def _result(r):
    return {
        "config": {r.config[i].name.decode(): r.config[i].value for i in range(r.nconfig)},
        "status": _lib.TUNE_STATUS[r.status],
        "us": r.seconds * 1e6 if r.status == 0 else None,
        "note": r.note.decode(errors="replace"),
    }


def _print_table(name, bucket, results):
    rows = [(" ".join(f"{k}={v}" for k, v in r["config"].items()), r["status"],
             f"{r['us']:.1f}" if r["us"] is not None else "-", r["note"]) for r in results]
    head = ("configuration", "status", "us", "note")
    widths = [max(len(head[c]), *(len(row[c]) for row in rows)) for c in range(3)]
    print(f"{name} ({bucket}): {len(results)} configurations, fastest first")
    for row in [head] + rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[3])


def run(d, bufs, name, progress):
    bar = _Progress(name, progress)
    callback = _lib.PROGRESS(lambda _ud, done, total, _r: bar.update(done, total))
    report = _lib.TuneReport()
    try:
        rc = d.lib.tj_dispatch_tune(d.h, bufs.args, d.n, callback, None, ctypes.byref(report), bufs.err)
        bar.close()
        if rc:
            raise TilejitError(bufs.err.text())
        results = [_result(report.results[i]) for i in range(report.nresults)]
        bucket = report.bucket.decode()
    finally:
        d.lib.tj_tune_report_free(ctypes.byref(report))
    results.sort(key=lambda r: (r["us"] is None, r["us"] or 0))
    _print_table(name, bucket, results)
    return results
