"""Benchmark: what feeding the k-NN index built beside the embedding costs the embedding process.

    .venv/bin/python bench/bench_index_feed.py            # 300k rows
    .venv/bin/python bench/bench_index_feed.py --rows 1000000

``cluster.IndexBuilder`` is fed 2,048-row blocks (embed_closed's chunk) of 384-d float32 rows,
faster than its process adds them (as on a loaded machine, where the build lags the embedding),
with a few MB allocated and freed between blocks as the embedding does. Printed: this process's
peak RSS growth over the feeding (Linux: VmHWM, reset through /proc/self/clear_refs). A block
sent from a copy piles up while the builder lags (+428 MB for 300k rows); sent from the array
itself, nothing does (+12 MB). Asserts nothing on time or size: read the figure.
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as np

from goldmine.triage import cluster


def peak_mb() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmHWM"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=300_000)
    n = parser.parse_args().rows
    rng = np.random.default_rng(0)
    x = np.empty((n, 384), np.float32)
    for a in range(0, n, 50_000):
        block = rng.standard_normal((min(50_000, n - a), 384)).astype(np.float32)
        x[a : a + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    del block
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the peak so far is the rows' making: start counting here
    base = peak_mb()
    builder = cluster.IndexBuilder()
    for a in range(0, n, 2048):
        builder.feed(x[a : a + 2048])
        scratch = [np.ones(200_000) for _ in range(8)]  # the embedding's own allocations
        del scratch
        time.sleep(0.02)
    fed = peak_mb()
    builder.close()
    print(f"{n:,} rows fed: peak RSS {base} MB before, {fed} MB after: +{fed - base} MB")


if __name__ == "__main__":
    main()
