"""Benchmark: what sorting texts by length before batching gains when embedding.

    .venv/bin/python bench/bench_sort.py [--n 4000] [--repeats 3] [--backend onnx-int8]

Encodes the same real queries (banking77; ``--long-every N`` makes every Nth four queries long,
as pasted errors are) in batches of 64, once in their own order and once sorted by length (what
goldmine.embed does), alternating, one thread; prints the medians and the ratio.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("GOLDMINE_SHARED", HERE.parent.parent / "shared"))
BANKING = SHARED / "datasets" / "banking77" / "train.csv"


def texts(n: int, long_every: int) -> list[str]:
    import csv

    with BANKING.open(newline="", encoding="utf-8") as f:
        rows = [r[0] for r in csv.reader(f)][1:]
    rng = random.Random(3)
    out = rng.sample(rows, min(n, len(rows)))
    if long_every:  # a few long ones, as a real log has (pasted errors, several sentences)
        for i in range(0, len(out), long_every):
            out[i] = " ".join(rng.sample(rows, 4))
    return out


def encode(encoder, batch: list[str], order: list[int], size: int = 64) -> float:
    start = time.perf_counter()
    for a in range(0, len(order), size):
        encoder.encode([batch[i] for i in order[a : a + size]])
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backend", default="onnx-int8")
    parser.add_argument(
        "--long-every", type=int, default=0, help="make every Nth text four queries long (0: none)"
    )
    args = parser.parse_args()
    if not BANKING.exists():
        sys.exit(f"{BANKING} is absent: this benchmark needs ../shared/datasets")
    os.environ.setdefault("GOLDMINE_TORCH_THREADS", "1")
    from goldmine.embed import load_encoder

    batch = texts(args.n, args.long_every)
    encoder = load_encoder(None, args.backend)
    encoder.encode(batch[:64])  # warm up
    given = list(range(len(batch)))
    by_length = sorted(given, key=lambda i: -len(batch[i]))
    plain, ordered = [], []
    for _ in range(args.repeats):
        plain.append(encode(encoder, batch, given))
        ordered.append(encode(encoder, batch, by_length))
    p, o = statistics.median(plain), statistics.median(ordered)
    long = f"every {args.long_every}th four queries long" if args.long_every else "as written"
    print(
        f"{len(batch):,} texts ({long}), {args.backend}, batches of 64, one thread: in "
        "their own order "
        f"median {p:.2f} s, sorted by length {o:.2f} s: {p / o:.2f}x faster sorted "
        f"(runs {[round(x, 2) for x in plain]} vs {[round(x, 2) for x in ordered]}); "
        f"load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
